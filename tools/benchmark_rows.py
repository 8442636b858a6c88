"""The cost of recording rows: sample() against its compiled loop, per step (doc/benchmarks.md).

    python tools/benchmark_rows.py [--steps 2000] [--repeats 5] [--dimension 100]
        [--samplers BAOAB,HMC2] [--walkers 1,16] [--every 1,10] [--modes graph,XLA] [--files]

On the d-D Gaussian U = sum_i c_i x_i^2 / 2 (c from 1 to 10, float64), in graph mode and under
XLA: microseconds per step of one sample() call of --steps steps, and of the compiled loop
alone run for as many steps (with the same rows, and with only its last row; a call returns at
most `tati.engine.loop.block_rows` rows, so it is called again until the steps are done). Median
of --repeats, after the first call. HMC2 takes legs of 0.6 time units (about 12 steps of
0.05), a row per leg with every_nth 1. `--files` also writes the three CSV files (to a
temporary directory): their text costs about a microsecond per number.

"first call s" is the first sample() call's time less a later call's: tracing, AutoGraph and
compiling (the first Simulation of a process also pays AutoGraph's conversion of tati's code,
later ones reuse it). No call after the first traces again (checked: "traces" counts the
chunk's tracings over all calls).
"""

import argparse
import statistics
import tempfile
import time

import numpy as np
import tensorflow as tf

import tati
from tati.engine.loop import Loop, compile_chunk, steps_dtype
from tati.recording.averages import RunningAverages

NO_ROWS = 10 ** 12


def gaussian(dimension):
    scales = tf.constant(np.linspace(1.0, 10.0, dimension), tf.float64)
    return lambda x: 0.5 * tf.reduce_sum(x ** 2 * scales, axis=-1)


def median_seconds(call, steps, repeats):
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times)


def simulation(sampler, walkers, dimension, steps, jit, every_nth, files):
    extra = dict(hamiltonian_dynamics_time=0.6) if sampler.startswith("HMC") else {}
    if files:
        folder = tempfile.mkdtemp(prefix="tati_rows_")
        extra.update(run_file=f"{folder}/run.csv", trajectory_file=f"{folder}/trajectory.csv",
                     averages_file=f"{folder}/averages.csv")
    return tati.Simulation(potential=gaussian(dimension), potential_batched=True, dtype="float64",
                           initial_parameters=np.zeros((walkers, dimension)), number_walkers=walkers,
                           sampler=sampler, step_width=0.05, max_steps=steps, every_nth=every_nth,
                           jit_compile=jit, seed=1, **extra)


def measure(sampler, walkers, dimension, steps, repeats, jit, every_nth, files=False):
    """(first call's extra seconds, sample() us/step, loop with rows us/step, loop with one row
    us/step, tracings of sample()'s chunk)."""
    sim = simulation(sampler, walkers, dimension, steps, jit, every_nth, files)
    start = time.perf_counter()
    sim.sample()
    first = time.perf_counter() - start
    sampled = median_seconds(sim.sample, steps, repeats)
    traces = sim._run.chunk.experimental_get_tracing_count()
    kind = steps_dtype(sim.sampler)
    loops = []
    for rows in (every_nth, NO_ROWS):
        # The same loop as sample()'s, with its check for non-finite values (on_nan "stop").
        counter = tf.Variable(tf.constant(0, tf.int64))
        chunk = compile_chunk(Loop(sim.model, sim.data, sim.sampler, counter, RunningAverages(walkers),
                                   every_nth=rows, jit_compile=jit, check_finite=sim.options["on_nan"] == "stop"))

        def run():  # a call stops early when its block of rows is full: call again, as sample() does
            end = int(counter.numpy()) + steps
            while int(counter.numpy()) < end:
                chunk(tf.constant(end - int(counter.numpy()), kind))["rows"].numpy()
        loops.append(median_seconds(run, steps, repeats))
    return [first - sampled * steps] + [1e6 * t for t in (sampled, *loops)] + [traces]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dimension", type=int, default=100)
    parser.add_argument("--samplers", default="BAOAB,HMC2")
    parser.add_argument("--walkers", default="1,16")
    parser.add_argument("--every", default="1,10", help="every_nth values")
    parser.add_argument("--modes", default="graph,XLA")
    parser.add_argument("--files", action="store_true", help="also write the CSV files")
    args = parser.parse_args()
    print("| sampler | walkers | mode | every_nth | first call s | sample() us/step | loop with rows | "
          "loop, last row only | sample() / loop with rows | traces |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for sampler in args.samplers.split(","):
        for walkers in (int(w) for w in args.walkers.split(",")):
            for mode in args.modes.split(","):
                for every_nth in (int(e) for e in args.every.split(",")):
                    first, sampled, rows, last, traces = measure(sampler, walkers, args.dimension, args.steps,
                                                                 args.repeats, mode == "XLA", every_nth, args.files)
                    print(f"| {sampler} | {walkers} | {mode} | {every_nth} | {first:.2f} | {sampled:.1f} | {rows:.1f} | "
                          f"{last:.1f} | {sampled / rows:.2f} | {traces} |", flush=True)


if __name__ == "__main__":
    main()
