"""Record the bitwise fixture: the tables of a fixed set of tiny runs, as today's code writes them.

    python tools/record_fixture.py                          # rerecord this CPU class's fixture
    python tools/record_fixture.py --check                  # compare with it, without pytest
    python tools/record_fixture.py --output new.npz [--part samplers|loops] [--verbose]

tests/test_bitwise_fixture*.py run this tool in a fresh process and compare what it writes with the
committed fixture of this machine's CPU class bit for bit, so that a change that is not meant to
change numbers (moving code, the one-driver redesign of issue #39) provably does not. Rerecord only
for a change that is meant to change numbers, and say so in its commit.

The runs cover every sampler and optimizer, walkers 1 and 4, the graph and XLA loops, burn-in with
adaptation, the ensemble preconditioner, mini-batches, priors, fixed parameters, a Keras model, two
calls of one run, fit() then sample(), a checkpoint's save and resume (its tables, CSV files and
saved state) and a mirrored run over 4 logical CPU devices (doc/distributed.md), each tiny (tens of
steps, a network of 3 hidden units, a 4-parameter potential).

What is stored (one .npz per CPU class, tests/fixtures/bitwise-CLASS.npz): for each run, each
table's columns as they come (int64 or float64, `time_per_nth_step` left out: it is wall-clock)
under `RUN/TABLE/COLUMN`, the column order under `RUN/TABLE/.columns`, a checkpoint's arrays under
`RUN/checkpoint/GROUP/NAME` and CSV files' text (the timing column cut out) under `RUN/csv/NAME`;
`meta` (JSON) holds the CPU's SIMD class, the versions and the runs of each part. The last bits
depend on the CPU's vendor and SIMD extensions (tati/samplers/base.py; the network's float32 matrix
products differ in their last bit between an Intel and an AMD CPU with the same extensions), so the
tests compare with the fixture of this machine's class and skip where there is none. Rerecording
writes this class's fixture and removes the others', which a change of numbers makes stale. They
also depend on oneDNN (TF_ENABLE_ONEDNN_OPTS=0 changes the network's float32 numbers), which the
tool fixes on, with one thread per TensorFlow pool as the test suite has it (two threads gave the
same bits).
"""

import argparse
import json
import os
import platform
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, os.pardir, "tests", "fixtures")
TIMING = "time_per_nth_step"  # recording/columns.py: the only wall-clock column
SIMD_FLAGS = ("avx", "avx2", "fma", "avx512f")
# Set before TensorFlow starts: one thread per pool (as tests/conftest.py), oneDNN's default on.
ENVIRONMENT = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "TF_ENABLE_ONEDNN_OPTS": "1"}


def simd_class():
    """The machine, its CPU's vendor and its SIMD extensions, which change TensorFlow's and XLA's last bits."""
    return ":".join([platform.machine(), _cpuinfo("vendor_id")] + [
        flag for flag in SIMD_FLAGS if flag in _cpuinfo("flags").split()])


def _cpuinfo(field):
    """The first value of a field of /proc/cpuinfo ('' where there is none)."""
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.split(":", 1)[0].strip() == field), "")
    except OSError:
        return ""


def fixture_path(cpu_class=None):
    """The fixture of a CPU class (default: this machine's)."""
    name = (cpu_class or simd_class()).replace(":", "-")
    return os.path.join(FIXTURES, f"bitwise-{name}.npz")


def fixture_paths():
    """Every committed fixture, one per CPU class it was recorded on."""
    return sorted(os.path.join(FIXTURES, name) for name in os.listdir(FIXTURES)
                  if name.startswith("bitwise-") and name.endswith(".npz"))


def cpu_model():
    return _cpuinfo("model name")


# -- models ------------------------------------------------------------------------------------
def quartic(q):
    """One walker's energy (tati vectorises it over walkers): 4 float64 parameters, whole packets."""
    import tensorflow as tf
    return 0.5 * tf.reduce_sum(q ** 2) + 0.1 * tf.reduce_sum(q ** 4)


def quartic_batched(q):
    """[W, 4] -> [W]: XLA with several walkers needs a batched potential."""
    import tensorflow as tf
    return 0.5 * tf.reduce_sum(q ** 2, axis=-1) + 0.1 * tf.reduce_sum(q ** 4, axis=-1)


START = [0.3, -0.2, 0.1, 0.4]


def potential(walkers=1, xla=False, **extra):
    o = dict(potential=quartic, initial_parameters=START, dtype="float64", number_walkers=walkers)
    if xla:
        o.update(potential=quartic_batched, potential_batched=True, jit_compile=True)
    return dict(o, **extra)


def network(walkers=1, **extra):
    """The built-in network on two_clusters: 2 inputs, 3 hidden units, 1 output (13 parameters)."""
    return dict(dict(dataset="two_clusters", dataset_size=40, hidden_dimension=[3], number_walkers=walkers), **extra)


def keras_model():
    import keras
    glorot = keras.initializers.GlorotUniform
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="tanh", kernel_initializer=glorot(1)),
                              keras.layers.Dense(1, kernel_initializer=glorot(2))])
    return dict(model=model, loss="mean_squared", dataset="two_clusters", dataset_size=40)


# -- the runs ------------------------------------------------------------------------------------
# name -> options of one sample() call, or "method" fit() or "fit then sample"; "calls": calls of one
# run; "make": a function giving options made afresh for each run (a Keras model); "save": the
# checkpoint's arrays too; "resume": a call saved and one restored in a new Simulation (the CSV
# files it names too).
HMC = dict(hamiltonian_dynamics_time=0.3)
CSV_FILES = ("run_file", "trajectory_file", "averages_file")
FOUR_CPUS = ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]
# Every sampler in the graph loop: walkers 1 and 4, mini-batches, priors, fixed parameters, a
# Keras model, the ensemble preconditioner, burn-in with adaptation, two calls of one run.
SAMPLERS = {
    "SGLD-network-w1-batches": dict(network(batch_size=10), sampler="SGLD", step_width=0.01, max_steps=30),
    "GLA1-potential-w4-walls": dict(potential(4, prior_lower_boundary=-1.0, prior_upper_boundary=0.42),
                                    sampler="GLA1", step_width=0.1, max_steps=30, every_nth=3),
    "GLA2-network-w4-fixed": dict(network(4, fix_parameters="layer1/biases=0;weight3=0.5"), sampler="GLA2",
                                  step_width=0.05, max_steps=30),
    "BAOAB-network-w4-prior-batches-momenta": dict(network(4, batch_size=10, prior_standard_deviation=2.0),
                                                   sampler="BAOAB", step_width=0.05, max_steps=30,
                                                   record_momenta=True),
    "BAOAB-potential-w1-adapt-mass": dict(potential(1), sampler="BAOAB", step_width=0.1, adapt_mass=True,
                                          burn_in_steps=20, max_steps=40),
    "BAOAB-keras-w4-batches": dict(make=keras_model, batch_size=10, number_walkers=4, sampler="BAOAB",
                                   step_width=0.05, max_steps=20),
    "CCAdL-potential-w4-ensemble": dict(potential(4, covariance_blending=1.0, covariance_after_steps=10),
                                        sampler="CCAdL", step_width=0.1, max_steps=30, save=True),
    "SGHMC-network-w1-estimator": dict(network(batch_size=10), sampler="SGHMC", step_width=0.01, max_steps=30,
                                       gradient_noise_estimator="batch", noise_estimation_batches=3,
                                       mass_rescaling_steps=10, save=True),
    "SGHMC-potential-w4-adam": dict(potential(4), sampler="SGHMC", step_width=0.1, max_steps=30,
                                    gradient_noise_estimator="adam"),
    "HMC1-network-w1": dict(network(1), sampler="HMC1", step_width=0.02, max_steps=30, **HMC),
    "HMC2-potential-w4-burn-in": dict(potential(4), sampler="HMC2", step_width=0.1, burn_in_steps=20, max_steps=40,
                                      save=True, **HMC),
    "HMC2-potential-w4-ensemble": dict(potential(4, covariance_blending=1.0, covariance_after_steps=10),
                                       sampler="HMC2", step_width=0.1, max_steps=30, **HMC),
    "NUTS-potential-w4-burn-in": dict(potential(4), sampler="NUTS", step_width=0.1, burn_in_steps=20, max_steps=30,
                                      max_tree_depth=3, save=True),
    "NUTS-network-w1": dict(network(1), sampler="NUTS", step_width=0.02, max_steps=15, max_tree_depth=3),
    "RWMH-potential-w4-burn-in-two-calls": dict(potential(4), sampler="RWMH", step_width=0.1, burn_in_steps=20,
                                                max_steps=20, calls=2),
    "RWMH-network-w1": dict(network(1), sampler="RWMH", step_width=0.02, max_steps=30),
}
# The other loops: fit() with every optimizer; XLA for one Langevin sampler, HMC2, NUTS and an
# optimizer; a checkpoint saved and resumed; a mirrored run.
LOOPS = {
    "GradientDescent-network-w1-batches-decay": dict(network(batch_size=10), method="fit",
                                                     optimizer="GradientDescent", learning_rate=0.1,
                                                     learning_rate_decay_rate=0.5, learning_rate_decay_steps=10,
                                                     max_steps=30),
    "BarzilaiBorwein-network-w4": dict(network(4), method="fit", optimizer="BarzilaiBorwein", learning_rate=0.1,
                                       max_steps=30),
    "L-BFGS-network-w1": dict(network(1), method="fit", optimizer="L-BFGS", max_steps=20),
    "adam-network-w4-batches": dict(network(4, batch_size=10), method="fit", optimizer="adam", learning_rate=0.01,
                                    max_steps=30),
    "GradientDescent-then-BAOAB-network-w1": dict(network(1), method="fit then sample", optimizer="GradientDescent",
                                                  learning_rate=0.1, sampler="BAOAB", step_width=0.05,
                                                  max_steps=20),
    "BAOAB-potential-w4-xla": dict(potential(4, xla=True), sampler="BAOAB", step_width=0.1, max_steps=30),
    "HMC2-potential-w4-burn-in-xla": dict(potential(4, xla=True), sampler="HMC2", step_width=0.1, burn_in_steps=20,
                                          max_steps=40, **HMC),
    "NUTS-potential-w1-xla": dict(potential(1, xla=True), sampler="NUTS", step_width=0.1, max_steps=20,
                                  max_tree_depth=3),
    "GradientDescent-network-w4-xla": dict(network(4, jit_compile=True), method="fit", optimizer="GradientDescent",
                                           learning_rate=0.1, max_steps=30),
    "BAOAB-network-w4-batches-resumed": dict(network(4, batch_size=10), sampler="BAOAB", step_width=0.05,
                                             max_steps=20, resume=CSV_FILES),
    "SGLD-potential-w4-mirrored": dict(potential(4), sampler="SGLD", step_width=0.1, max_steps=30,
                                       distribution="mirrored", devices=FOUR_CPUS),
}
PARTS = {"samplers": SAMPLERS, "loops": LOOPS}


def options_of(spec):
    """A run's Simulation options (a Keras model is made afresh: a run changes its weights)."""
    o = {k: v for k, v in spec.items() if k not in ("method", "calls", "make", "save", "resume")}
    o.setdefault("jit_compile", False)  # graph mode unless a case says XLA: not jit_compile auto's choice
    return dict(o, **spec["make"]() if "make" in spec else {}, seed=3)


def frames(result):
    tables = {"run_info": result.run_info, "trajectory": result.trajectory, "averages": result.averages}
    if result.momenta is not None:
        tables["momenta"] = result.momenta
    return tables


def calls(spec, save_model=None):
    """{table: DataFrame} of one run's calls, one after the other."""
    import pandas as pd
    import tati
    simulation = tati.Simulation(**options_of(spec), save_model=save_model)
    method = spec.get("method", "sample")
    if method == "fit then sample":
        return {**{f"fit_{k}": v for k, v in frames(simulation.fit()).items()}, **frames(simulation.sample())}
    results = [frames(getattr(simulation, method)()) for _ in range(spec.get("calls", 1))]
    return {name: pd.concat([r[name] for r in results], ignore_index=True) for name in results[0]}


def saved(spec):
    """The run's tables and its checkpoint's arrays."""
    from tati.engine import checkpoint
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "state.npz")
        out = table_arrays(calls(spec, save_model=path))
        out.update({f"checkpoint/{k}": v for k, v in checkpoint.load(path)[1].items()})
    return out


def resumed(spec):
    """A call saved, then one restored in a new Simulation, appending to the CSV files
    spec["resume"] names: both calls' tables ("saved_" the first), the files and both
    checkpoints' arrays."""
    import tati
    from tati.engine import checkpoint
    with tempfile.TemporaryDirectory() as directory:
        files = {name: os.path.join(directory, f"{name}.csv") for name in spec["resume"]}
        path = os.path.join(directory, "state.npz")
        options = dict(options_of(spec), **files, save_model=path)
        out = table_arrays({f"saved_{k}": v for k, v in frames(tati.Simulation(**options).sample()).items()})
        out.update({f"saved_checkpoint/{k}": v for k, v in checkpoint.load(path)[1].items()})
        out.update(table_arrays(frames(tati.Simulation(**options, restore_model=path).sample())))
        out.update({f"checkpoint/{k}": v for k, v in checkpoint.load(path)[1].items()})
        for name, file in files.items():
            with open(file, encoding="utf-8") as handle:
                out[f"csv/{name}"] = np.array(without_timing(handle.read()))
    return out


def without_timing(text):
    """A CSV file's text without its wall-clock column."""
    lines = text.split("\n")
    header = lines[0].split(",")
    if TIMING not in header:
        return text
    cut = header.index(TIMING)
    return "\n".join(",".join(cells[:cut] + cells[cut + 1:]) if line else line
                     for line in lines for cells in [line.split(",")])


def table_arrays(tables):
    """{TABLE/COLUMN: array, TABLE/.columns: names} without the timing column."""
    out = {}
    for name, frame in tables.items():
        frame = frame.drop(columns=[TIMING], errors="ignore")
        out[f"{name}/.columns"] = np.array([str(c) for c in frame.columns])
        for column in frame.columns:
            out[f"{name}/{column}"] = frame[column].to_numpy(copy=True)
    return out


def record_run(spec):
    """{key: array} of one run."""
    if "resume" in spec:
        return resumed(spec)
    return saved(spec) if spec.get("save") else table_arrays(calls(spec))


def record(parts, verbose=False):
    """{RUN/key: array} of every run of the parts, and the run names of each part."""
    import time
    arrays, names = {}, {}
    for part in parts:
        names[part] = list(PARTS[part])
        for name, spec in PARTS[part].items():
            start = time.process_time()
            arrays.update({f"{name}/{key}": value for key, value in record_run(spec).items()})
            if verbose:
                print(f"{name}: {time.process_time() - start:.1f} s of CPU", file=sys.stderr, flush=True)
    return arrays, names


def versions():
    import keras
    import pandas
    import tensorflow as tf
    import tensorflow_probability as tfp
    return {"python": platform.python_version(), "numpy": np.__version__, "pandas": pandas.__version__,
            "tensorflow": tf.__version__, "keras": keras.__version__, "tensorflow_probability": tfp.__version__}


def load(path):
    """{key: array} of a recording and its meta."""
    with np.load(path, allow_pickle=False) as file:
        arrays = {key: file[key] for key in file.files}
    return arrays, json.loads(str(arrays.pop("meta")))


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _lines(text):
    """A CSV file's text (0-d) or a column list as lines."""
    return str(text).split("\n") if text.ndim == 0 else [str(line) for line in text]


def first_difference(a, b):
    """Where two arrays first differ, in words."""
    if a.dtype.kind == "U" and b.dtype.kind == "U":  # a CSV file's text or a table's columns
        a, b = _lines(a), _lines(b)
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        shown = [lines[at][:120] if at < len(lines) else "(no line)" for lines in (a, b)]
        return f"line {at}: {shown[0]!r} recorded, {shown[1]!r} now"
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype} {a.shape} recorded, {b.dtype} {b.shape} now"
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    differ = (flat_a.view(np.uint8).reshape(flat_a.size, -1) != flat_b.view(np.uint8).reshape(flat_b.size, -1)).any(1)
    at = int(np.flatnonzero(differ)[0])
    return (f"element {at} ({int(differ.sum())} of {flat_a.size} differ): {flat_a[at].item()!r} recorded, "
            f"{flat_b[at].item()!r} now")


def differences(recorded, now, run):
    """Lines naming each array of the run that differs between two recordings, with where."""
    prefix = f"{run}/"
    keys = sorted({k for k in recorded if k.startswith(prefix)} | {k for k in now if k.startswith(prefix)})
    lines = []
    for key in keys:
        if key not in now or key not in recorded:
            lines.append(f"{key}: {'only in the fixture' if key in recorded else 'not in the fixture'}")
        elif not same(recorded[key], now[key]):
            lines.append(f"{key}: {first_difference(recorded[key], now[key])}")
    if not keys:
        lines.append(f"{run}: not in the fixture (a new run: rerecord, python tools/record_fixture.py)")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", help="the .npz to write (default: this CPU class's fixture, removing the "
                                         "other classes', which a change of numbers makes stale)")
    parser.add_argument("--part", choices=list(PARTS), action="append",
                        help="record only this part's runs (repeatable; default: every part)")
    parser.add_argument("--check", action="store_true",
                        help="record and compare with this CPU class's committed fixture instead of writing")
    parser.add_argument("--verbose", action="store_true", help="print each run's seconds of CPU to stderr")
    args = parser.parse_args(argv)
    os.environ.update(ENVIRONMENT)  # before TensorFlow starts (tati is imported by the runs)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from tati.engine.distribute import split_cpu
    split_cpu(4)  # before TensorFlow initialises its devices: the mirrored run's 4 replicas
    parts = args.part or list(PARTS)
    arrays, names = record(parts, args.verbose)
    meta = {"simd": simd_class(), "cpu": cpu_model(), "versions": versions(), "parts": names,
            "environment": ENVIRONMENT}
    if args.check:
        if not os.path.exists(fixture_path()):
            sys.exit(f"no fixture was recorded on a {meta['simd']} CPU, as this one is (last bits differ by class): "
                     "rerecord on an unchanged checkout to compare")
        recorded, _ = load(fixture_path())
        runs = [run for part in parts for run in PARTS[part]]
        found = {run: differences(recorded, arrays, run) for run in runs}
        for run, lines in found.items():
            print("\n".join(lines[:5] + ([f"{run}: ... and {len(lines) - 5} more"] if len(lines) > 5 else [])))
        changed = sum(bool(lines) for lines in found.values())
        print(f"{changed} of {len(runs)} runs differ" if changed else "every table is the same bit for bit")
        sys.exit(1 if changed else 0)
    output = args.output or fixture_path()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    np.savez_compressed(output, meta=np.array(json.dumps(meta)), **arrays)
    if args.output is None:
        for stale in set(fixture_paths()) - {output}:
            os.remove(stale)
            print(f"removed {os.path.relpath(stale)}: its numbers are those of before this change", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(HERE, os.pardir))  # this checkout's tati, run from anywhere
    main()
