"""The cost of recording rows: sample() against its compiled loop, per step (doc/benchmarks.md).

    python tools/benchmark_rows.py [--steps 2000] [--repeats 5] [--dimension 100]

BAOAB with one walker on the d-D Gaussian U = sum_i c_i x_i^2 / 2 (c from 1 to 10, float64),
in graph mode and under XLA, with a row every step and every 10th: microseconds per step of
one sample() call of --steps steps, and of the compiled loop alone called once for as many
steps (with those rows, and with only its last row). Median of --repeats, after a warm-up.
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

import tati
from tati.loop import make_chunk
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


def measure(dimension, steps, repeats, jit, every_nth):
    """(sample() us/step, loop with rows us/step, loop with one row us/step)."""
    sim = tati.Simulation(potential=gaussian(dimension), potential_batched=True, dtype="float64",
                          initial_parameters=np.zeros((1, dimension)), sampler="BAOAB", step_width=0.05,
                          max_steps=steps, every_nth=every_nth, jit_compile=jit, seed=1)
    sampled = median_seconds(sim.sample, steps, repeats)
    n = tf.constant(steps, tf.int64)
    loops = []
    for rows in (every_nth, NO_ROWS):
        chunk = make_chunk(sim.model, sim.data, sim.sampler, tf.Variable(tf.constant(0, tf.int64)),
                           RunningAverages(1), 0, False, None, rows, jit)
        loops.append(median_seconds(lambda: int(chunk(n)["rows"]), steps, repeats))
    return [1e6 * t for t in (sampled, *loops)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dimension", type=int, default=100)
    args = parser.parse_args()
    print("| mode | every_nth | sample() us/step | loop with rows | loop, last row only |")
    print("|---|---|---|---|---|")
    for jit in (False, True):
        for every_nth in (1, 10):
            figures = measure(args.dimension, args.steps, args.repeats, jit, every_nth)
            print(f"| {'XLA' if jit else 'graph'} | {every_nth} | " + " | ".join(f"{f:.1f}" for f in figures) + " |")


if __name__ == "__main__":
    main()
