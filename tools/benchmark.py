"""Sampler overhead: time of one sampler step / time of one bare gradient evaluation, for
every Langevin sampler (issue targets: BAOAB <= 1.5 on case a, every sampler <= 1.10 on b).

Both loops are `tati.loop.make_chunk` loops on the same model, loss and batches: the bare loop
(optimizer None) does batch, loss, gradient, virial and running averages; the sampled loop adds
the sampler's update. So the ratio is what the sampler costs on top of a gradient step.

How: each loop runs `--steps` steps in one compiled chunk (one tf.function call, synchronised by
reading a result). After a warm-up call (tracing), the loops are timed interleaved, bare first,
`--repeats` times, so that machine noise hits all of them alike; the median time per step is kept.

Cases: (a) 2-[8,8]-1 network, two_clusters, full batch of 500 points;
       (b) 784-[128,128]-10 network, 10,000 random points, batches of 100.

    python tools/benchmark.py [--steps 500] [--repeats 7] [--only a|b] [--samplers BAOAB,GLA2]
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

import tati
from tati.loop import make_chunk
from tati.recording.averages import RunningAverages
from tati.samplers import get_sampler, sampler_names

BARE = "bare"


def make_loop(sim, optimizer):
    """A chunk(n) of the simulation's own loop; optimizer None gives the bare gradient loop.

    Each loop has its own step counter and averages; the loops share the model and the batches.
    """
    return make_chunk(sim.model, sim.data, optimizer, tf.Variable(tf.constant(0, tf.int64)),
                      RunningAverages(), 0, False)


def time_chunk(chunk, steps):
    """Seconds per step of one chunk call of `steps` steps."""
    n = tf.constant(steps, tf.int32)
    start = time.perf_counter()
    chunk(n)["loss"].numpy()  # reading a result waits for the steps, even under async eager
    return (time.perf_counter() - start) / steps


def measure(sim, steps, repeats, optimizers):
    """Median seconds per step: {"bare": ..., name: ...} for each optimizer of `optimizers`."""
    loops = {BARE: make_loop(sim, None)}
    loops.update((name, make_loop(sim, opt)) for name, opt in optimizers.items())
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=500, help="steps per timed chunk")
    parser.add_argument("--repeats", type=int, default=7, help="timed chunks per loop")
    parser.add_argument("--only", choices=sorted(CASES), help="run one case")
    parser.add_argument("--samplers", default=",".join(sampler_names()), help="comma-separated names")
    args = parser.parse_args(argv)
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
