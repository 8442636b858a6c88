"""The first sample() call's fixed cost, in parts (doc/benchmarks.md): tracing (Python
building the graph), the first compiled call (XLA's or TensorFlow's compilation of the graph,
plus one row of work) and a later call of one row, each configuration in a fresh process.

    python tools/benchmark_compile.py [--samplers BAOAB,HMC2,NUTS] [--walkers 1,16] [--modes graph,XLA]
        [--repeats 3]

Target: the built-in network 2-8-1 on two_clusters (every step a forward and backward pass), or
for NUTS a 10-D Gaussian potential. Medians over --repeats processes; importing TensorFlow and
tati is not included (about 4-5 s on this machine).
"""

import argparse
import statistics

from fresh_process import child_result

CHILD = r"""
import json, sys, time
import tensorflow as tf
import tati
from tati.engine.loop import steps_dtype
from tati.engine.running import Run
sampler, walkers, jit = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "XLA"
if sampler == "NUTS":
    sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q * q, axis=-1), potential_batched=True,
                          initial_parameters=[0.5] * 10, number_walkers=walkers, sampler=sampler,
                          max_steps=1, seed=1, jit_compile=jit)
else:
    sim = tati.Simulation(hidden_dimension=[8], sampler=sampler, number_walkers=walkers, max_steps=1,
                          seed=1, jit_compile=jit)
run = Run("sample", sim.sampler, sim)
n = tf.constant(1, steps_dtype(run.optimizer))
start = time.perf_counter()
run.chunk.get_concrete_function(n)
tracing = time.perf_counter() - start
start = time.perf_counter()
{k: v.numpy() for k, v in run.chunk(n).items()}
first = time.perf_counter() - start
start = time.perf_counter()
{k: v.numpy() for k, v in run.chunk(n).items()}
later = time.perf_counter() - start
print(json.dumps([tracing, first, later]))
"""


def measure(sampler, walkers, mode, repeats):
    runs = [child_result(CHILD, sampler, walkers, mode) for _ in range(repeats)]
    return [statistics.median(part) for part in zip(*runs)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samplers", default="BAOAB,HMC2,NUTS")
    parser.add_argument("--walkers", default="1,16")
    parser.add_argument("--modes", default="graph,XLA")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| sampler | W | mode | tracing s | first compiled call s | a later call of one row, ms |")
    print("|---|---|---|---|---|---|")
    for sampler in args.samplers.split(","):
        for walkers in map(int, args.walkers.split(",")):
            for mode in args.modes.split(","):
                tracing, first, later = measure(sampler, walkers, mode, args.repeats)
                print(f"| {sampler} | {walkers} | {mode} | {tracing:.2f} | {first:.2f} | {1000 * later:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
