"""TrajectoryRecorder (tati/keras/callbacks.py) in model.fit: its columns follow the optimizer (SGLD
has no momentum to report), it reads the sampler inside Keras' loss scaling, and what it cannot
record truly is refused in one line before anything is written."""

import keras
import numpy as np
import pytest

import tati
from tati.errors import InputError

X = np.random.default_rng(0).normal(size=(32, 2)).astype("float32")


def fitted(optimizer, recorder, **compile_options):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=optimizer, loss="mse", **compile_options)
    model.fit(X, X[:, :1], epochs=1, batch_size=8, verbose=0, callbacks=[recorder])
    return model


def test_the_run_info_columns_are_the_samplers_reports():
    for sampler, columns in ((tati.samplers.BAOAB, ["kinetic_energy", "scaled_momentum", "scaled_noise"]),
                             (tati.samplers.SGLD, ["scaled_noise"])):
        recorder = tati.callbacks.TrajectoryRecorder(every_nth=2)
        fitted(sampler(step_width=0.01, seed=0), recorder)
        assert list(recorder.run_info.columns) == ["id", "step", "loss"] + columns
        assert list(recorder.run_info.step) == [2, 4] and (recorder.run_info["scaled_noise"] > 0).all()


def test_the_temperature_of_a_fit_is_judged_at_the_samplers_beta():
    """tati.analysis.temperature(recorder): the kinetic estimator (the recorder has no virial) against
    the sampler's 1 / beta, with no burn-in unless given; before fit, beta is unknown (None)."""
    recorder = tati.callbacks.TrajectoryRecorder()
    assert recorder.inverse_temperature is None
    fitted(tati.samplers.BAOAB(step_width=0.01, inverse_temperature=50.0, seed=0), recorder)
    assert recorder.inverse_temperature == 50.0
    table = tati.analysis.temperature(recorder)
    assert list(table.estimator) == ["kinetic"] and table.expected[0] == 1 / 50.0


def test_mixed_precision_records_the_sampler_inside_the_loss_scaling():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        recorder = tati.callbacks.TrajectoryRecorder(every_nth=1)
        model = fitted(tati.samplers.BAOAB(step_width=0.01, seed=0), recorder)
        assert type(model.optimizer).__name__ == "LossScaleOptimizer"
        assert "kinetic_energy" in recorder.run_info.columns and (recorder.run_info["kinetic_energy"] > 0).any()
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_what_cannot_be_recorded_is_refused(tmp_path):
    same = str(tmp_path / "tables.csv")
    with pytest.raises(InputError, match="run_file and trajectory_file name the same file"):
        tati.callbacks.TrajectoryRecorder(run_file=same, trajectory_file=same)
    with pytest.raises(InputError, match="walker must be an integer >= 0"):
        tati.callbacks.TrajectoryRecorder(walker="x")
    recorder = tati.callbacks.TrajectoryRecorder(every_nth=1, trajectory_file=str(tmp_path / "t.csv"))
    with pytest.raises(InputError, match="nothing recorded yet"):
        recorder.trajectory
    with pytest.raises(InputError, match="needs steps_per_execution=1 in model.compile \\(it is 4\\)"):
        fitted(tati.samplers.BAOAB(step_width=0.01, seed=0), recorder, steps_per_execution=4)
    assert not (tmp_path / "t.csv").exists()


class StepsSeen(keras.callbacks.Callback):
    """The optimizer's next step number at each batch's start, read every time."""

    def on_train_begin(self, logs=None):
        self.steps = []

    def on_train_batch_begin(self, batch, logs=None):
        self.steps.append(int(self.model.optimizer.iterations.numpy()) + 1)


def test_the_step_counter_is_read_only_where_a_row_is_due(monkeypatch):
    reads = []
    read = tati.callbacks.TrajectoryRecorder._next_step
    monkeypatch.setattr(tati.callbacks.TrajectoryRecorder, "_next_step", lambda self: reads.append(1) or read(self))
    recorder = tati.callbacks.TrajectoryRecorder(every_nth=3)
    fitted(tati.samplers.BAOAB(step_width=0.01, seed=0), recorder)  # 4 steps, a row at step 3
    assert list(recorder.trajectory.step) == [3]
    assert len(reads) == 3  # at the fit's start, and before and after the row's step: not once per step


def test_steps_skipped_by_loss_scaling_keep_the_rows_at_every_nth_step():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer=tati.samplers.BAOAB(step_width=1e-6, seed=0), loss="mse")
        seen, recorder = StepsSeen(), tati.callbacks.TrajectoryRecorder(every_nth=2)
        # targets of 10: the first steps' float16 gradients overflow at the initial loss scale 2^15
        model.fit(X, np.full((32, 1), 10.0, "float32"), epochs=3, batch_size=8, verbose=0, callbacks=[seen, recorder])
        assert len(seen.steps) == 12 and seen.steps[-1] < 12  # some steps were skipped
        due = [s for s in seen.steps if s % 2 == 0]
        assert list(recorder.trajectory.step) == due and len(due) >= 3
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_rows_beyond_memory_are_warned_of_before_the_fit(monkeypatch):
    """A trajectory row per step of the whole model, kept in memory: where Keras' steps and epochs
    would make more than half the machine's memory (here a machine made to have 256 KiB), the
    recorder warns at the fit's start, naming every_nth; a thinner recorder is quiet. (A warning,
    not a refusal: a fit meant to be stopped early may ask for more.) The Simulation's calls warn
    alike (tests/test_simulation.py)."""
    import warnings
    from tati.recording import table
    monkeypatch.setattr(table, "machine_memory", lambda: 2 ** 18)
    x = np.zeros((640, 2), "float32")
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8), keras.layers.Dense(1)])  # 33 parameters
    model.compile(optimizer=tati.samplers.BAOAB(seed=0), loss="mse")
    with pytest.warns(UserWarning, match=r"^every_nth 1: 1000 steps of 1 walker\(s\) give 1000 rows of 36 numbers, "
                                         r".* raise every_nth \(a row every nth step\), or lower model.fit's epochs$"):
        model.fit(x, x[:, :1], epochs=100, batch_size=64, verbose=0, callbacks=[tati.callbacks.TrajectoryRecorder()])
    recorder = tati.callbacks.TrajectoryRecorder(every_nth=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(x, x[:, :1], epochs=10, batch_size=64, verbose=0, callbacks=[recorder])
    assert len(recorder.trajectory) == 10
