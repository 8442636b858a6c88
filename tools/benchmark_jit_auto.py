"""What XLA costs and saves per kernel kind and target (doc/benchmarks.md, "XLA where it pays"):
the figures behind `jit_compile` auto (tati/config/compilation.py).

    python tools/benchmark_jit_auto.py [--samplers BAOAB,HMC2,NUTS,RWMH] [--targets potential1,potential4,network4,keras4]
        [--repeats 1]

Each configuration runs in a fresh process with XLA's persistent cache off (every compile
cold), once in graph mode and once under XLA: three sample() calls of the same steps; the
second and third give the time per step, the first less its steps at that rate the fixed cost
(tracing and compiling). Break-even: the steps at which XLA's extra fixed cost is repaid by
its saving per step. Targets: a 10-D Gaussian potential with 1 walker or 4 (potential_batched),
the built-in network 2-8-1 on two_clusters (500 points, full batch) with 4 walkers, and the same
network as a Keras model with 4 walkers.
"""

import argparse
import statistics

from fresh_process import child_result

STEPS = {"NUTS": 100, "HMC2": 1000, "BAOAB": 1000, "RWMH": 1000}

CHILD = r"""
import json, sys, time
import tati
import tensorflow as tf
sampler, target, mode, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
walkers = int(target[-1])
options = dict(sampler=sampler, max_steps=steps, burn_in_steps=0, seed=1, number_walkers=walkers,
               jit_compile=mode == "xla", xla_cache_directory=None,
               step_width=0.05 if target.startswith("potential") else 0.002)
if target.startswith("potential"):
    options.update(potential=lambda q: 0.5 * tf.reduce_sum(q * q, axis=-1), potential_batched=True,
                   initial_parameters=[0.5] * 10)
elif target.startswith("keras"):
    import keras
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    options.update(model=model, loss="mean_squared", dataset="two_clusters")
else:
    options.update(hidden_dimension=[8], hidden_activation="relu", dataset="two_clusters")
sim = tati.Simulation(**options)
times = []
for _ in range(3):
    start = time.perf_counter()
    sim.sample()
    times.append(time.perf_counter() - start)
step = min(times[1:]) / steps
print(json.dumps([times[0] - step * steps, step]))
"""


def measure(sampler, target, mode, repeats):
    runs = [child_result(CHILD, sampler, target, mode, STEPS[sampler], what=f"{sampler} on {target}, {mode}: ")
            for _ in range(repeats)]
    return [statistics.median(part) for part in zip(*runs)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samplers", default="BAOAB,HMC2,NUTS,RWMH")
    parser.add_argument("--targets", default="potential1,potential4,network4,keras4")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print("| sampler | target | fixed s, graph / XLA | us per step, graph / XLA | break-even steps |")
    print("|---|---|---|---|---|")
    for sampler in args.samplers.split(","):
        for target in args.targets.split(","):
            (fixed_g, step_g), (fixed_x, step_x) = (measure(sampler, target, mode, args.repeats)
                                                   for mode in ("graph", "xla"))
            gain = step_g - step_x
            even = "never" if gain <= 0 else f"{max(0.0, fixed_x - fixed_g) / gain:.0f}"
            print(f"| {sampler} | {target} | {fixed_g:.2f} / {fixed_x:.2f} | {1e6 * step_g:.0f} / {1e6 * step_x:.0f} "
                  f"| {even} |", flush=True)


if __name__ == "__main__":
    main()
