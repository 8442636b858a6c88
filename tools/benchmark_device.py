"""One benchmark for any device: tati against Keras and TFP in one process, on whatever device
TensorFlow picks (the same script on CPU and GPU; it prints the devices it sees).

  a  tati's stochastic-gradient samplers BAOAB and SGHMC through `tati.Simulation(model=...)`
     on a Keras MLP 784-1024-512-10 (1.3 million parameters; --quick: 784-12-10, 9.6 thousand)
     on random data, batches of 128, against Keras' own `model.fit` with SGD on the same
     network and batches: time per step. Ours is the Simulation's compiled chunk (no rows in
     between, as tools/benchmark_hmc.py builds it); Keras' is one `fit` call of one epoch.
     Both in graph mode (Keras compiled with jit_compile=False).
  b  BAOAB, HMC2 and NUTS on the 100-D Gaussian of tools/benchmark_hmc.py (standard deviations
     0.1 ... 1, float64, step width 0.05) with 1, 16, 256 and 4096 walkers (potential_batched),
     time per walker-step, against TFP's batched chains where TFP has the sampler: HMC2 against
     tfp.mcmc.HamiltonianMonteCarlo (legs of 10 steps; per leapfrog step), NUTS against
     tfp.mcmc.NoUTurnSampler (max tree depth 10 both; per draw). Both in one compiled loop,
     graph mode or XLA (--xla).

Each pair is timed interleaved, median of --repeats after a first call (tracing); ratio =
tati's time / the reference's time (below 1: tati is faster).

    python tools/benchmark_device.py [--parts a,b] [--steps 200] [--repeats 5] [--xla]
        [--walkers 1,16,256,4096] [--csv FILE] [--threads N] [--quick]

--quick: the small network, walkers 1 and 16, few steps, 1 repeat (about half a minute of CPU).
"""

import argparse
import csv
import statistics
import time

import keras
import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

import benchmark_hmc
import tati
from benchmark import set_threads
from benchmark_bookkeeping import steps_type
from tati.engine.loop import Loop, compile_chunk
from tati.recording.averages import RunningAverages

NO_ROWS = 10 ** 9  # every_nth of the timed chunks: no rows in between
BATCH = 128
FULL_NETWORK, QUICK_NETWORK = (1024, 512), (12,)
NETWORK_STEP = 1e-3  # SGD's learning rate and the samplers' step width on the network
COLUMNS = ("part", "case", "sampler", "walkers", "unit", "tati_us", "reference", "reference_us", "ratio")


def devices():
    return ", ".join(f"{d.device_type}:{d.name}" for d in tf.config.list_physical_devices()
                     if d.device_type != "TPU_SYSTEM")


def interleaved_medians(runs, repeats):
    """{name: median seconds per unit} of the callables `runs` (each returns its seconds per
    unit), after one untimed call each, called in turn `repeats` times."""
    for run in runs.values():
        run()
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name].append(run())
    return {name: statistics.median(t) for name, t in times.items()}


def timed_chunk(sim, steps, jit, walkers=1):
    """The simulation's own compiled chunk of `steps` steps: a callable giving seconds per step."""
    chunk = compile_chunk(Loop(sim.model, sim.data, sim.sampler, tf.Variable(tf.constant(0, tf.int64)),
                               RunningAverages(walkers), every_nth=NO_ROWS, jit_compile=jit))
    n = tf.constant(steps, steps_type(sim.sampler))

    def run():
        start = time.perf_counter()
        chunk(n)["loss"].numpy()  # reading a result waits for the steps
        return (time.perf_counter() - start) / steps
    return run


# -- a: a Keras network ---------------------------------------------------------------------------
def mlp(hidden):
    layers = [keras.Input((784,))] + [keras.layers.Dense(width, activation="relu") for width in hidden]
    return keras.Sequential(layers + [keras.layers.Dense(10)])


def network_data(steps, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((steps * BATCH, 784)).astype(np.float32)
    labels = rng.integers(0, 10, size=(steps * BATCH, 1)).astype(np.float32)
    return features, labels


def keras_fit(hidden, features, labels):
    """Keras' SGD on its own copy of the network: one epoch's fit, seconds per step."""
    model = mlp(hidden)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=NETWORK_STEP), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    steps = len(features) // BATCH

    def run():
        start = time.perf_counter()
        model.fit(features, labels, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
        return (time.perf_counter() - start) / steps
    return run, model.count_params()


def part_a(args):
    hidden = QUICK_NETWORK if args.quick else FULL_NETWORK
    features, labels = network_data(args.steps)
    run_keras, parameters = keras_fit(hidden, features, labels)
    case = f"784-{'-'.join(map(str, hidden))}-10 ({parameters} parameters), batch {BATCH}"
    rows = []
    for sampler in ("BAOAB", "SGHMC"):
        sim = tati.Simulation(model=mlp(hidden), dataset=(features, labels), loss="softmax_cross_entropy",
                              batch_size=BATCH, sampler=sampler, step_width=NETWORK_STEP, every_nth=NO_ROWS,
                              seed=1)
        median = interleaved_medians({"tati": timed_chunk(sim, args.steps, False), "keras": run_keras},
                                     args.repeats)
        rows.append(row("a", case, sampler, 1, "step", median["tati"], "Keras fit, SGD", median["keras"]))
    return rows


# -- b: the 100-D Gaussian --------------------------------------------------------------------------
def tati_gaussian(sampler, walkers, steps, jit):
    potential, dimension, h = benchmark_hmc.gaussian()
    own = {"HMC2": {"hamiltonian_dynamics_time": benchmark_hmc.LEG * h}, "NUTS": {"max_tree_depth": 10}}
    sim = tati.Simulation(potential=potential, potential_batched=True, dtype="float64",
                          initial_parameters=np.full((walkers, dimension), 0.01), number_walkers=walkers,
                          sampler=sampler, step_width=h, every_nth=NO_ROWS, jit_compile=jit, seed=1,
                          **own.get(sampler, {}))
    return timed_chunk(sim, steps, jit, walkers)


def tfp_gaussian(sampler, walkers, steps, jit):
    """TFP's batched chains: seconds per leapfrog step (HMC) or per draw (NUTS); None without
    a TFP counterpart."""
    potential, dimension, h = benchmark_hmc.gaussian()
    target = lambda x: -potential(x)  # noqa: E731
    if sampler == "HMC2":
        kernel = tfp.mcmc.HamiltonianMonteCarlo(target, step_size=h, num_leapfrog_steps=benchmark_hmc.LEG)
        draws, per_draw = max(1, steps // benchmark_hmc.LEG), benchmark_hmc.LEG
    elif sampler == "NUTS":
        kernel, draws, per_draw = tfp.mcmc.NoUTurnSampler(target, step_size=h, max_tree_depth=10), steps, 1
    else:
        return None
    start_state = tf.constant(np.full((walkers, dimension), 0.01))

    @tf.function(jit_compile=jit)
    def chain(state):
        return tfp.mcmc.sample_chain(draws, state, kernel=kernel, trace_fn=None, seed=[1, 2])[-1]

    def run():
        start = time.perf_counter()
        chain(start_state).numpy()
        return (time.perf_counter() - start) / (draws * per_draw)
    return run


def part_b(args):
    rows = []
    for walkers in args.walkers:
        for sampler in ("BAOAB", "HMC2", "NUTS"):
            # NUTS's draws are trees of up to 2^10 - 1 leapfrog steps: fewer of them
            steps = max(1, args.steps // 10) if sampler == "NUTS" else args.steps
            runs = {"tati": tati_gaussian(sampler, walkers, steps, args.xla)}
            theirs = tfp_gaussian(sampler, walkers, steps, args.xla)
            if theirs is not None:
                runs["tfp"] = theirs
            median = interleaved_medians(runs, args.repeats)
            unit = "draw" if sampler == "NUTS" else "step"
            reference = {"HMC2": "TFP HMC", "NUTS": "TFP NUTS"}.get(sampler, "")
            rows.append(row("b", f"100-D Gaussian, {'XLA' if args.xla else 'graph'}", sampler, walkers,
                            f"walker-{unit}", median["tati"] / walkers, reference,
                            median["tfp"] / walkers if theirs is not None else None))
    return rows


# -- the table --------------------------------------------------------------------------------------
def row(part, case, sampler, walkers, unit, ours, reference, theirs):
    """A table row; times in seconds in, microseconds out; no reference: no ratio."""
    return {"part": part, "case": case, "sampler": sampler, "walkers": walkers, "unit": unit,
            "tati_us": 1e6 * ours, "reference": reference,
            "reference_us": None if theirs is None else 1e6 * theirs,
            "ratio": None if theirs is None else ours / theirs}


def number(value):
    return "" if value is None else f"{value:.4g}"


def print_table(rows):
    print("| part | case | sampler | walkers | per | tati us | reference | reference us | ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['part']} | {r['case']} | {r['sampler']} | {r['walkers']} | {r['unit']} | {number(r['tati_us'])} "
              f"| {r['reference']} | {number(r['reference_us'])} | {number(r['ratio'])} |", flush=True)


def write_csv(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)


PARTS = {"a": part_a, "b": part_b}


def walker_counts(text):
    try:
        counts = [int(w) for w in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"takes positive integers separated by commas, not {text!r}")
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="a,b", help="a (Keras network), b (100-D Gaussian), or a,b")
    parser.add_argument("--steps", type=int, help="steps per timed call (default 200; --quick 10; NUTS a tenth)")
    parser.add_argument("--repeats", type=int, help="timed calls of each (default 5; --quick 1)")
    parser.add_argument("--walkers", type=walker_counts, help="walker counts of part b (default 1,16,256,4096)")
    parser.add_argument("--xla", action="store_true", help="part b compiled with XLA (jit_compile), both sides")
    parser.add_argument("--csv", help="also write the table to this CSV file")
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    parser.add_argument("--quick", action="store_true", help="everything small: a smoke run of about 30 s of CPU")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    if any(part not in PARTS for part in parts):
        parser.error(f"--parts takes a, b or a,b, not {args.parts}")
    for name, value in (("--steps", args.steps), ("--repeats", args.repeats)):
        if value is not None and value < 1:
            parser.error(f"{name} takes a positive integer, not {value}")
    args.steps = args.steps or (10 if args.quick else 200)
    args.repeats = args.repeats or (1 if args.quick else 5)
    args.walkers = args.walkers or ([1, 16] if args.quick else [1, 16, 256, 4096])
    set_threads(args.threads)
    print(f"devices: {devices()}", flush=True)
    rows = [r for part in parts for r in PARTS[part](args)]
    print_table(rows)
    if args.csv:
        write_csv(args.csv, rows)
    return rows


if __name__ == "__main__":
    main()
