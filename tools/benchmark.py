"""Sampler overhead: time of one sampler step / time of one bare gradient evaluation, for
every Langevin sampler (issue targets: BAOAB <= 1.5 on case a, every sampler <= 1.10 on b).

Both loops are `tati.engine.loop.compile_chunk` loops (tati/engine/gradient.py) on the same model,
loss and batches: the bare loop (optimizer None) does batch, loss, gradient, virial and
running averages; the sampled loop adds the sampler's update. So the ratio is what the sampler costs on top of a gradient step.

How: each loop runs `--steps` steps in one compiled chunk (one tf.function call, synchronised by
reading a result). After a warm-up call (tracing), the loops are timed interleaved, bare first,
`--repeats` times, so that machine noise hits all of them alike; the median time per step is kept.

Cases: (a) 2-[8,8]-1 network, two_clusters, full batch of 500 points;
       (b) 784-[128,128]-10 network, 10,000 random points, batches of 100.

    python tools/benchmark.py [--steps 500] [--repeats 7] [--only a|b] [--samplers BAOAB,GLA2] [--threads N]

`--threads N` runs TensorFlow's operations on N threads (inter- and intra-op) instead of its
default (one per core).

Walkers (`--walkers [timing|ess|all]`, instead of the above):
  timing: BAOAB's time per step with W = 1, 4, 16, 64 walkers, as time(W) / time(1), on case (a)
          and on a 100-D Gaussian potential (issue target: W = 16 at most 2);
  ess:    effective sample size per gradient evaluation of the slowest coordinate of a 100-D
          Gaussian with standard deviations 1 ... 100, ensemble preconditioning
          (covariance_blending) 1 against 0 at the same step width (issue target: ratio >= 5).
"""

import argparse
import statistics
import time

import numpy as np
import pandas as pd
import tensorflow as tf

import tati
from tati.diagnostics import convergence
from tati.engine.loop import Loop, compile_chunk
from tati.recording.averages import RunningAverages
from tati.engine.contract import GRADIENT
from tati.engine.registry import samplers_where
from tati.samplers import get_sampler

BARE = "bare"
NO_ROWS = 10 ** 12  # every_nth of the timed loops: their only row is the call's last step


def set_threads(threads):
    """Run TensorFlow's operations on `threads` threads (None: its default); before any runs."""
    if threads is not None:
        tf.config.threading.set_inter_op_parallelism_threads(threads)
        tf.config.threading.set_intra_op_parallelism_threads(threads)


def make_loop(sim, optimizer):
    """A chunk(n) of the simulation's own loop; optimizer None gives the bare gradient loop.

    Each loop has its own step counter and averages; the loops share the model and the batches.
    """
    return compile_chunk(Loop(sim.model, sim.data, optimizer, tf.Variable(tf.constant(0, tf.int64)),
                              RunningAverages(), every_nth=NO_ROWS))


def time_chunk(chunk, steps):
    """Seconds per step of one chunk call of `steps` steps."""
    n = tf.constant(steps, tf.int64)
    start = time.perf_counter()
    chunk(n)["loss"].numpy()  # reading a result waits for the steps, even under async eager
    return (time.perf_counter() - start) / steps


def measure(sim, steps, repeats, optimizers):
    """Median seconds per step: {"bare": ..., name: ...} for each optimizer of `optimizers`."""
    loops = {BARE: make_loop(sim, None)}
    loops.update((name, make_loop(sim, opt)) for name, opt in optimizers.items())
    return interleaved_medians(loops, steps, repeats)


def interleaved_medians(loops, steps, repeats):
    """{name: median seconds per step} of the chunks `loops`, timed in turn `repeats` times."""
    for chunk in loops.values():  # trace and warm caches, pipeline and allocator
        time_chunk(chunk, steps)
    times = {name: [] for name in loops}
    for _ in range(repeats):
        for name, chunk in loops.items():
            times[name].append(time_chunk(chunk, steps))
    return {name: statistics.median(t) for name, t in times.items()}


def case_a():
    return tati.Simulation(dataset="two_clusters", dataset_size=500, hidden_dimension=[8, 8],
                           sampler="BAOAB", seed=0)


def case_b():
    rng = np.random.default_rng(0)
    features = rng.standard_normal((10000, 784)).astype(np.float32)
    labels = rng.integers(0, 10, size=(10000, 1)).astype(np.float32)
    return tati.Simulation(dataset=(features, labels), hidden_dimension=[128, 128],
                           output_activation="linear", loss="softmax_cross_entropy",
                           batch_size=100, sampler="BAOAB", seed=0)


# name: (description, simulation factory, target ratio of BAOAB to bare)
CASES = {
    "a": ("2-[8,8]-1, two_clusters, full batch 500", case_a, 1.5),
    "b": ("784-[128,128]-10, random 10k, batch 100", case_b, 1.10),
}


# -- walkers --------------------------------------------------------------------------------------
WALKER_COUNTS = (1, 4, 16, 64)
DIMENSION = 100


def walker_network(walkers):
    """Case (a) with `walkers` walkers."""
    return tati.Simulation(dataset="two_clusters", dataset_size=500, hidden_dimension=[8, 8],
                           sampler="BAOAB", number_walkers=walkers, seed=0)


def walker_gaussian(walkers):
    """A 100-D standard Gaussian potential, written for one walker and vectorised by tati."""
    return tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x),
                           initial_parameters=np.zeros(DIMENSION), number_walkers=walkers,
                           sampler="BAOAB", seed=0)


WALKER_CASES = {"a": ("2-[8,8]-1, two_clusters, full batch 500", walker_network),
                "g": (f"{DIMENSION}-D Gaussian potential", walker_gaussian)}


def walker_loop(sim):
    """The simulation's own chunk: every walker's loss and gradient, the sampler's update (with
    the ensemble preconditioner if the simulation has one) and the per-walker averages."""
    return compile_chunk(Loop(sim.model, sim.data, sim.sampler, tf.Variable(tf.constant(0, tf.int64)),
                              RunningAverages(sim.num_walkers), ensemble=sim.ensemble, every_nth=NO_ROWS))


def walker_timing(steps, repeats):
    """[(case, parameters, W, ms per step, time(W) / time(1))]: the W loops of one case timed
    interleaved, like the samplers above."""
    rows = []
    for description, factory in WALKER_CASES.values():
        sims = {w: factory(w) for w in WALKER_COUNTS}
        medians = interleaved_medians({w: walker_loop(sim) for w, sim in sims.items()}, steps, repeats)
        rows += [(description, sims[1].num_parameters, w, 1e3 * medians[w], medians[w] / medians[1])
                 for w in WALKER_COUNTS]
    return rows


# Ill-conditioned Gaussian: independent coordinates with standard deviations 1 ... 100
# (log-spaced; variances 1 ... 1e4). Unpreconditioned, the stiffest coordinate (sd 1, omega 1)
# limits the step width (h < 2) and the widest (sd 100, omega 0.01) is the slowest: with
# friction gamma its integrated autocorrelation time is 2 gamma sd^2 = 2e4 time units.
SCALES = np.logspace(0, 2, DIMENSION)
FRICTION = 1.0
# (walkers, step width, eta, covariance_after_steps, time units, thin): runs long enough for
# the slowest coordinate (5 autocorrelation times of the unpreconditioned walkers, 5000 time
# units with preconditioning), positions kept every `thin` steps. One step width per W, stable
# with eta = 1: C from W - 1 walkers in 100 dimensions raises the stiffest preconditioned
# frequency to about 4 (W = 16, h < 0.49) or 2 (W = 128, h < 1.0); see doc/benchmarks.md.
ESS_RUNS = [(16, 0.1, 0.0, 100, 1e5, 100), (16, 0.1, 1.0, 100, 5e3, 10),
            (128, 0.5, 0.0, 100, 1e5, 100), (128, 0.5, 1.0, 100, 5e3, 5)]


def ill_conditioned(walkers, step_width, eta, every, seed=0):
    """BAOAB on the ill-conditioned Gaussian, walkers started at exact independent draws."""
    precision = tf.constant(1.0 / SCALES ** 2, tf.float32)
    start = np.random.default_rng(seed).standard_normal((walkers, DIMENSION)) * SCALES
    return tati.Simulation(potential=lambda theta: 0.5 * tf.reduce_sum(theta ** 2 * precision, axis=1),
                           potential_batched=True, initial_parameters=start, number_walkers=walkers,
                           sampler="BAOAB", step_width=step_width, friction_constant=FRICTION,
                           covariance_blending=eta, covariance_after_steps=every, seed=seed)


def sampled_trajectory(sim, steps, thin):
    """(trajectory table of every `thin`-th step, seconds per step), from the simulation's chunk."""
    chunk, n = walker_loop(sim), tf.constant(thin, tf.int64)
    start = time.perf_counter()
    positions = np.stack([chunk(n)["parameters"].numpy()[0] for _ in range(steps // thin)])  # [rows, W, d]
    elapsed = (time.perf_counter() - start) / steps
    rows, walkers, _ = positions.shape
    table = pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                          "step": np.repeat(thin * np.arange(1, rows + 1), walkers), "loss": 0.0})
    columns = pd.DataFrame(positions.reshape(rows * walkers, -1).astype(np.float64),
                           columns=sim.model.parameter_names)
    return pd.concat([table, columns], axis=1), elapsed


def walker_ess():
    """Rows (W, h, eta, every, steps, min ESS, its sd, ESS per gradient, ratio to eta 0, variance
    of the 10 widest coordinates / exact, ms per step, halvings of eta), one per run as it ends;
    a run whose positions left the floating-point range gives None for its measurements."""
    reference = {}
    for walkers, step_width, eta, every, time_units, thin in ESS_RUNS:
        sim = ill_conditioned(walkers, step_width, eta, every)
        steps = int(round(time_units / step_width))
        table, seconds = sampled_trajectory(sim, steps, thin)
        failures = int(sim.ensemble.failures.numpy()) if sim.ensemble is not None else 0
        if not np.isfinite(table[sim.model.parameter_names].to_numpy()).all():
            yield (walkers, step_width, eta, every, steps, None, None, None, None, None, 1e3 * seconds, failures)
            continue
        summary = convergence(table)
        slowest = summary.ess.idxmin()
        per_gradient = summary.ess.min() / (walkers * steps)
        if eta == 0:
            reference[walkers, step_width] = per_gradient
        ratio = per_gradient / reference.get((walkers, step_width), np.nan)
        variance = float(np.mean(summary.sd.to_numpy()[-10:] ** 2 / SCALES[-10:] ** 2))
        yield (walkers, step_width, eta, every if eta > 0 else "-", steps, summary.ess.min(),
               SCALES[sim.model.parameter_names.index(slowest)], per_gradient, ratio, variance,
               1e3 * seconds, failures)


def print_walkers(which, steps, repeats):
    tf.get_logger().setLevel("ERROR")  # each W is its own tf.function: TensorFlow warns of "retracing"
    print(f"TensorFlow {tf.__version__}; BAOAB, step width 0.1, friction 1 unless stated\n")
    if which in ("timing", "all"):
        print(f"Time per step with W walkers, {steps} steps x {repeats} repeats, medians\n")
        header = ("case", "parameters per walker", "W", "ms/step", "time(W) / time(1)")
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for case, params, walkers, ms, ratio in walker_timing(steps, repeats):
            print(f"| {case} | {params} | {walkers} | {ms:.3f} | {ratio:.2f} |")
        print("\nTarget: time(16) / time(1) <= 2.\n")
    if which in ("ess", "all"):
        print(f"Ill-conditioned {DIMENSION}-D Gaussian, sd 1 ... 100, friction {FRICTION:g}, walkers started "
              "at exact draws\n")
        header = ("W", "h", "eta", "covariance_after_steps", "steps", "min ESS", "its sd", "ESS / gradient",
                  "ratio to eta 0", "variance of widest 10 / exact", "ms/step", "eta halvings")
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for w, h, eta, every, n, ess, sd, per, ratio, variance, ms, failures in walker_ess():
            if ess is None:
                print(f"| {w} | {h:g} | {eta:g} | {every} | {n} | diverged | | | | | {ms:.3f} | {failures} |", flush=True)
                continue
            print(f"| {w} | {h:g} | {eta:g} | {every} | {n} | {ess:.0f} | {sd:.1f} | {per:.3g} | {ratio:.3g} | "
                  f"{variance:.3f} | {ms:.3f} | {failures} |", flush=True)
        print("\nTarget: ratio >= 5 at the same step width.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=500, help="steps per timed chunk")
    parser.add_argument("--repeats", type=int, default=7, help="timed chunks per loop")
    parser.add_argument("--only", choices=sorted(CASES), help="run one case")
    langevin = samplers_where(kind=GRADIENT)
    parser.add_argument("--samplers", default=",".join(langevin), help="comma-separated Langevin samplers")
    parser.add_argument("--walkers", nargs="?", const="all", choices=("timing", "ess", "all"),
                        help="run the walker benchmarks instead: timing, ess or all (the default)")
    parser.add_argument("--hmc", action="store_true",
                        help="run the HMC2 against tfp.mcmc benchmark instead (tools/benchmark_hmc.py)")
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    args = parser.parse_args(argv)
    if args.hmc:
        import benchmark_hmc
        benchmark_hmc.main(["--steps", str(max(args.steps, 1000)), "--repeats", str(args.repeats)]
                           + ([] if args.threads is None else ["--threads", str(args.threads)]))
        return
    set_threads(args.threads)
    if args.walkers:
        print_walkers(args.walkers, args.steps, args.repeats)
        return
    names = args.samplers.split(",")
    rows = []
    for key in [args.only] if args.only else sorted(CASES):
        description, factory, target = CASES[key]
        sim = factory()
        optimizers = {name: get_sampler(name)(seed=0) for name in names}
        for optimizer in optimizers.values():
            optimizer.build(sim.model.variables)
        medians = measure(sim, args.steps, args.repeats, optimizers)
        for name in names:
            ratio = medians[name] / medians[BARE]
            rows.append((f"({key}) {description}", sim.num_parameters, name, 1e3 * medians[BARE],
                         1e3 * medians[name], ratio, target, "yes" if ratio <= target else "NO"))
    print(f"TensorFlow {tf.__version__}, {args.steps} steps x {args.repeats} repeats, medians\n")
    header = ("case", "parameters", "sampler", "bare ms/step", "sampler ms/step", "ratio", "target", "met")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))  # a Markdown table
    for case, params, name, bare, sampled, ratio, target, met in rows:
        print(f"| {case} | {params} | {name} | {bare:.3f} | {sampled:.3f} | {ratio:.2f} | <= {target:.2f} | {met} |")


if __name__ == "__main__":
    main()
