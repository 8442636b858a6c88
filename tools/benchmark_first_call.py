"""Where a new process's time to the first step goes (doc/benchmarks.md): the README's NUTS
quick start (4 walkers, a 2-D Gaussian, 500 + 1000 steps), each run in a fresh process:
importing tati and TensorFlow, then Result.first_step's parts (Simulation set-up, warm start,
tracing the loop, compiling it) and the whole sample() call.

    python tools/benchmark_first_call.py [--modes graph,xla,tfp] [--repeats 3]

graph: the quick start in graph mode (jit_compile false: XLA's cache does not apply). xla: the
quick start as written (jit_compile auto takes XLA, the potential called once per walker), first
with XLA's persistent cache empty (cold), then filled by the cold run (warm). tfp: the floor under graph mode,
TensorFlow Probability's own NUTS with its dual-averaging step size (the kernels tati's NUTS
runs) on the same target and 4 chains in one tf.function, timed to its first transition
(importing TensorFlow Probability is counted in its imports, where tati's tracing counts it;
its total is not measured: TFP's sample_chain takes about 50 s for the 1,500 steps here).
Medians over --repeats.
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
extra = dict(potential=lambda x: 0.5 * tf.reduce_sum((x / [0.1, 10.0]) ** 2), jit_compile="auto" if xla else False)
start = time.perf_counter()
nuts = tati.Simulation(initial_parameters=[1.0, 1.0], dtype="float64", sampler="NUTS", number_walkers=4,
                       burn_in_steps=500, max_steps=1500, seed=1, xla_cache_directory=cache, **extra)
setup = time.perf_counter() - start
result = nuts.sample()
total = time.perf_counter() - start
assert nuts.compilation.xla == xla, nuts.compilation
first = result.first_step
print(json.dumps(dict(imports=imports, setup=setup, warm_start=first.warm_start or 0.0, tracing=first.tracing,
                      compiling=first.compiling, first_step=first.seconds, total=total)))
"""

TFP_CHILD = r"""
import json, time
start = time.perf_counter()
import tensorflow as tf
import tensorflow_probability as tfp
imports = time.perf_counter() - start
start = time.perf_counter()
scales = tf.constant([0.1, 10.0], tf.float64)
kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
    tfp.mcmc.NoUTurnSampler(lambda x: -0.5 * tf.reduce_sum((x / scales) ** 2, axis=-1),
                            step_size=tf.constant(1.0, tf.float64)), num_adaptation_steps=500)
run = tf.function(lambda n: tfp.mcmc.sample_chain(n, current_state=tf.ones([4, 2], tf.float64), kernel=kernel,
                                                  trace_fn=None, seed=tf.constant([1, 2], tf.int32)))
n = tf.constant(1, tf.int32)
setup = time.perf_counter() - start
mark = time.perf_counter()
run.get_concrete_function(n)
tracing = time.perf_counter() - mark
mark = time.perf_counter()
run(n).numpy()
compiling = time.perf_counter() - mark
first = time.perf_counter() - start
print(json.dumps(dict(imports=imports, setup=setup, warm_start=0.0, tracing=tracing, compiling=compiling,
                      first_step=first, total=float("nan"))))
"""

PARTS = ("imports", "setup", "warm_start", "tracing", "compiling", "first_step", "total")


def measure(mode, cache, repeats, warm):
    runs = [child_result(TFP_CHILD if mode == "tfp" else CHILD, mode, cache if warm else tempfile.mkdtemp(prefix="tati-xla-"))
            for _ in range(repeats)]
    return {part: statistics.median(run[part] for run in runs) for part in PARTS}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="graph,xla,tfp")
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
