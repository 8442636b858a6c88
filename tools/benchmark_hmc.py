"""HMC2 against tfp.mcmc.HamiltonianMonteCarlo: time per leapfrog step, and gradient
evaluations per leg (issue targets: ratio <= 0.9; at most L + 1, goal L, gradients per leg).

Cases: (a) a 100-D Gaussian with standard deviations 0.1 ... 1; (b) Bayesian logistic
regression, 25 weights with a N(0, 1) prior, 1,000 synthetic points. The same nominal step
width and leg length L = 10 for both (ours randomises each leg's width in [0.7, 1.3] h and its
length in [0.9, 1.1] L, TFP's does not). Both run as one compiled loop: ours is the
Simulation's own chunk (one gradient per step, no rows in between), TFP's is
`tfp.mcmc.sample_chain` in one tf.function. Each in graph mode and compiled with XLA
(`jit_compile`), timed interleaved, median of `--repeats`.

    python tools/benchmark_hmc.py [--steps 5000] [--repeats 5] [--threads N] [--chains C] [--modes graph,XLA]
    (or: python tools/benchmark.py --hmc)

`--threads N` runs TensorFlow's operations on N threads (inter- and intra-op) instead of its
default, one per core: for problems this small, thread hand-offs cost more than they save.
`--chains C` runs C walkers of ours against C batched chains of TFP's (default 1). `--modes`
picks graph mode, XLA or both (the default). Ours runs without a warm-up (burn_in_steps=0, whose
default adapts h and T during half the run), so both take the same h and L.
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

import tati
from benchmark import set_threads
from tati.engine.loop import Loop, compile_chunk
from tati.recording.averages import RunningAverages

LEG = 10


def gaussian():
    scales = tf.constant(np.linspace(0.1, 1.0, 100))
    return (lambda x: 0.5 * tf.reduce_sum(tf.square(x / scales), axis=-1)), 100, 0.05


def logistic_regression():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(1000, 25))
    labels = np.where(rng.uniform(size=1000) < 1.0 / (1.0 + np.exp(-features @ rng.normal(size=25))), 1.0, -1.0)
    features, labels = tf.constant(features), tf.constant(labels)

    def potential(w):  # [W, 25] -> [W]
        return (tf.reduce_sum(tf.math.softplus(-labels * tf.einsum("nd,wd->wn", features, w)), axis=-1)
                + 0.5 * tf.reduce_sum(w * w, axis=-1))
    return potential, 25, 0.02


def ours(potential, dimension, h, steps, jit, chains=1):
    """(seconds per step of one chunk call, the simulation)."""
    sim = tati.Simulation(potential=potential, potential_batched=True, dtype="float64",
                          initial_parameters=np.full((chains, dimension), 0.01), number_walkers=chains,
                          sampler="HMC2", step_width=h, hamiltonian_dynamics_time=LEG * h, every_nth=10 ** 9,
                          burn_in_steps=0, jit_compile=jit, seed=1)  # no warm-up: TFP's h and L, as TFP's kernel
    chunk = compile_chunk(Loop(sim.model, sim.data, sim.sampler, tf.Variable(tf.constant(0, tf.int64)),
                               RunningAverages(chains), every_nth=10 ** 9, jit_compile=jit))

    def run():
        start = time.perf_counter()
        chunk(tf.constant(steps, tf.int32))["loss"].numpy()
        return (time.perf_counter() - start) / steps
    return run, sim


def theirs(potential, dimension, h, steps, jit, chains=1):
    kernel = tfp.mcmc.HamiltonianMonteCarlo(lambda x: -potential(x), step_size=h, num_leapfrog_steps=LEG)
    legs = steps // LEG
    start_state = tf.constant(np.full((chains, dimension), 0.01))

    @tf.function(jit_compile=jit)
    def chain(state):
        return tfp.mcmc.sample_chain(legs, state, kernel=kernel, trace_fn=None, seed=[1, 2])[-1]

    def run():
        start = time.perf_counter()
        chain(start_state).numpy()
        return (time.perf_counter() - start) / (legs * LEG)
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    parser.add_argument("--chains", type=int, default=1, help="walkers of ours, batched chains of TFP's")
    parser.add_argument("--modes", default="graph,XLA", help="graph, XLA or both, comma-separated (default both)")
    args = parser.parse_args(argv)
    modes = {"graph": False, "XLA": True}
    if not args.modes or any(m not in modes for m in args.modes.split(",")):
        parser.error(f"--modes: graph, XLA or graph,XLA, got {args.modes!r}")
    set_threads(args.threads)
    print("| case | mode | HMC2 us/step | TFP HMC us/step | ratio | HMC2 gradients per leg (mean L) | rejection rate |")
    print("|---|---|---|---|---|---|---|")
    for name, case in (("(a) 100-D Gaussian", gaussian), ("(b) logistic regression, 25 weights", logistic_regression)):
        potential, dimension, h = case()
        for jit in (modes[m] for m in args.modes.split(",")):
            run_ours, sim = ours(potential, dimension, h, args.steps, jit, args.chains)
            run_theirs = theirs(potential, dimension, h, args.steps, jit, args.chains)
            run_ours(), run_theirs()  # trace and compile
            times = {"ours": [], "theirs": []}
            for _ in range(args.repeats):
                times["ours"].append(run_ours())
                times["theirs"].append(run_theirs())
            a, b = statistics.median(times["ours"]), statistics.median(times["theirs"])
            report = sim.sampler.chain_report()
            per_leg = float(sim.sampler.iterations.numpy()) / float(report["legs"].numpy()[0])
            print(f"| {name} | {'XLA' if jit else 'graph'} | {1e6 * a:.1f} | {1e6 * b:.1f} | {a / b:.2f} | "
                  f"{per_leg:.2f} | {float(report['rejection_rate'].numpy()[0]):.3f} |", flush=True)


if __name__ == "__main__":
    main()
