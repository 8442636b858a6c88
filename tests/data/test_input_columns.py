"""input_columns: the network's inputs computed from the feature columns (x1^2, sin(x2), x1*x2, ...)."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import tati
from tati.data.input_columns import apply, parse
from tati.errors import InputError


def test_terms_are_parsed_as_the_original_wrote_them():
    assert parse("x1 x2 X1^2 sin( x2 ) x1 * x2 cos(x1)^3 2") == [
        "x1", "x2", "x1^2", "sin(x2)", "x1*x2", "cos(x1)^3", "2"]
    assert parse("x1,x2^2") == parse(["x1", "x2^2"]) == ["x1", "x2^2"]
    assert parse("") is None and parse(None) is None


@pytest.mark.parametrize("text, message", [
    ("x1 tan(x2)", "term 'tan(x2)' is not understood: use xK, xK^n, sin(xK), cos(xK) or products"),
    ("x1 x0", "term 'x0': feature columns count from 1"),
    ("x1^0", "term 'x1^0': the power must be a positive integer"),
    ("x1^-1", "term 'x1^-1' is not understood"),
    ("x1 x2 x1", "term 'x1' appears twice"),
    ("x1**2", "term 'x1**2' is not understood"),
])
def test_a_bad_term_is_named(text, message):
    with pytest.raises(InputError, match="^input_columns " + message.replace("(", r"\(").replace(")", r"\)")
                       .replace("^", r"\^").replace("*", r"\*")):
        parse(text)


def test_the_terms_are_computed_from_the_columns():
    features = np.array([[1.5, 2.0, -1.0], [3.0, -1.0, 0.5]], dtype=np.float32)
    got = apply(parse("x1 x2^2 sin(x1) cos(x3) x1*x2 x1*x2^2*x3 3"), features)
    x = features.astype(np.float64)
    expected = np.stack([x[:, 0], x[:, 1] ** 2, np.sin(x[:, 0]), np.cos(x[:, 2]), x[:, 0] * x[:, 1],
                         x[:, 0] * x[:, 1] ** 2 * x[:, 2], x[:, 2]], axis=1).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(InputError, match="term 'x4' uses feature column 4, but the data have 3 feature columns"):
        apply(["x4"], features)
    with pytest.raises(InputError, match="term 'x1\\^200' is not finite in float32"):
        apply(["x1^200"], features)


def fit(**options):
    sim = tati.Simulation(dataset="two_circles", hidden_dimension=[], max_steps=300, every_nth=300, **options)
    sim.fit()
    return sim


def test_squared_inputs_make_two_circles_linearly_separable():
    """A disc inside a ring: no line separates them in (x1, x2), but x1^2 + x2^2 < c does, which
    is linear in (x1^2, x2^2). The built-in network without hidden layers (a linear model, tanh
    output) on the squares classifies more than 95% of the points after 300 gradient steps, on
    the raw columns not 70%."""
    squares = fit(input_columns="x1^2 x2^2")
    assert squares.num_parameters == 3 and squares.score() > 0.95
    assert fit().score() < 0.7


def test_the_network_input_width_follows_the_terms_and_predict_computes_them():
    sim = tati.Simulation(dataset="two_spirals", input_columns="x1 x2 x1^2 sin(x2)", hidden_dimension=[3],
                          dtype="float64")
    assert sim.num_parameters == 4 * 3 + 3 * 1 + 3 + 1
    points = np.array([[0.5, -1.0], [2.0, 3.0]])
    weights, biases = sim.parameters[:15], sim.parameters[15:]
    inputs = np.stack([points[:, 0], points[:, 1], points[:, 0] ** 2, np.sin(points[:, 1])], axis=1)
    hidden = np.maximum(inputs @ weights[:12].reshape(4, 3) + biases[:3], 0.0)
    np.testing.assert_allclose(sim.predict(points), np.tanh(hidden @ weights[12:].reshape(3, 1) + biases[3:]),
                               rtol=1e-12)


def test_csv_columns_and_a_keras_model(tmp_path):
    """Terms may use every feature column of a CSV file (all but the last by default); a Keras
    model is built for as many inputs as there are terms."""
    import keras
    path = tmp_path / "data.csv"
    path.write_text("a,b,c,label\n1,2,3,1\n-1,0.5,2,-1\n2,1,-1,1\n")
    model = keras.Sequential([keras.layers.Dense(1, activation="tanh")])
    sim = tati.Simulation(batch_data_files=[str(path)], input_columns="x3^2 x1*x2", model=model)
    assert sim.num_parameters == 2 + 1
    with pytest.raises(InputError, match="term 'x4' uses feature column 4, but the data have 3 feature columns"):
        tati.Simulation(batch_data_files=[str(path)], input_columns="x1 x4")
    with pytest.raises(InputError, match="input_columns needs data; a potential uses none"):
        tati.Simulation(potential=lambda x: tf.reduce_sum(x ** 2), initial_parameters=[0.0], input_columns="x1")


@pytest.mark.parametrize("terms, message", [
    ("x1 tan(x2)", "input_columns term 'tan(x2)' is not understood"),
    ("x1 x3", "input_columns term 'x3' uses feature column 3, but the data have 2 feature columns"),
])
def test_tati_sample_refuses_a_bad_term_in_one_line_before_tensorflow(terms, message):
    script = ("import sys\nfrom tati.cli.sample import main\n"
              "try:\n    main(sys.argv[1:])\nexcept SystemExit as stop:\n"
              "    print(stop.code, 'tensorflow' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script, "--input_columns", terms, "--max_steps", "2"],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout == "2 False\n"
    assert done.stderr.startswith(f"tati-sample: error: {message}") and done.stderr.count("\n") == 1, done.stderr


def test_a_checkpoint_restores_only_with_its_input_columns(tmp_path):
    """Same parameter count, other inputs: refused, naming the option (also for none)."""
    checkpoint = str(tmp_path / "c.npz")
    tati.Simulation(dataset="two_circles", input_columns="x1^2 x2^2", max_steps=1, save_model=checkpoint).fit()
    for other in ("x1 x2", None):
        with pytest.raises(InputError, match="was saved with input_columns x1\\^2,x2\\^2, this run asks for "
                                             f"input_columns {'x1,x2' if other else 'none'}"):
            tati.Simulation(dataset="two_circles", input_columns=other, max_steps=1, restore_model=checkpoint)
