"""The loss landscape (tati/landscape/, tati-lossfunction-sampler) on exact answers: the plane
through three parameter vectors reproduces their loss exactly and maps its coordinates onto
parameter space as its orthonormal basis says; a grid over one parameter of a quadratic
potential is that quadratic; a segment's ends are the two points' losses; the loss along a
trajectory is the recorded loss of a full-batch run; the tool writes its CSV file and a PNG and
answers bad input with one line and exit status 2."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from tati.analysis.output import read_csv
from tati.cli.lossfunction import main
from tati.landscape import (Evaluator, loss_along_trajectory, loss_on_directions, loss_on_grid, loss_on_plane,
                            loss_on_segment, plane_basis)

K = np.array([1.0, 4.0, 0.5])  # U(x) = sum_i K_i x_i^2 / 2


def quadratic(x):
    return 0.5 * tf.reduce_sum(tf.constant(K) * x ** 2)


def exact_u(thetas):
    return 0.5 * (np.asarray(thetas) ** 2 * K).sum(axis=-1)


@pytest.fixture(scope="module")
def network():
    """A 2-3-1 network in float64 with three walkers, trained a little apart."""
    sim = tati.Simulation(dataset="two_clusters", dataset_size=200, hidden_dimension=[3], dtype="float64",
                          number_walkers=3, max_steps=40, every_nth=10, learning_rate=0.1, seed=2)
    sim.fit()
    return sim


def loss_at(sim, vector):
    """sim.loss() and sim.score() with every walker at vector (the reference)."""
    saved = sim.parameters
    sim.parameters = vector
    values = np.atleast_1d(sim.loss())[0], np.atleast_1d(sim.score())[0]
    sim.parameters = saved
    return values


def test_the_plane_reproduces_the_three_walkers_loss_exactly(network):
    a, b, c = network.parameters
    frame = loss_on_plane(network, a, b, c, points=9)
    marked = frame[frame["point"] != ""].set_index("point")
    assert sorted(marked.index) == ["a", "b", "c"]
    for label, vector in zip("abc", (a, b, c)):
        loss, accuracy = loss_at(network, vector)
        assert marked.loc[label, "loss"] == loss  # exactly
        assert marked.loc[label, "accuracy"] == accuracy
        assert (marked.loc[label, "x"], marked.loc[label, "y"]) == frame.attrs["points"][label]
    # a full rectangular grid: the 9 points per axis plus the points' own coordinates
    assert len(frame) == frame["x"].nunique() * frame["y"].nunique()
    assert frame["x"].nunique() <= 12 and frame["y"].nunique() <= 11
    np.testing.assert_array_equal(network.parameters, np.stack([a, b, c]))  # left as they were


def test_the_plane_reproduces_trajectory_rows_exactly(network):
    trajectory = network.fit().trajectory
    rows = [trajectory.iloc[i] for i in (-1, -2, -3)]  # three walkers' last rows, as pandas Series
    frame = loss_on_plane(network, *rows, points=5, labels=("w2", "w1", "w0"))
    for label, row in zip(("w2", "w1", "w0"), rows):
        vector = row[network.model.parameter_names].to_numpy(dtype=float)
        assert frame.loc[frame["point"] == label, "loss"].item() == loss_at(network, vector)[0]


def test_the_plane_grid_is_the_potential_at_a_plus_x_e1_plus_y_e2():
    sim = tati.Simulation(potential=quadratic, initial_parameters=[0.0, 0.0, 0.0], dtype="float64")
    a, b, c = np.array([1.0, 0.0, -1.0]), np.array([-0.5, 2.0, 0.0]), np.array([0.3, 0.3, 2.0])
    e1, e2, xy = plane_basis(a, b, c)
    np.testing.assert_allclose([e1 @ e1, e2 @ e2, e1 @ e2], [1.0, 1.0, 0.0], atol=1e-15)
    for vector, (x, y) in zip((a, b, c), xy):
        np.testing.assert_allclose(a + x * e1 + y * e2, vector, rtol=0, atol=1e-14)
    assert xy[2, 1] > 0
    frame = loss_on_plane(sim, a, b, c, points=7, margin=0.5)
    thetas = a + frame[["x"]].to_numpy() * e1 + frame[["y"]].to_numpy() * e2
    np.testing.assert_allclose(frame["loss"], exact_u(thetas), rtol=1e-13, atol=1e-15)
    assert "accuracy" not in frame.columns  # a potential has none
    for label, vector in zip("abc", (a, b, c)):
        assert frame.loc[frame["point"] == label, "loss"].item() == loss_at_potential(sim, vector)
    with pytest.raises(tati.InputError, match="one line"):
        loss_on_plane(sim, a, b, a + 2.0 * (b - a))


def loss_at_potential(sim, vector):
    sim.parameters = vector
    return sim.loss()


def test_a_grid_over_one_parameter_of_a_quadratic_is_that_quadratic():
    centre = [1.0, 2.0, -3.0]
    sim = tati.Simulation(potential=quadratic, initial_parameters=centre, dtype="float64")
    frame = loss_on_grid(sim, parameters=["param1"], width=1.5, points=7)
    assert list(frame.columns) == ["param1", "loss"]
    values = 2.0 + np.linspace(-1.5, 1.5, 7)
    np.testing.assert_allclose(frame["param1"], values, rtol=0, atol=1e-15)
    expected = 0.5 * (K[0] * 1.0 + K[1] * values ** 2 + K[2] * 9.0)
    np.testing.assert_allclose(frame["loss"], expected, rtol=1e-14)
    assert frame["loss"].iloc[3] == exact_u(centre)  # the centre itself is a grid point
    # by index, two axes, explicit ranges: the rows run over the last axis fastest
    both = loss_on_grid(sim, parameters=[0, 2], ranges=[(-1.0, 1.0), (0.0, 2.0)], points=[3, 5])
    assert list(both.columns) == ["param0", "param2", "loss"] and len(both) == 15
    grid = np.stack([both["param0"], np.full(15, 2.0), both["param2"]], axis=1)
    np.testing.assert_allclose(both["loss"], exact_u(grid), rtol=1e-14)
    assert list(both["param2"][:5]) == [0.0, 0.5, 1.0, 1.5, 2.0]
    with pytest.raises(tati.InputError, match="'param7' is not a parameter"):
        loss_on_grid(sim, parameters=["param7"])


def test_a_grid_along_eigenvectors_has_their_curvature():
    """Along a unit direction v of U = x^T diag(K) x / 2 through 0, U(s v) = s^2 v^T K v / 2;
    from an eigenvector table (tati-analyse covariance's columns) the default width is 3 sqrt(eigenvalue)."""
    sim = tati.Simulation(potential=quadratic, initial_parameters=[0.0, 0.0, 0.0], dtype="float64")
    v = np.array([0.6, 0.0, 0.8])
    table = pd.DataFrame({"rank": [1, 2], "eigenvalue": [4.0, 1.0], "eigenvalue_error": [0.1, 0.1],
                          "fraction": [0.8, 0.2], "walkers_r_hat": [1.0, 1.0], "param0": [0.6, 0.0],
                          "param2": [0.8, 0.0], "param1": [0.0, 1.0]})
    frame = loss_on_directions(sim, table, points=5, components=1)
    assert list(frame.columns) == ["eigenvector1", "loss"]
    np.testing.assert_allclose(frame["eigenvector1"], np.linspace(-6.0, 6.0, 5), atol=1e-15)
    np.testing.assert_allclose(frame["loss"], 0.5 * frame["eigenvector1"] ** 2 * (v ** 2 @ K), rtol=1e-14)
    two = loss_on_directions(sim, np.array([v, [0.0, 1.0, 0.0]]), width=1.0, points=3)
    assert list(two.columns) == ["direction1", "direction2", "loss"] and len(two) == 9


def test_the_segment_ends_are_the_two_points_loss(network):
    a, b, _ = network.parameters
    frame = loss_on_segment(network, a, b, points=11, extension=0.5)
    ends = frame[frame["point"] != ""].set_index("point")
    assert list(ends["t"]) == [0.0, 1.0]
    for label, vector in (("a", a), ("b", b)):
        assert ends.loc[label, "loss"] == loss_at(network, vector)[0]
    assert frame["t"].min() == -0.5 and frame["t"].max() == 1.5
    np.testing.assert_allclose(frame["distance"], frame["t"] * np.linalg.norm(b - a), rtol=1e-15)


def test_the_batched_evaluation_agrees_with_the_simulation(network):
    """The grid's chunks (here 2 rows, padded) give sim.loss() and sim.score() at every vector."""
    vectors = np.concatenate([network.parameters, network.parameters[:2] * 0.5])
    evaluator = Evaluator(network)
    evaluator.chunk_size = lambda: 2
    losses, accuracies = evaluator(vectors)
    expected = np.array([loss_at(network, v) for v in vectors])
    np.testing.assert_allclose(losses, expected[:, 0], rtol=1e-13)
    np.testing.assert_array_equal(accuracies, expected[:, 1])


def test_the_loss_along_a_full_batch_trajectory_is_the_recorded_loss(network):
    trajectory = network.sample().trajectory
    frame = loss_along_trajectory(network, trajectory)
    assert list(frame.columns) == ["id", "step", "loss", "accuracy", "recorded_loss"]
    np.testing.assert_allclose(frame["loss"], trajectory["loss"], rtol=1e-12)
    with pytest.raises(tati.InputError, match="'weight0'"):
        loss_along_trajectory(network, trajectory.drop(columns="weight0"))


# -- the command-line tool ---------------------------------------------------------------------
def error_line(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == "", (out, err)
    assert len(err.splitlines()) == 1 and err.startswith("tati-lossfunction-sampler: error: "), err
    return err.strip()


NETWORK = ["--dataset_size", "100", "--hidden_dimension", "2", "--dtype", "float64"]


def test_the_tool_writes_the_plane_and_its_png(tmp_path, capsys, monkeypatch):
    from matplotlib import image
    monkeypatch.chdir(tmp_path)
    main(["plane", *NETWORK, "--number_walkers", "3", "--points", "15", "--plot", "plane.png"])
    out = capsys.readouterr().out
    assert "wrote loss_plane.csv, plane.png" in out and "walker 2: x" in out
    frame = read_csv("loss_plane.csv")
    assert list(frame.columns) == ["x", "y", "loss", "accuracy", "point"]
    sim = tati.Simulation(dataset_size=100, hidden_dimension=[2], dtype="float64", number_walkers=3)
    for walker, vector in enumerate(sim.parameters):
        assert frame.loc[frame["point"] == f"walker {walker}", "loss"].item() == loss_at(sim, vector)[0]
    data = open("plane.png", "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30000, len(data)
    pixels = image.imread("plane.png")
    assert pixels.shape[1] >= 1000 and pixels[..., :3].std() > 0.05

    # the same walkers from a trajectory file: rows of another network are refused
    pd.DataFrame({"id": [0, 1], "step": [5, 5], "loss": [1.0, 1.0], "weight0": [0.1, 0.2], "weight1": [0.3, 0.4],
                  "bias0": [0.0, 0.0]}).to_csv("linear.csv", index=False)
    line = error_line(capsys, ["segment", *NETWORK, "--points_file", "linear.csv"])
    assert "points_file 'linear.csv' has no column 'weight2'" in line, line


def test_the_walkers_of_a_checkpoint_are_the_points(tmp_path, capsys, monkeypatch):
    """--restore_model: the saved walkers' parameters are the plane's points, their loss that of the
    run's end; a checkpoint of another network is refused in one line."""
    monkeypatch.chdir(tmp_path)
    sim = tati.Simulation(dataset_size=100, hidden_dimension=[2], dtype="float64", number_walkers=3, max_steps=20,
                          step_width=0.05, seed=3, save_model="state.npz")
    sim.sample()
    main(["plane", "--restore_model", "state.npz", "--points", "5"])  # the network's options from the checkpoint
    assert "wrote loss_plane.csv" in capsys.readouterr().out
    frame = read_csv("loss_plane.csv")
    for walker, vector in enumerate(sim.parameters):
        assert frame.loc[frame["point"] == f"walker {walker}", "loss"].item() == loss_at(sim, vector)[0]
    line = error_line(capsys, ["plane", "--restore_model", "state.npz", "--hidden_dimension", "3",
                               "--output", "other.csv"])
    assert "restore_model 'state.npz' was saved with hidden_dimension" in line, line


@pytest.mark.parametrize("argv, message", [
    (["plane", "--points", "1"], "points must be >= 2"),
    (["plane"], "plane needs 3 points"),
    (["grid", "--margin", "0.1"], "--margin applies to plane and segment, not to grid"),
    (["grid", "--ranges=1:0"], "needs LOW < HIGH"),
    (["trajectory"], "trajectory needs --points_file"),
    (["segment", "--points_file", "missing.csv"], "points_file 'missing.csv' does not exist"),
    (["plane", "--points_file", "t.csv", "--steps", "7"], "has 0 row(s) at step 7"),
    (["grid", "--hidden_dimensoin", "2"], "did you mean --hidden_dimension?"),
    (["ridge"], "invalid choice: 'ridge'"),
])
def test_bad_input_is_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"id": [0], "step": [1], "loss": [0.5], "weight0": [0.1], "weight1": [0.2],
                  "bias0": [0.0]}).to_csv("t.csv", index=False)
    assert message in error_line(capsys, argv)


def test_a_plot_of_more_than_two_axes_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = error_line(capsys, ["grid", "--dataset_size", "100", "--plot", "grid.png"])  # 3 parameters
    assert "this one would have 3: choose them with --parameters" in line, line
    assert list(tmp_path.iterdir()) == []


def test_the_plot_marks_the_centre_only_where_the_grid_has_it(tmp_path):
    """A grid given by ranges, or of an even number of points, misses its centre: the mark has
    no value then (not 'loss nan'), and none at all outside the ranges. A constant loss is one
    band with its value as the colour bar's one tick, not an axis of rounding noise."""
    from matplotlib import pyplot
    from tati.landscape import draw
    sim = tati.Simulation(potential=quadratic, initial_parameters=[0.1, 0.2, 0.0], dtype="float64")
    drawn = {}
    saved = draw.figures.save
    draw.figures.save = lambda figure, path: drawn.setdefault(path, figure)
    try:
        draw.plot(loss_on_grid(sim, parameters=[0, 1], points=4), "even")
        draw.plot(loss_on_grid(sim, parameters=[0, 1], points=5), "odd")
        draw.plot(loss_on_grid(sim, parameters=[0], ranges=[(1, 3)], points=5), "outside")
        flat = loss_on_grid(sim, parameters=[0, 1], points=5).assign(loss=1.0 + 1e-14 * np.arange(25))
        draw.plot(flat, "flat")
    finally:
        draw.figures.save = saved
    texts = {path: [t.get_text() for ax in figure.axes for t in ax.texts] for path, figure in drawn.items()}
    assert texts["even"] == ["centre"] and texts["odd"] == [f"centre\nloss {exact_u([0.1, 0.2, 0.0]):.4g}"], texts
    assert drawn["outside"].axes[0].get_legend() is None
    bar = drawn["flat"].axes[1]
    assert [t.get_text() for t in bar.get_yticklabels()] == ["1"] and "the same everywhere" in bar.get_ylabel()
    for figure in drawn.values():
        pyplot.close(figure)
    with pytest.raises(tati.InputError, match="no rows"):
        draw.plot(flat.iloc[:0], tmp_path / "empty.png")


def test_no_tensorflow_before_the_inputs_are_checked(tmp_path):
    script = ("import sys\nfrom tati.cli.lossfunction import main\n"
              "try:\n    main(['plane', '--points_file', 'missing.csv'])\n"
              "except SystemExit as stop:\n    print(stop.code, 'tensorflow' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
