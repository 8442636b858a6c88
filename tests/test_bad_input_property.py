"""Bad input, systematically (issue #6): property-based tests with hypothesis.

Random values of wrong type, range and shape go into every option of the table (through
`resolve`, `Simulation(...)` and random command lines), random files into the CSV reader,
parse_parameters_file and restore_model, and odd but valid-looking combinations into a few
short sample() runs. Every case must either work or raise the documented error: an InputError
whose message is one line naming the option or file at fault (on the command line: that line
on stderr and exit status 2). Any other exception is a bug to fix where it arises.

The examples are derandomized (a fixed seed per test), so each run draws the same ones:
300 (resolve) + 42 options x 8 + 40 (Simulation) + 100 (command line) + 120 (CSV files) + 70
(trajectory files) + 70 (checkpoints) + 20 (sample) = 1056 examples, about 45 s on two idle cores
(most of it the 20 short sample() runs).
Sizes (dataset_size, layer widths, walkers) stay small in the tests that build a Simulation:
a network too large for memory is not what these tests are about.
"""

import io
import json
from decimal import Decimal
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tati
from tati.engine import checkpoint
from tati.cli import common
from tati.cli.optimize import GROUPS as OPTIMIZE_GROUPS
from tati.cli.sample import GROUPS as SAMPLE_GROUPS
from tati.data.csv import read_csv_files
from tati.errors import InputError, SamplingError
from tati.models.start import parameters_from_trajectory
from tati.config.options import ACTIVATION_NAMES, BY_NAME, LOSS_NAMES, OPTIONS, Boolean, ListOf, Number, resolve
from tati.recording.averages import RunningAverages
from tati.engine.registry import sampler_names, samplers_where


def examples(count):
    # function_scoped_fixture: tmp_path and capsys are shared by a test's examples on purpose
    # (each example rewrites its files and reads the captured output away).
    return settings(max_examples=count, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.large_base_example])


def assert_names(error, culprits):
    """The documented error: one line that names one of the culprits."""
    message = str(error)
    assert len(message.splitlines()) == 1 and message == message.strip(), repr(message)
    culprits = [" ".join(str(c).split()) for c in culprits]  # InputError folds whitespace
    assert any(c in message for c in culprits), f"{message!r} names none of {culprits}"
    for culprit in culprits:
        message = message.replace(culprit, "FILE") if "/" in culprit else message
    event(" ".join(message.split()[:6]))  # which errors the examples reach (--hypothesis-show-statistics)


def potential(q):
    return 0.5 * tf.reduce_sum(q ** 2)


# -- values ------------------------------------------------------------------------------------
TRICKY_TEXT = ["", " ", "none", "None", "nan", "-inf", "inf", "1e400", "-1e400", "0", "-0", "-1",
               "1", "1.5", "2.0", "1e-320", "0x10", "1_0", "true", "False", "yes", "8,8", "8,,8",
               ",", "1,x", "[1, 2]", "\n", "a\x00b", "é", "１", "BAOAB", "baoab", "two_clusters",
               "float16", "9" * 400, "9223372036854775808"]
ODD_OBJECTS = [np.float32(1.5), np.int64(3), np.float64("nan"), np.bool_(True), np.array(2.0),
               np.array([1.0, 2.0]), np.zeros((2, 0)), object(), abs, len, Fraction(1, 3),
               Decimal("1.5"), b"\x08", range(3), {1, 2}, 1 + 2j, float("inf"), -0.0, 10 ** 400,
               2 ** 63, 2 ** 63 - 1, -(2 ** 63)]


def scalars(small):
    """Values of every type; with `small`, texts and integers too short to ask for a huge
    dataset or network (huge values that the option table must reject stay in ODD_OBJECTS)."""
    integers = st.integers(-3, 30) if small else st.integers()
    return st.one_of(st.none(), st.booleans(), integers, st.floats(), st.floats(width=32),
                     st.text(max_size=3 if small else 12), st.sampled_from(TRICKY_TEXT),
                     st.binary(max_size=4), st.sampled_from(ODD_OBJECTS))


def wild(small=False):
    """Scalars and lists, tuples and dicts of them: wrong types and shapes."""
    return st.recursive(scalars(small), lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=3), inner, max_size=2)),
        max_leaves=6)


def numbers(minimum=0):
    """Around an option's lower bound, as Python values and as the strings of a command line."""
    values = st.one_of(st.sampled_from([minimum - 1, minimum, minimum + 0.5, minimum + 1, 2, 1e-300, 1e300,
                                        2 ** 63 - 1, 2 ** 63, 10 ** 400]),
                       st.integers(minimum - 2, minimum + 8), st.floats(minimum - 2, minimum + 5))
    return st.one_of(values, values.map(str))


def typos(names):
    return st.sampled_from(list(names)).flatmap(lambda n: st.sampled_from(
        [n, n.upper(), n.lower(), n[:-1], n + " ", " " + n, n + "x"]))


fix_names = st.sampled_from(["param0", "param1", "param2", "weight0", "bias0", "weight99", "layer1/weights",
                             "layer1/biases", "layer2/weights", "output/weights", "output/biases", "", "x"])
fix_values = st.lists(st.sampled_from(["0", "0.5", "-1", "1e400", "nan", "inf", "", "x", " 2 "]), max_size=3)
fix_specs = st.lists(st.tuples(fix_names, st.sampled_from(["=", "", "==", " = "]), fix_values).map(
    lambda t: t[0] + t[1] + ",".join(t[2])), max_size=3).map(";".join)

CALLABLES = [potential, lambda q: q, lambda q: q[5], lambda q: "energy", lambda q: None,
             lambda q: tf.reduce_sum(q) > 0, lambda q: tf.cast(tf.reduce_sum(q), tf.int32),
             lambda q: float("nan"), lambda q: tf.reduce_sum(q, keepdims=True), abs, len, tf.reduce_sum]


def arrays(rows, columns):
    elements = st.one_of(st.floats(-100, 100), st.sampled_from([np.nan, np.inf, 1e39, -1e300, 0.0]))
    return st.lists(st.lists(elements, min_size=columns, max_size=columns), min_size=rows, max_size=rows).map(np.array)


datasets = st.one_of(
    typos(["two_clusters", "two_circles", "four_squares", "two_spirals"]),
    st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 2)).flatmap(
        lambda s: st.tuples(arrays(s[0], s[1]), arrays(s[0], s[2]))),
    st.tuples(arrays(4, 2), st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.0, 0.5]), min_size=4, max_size=4)),
    st.lists(wild(small=True), min_size=2, max_size=2))

initial_parameters = st.one_of(
    st.lists(st.floats(-3, 3), max_size=12),
    st.lists(st.lists(st.floats(-3, 3), min_size=2, max_size=2), max_size=5),
    st.lists(st.one_of(st.floats(-3, 3), st.lists(st.floats(-3, 3), max_size=3)), max_size=3),
    st.lists(st.sampled_from(["1", "x", 10 ** 400, 1j, None, np.nan]), min_size=1, max_size=3),
    st.text(max_size=12))

SPECIAL = {
    "dataset": datasets,
    "hidden_dimension": st.one_of(st.lists(st.integers(-1, 6), max_size=3),
                                  st.lists(st.integers(0, 6).map(str), max_size=3).map(",".join)),
    "hidden_activation": typos(ACTIVATION_NAMES),
    "output_activation": typos(ACTIVATION_NAMES),
    "loss": st.one_of(typos(LOSS_NAMES), st.sampled_from(CALLABLES)),
    "dtype": typos(["float32", "float64", "float16", "int32"]),
    "model": st.sampled_from([5, "model", object(), potential]),
    "potential": st.sampled_from(CALLABLES + [5, "U"]),
    "initial_parameters": initial_parameters,
    "fix_parameters": fix_specs,
    "parse_steps": st.one_of(st.lists(st.integers(-1, 5), max_size=3), st.text(max_size=4)),
    "sampler": typos(sampler_names() + ["StochasticGradientLangevinDynamics", "HamiltonianMonteCarlo_2ndOrder"]),
    "optimizer": typos(["GradientDescent", "gd", "adam", "sgd", "rmsprop", "LossScaleOptimizer", "Optimizer",
                        "get", "deserialize", "serialize", "schedules"]),
    "on_nan": typos(["stop", "continue"]),
}


def values_for(name, small):
    """The option's special values or boundary numbers (as far as its kind has any), or anything."""
    kind = BY_NAME[name].kind
    inner = getattr(kind, "kind", kind)  # Optional(...) wraps the kind
    near = [numbers(inner.minimum or 0)] if hasattr(inner, "minimum") else []
    choices = [typos(inner.choices)] if getattr(inner, "choices", None) else []
    special = [SPECIAL[name]] if name in SPECIAL else []
    return st.one_of(*special, *near, *choices, st.sampled_from(ODD_OBJECTS + TRICKY_TEXT), wild(small))


ALL_NAMES = [option.name for option in OPTIONS]
ANY_VALUE = {name: values_for(name, small=False) for name in ALL_NAMES}
SMALL_VALUE = {name: values_for(name, small=True) for name in ALL_NAMES}


def plain(value):
    """A value whose equality is plain to check."""
    return value is None or isinstance(value, (str, bool, int, float)) or (
        isinstance(value, list) and all(isinstance(v, (int, float)) for v in value))


def same(a, b):
    return a == b or (a != a and b != b)  # NaN: the kinds of Python-only values pass it through


# -- the option table ------------------------------------------------------------------------------
UNKNOWN_NAMES = ["step_widht", "seeds", "Seed", " seed", "seed\n", "", "ñ", "dataset_siz", "potential_batche"]


@examples(300)
@given(st.lists(st.sampled_from(ALL_NAMES + UNKNOWN_NAMES), min_size=1, max_size=3, unique=True).flatmap(
    lambda names: st.fixed_dictionaries({n: ANY_VALUE.get(n, scalars(small=False)) for n in names})))
def test_resolve(options):
    """Any value for any option: converted and checked, or one line naming the option."""
    try:
        values = resolve(options)
    except InputError as error:
        assert_names(error, options)
        return
    for name in options:  # a value that passed its kind passes it again, unchanged
        if BY_NAME[name].on_command_line and plain(values[name]):
            assert same(BY_NAME[name].kind(name, values[name]), values[name])
    event("works")


BASES = {"network": {"hidden_dimension": [2], "dataset_size": 12},
         "potential": {"potential": potential, "initial_parameters": [0.5, -0.5]}}
# Values that reach past the option table into data, model, prior and sampler code, by option;
# the riskiest first, as Hypothesis tries the first element of sampled_from first.
EDGES = {
    "initial_parameters": [[10 ** 400, 1.0], [1.0, [2.0]], [[1.0], [1.0, 2.0]], [], [[]], "1,x", [1j, 2.0],
                           [np.nan, 1.0], ["1", "2"], np.zeros((3, 2)), [[0.5, -0.5]] * 2, {"a": 1}, 5,
                           np.zeros((2, 2, 2))],
    "dataset": [(np.full((4, 2), 1e39), np.ones((4, 1))), (np.zeros((4, 0)), np.ones((4, 1))),
                (np.zeros((4, 2)), np.zeros((4, 0))), ([[10 ** 400, 1]], [1]), ([[1, 2], [3]], [1, 2]),
                (np.zeros((4, 2)), [-5.0] * 4), ("a", "b"), (None, None), (np.zeros((4, 2)), np.ones((3, 1))),
                "two_cluster", (np.zeros((2, 2, 2)), [1, 2])],
    "dataset_noise": [1e39, 1e300, 1e308],
    "dataset_size": [1, 2, 3],
    "optimizer": ["LossScaleOptimizer", "Optimizer", "lossscaleoptimizer", "schedules", "get", "deserialize", "",
                  "Muon", "adam"],
    "model": [5, "model", object(), potential],
    "potential": CALLABLES + [5],
    "loss": [lambda labels, outputs: tf.reduce_sum(outputs), "softmax_cross_entropy", "squared", 5],
    "output_dimension": [0, 1, 3],
    "input_dimension": [0, 1, 3],
    "number_walkers": [2, 4],
    "potential_batched": [True, "yes"],
    "fix_parameters": ["param0=1;param1=2", "weight0=1e400", "layer1/weights=1,2", "param0", "=1", "param0=1,2",
                       ";;", "output/biases=nan", "x=1"],
    "parse_steps": [[0], [], [1, 2, 3]],
    "parse_parameters_file": [".", "", "missing.csv", "/"],
    "batch_data_files": [".", "", "missing.csv", [], ["."]],
    "batch_size": [1, 10 ** 6],
    "covariance_blending": [1.0, 1e300],
    "sampler": ["NUTS", "RWMH", "hmc", "HamiltonianMonteCarlo_2ndOrder", ""],
    "noise_estimate": [0.5, 1e300],
    "prior_lower_boundary": [1e308, -1e308, 0.0],
    "prior_upper_boundary": [-1e308, 1e308, 0.0],
    "hidden_dimension": [[10 ** 400], "8,x", [0], [1, 1]],
    "dtype": ["float16", "int32", tf.float32, np.float64],
}


def kinds(name):
    """The option's kind and the kinds it wraps (Optional, ListOf)."""
    kind, found = BY_NAME[name].kind, []
    while kind is not None:
        found.append(kind)
        kind = getattr(kind, "kind", None)
    return found


def edges(name):
    """EDGES, then the edges of the option's kinds: bounds, overflow, NaN, wrong types."""
    values = list(EDGES.get(name, []))
    for kind in kinds(name):
        if isinstance(kind, Number):
            low = kind.minimum or 0
            values += [10 ** 400, 2 ** 63, low, low - 1, float("nan"), float("inf"), "1e400", 1e300, "x", True]
        if getattr(kind, "choices", None):
            values += [kind.choices[0].upper(), kind.choices[0] + " ", "", 5]
        if isinstance(kind, Boolean):
            values += ["maybe", 2, np.bool_(True)]
        if isinstance(kind, ListOf):
            values += ["1,x", [[1]], [0], "0", {"a": 1}, b"\x08", [10 ** 400]]
    return values + [None, object(), [1, 2]]


# Options that a Simulation does not use before sample() or fit(): their kinds alone check them
# (test_resolve); the rest get examples of their own here.
# xla_cache_directory too: a Simulation creates it and names it in this process's TF_XLA_FLAGS,
# which every later subprocess of the test worker would inherit (tests/engine/test_xla_cache.py).
# distribution and devices too: a Simulation with one creates the process's one tf.distribute
# layout (tati/engine/distribute.py), and a later test in the worker that runs another layout
# (doc/distributed.md's snippet) is then refused; tests/engine/test_distribute.py runs them in
# processes of their own.
LATER = {"run_file", "trajectory_file", "averages_file", "save_model", "restore_model", "progress", "max_steps",
         "every_nth", "burn_in_steps", "on_nan", "dataset_seed", "xla_cache_directory", "distribution", "devices"}
BUILT = [name for name in ALL_NAMES if name not in LATER]


def build(base, changes):
    """Simulation(base + changes) builds data, model, prior, sampler and optimizer, or the
    InputError names one of the changes."""
    try:
        simulation = tati.Simulation(**{**BASES[base], **changes})
        simulation.sampler, simulation.optimizer
    except InputError as error:
        assert_names(error, changes)
        return
    event("works")
    assert simulation.num_parameters >= 1 and np.all(np.isfinite(simulation.model.get_parameters()))
    if simulation.model.uses_data:
        assert all(np.all(np.isfinite(array.numpy())) for array in simulation.data.all())


@pytest.mark.parametrize("name", BUILT)
@examples(8)
@given(data=st.data())
def test_simulation(name, data):
    """A small working simulation with this option (and now and then another one) set to an
    edge or a random value."""
    base = data.draw(st.sampled_from(sorted(BASES)), label="base")
    values = st.one_of(st.sampled_from(edges(name)), st.sampled_from(edges(name)), SMALL_VALUE[name])
    changes = {name: data.draw(values, label=name)}
    other = data.draw(st.one_of(st.none(), st.none(), st.sampled_from(BUILT)), label="other")
    if other is not None and other != name:
        changes[other] = data.draw(st.one_of(st.sampled_from(edges(other)), SMALL_VALUE[other]), label=other)
    build(base, changes)


COMBINATIONS = [
    {"dataset": (np.zeros((4, 2)), [-5.0] * 4), "loss": "softmax_cross_entropy"},
    {"dataset": (np.zeros((4, 2)), [0.0, 1.0, 2.0, 0.5]), "loss": "softmax_cross_entropy", "output_dimension": 2},
    {"loss": "softmax_cross_entropy", "output_dimension": 5},
    {"jit_compile": True, "batch_size": 2},
    {"potential_batched": True, "number_walkers": 3},
    {"jit_compile": True, "number_walkers": 2},
    {"covariance_blending": 1.0, "number_walkers": 4, "sampler": "HMC1"},
    {"covariance_blending": 1.0, "number_walkers": 4, "covariance_blocks": "layers"},
    {"collapse_walkers": True, "number_walkers": 3},
    {"prior_lower_boundary": 1.0, "prior_upper_boundary": 0.0},
    {"prior_lower_boundary": 0.5, "prior_upper_boundary": 0.5, "prior_power": 3.0},
    {"sampler": "SGHMC", "noise_estimate": 2.0, "friction_constant": 1.0},
    {"fix_parameters": "layer1/weights=0.1", "hidden_dimension": [3]},
    {"fix_parameters": "param0=1", "number_walkers": 2},
    {"initial_parameters": [[0.5, -0.5], [1.0, 1.0]], "number_walkers": 2},
    {"initial_parameters": [[0.5, -0.5], [1.0, 1.0]], "number_walkers": 3},
    {"batch_size": 5, "dataset_size": 4},
    {"input_dimension": 2, "output_dimension": 1, "dataset": "two_spirals"},
    {"parse_steps": [0], "parse_parameters_file": "missing.csv"},
]


@examples(40)
@given(data=st.data())
def test_simulation_combinations(data):
    """Options that act together, as given or with one of them set to an edge or a random value."""
    base = data.draw(st.sampled_from(sorted(BASES)), label="base")
    changes = dict(data.draw(st.sampled_from(COMBINATIONS), label="combination"))
    name = data.draw(st.one_of(st.none(), st.sampled_from(sorted(changes))), label="changed")
    if name is not None:
        changes[name] = data.draw(st.one_of(st.sampled_from(edges(name)), SMALL_VALUE[name]), label=name)
    build(base, changes)


# -- the command line --------------------------------------------------------------------------
FLAGS = [option.name for option in OPTIONS if option.on_command_line]
flags = st.one_of(st.sampled_from(FLAGS).map("--{}".format), st.sampled_from(FLAGS).map(lambda n: f"--{n[:-1]}"),
                  st.sampled_from(["--", "-", "-x", "--x=1", "---seed", "--Seed"]))
cli_values = st.one_of(st.sampled_from(TRICKY_TEXT), st.integers(-3, 40).map(str), st.floats().map(repr),
                       st.text(max_size=3),
                       st.sampled_from(["BAOAB", "sgld", "HMC2", "NUTS", "two_spirals", "adam", "8,8"]))
known_flags = st.sampled_from(FLAGS).map("--{}".format)
# Known flags with values, so that most command lines get past argparse to the option table, and
# now and then a stray token.
pairs = st.tuples(known_flags, cli_values)
tokens = st.one_of(pairs.map(list), pairs.map(lambda t: [f"{t[0]}={t[1]}"]))
stray = st.one_of(cli_values, flags)


@examples(100)
@given(st.sampled_from(["tati-sample", "tati-optimize"]),
       st.tuples(st.lists(tokens, max_size=4), st.integers(0, 4), st.one_of(st.none(), st.none(), stray))
       .map(lambda t: [token for part in t[0][:t[1]] + ([[t[2]]] if t[2] else []) + t[0][t[1]:] for token in part])
       .filter(lambda argv: not any(t.startswith(("-h", "--help")) for t in argv)))
def test_command_line(capsys, prog, argv):
    """A random command line: parsed and built like the tools do (without the run), or one
    line on stderr and exit status 2."""
    capsys.readouterr()
    sampling = prog == "tati-sample"
    parser = common.make_parser(prog, "", SAMPLE_GROUPS if sampling else OPTIMIZE_GROUPS)

    def body():
        simulation = tati.Simulation(**options)
        simulation.sampler if sampling else simulation.optimizer

    try:
        options = common.parse(parser, argv)
        common.run_tool(prog, options, "sample" if sampling else "fit", body)
    except SystemExit as exit_:
        err = capsys.readouterr().err
        assert exit_.code == 2 and err.count("\n") == 1 and err.startswith(f"{prog}: error: "), err
        event(" ".join(err.split()[:5]))
        return
    event("works")
    assert capsys.readouterr().err == ""


# -- files ---------------------------------------------------------------------------------------
cells = st.one_of(st.floats().map(repr), st.integers(-10, 10).map(str), st.text(max_size=4),
                  st.sampled_from(["", " ", "abc", "1e400", "-1e39", "3.4e38", "nan", "NaN", "inf", '"1"', '"',
                                   '"1,2"', "'1'", " 2 ", "\x00", "0x1", "1_0", "１", "\ufeff1"]))
numeric_cells = st.one_of(st.floats(-1e3, 1e3).map(repr), st.integers(-10, 10).map(str))


def csv_text(header_cells, row_cells, columns=(0, 5)):
    header = st.lists(header_cells, min_size=columns[0], max_size=columns[1])
    return st.tuples(header, st.lists(st.lists(row_cells, min_size=columns[0], max_size=columns[1]), max_size=6),
                     st.sampled_from(["\n", "\r\n", "\r"]), st.sampled_from(["", "\ufeff"]), st.booleans()).map(
        lambda t: t[3] + t[2].join(",".join(row) for row in [t[0], *t[1]]) + (t[2] if t[4] else ""))


def file_contents(text):
    """Mostly UTF-8 text; also other encodings and random bytes."""
    utf8 = text.map(str.encode)
    return st.one_of(utf8, utf8, utf8, text.map(lambda s: s.encode("utf-16")),
                     text.map(lambda s: s.encode("latin-1", "replace")), st.binary(max_size=40))


header_names = st.one_of(st.sampled_from(["x1", "x2", "y", '"a,b"', "", " "]), st.text(max_size=3))
tidy_csv = st.integers(2, 4).flatmap(
    lambda k: csv_text(st.sampled_from(["x1", "x2", "x3", "y"]), numeric_cells, (k, k)))
csv_files = file_contents(st.one_of(tidy_csv, csv_text(header_names, cells), csv_text(header_names, numeric_cells)))


def write(directory, name, content):
    path = directory / name
    if content is None:  # a missing file
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(content)
    return str(path)


@examples(120)
@given(st.lists(st.one_of(csv_files, st.none()), min_size=1, max_size=3),
       st.one_of(st.integers(1, 4), st.sampled_from([0, -1, True, 1.5, "2", None])),
       st.sampled_from([np.float32, np.float64, tf.float32, "float64"]),
       st.one_of(st.none(), st.integers(1, 4)))
def test_csv_files(tmp_path, contents, input_dimension, dtype, simulation_input_dimension):
    """Random CSV files: read into finite (X, Y), or one line naming a file (or input_dimension);
    the same files as batch_data_files of a Simulation."""
    paths = [write(tmp_path, f"data{i}.csv", content) for i, content in enumerate(contents)]
    try:
        X, Y = read_csv_files(paths, input_dimension, dtype)
    except InputError as error:
        valid = isinstance(input_dimension, int) and not isinstance(input_dimension, bool) and input_dimension >= 1
        assert_names(error, paths if valid else ["input_dimension"])
    else:
        event("works")
        assert X.shape == (len(Y), input_dimension) and Y.shape[1] >= 1 and len(Y) >= len(paths)
        assert np.all(np.isfinite(X)) and np.all(np.isfinite(Y))
    try:
        simulation = tati.Simulation(batch_data_files=paths, input_dimension=simulation_input_dimension,
                                     hidden_dimension=[2])
    except InputError as error:
        assert_names(error, paths + ["input_dimension"])
    else:
        event("works")
        assert all(np.all(np.isfinite(array.numpy())) for array in simulation.data.all())


trajectory_cells = st.one_of(st.integers(-1, 3).map(str), st.floats().map(repr),
                             st.sampled_from(["", "x", "nan", '"1"']))
small_cells = st.integers(0, 3).map(str)
tidy_trajectory = st.tuples(  # the columns tati writes (in any order), mostly small numbers
    st.permutations(["id", "step", "param0", "param1"]),
    st.lists(st.lists(st.one_of(small_cells, small_cells, small_cells, trajectory_cells), min_size=4, max_size=4),
             min_size=1, max_size=6)).map(lambda t: "\n".join(",".join(row) for row in [t[0], *t[1]]))
trajectory_header = st.lists(st.sampled_from(["id", "step", "param0", "param1", "loss", "param0", "", "x y"]),
                             max_size=6)
trajectory_files = file_contents(st.one_of(
    tidy_trajectory, tidy_trajectory,
    csv_text(st.sampled_from(["id", "step", "param0", "param1", "loss"]), trajectory_cells),
    trajectory_header.flatmap(lambda h: st.lists(st.lists(trajectory_cells, min_size=len(h), max_size=len(h)),
                                                 max_size=5).map(
        lambda rows: "\n".join(",".join(r) for r in [h, *rows])))))


@examples(70)
@given(st.one_of(trajectory_files, st.none()), st.integers(1, 3),
       st.one_of(st.none(), st.lists(st.integers(0, 4), max_size=3)))
def test_parse_parameters_file(tmp_path, content, walkers, steps):
    """Random trajectory files: a finite [W, d] start, or one line naming the file (or parse_steps)."""
    path = write(tmp_path, "trajectory.csv", content)
    try:
        values = parameters_from_trajectory(path, steps, ["param0", "param1"], walkers)
    except InputError as error:
        assert_names(error, [path, "parse_steps"])
    else:
        event("works")
        assert values.shape == (walkers, 2) and np.all(np.isfinite(values))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real checkpoint of a potential's BAOAB run (written without running it: the stand-in
    for the run has what checkpoint.save and restore read), its bytes and arrays."""
    simulation = tati.Simulation(potential=potential, initial_parameters=[0.5, -0.5])
    run = SimpleNamespace(method="sample", is_sampler=True, optimizer=simulation.sampler,
                          step=tf.Variable(tf.constant(0, tf.int64)), averages=RunningAverages(1))
    path = tmp_path_factory.mktemp("checkpoint") / "saved.npz"
    checkpoint.save(str(path), simulation, run)
    with np.load(path) as file:
        arrays = {key: file[key] for key in file.files}
    return path.read_bytes(), arrays, simulation, run


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.floats(-1, 1), st.text(max_size=5)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=5)
META_FIELDS = ["format", "method", "sampler", "optimizer", "walkers", "parameters"]
array_values = st.sampled_from([np.zeros(2), np.zeros((1, 2)), np.zeros((1, 2), np.float32), np.zeros((1, 3)),
                                np.array(0, np.int64), np.array("x"), np.array([b"x"]), np.zeros((0,))])


def edited(draw, arrays):
    """The checkpoint rewritten with random edits of its meta fields, of its arrays (dropped,
    replaced, added under odd keys), of both or of neither."""
    arrays, what = dict(arrays), draw(st.sampled_from(["meta", "arrays", "both", "neither"]))
    if what in ("meta", "both"):
        meta = json.loads(str(arrays["meta"]))
        for field in draw(st.lists(st.sampled_from(META_FIELDS), min_size=1, max_size=2, unique=True)):
            if draw(st.booleans()):
                meta.pop(field)
            else:
                meta[field] = draw(json_values)
        arrays["meta"] = draw(st.sampled_from([np.array(json.dumps(meta))] * 4 + [
            np.array(json.dumps(meta).encode()), np.array([json.dumps(meta)]), np.array(1.0), np.array("{")]))
    if what in ("arrays", "both"):
        keys = sorted(arrays)
        for key in draw(st.lists(st.sampled_from(keys), max_size=2, unique=True)):
            arrays.pop(key)
        odd_keys = ["model/x", "model/7", "model/", "junk", "model/0/1", "model/²"]
        for key in draw(st.lists(st.sampled_from(keys + odd_keys), max_size=2, unique=True)):
            arrays[key] = draw(array_values)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@st.composite
def checkpoint_files(draw, original, arrays):
    how = draw(st.sampled_from(["bytes", "magic", "npy", "truncated", "flipped", "edited", "edited", "edited"]))
    if how == "bytes":
        return draw(st.binary(max_size=64))
    if how == "npy":  # a single array, not an archive
        buffer = io.BytesIO()
        np.save(buffer, draw(array_values))
        return buffer.getvalue()
    if how == "magic":
        return draw(st.sampled_from([b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY\x01\x00", b"\x93NUMPY"])) + draw(
            st.binary(max_size=64))
    if how == "truncated":
        return original[:draw(st.integers(0, len(original) - 1))]
    if how == "flipped":
        position = draw(st.integers(0, len(original) - 1))
        return original[:position] + bytes([original[position] ^ draw(st.integers(1, 255))]) + original[position + 1:]
    return edited(draw, arrays)


@examples(70)
@given(st.data())
def test_restore_model(saved, tmp_path, data):
    """Random and damaged checkpoints: loaded and restored, or one line naming the file."""
    original, arrays, simulation, run = saved
    path = write(tmp_path, "checkpoint.npz", data.draw(checkpoint_files(original, arrays)))
    try:
        checkpoint.restore(path, simulation, run)
    except InputError as error:
        assert_names(error, [path])
    else:
        event("works")


# -- short runs ----------------------------------------------------------------------------------
ODD = {
    "inverse_temperature": [1e-6, 0.1, 1.0, 1e6], "friction_constant": [0.0, 1e-8, 1.0, 100.0],
    "sigma": [1e-3, 1.0, 50.0], "sigmaA": [None, 0.0, 5.0], "mass": [1e-3, 1.0, 1e3],
    "noise_estimate": [0.0, 0.5, 10.0], "hamiltonian_dynamics_time": [0.01, 0.5, 1.0],
    "burn_in_steps": [0, 1, 5, 2 ** 63 - 1],
    "prior_lower_boundary": [None, -1.0, 0.0, 0.5], "prior_upper_boundary": [None, 0.0, 0.6, 1e300],
    "prior_standard_deviation": [None, 1e-3, 1.0], "prior_factor": [1e-3, 1.0, 1e3], "prior_power": [0.5, 1.0, 3.0],
    "dtype": ["float32", "float64"], "on_nan": ["stop", "continue"], "seed": [0, 7, 2 ** 63 - 1],
}
ODD_FOR = {
    "potential": {"fix_parameters": ["param0=0.5", "param1=1e10", "param0=1;param1=2"]},
    "network": {"fix_parameters": ["weight0=0.1", "layer1/biases=0", "output/weights=0.5,-0.5", "bias0=1e10"],
                "hidden_dimension": [[], [1], [3, 2]], "batch_size": [None, 1, 3, 100],
                "loss": list(LOSS_NAMES),
                "output_activation": list(ACTIVATION_NAMES)},
}
WALKERS = [{}, {"number_walkers": 2}, {"number_walkers": 4, "covariance_blending": 0.1},
           {"number_walkers": 5, "covariance_blending": 10.0, "covariance_after_steps": 1},
           {"number_walkers": 3, "collapse_walkers": True, "covariance_after_steps": 2}]
# the samplers that take WALKERS' preconditioner options (not those that evaluate the target
# themselves), and some other spellings
SAMPLERS = samplers_where(evaluates_target=False) + ["baoab", "CovarianceControlledAdaptiveLangevin",
                                                     "hamiltonianmontecarlo_1storder"]


def runs(base):
    """A potential or a small network with a sampler, walkers and some odd values."""
    return st.tuples(st.fixed_dictionaries(
        {"sampler": st.sampled_from(SAMPLERS), "max_steps": st.integers(1, 3), "every_nth": st.integers(1, 4),
         "step_width": st.sampled_from([1e-8, 0.01, 0.3, 2.0, 30.0])},
        optional={name: st.sampled_from(values) for name, values in {**ODD, **ODD_FOR[base]}.items()}),
        st.sampled_from(WALKERS)).map(
        lambda t: {**BASES[base], **({"dataset_size": 8} if base == "network" else {}), **t[0], **t[1]})


@examples(20)
@given(st.sampled_from(sorted(BASES)).flatmap(runs), st.sampled_from([None, "run_file", "save_model"]))
def test_sample(tmp_path, options, output):
    """A few steps with valid but odd values: tables, an InputError naming an option given, or
    a SamplingError (a non-finite loss or gradient stops the run, one line)."""
    if output is not None:
        options = {**options, output: str(tmp_path / output)}
    try:
        result = tati.Simulation(**options).sample()
    except InputError as error:
        assert_names(error, options)
    except SamplingError as error:
        assert_names(error, ["non-finite"])
    else:
        event("works")
        assert len(result.run_info) == len(result.trajectory)
        assert set(result.trajectory["id"]) <= set(range(options.get("number_walkers", 1)))


# -- bugs the properties found, fixed ----------------------------------------------------------
def test_sampler_parameters_keep_float64_values():
    """They were initialised through float32: 1e39 crashed, 0.1 became 0.10000000149."""
    sampler = tati.Simulation(potential=potential, initial_parameters=[1.0], friction_constant=1e39,
                              inverse_temperature=0.1).sampler
    assert float(sampler.friction_constant.numpy()) == 1e39
    assert float(sampler.inverse_temperature.numpy()) == 0.1


def test_softmax_with_sign_labels_names_the_loss():
    with pytest.raises(InputError, match="softmax_cross_entropy"):
        tati.Simulation(loss="softmax_cross_entropy", output_activation="linear", dataset_size=8, max_steps=1)


def test_quoted_header_counts_its_columns(tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('"x, first",y\n1.0,1\n2.0,-1\n')
    assert tati.Simulation(batch_data_files=[str(path)]).options["input_dimension"] == 1
