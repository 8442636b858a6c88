"""tati's NUTS against plain tfp.mcmc.NoUTurnSampler with DualAveragingStepSizeAdaptation:
time per gradient evaluation (the wrapper's cost; issue target: at most 5% over TFP), min ESS
per second and per gradient evaluation.

Cases: the two of tools/benchmark_hmc.py, (a) a 100-D Gaussian with standard deviations
0.1 ... 1 and (b) a Bayesian logistic regression with 25 weights. Both samplers: 4 chains
started at 0.01, `--burn-in` adaptation steps, `--draws` kept draws, every draw kept. Ours is
`Simulation.sample()` as a user runs it (every draw a table row), adapting width and diagonal
metric in a first, untimed call (which also compiles), then timed calls of `--draws` steps
each. TFP's is `tfp.mcmc.sample_chain` in one compiled tf.function, burn-in included, tracing
the states and leapfrog counts, adapting the width only. Timed interleaved, median of
`--repeats`; graph mode and XLA (`jit_compile`). The third row is the same work for both:
TFP's NoUTurnSampler given tati's adapted width and diagonal metric (it samples z = theta / s,
the coordinates tati's kernel moves in, from tati's last states), so its trees are as deep as
tati's and the ratio per gradient is the wrapper's cost: once inside
DualAveragingStepSizeAdaptation with its adaptation over (num_adaptation_steps=0, which keeps
the width: the issue's reference, TFP's kernel as its users run the draws after burn-in, whose
adaptation arithmetic runs at every step), once bare (no adaptation code at all).

    python tools/benchmark_nuts.py [--burn-in 500] [--draws 1000] [--repeats 3] [--threads N]
        [--modes graph,XLA]
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

import tati
from benchmark import set_threads
from benchmark_hmc import gaussian, logistic_regression

CHAINS = 4
# The same work as tati's: TFP's NUTS given tati's width and metric, with (True) or without the
# dual averaging wrapper.
SAME_WORK = {"TFP NUTS + dual averaging, tati's width and metric": True,
             "TFP NUTS bare, tati's width and metric": False}


def min_ess(draws):
    """Smallest ESS over the parameters of draws [n, chains, d], cross-chain."""
    return float(tf.reduce_min(tfp.mcmc.effective_sample_size(
        tf.constant(draws), filter_beyond_positive_pairs=True, cross_chain_dims=1)).numpy())


def ours(potential, dimension, h, burn_in, draws, jit):
    """A Simulation with max_steps = draws: its first call (untimed: it compiles the loop and
    holds the burn-in) is followed by timed calls of `draws` kept draws each."""
    if burn_in > draws:
        raise SystemExit("--burn-in must be at most --draws")
    sim = tati.Simulation(potential=potential, potential_batched=True, dtype="float64",
                          initial_parameters=np.full((CHAINS, dimension), 0.01), number_walkers=CHAINS,
                          sampler="NUTS", step_width=h, burn_in_steps=burn_in, max_steps=draws,
                          jit_compile=jit, seed=1)
    sim.sample()

    def run():
        before = sim.sampler.counters.numpy()[3].sum()
        start = time.perf_counter()
        result = sim.sample()
        seconds = time.perf_counter() - start
        states = result.trajectory.sort_values(["step", "id"])[[f"param{i}" for i in range(dimension)]]
        gradients = float(sim.sampler.counters.numpy()[3].sum() - before)
        return seconds, gradients, min_ess(states.to_numpy().reshape(draws, CHAINS, dimension))
    return run, sim


def same_work(potential, sim, draws, jit, dual_averaging):
    """TFP's NUTS on z = theta / s with tati's adapted width and scales s, from tati's states; with
    `dual_averaging`, inside DualAveragingStepSizeAdaptation whose adaptation is over."""
    scale = tf.constant(sim.sampler.scale.numpy())
    kernel = tfp.mcmc.NoUTurnSampler(lambda z: -potential(z * scale),
                                     step_size=tf.constant(float(sim.sampler.step_width.numpy()), tf.float64))
    leapfrogs = lambda _, r: r.leapfrogs_taken  # noqa: E731
    if dual_averaging:
        kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(kernel, num_adaptation_steps=0)
        leapfrogs = lambda _, r: r.inner_results.leapfrogs_taken  # noqa: E731
    start = tf.constant(np.asarray(sim.parameters, np.float64)) / scale

    @tf.function(jit_compile=jit)
    def chain(state):
        return tfp.mcmc.sample_chain(draws, state, kernel=kernel, trace_fn=leapfrogs, seed=[1, 2])

    def run():
        began = time.perf_counter()
        states, leapfrogs = chain(start)
        states = states.numpy()
        seconds = time.perf_counter() - began
        return seconds, float(tf.reduce_sum(leapfrogs).numpy()), min_ess(states * scale.numpy())
    return run, lambda: chain(start)  # the second traces and compiles it


def theirs(potential, dimension, h, burn_in, draws, jit):
    kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
        tfp.mcmc.NoUTurnSampler(lambda x: -potential(x), step_size=tf.constant(h, tf.float64)),
        num_adaptation_steps=burn_in)
    start_state = tf.constant(np.full((CHAINS, dimension), 0.01))

    @tf.function(jit_compile=jit)
    def chain(state):
        return tfp.mcmc.sample_chain(draws, state, kernel=kernel, num_burnin_steps=burn_in,
                                     trace_fn=lambda _, r: r.inner_results.leapfrogs_taken, seed=[1, 2])

    def run():
        start = time.perf_counter()
        states, leapfrogs = chain(start_state)
        states = states.numpy()
        seconds = time.perf_counter() - start
        # The burn-in's leapfrogs are not traced: count them as the kept draws' mean rate.
        gradients = float(tf.reduce_sum(leapfrogs).numpy()) * (burn_in + draws) / draws
        return seconds, gradients, min_ess(states)
    return run, chain


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burn-in", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    parser.add_argument("--modes", default="graph,XLA", help="graph, XLA or both (comma-separated)")
    args = parser.parse_args(argv)
    modes = [{"graph": False, "xla": True}[mode.strip().lower()] for mode in args.modes.split(",")]
    set_threads(args.threads)
    print("| case | mode | sampler | seconds | gradients | us per gradient | min ESS | ESS/s | ESS per 1000 gradients |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, case in (("(a) 100-D Gaussian", gaussian), ("(b) logistic regression, 25 weights", logistic_regression)):
        potential, dimension, h = case()
        for jit in modes:
            runs = {}
            runs["tati NUTS"], sim = ours(potential, dimension, h, args.burn_in, args.draws, jit)
            runs["TFP NUTS"], chain = theirs(potential, dimension, h, args.burn_in, args.draws, jit)
            chain(tf.constant(np.full((CHAINS, dimension), 0.01)))  # trace and compile TFP's once
            for label, dual_averaging in SAME_WORK.items():
                runs[label], compile_same = same_work(potential, sim, args.draws, jit, dual_averaging)
                compile_same()
            results = {label: [] for label in runs}
            for _ in range(args.repeats):
                for label, run in runs.items():
                    results[label].append(run())
            per_gradient = {}
            for label, found in results.items():
                seconds = statistics.median(r[0] for r in found)
                gradients, ess = found[-1][1], found[-1][2]
                per_gradient[label] = seconds / gradients
                print(f"| {name} | {'XLA' if jit else 'graph'} | {label} | {seconds:.2f} | {gradients:.0f} | "
                      f"{1e6 * seconds / gradients:.1f} | {ess:.0f} | {ess / seconds:.0f} | "
                      f"{1000 * ess / gradients:.1f} |", flush=True)
            for label in ("TFP NUTS",) + tuple(SAME_WORK):
                print(f"| {name} | {'XLA' if jit else 'graph'} | tati over {label}, per gradient | "
                      f"{per_gradient['tati NUTS'] / per_gradient[label]:.2f} | | | | | |", flush=True)


if __name__ == "__main__":
    main()
