"""Where a new process's time to the first step goes (doc/benchmarks.md): the README's NUTS
quick start (4 walkers, a 2-D Gaussian, 500 + 1000 steps), each run in a fresh process:
importing tati and TensorFlow, then Result.first_step's parts (Simulation set-up, warm start,
tracing the loop, compiling it) and the whole sample() call.

    python tools/benchmark_first_call.py [--modes graph,xla] [--repeats 3]

graph: the quick start as written (graph mode: XLA's cache does not apply). xla: the same
target batched (potential_batched) and compiled (jit_compile), first with XLA's persistent
cache empty (cold), then filled by the cold run (warm). Medians over --repeats.
"""

import argparse
import statistics
import tempfile

from fresh_process import child_result

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import tati
import tensorflow as tf
imports = time.perf_counter() - start
xla, cache = sys.argv[1] == "xla", sys.argv[2]
if xla:
    extra = dict(potential=lambda x: 0.5 * tf.reduce_sum((x / [0.1, 10.0]) ** 2, axis=-1), potential_batched=True,
                 jit_compile=True)
else:
    extra = dict(potential=lambda x: 0.5 * tf.reduce_sum((x / [0.1, 10.0]) ** 2))
start = time.perf_counter()
nuts = tati.Simulation(initial_parameters=[1.0, 1.0], dtype="float64", sampler="NUTS", number_walkers=4,
                       burn_in_steps=500, max_steps=1500, seed=1, xla_cache_directory=cache, **extra)
setup = time.perf_counter() - start
result = nuts.sample()
total = time.perf_counter() - start
first = result.first_step
print(json.dumps(dict(imports=imports, setup=setup, warm_start=first.warm_start or 0.0, tracing=first.tracing,
                      compiling=first.compiling, first_step=first.seconds, total=total)))
"""

PARTS = ("imports", "setup", "warm_start", "tracing", "compiling", "first_step", "total")


def measure(mode, cache, repeats, warm):
    runs = [child_result(CHILD, mode, cache if warm else tempfile.mkdtemp(prefix="tati-xla-"))
            for _ in range(repeats)]
    return {part: statistics.median(run[part] for run in runs) for part in PARTS}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="graph,xla")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| mode | cache | " + " | ".join(PARTS) + " |")
    print("|---" * (len(PARTS) + 2) + "|")
    for mode in args.modes.split(","):
        cache = tempfile.mkdtemp(prefix="tati-xla-")
        measure(mode, cache, 1, warm=True)  # fills the cache for the warm runs
        for warm in (False, True):
            row = measure(mode, cache, args.repeats, warm)
            print(f"| {mode} | {'warm' if warm else 'cold'} | " + " | ".join(f"{row[part]:.2f}" for part in PARTS) + " |",
                  flush=True)


if __name__ == "__main__":
    main()
