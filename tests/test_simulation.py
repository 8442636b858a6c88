"""The Simulation end to end on the built-in network: tables, CSV streams, determinism,
fit(), equipartition, the flat parameter view and the evaluation methods."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from stats import read_csv, seed, t_critical
from tati.errors import InputError
from tati.recording.columns import OPTIMIZER_INFO, averages_columns, run_info_columns
from tati.config.options import default
from tati.samplers import get_sampler


def small(**options):
    defaults = dict(dataset="two_clusters", hidden_dimension=[4], max_steps=30, step_width=0.05,
                    seed=3)
    defaults.update(options)
    return tati.Simulation(**defaults)


def without_time(frame):
    return frame.drop(columns=["time_per_nth_step"], errors="ignore")


def test_tables_have_the_documented_columns_and_steps():
    result = small(every_nth=7, max_steps=30, burn_in_steps=10).sample()
    info = get_sampler(default("sampler")).info
    assert list(result.run_info.columns) == run_info_columns(info, accuracy=True)
    assert list(result.averages.columns) == averages_columns(info)
    names = [f"weight{i}" for i in range(12)] + [f"bias{i}" for i in range(5)]
    assert list(result.trajectory.columns) == ["id", "step", "loss"] + names
    # rows every 7th step and at the last; averages only after burn-in
    assert list(result.run_info.step) == [7, 14, 21, 28, 30]
    assert list(result.averages.step) == [14, 21, 28, 30]
    assert (result.run_info.id == 0).all()


def test_first_row_is_the_state_before_the_first_update():
    sim = small(every_nth=1, max_steps=3)
    start, loss = sim.parameters, sim.loss()
    result = sim.sample()
    row = result.trajectory.iloc[0]
    np.testing.assert_allclose(row[sim.model.parameter_names].to_numpy(), start, rtol=0, atol=0)
    assert row.loss == pytest.approx(loss, rel=1e-6)
    assert result.run_info.total_energy.iloc[0] == pytest.approx(
        result.run_info.loss.iloc[0] + result.run_info.kinetic_energy.iloc[0])


def test_same_seed_same_tables_other_seed_other_tables():
    a, b, c = (small(seed=s, batch_size=50).sample() for s in (3, 3, 4))
    for table in ("run_info", "trajectory", "averages"):
        pd.testing.assert_frame_equal(without_time(getattr(a, table)), without_time(getattr(b, table)))
    assert not np.allclose(a.trajectory.loss, c.trajectory.loss)


def test_csv_files_equal_the_dataframes(tmp_path):
    files = {name: str(tmp_path / f"{name}.csv") for name in ("run_file", "trajectory_file", "averages_file")}
    result = small(every_nth=3, burn_in_steps=5, **files).sample()
    for name, frame in zip(files, (result.run_info, result.trajectory, result.averages)):
        read = read_csv(files[name])
        pd.testing.assert_frame_equal(read, frame, check_exact=True)


def test_sample_again_continues_the_run_and_appends(tmp_path):
    path = str(tmp_path / "trajectory.csv")
    sim = small(max_steps=10, every_nth=5, trajectory_file=path)
    first, second = sim.sample(), sim.sample()
    assert list(first.trajectory.step) == [5, 10] and list(second.trajectory.step) == [15, 20]
    read = read_csv(path)
    pd.testing.assert_frame_equal(read, pd.concat([first.trajectory, second.trajectory], ignore_index=True))
    with pytest.raises(InputError, match="trajectory_file .* exists"):
        sim.fit()  # a new run would replace the file the sample() calls wrote
    pd.testing.assert_frame_equal(read_csv(path), read)
    replacing = small(max_steps=10, every_nth=5, trajectory_file=path, overwrite=True)
    replacing.sample()
    again = replacing.fit()  # a new run, allowed to replace the file
    assert list(again.trajectory.step) == [5, 10]
    pd.testing.assert_frame_equal(read_csv(path), again.trajectory)


def test_fit_reaches_95_percent_on_two_clusters():
    sim = tati.Simulation(dataset="two_clusters", max_steps=1000, every_nth=100)
    result = sim.fit()
    assert list(result.run_info.columns) == run_info_columns(OPTIMIZER_INFO, accuracy=True)
    assert sim.score() >= 0.95
    assert result.run_info.loss.iloc[-1] < result.run_info.loss.iloc[0]


def test_any_keras_optimizer_by_name():
    sim = tati.Simulation(dataset="two_clusters", optimizer="adam", learning_rate=0.05, max_steps=200,
                          every_nth=50)
    sim.fit()
    assert sim.score() >= 0.95


def test_parameters_round_trip_and_evaluation_methods():
    sim = small()
    theta = np.linspace(-1, 1, sim.num_parameters).astype(np.float32)
    sim.parameters = theta
    np.testing.assert_array_equal(sim.parameters, theta)
    gradient = sim.gradients()
    assert gradient.shape == (sim.num_parameters,)
    # finite-difference check of the flat gradient along one direction
    direction = np.zeros(sim.num_parameters, np.float32)
    direction[0] = 1e-2
    sim.parameters = theta + direction
    up = sim.loss()
    sim.parameters = theta - direction
    down = sim.loss()
    assert (up - down) / 2e-2 == pytest.approx(gradient[0], rel=2e-2, abs=1e-4)
    assert sim.predict(np.zeros((3, 2))).shape == (3, 1)
    assert 0.0 <= sim.score() <= 1.0
    momenta = np.ones(sim.num_parameters)
    sim.momenta = momenta
    np.testing.assert_array_equal(sim.momenta, momenta)


def test_keras_model_is_sampled_through_the_flat_view():
    import keras
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="tanh"),
                              keras.layers.Dense(1, activation="tanh")])
    sim = tati.Simulation(model=model, dataset="two_clusters", max_steps=20, every_nth=10, seed=2)
    assert sim.num_parameters == 2 * 3 + 3 + 3 * 1 + 1
    assert sim.model.parameter_names[:9] == [f"weight{i}" for i in range(9)]
    result = sim.sample()
    assert len(result.trajectory) == 2 and np.isfinite(result.trajectory.loss).all()


def test_keras_layers_of_training_mode_are_called_as_at_inference():
    """Dropout and BatchNormalization: U is the model at inference (training=False), a function
    of the parameters alone (two evaluations agree; with dropout on they would differ), the
    same U as the model without those layers (moving statistics 0 and 1, BatchNormalization's
    scale 1 and offset 0 at their start), and the summary's model line names them."""
    import keras

    def model(*extra):
        dense = [keras.layers.Dense(8, activation="tanh", kernel_initializer=keras.initializers.GlorotUniform(1)),
                 keras.layers.Dense(1, kernel_initializer=keras.initializers.GlorotUniform(2))]
        return keras.Sequential([keras.Input((2,)), dense[0], *extra, dense[1]])

    options = dict(dataset="two_clusters", max_steps=2, every_nth=1, seed=2)
    plain = tati.Simulation(model=model(), **options)
    both = tati.Simulation(model=model(keras.layers.Dropout(0.5), keras.layers.BatchNormalization(epsilon=0.0)),
                           **options)
    assert both.num_parameters == plain.num_parameters + 16  # the scale and the offset
    first, second = both.loss(), both.loss()
    assert first == second
    np.testing.assert_allclose(first, plain.loss(), rtol=1e-12)
    both.sample()
    plain.sample()
    line = "model: Keras model (49 parameters); Dropout, BatchNormalization as at inference (doc/data.md)\n"
    assert line in both.summary()
    assert "as at inference" not in plain.summary()


def test_a_keras_model_in_another_float_type_than_dtype_is_warned_of():
    """theta is held in dtype, but a Keras model computes in its variables' type: asked for float64
    with a float32 model, the run says so with the cure; a float64 model is quiet."""
    import keras
    import warnings
    with pytest.warns(UserWarning, match=r"^dtype float64, but the Keras model's variables are float32: it "
                                         r"computes in float32 \(make it after keras.config.set_dtype_policy"):
        tati.Simulation(model=keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), dtype="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tati.Simulation(model=keras.Sequential([keras.Input((2,), dtype="float64"),
                                                keras.layers.Dense(1, dtype="float64")]), dtype="float64")


def test_rows_beyond_memory_are_warned_of_before_the_call(monkeypatch):
    """The rows are kept in memory: a call whose rows would take more than half the machine's
    (here one made to have 64 KiB) is warned of before it runs, naming every_nth, and still runs
    (a run meant to be stopped by SIGINT asks for more steps than it takes)."""
    from tati.recording import table
    monkeypatch.setattr(table, "machine_memory", lambda: 2 ** 16)
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=[1.0, 2.0],
                          max_steps=2000, seed=1)
    with pytest.warns(UserWarning, match=r"^every_nth 1: 2000 steps of 1 walker\(s\) give 2000 rows of 5 numbers, "
                                         r".*: the run will run out of memory before it ends; raise every_nth"):
        assert len(sim.sample().trajectory) == 2000


def test_a_keras_model_of_images_is_sampled_with_the_defaults():
    """Points of any shape for a Keras model (images [N, 6, 6, 1], a convolution): two walkers
    with mini-batches and a likelihood tune themselves (the measured width's Hessian-vector
    products by reverse over reverse mode, which the walkers' vectorised map carries through a
    convolution's gradient); predict and the predictive take images; the built-in network and
    input_dimension refuse them, saying why."""
    import keras
    rng = np.random.default_rng(seed(40))
    images = rng.normal(size=(48, 6, 6, 1))
    labels = (images[:, :3].mean(axis=(1, 2, 3)) > images[:, 3:].mean(axis=(1, 2, 3))).astype(float)
    model = keras.Sequential([keras.Input((6, 6, 1)), keras.layers.Conv2D(2, 3, activation="tanh"),
                              keras.layers.Flatten(), keras.layers.Dense(1)])
    sim = tati.Simulation(model=model, dataset=(images, labels), likelihood="bernoulli", prior_standard_deviation=1.0,
                          batch_size=16, number_walkers=2, burn_in_steps=30, max_steps=40, every_nth=5,
                          seed=seed(41))
    assert sim.model.hessian_by_reverse_mode
    result = sim.sample()
    assert np.all(np.isfinite(sim.measured_width.widths)) and np.isfinite(result.run_info.loss).all()
    assert sim.predict(images[:5]).shape == (2, 5, 1)
    frame, density = sim.predictive(images[:5], labels[:5], burn_in=0)
    assert len(frame) == 5 and np.isfinite(density)
    with pytest.raises(tati.InputError, match=r"^predictive: features of shape \(5, 36\); the model takes points "
                                              r"of the run's shape \[6, 6, 1\]$"):
        sim.predictive(images[:5].reshape(5, 36), labels[:5], burn_in=0)
    with pytest.raises(tati.InputError, match=r"^dataset features must be a 2-D array \[points, columns\], got "
                                              r"shape \[48, 6, 6, 1\]: points of more dimensions \(images\) "
                                              r"need a Keras model \(model=\)$"):
        tati.Simulation(dataset=(images, labels))
    with pytest.raises(tati.InputError, match=r"^input_dimension is for feature columns; these points have the "
                                              r"shape \[6, 6, 1\]: drop input_dimension$"):
        tati.Simulation(model=model, dataset=(images, labels), input_dimension=36)


@pytest.mark.statistical
def test_equipartition_on_the_two_clusters_network():
    """average_kinetic_energy = N_dof / (2 beta) within its standard error.

    Step width 0.02 keeps BAOAB's O(h^2) bias of the kinetic energy far below the error.
    The error comes from batch means of the run-info kinetic energy (20 batches of 1000 steps,
    far beyond the momentum correlation time 1 / gamma = 50 steps); Student-t critical value
    for a false-failure rate of 1e-4.
    """
    sim = tati.Simulation(dataset="two_clusters", hidden_dimension=[4], step_width=0.02,
                          friction_constant=1.0, inverse_temperature=2.0, max_steps=21000,
                          every_nth=10, burn_in_steps=1000, seed=seed(21))
    result = sim.sample()
    expected = sim.num_parameters / (2.0 * 2.0)
    kinetic = result.run_info.kinetic_energy[result.run_info.step > 1000].to_numpy()
    batches = kinetic.reshape(20, -1).mean(axis=1)
    error = batches.std(ddof=1) / np.sqrt(len(batches))
    average = result.averages.average_kinetic_energy.iloc[-1]
    assert abs(average - expected) < t_critical(1e-4, len(batches) - 1) * error, (average, expected, error)


def test_cli_summary_of_sgld_has_no_kinetic_energy(capsys):
    from tati.cli.sample import main
    main(["--sampler", "SGLD", "--max_steps", "3"])
    assert "3 steps of SGLD" in capsys.readouterr().out


def test_python_summary_of_the_last_call():
    """summary() is the tools' summary of the last sample() or fit() call, headed by the method,
    echoed as lines; before any call it is refused with one line."""
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x ** 2), initial_parameters=[0.5, -0.5],
                          step_width=0.1, max_steps=50, seed=seed(3))
    with pytest.raises(InputError, match="call one first"):
        sim.summary()
    sim.sample()
    text = sim.summary()
    assert text.startswith("sample(): 50 steps of BAOAB (step_width 0.1) at inverse temperature 1\n")
    assert "  took " in text and "  average kinetic energy " in text
    assert text.splitlines()[-1].startswith("  wrote no file")
    assert repr(text) == str(text)
    sim.fit()
    assert sim.summary().startswith("fit(): 50 steps of ")


def test_a_walker_gone_wrong_is_warned_of_in_python():
    """Issue #41: a run whose walker went wrong says so in Python too, with the cure. One walker of
    four starts in the minor mode of a tilted double well (barrier 35 / beta from it) and stays (at
    friction 10: at 1 the run's batches of 28 rows are shorter than the stiff well's kinetic
    energy's correlation time, and 2 seeds of 30 read a healthy run hot, doc/benchmarks.md): a
    RunWarning names it at the user's line; all four in the major mode, none; a call shorter than
    WARNED_STEPS is not judged (summary() still is); rows with a NaN loss are said as such."""
    import warnings
    from tati.errors import RunWarning
    from tati.simulation import WARNED_STEPS

    def run(starts, steps):
        sim = tati.Simulation(potential=lambda x: 40.0 * tf.reduce_sum((x ** 2 - 1.0) ** 2) + 5.0 * tf.reduce_sum(x),
                              initial_parameters=[[s] for s in starts], dtype="float64", step_width=0.02,
                              friction_constant=10.0, max_steps=steps, burn_in_steps=200, number_walkers=4,
                              seed=seed(4))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sim.sample()
        return sim, [w for w in caught if issubclass(w.category, RunWarning)]

    sim, caught = run([-1.0, -1.0, -1.0, 1.0], WARNED_STEPS)
    assert len(caught) == 1 and caught[0].filename == __file__, caught
    assert str(caught[0].message).startswith("walker 3 far out: median loss ")
    assert "stuck (in a minor mode?): start it elsewhere (initial_parameters)" in str(caught[0].message)
    assert str(caught[0].message).endswith(" (print(sim.summary()) for the whole run)")
    assert run([-1.0] * 4, WARNED_STEPS)[1] == []
    sim, caught = run([-1.0, -1.0, -1.0, 1.0], WARNED_STEPS - 1)
    assert caught == [] and "  walker 3 far out" in sim.summary()
    # on_nan=continue past where U is undefined: the rows' line, as the summary's, not a NaN walker's
    sim = tati.Simulation(potential=lambda x: tf.reduce_sum(tf.sqrt(x + 1.0) ** 4), initial_parameters=[[0.5], [0.2]],
                          dtype="float64", step_width=0.5, max_steps=WARNED_STEPS, number_walkers=2, on_nan="continue",
                          seed=seed(5))
    with pytest.warns(RunWarning, match=r"^[0-9]+ of 2000 rows have a NaN or infinite loss, the first at step "):
        sim.sample()


def test_summary_of_a_continued_hmc_call_without_a_row():
    """HMC writes rows at the ends of legs (about 20 steps here): a continued call of 2 steps
    (as a restored CLI run can be) has none."""
    from tati.diagnostics.summary import summarise
    sim = tati.Simulation(sampler="HMC2", step_width=0.05, max_steps=2)
    assert len(sim.sample().run_info) == 1  # the start of the chain
    result = sim.sample()
    assert result.run_info.empty
    assert "no leg ended in these 2 steps" in summarise("tati-sample", sim, result, sampler=True)


@pytest.mark.parametrize("sampler", ["BAOAB", "HMC2"])
def test_tables_do_not_depend_on_how_a_call_is_cut_into_compiled_calls(sampler, monkeypatch):
    """The loop sizes its compiled calls by time (CALL_SECONDS); with calls of one step, or of
    one row, the tables are the same, and the call ends at max_steps with its last row."""
    import tati.engine.running as running
    options = dict(potential=lambda x: 0.5 * tf.reduce_sum(x ** 2), initial_parameters=[0.5, -0.5],
                   sampler=sampler, step_width=0.2, max_steps=25, every_nth=10, seed=4, number_walkers=2)
    whole = tati.Simulation(**options).sample()
    monkeypatch.setattr(running, "CALL_SECONDS", 1e-9)  # every call as short as it may be
    cut = tati.Simulation(**options).sample()
    for name in ("run_info", "trajectory", "averages"):
        pd.testing.assert_frame_equal(getattr(whole, name).drop(columns="time_per_nth_step", errors="ignore"),
                                      getattr(cut, name).drop(columns="time_per_nth_step", errors="ignore"),
                                      check_exact=True, obj=name)
    if sampler == "BAOAB":
        assert sorted(set(cut.trajectory.step)) == [10, 20, 25]


def test_hmc_on_a_network_in_graph_mode_does_not_depend_on_where_calls_end(monkeypatch):
    """HMC2 on a network without XLA, its metric adapted: a leg cut by a compiled call's end (where depends on
    the clock) continues with the same rounding, so a run gives the same bits in any process (before, Grappler
    regrouped the cut leg's kicks: a 50-unit network's run on UCI's Boston data differed from step 3,503)."""
    import tati.engine.running as running
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    options = dict(dataset=(x, np.sin(x[:, :1]) + 0.1 * rng.normal(size=(60, 1))), hidden_dimension=[8],
                   likelihood="heteroscedastic_gaussian", prior_standard_deviation=1.0, sampler="HMC2",
                   hamiltonian_dynamics_time=0.01, number_walkers=2, burn_in_steps=300, max_steps=400,
                   jit_compile=False, dtype="float64", seed=1, progress=False)
    whole = tati.Simulation(**options).sample().trajectory
    monkeypatch.setattr(running, "CALL_SECONDS", 1e-9)
    cut = tati.Simulation(**options).sample().trajectory
    pd.testing.assert_frame_equal(whole, cut, check_exact=True)


def test_initial_dispersion_spreads_walkers_independently_of_their_number():
    """initial_dispersion r: walker w starts at its initial parameters plus uniform(-r, r) draws
    of its own (seed, w): inside the box, different per walker, the same for walkers 0-1 of a
    run with 2 or with 4 walkers; for a potential and a Keras model alike."""
    import keras
    start = np.array([0.0, 1.0, 2.0])
    runs = [tati.Simulation(potential=lambda x: tf.reduce_sum(x ** 2), initial_parameters=start, number_walkers=w,
                            initial_dispersion=2.0, seed=3).model.get_parameters() for w in (2, 4)]
    np.testing.assert_array_equal(runs[0], runs[1][:2])
    offsets = runs[1] - start
    assert np.all(np.abs(offsets) <= 2.0) and len({tuple(row) for row in offsets}) == 4
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    options = dict(model=model, loss="mean_squared", dataset=([[0.0, 1.0], [1.0, 0.0]], [[1.0], [0.0]]),
                   number_walkers=2, seed=3)
    plain = tati.Simulation(**options).model.get_parameters()
    spread = tati.Simulation(**options, initial_dispersion=0.5).model.get_parameters()
    offsets = np.asarray(spread) - np.asarray(plain)
    assert np.all(np.abs(offsets) <= 0.5) and np.all(offsets != 0.0)
