"""NUTS and RWMH with draws keyed per walker (random/walker_draws.py, and the step on the
walkers padded to whole SIMD packets) against TensorFlow Probability's own draws for all
walkers at once: time per step of Simulation.sample() calls.

Both kernels run in one process on the same model; the "TFP's draws" kernel is the same class
whose `transition` calls the TFP step directly. After a first call (tracing), the calls are
timed interleaved, `--repeats` times; medians. Cases: a 100-D Gaussian potential (standard
deviations 0.1 ... 1, step width 0.05) and the built-in 2-[8,8]-1 network on two_clusters.

    python tools/benchmark_walker_draws.py [--steps 30] [--repeats 5] [--walkers 1,4,16]
        [--samplers NUTS,RWMH] [--models gaussian,network] [--jit]

RWMH runs 20 times `--steps` per call (its steps are short).
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

import tati
from tati.samplers import proposal


class _TFPDraws:
    def transition(self, target, z, log_prob, gradient, width, seed):
        return self._kernel_step(target, z, log_prob, gradient, width, seed)


TFP_DRAWS = {name: type(name, (_TFPDraws, kernel), {}) for name, kernel in proposal.KERNELS.items()}
SCALES = tf.constant(np.linspace(0.1, 1.0, 100))


def gaussian(x):
    return 0.5 * tf.reduce_sum(tf.square(x / SCALES), axis=-1)


def simulation(model, sampler, walkers, steps, jit, tfp_draws):
    if model == "gaussian":
        options = dict(potential=gaussian, potential_batched=True, dtype="float64",
                       initial_parameters=np.full(100, 0.1), step_width=0.05)
    else:
        options = dict(hidden_dimension=[8, 8], dataset="two_clusters", step_width=0.02)
    sim = tati.Simulation(sampler=sampler, number_walkers=walkers, max_steps=steps, every_nth=10 ** 9, seed=1,
                          jit_compile=jit, **options)
    if tfp_draws:
        kernel = TFP_DRAWS[sampler]
        sim._sampler = kernel(sim.model, step_width=sim.options["step_width"], seed=1, burn_in_steps=0,
                              **{name: sim.options[name] for name in kernel.parameters})
    sim.sample()  # tracing
    return sim


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--walkers", default="1,4,16")
    parser.add_argument("--samplers", default="NUTS,RWMH")
    parser.add_argument("--models", default="gaussian,network")
    parser.add_argument("--jit", action="store_true")
    args = parser.parse_args()
    print(f"{'model':9s} {'sampler':7s} {'W':>3s} {'TFP draws ms':>13s} {'keyed ms':>9s} {'ratio':>6s}")
    for model in args.models.split(","):
        for sampler in args.samplers.split(","):
            for walkers in (int(w) for w in args.walkers.split(",")):
                steps = args.steps * (20 if sampler == "RWMH" else 1)
                sims = [simulation(model, sampler, walkers, steps, args.jit, tfp_draws) for tfp_draws in (True, False)]
                times = [[], []]
                for _ in range(args.repeats):
                    for sim, kept in zip(sims, times):
                        start = time.perf_counter()
                        sim.sample()
                        kept.append((time.perf_counter() - start) / steps * 1e3)
                before, after = (statistics.median(kept) for kept in times)
                print(f"{model:9s} {sampler:7s} {walkers:3d} {before:13.4f} {after:9.4f} {after / before:6.3f}",
                      flush=True)


if __name__ == "__main__":
    main()
