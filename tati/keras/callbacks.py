"""TrajectoryRecorder: the run-info and trajectory tables for `model.fit` with a tati sampler.

    model.compile(optimizer=tati.samplers.BAOAB(step_width=0.01), loss="mse")
    recorder = tati.callbacks.TrajectoryRecorder(every_nth=10, trajectory_file="trajectory.csv")
    model.fit(x, y, callbacks=[recorder])
    recorder.trajectory, recorder.run_info      # DataFrames
    tati.analysis.temperature(recorder)         # the kinetic temperature against 1 / beta

Rows are written at every every_nth optimizer step. As in the Simulation's tables, a row's
parameters are the state q^n the step started from (taken just before the step) and the
sampler's report belongs to that step; `loss` however is what Keras logs after the step: the
running mean of the batch losses over the epoch so far. Parameters are in the flat order of
tati's Keras model view: weight variables first, then bias variables (weight0.., bias0..).

An existing file is refused unless `overwrite=True`; further `model.fit` calls with the same
recorder append to its files and tables (the step numbers go on with the optimizer's).
"""

import warnings

import keras
import numpy as np

from tati.errors import InputError
from tati.engine.kernels import is_sampler
from tati.models.keras_model import KerasModel
from tati.config.preflight import check_distinct_outputs, check_output_file
from tati.recording.table import Table, rows_beyond_memory

_SAMPLER_COLUMNS = ["kinetic_energy", "scaled_momentum", "scaled_noise"]


class TrajectoryRecorder(keras.callbacks.Callback):
    # For tati.analysis's defaults (a sample() result's): no burn-in; the sampler's beta once fit began.
    burn_in_steps = None
    inverse_temperature = None

    def __init__(self, every_nth=1, run_file=None, trajectory_file=None, walker=0, overwrite=False):
        super().__init__()
        from tati.config.options import check
        self.every_nth = check("every_nth", every_nth)
        self.files = (run_file, trajectory_file)
        self.overwrite = check("overwrite", overwrite)
        check_distinct_outputs({"run_file": run_file, "trajectory_file": trajectory_file})
        for name, path in zip(("run_file", "trajectory_file"), self.files):
            check_output_file(name, path, False, self.overwrite)
        if isinstance(walker, bool) or not isinstance(walker, (int, np.integer)) or walker < 0:
            raise InputError(f"TrajectoryRecorder: walker must be an integer >= 0 (the id column), got {walker!r}")
        self.walker = int(walker)
        self._tables = None
        self._snapshot = None
        self._counted = None  # the next step's number as counted here (see on_train_batch_begin)

    def on_train_begin(self, logs=None):
        if getattr(self.model, "steps_per_execution", 1) != 1:  # Keras calls the batch hooks once per execution
            raise InputError(f"TrajectoryRecorder needs steps_per_execution=1 in model.compile (it is "
                             f"{self.model.steps_per_execution}): a row's parameters are read between two steps")
        self._view = KerasModel(self.model)
        steps = (self.params or {}).get("steps")
        beyond = rows_beyond_memory(1, steps * (self.params.get("epochs") or 1), self.every_nth,
                                    self._view.num_parameters + 3, "model.fit's epochs") if steps else None
        if beyond is not None:  # Keras knows the fit's steps: its trajectory's rows, kept in memory
            warnings.warn(beyond, stacklevel=2)
        optimizer = self._optimizer()
        self._reports = is_sampler(optimizer)  # by its spec (tati/engine/registry.py)
        if self._reports:
            self.inverse_temperature = float(optimizer.inverse_temperature)
        self._momentum = self._reports and optimizer.has_momentum  # SGLD has none to report
        run_columns = ["id", "step", "loss"] + (
            (_SAMPLER_COLUMNS if self._momentum else _SAMPLER_COLUMNS[2:]) if self._reports else [])
        columns = (run_columns, ["id", "step", "loss"] + self._view.parameter_names)
        previous = self._tables
        if previous is None:  # the first fit: new files (checked again, they may have appeared)
            for name, path in zip(("run_file", "trajectory_file"), self.files):
                check_output_file(name, path, False, self.overwrite)
        elif any(list(table.columns) != list(c) for table, c in zip(previous, columns)):
            raise InputError("TrajectoryRecorder: this model.fit has other columns than the recorder's "
                             "earlier one (another model or optimizer); use a new recorder")
        self._tables = tuple(Table(c, path, append=previous is not None) for c, path in zip(columns, self.files))
        if previous is not None:
            for table, old in zip(self._tables, previous):
                table.blocks = old.blocks
        self._counted = self._next_step()

    def _optimizer(self):
        """The model's optimizer; with mixed precision, the sampler inside Keras' loss scaling."""
        optimizer = self.model.optimizer
        return getattr(optimizer, "inner_optimizer", optimizer)

    def _next_step(self):
        return int(self._optimizer().iterations.numpy()) + 1

    def on_train_batch_begin(self, batch, logs=None):
        # Reading the optimizer's step counter is a host round trip: it is counted here instead and
        # read only where the count says a row is due. A step skipped by mixed precision's loss
        # scaling does not count there, so the count can only run ahead; it passes every number,
        # and where it is ahead it is set back and reaches the next due step again.
        self._snapshot = None
        if self._counted % self.every_nth == 0:
            self._counted = self._next_step()
            if self._counted % self.every_nth == 0:
                self._snapshot = self._view.get_parameters()[0]

    def on_train_batch_end(self, batch, logs=None):
        if self._snapshot is None:
            self._counted += 1
            return
        step = self._next_step() - 1
        self._counted = step + 1
        loss = float((logs or {}).get("loss", np.nan))
        run_info, trajectory = self._tables
        row = [self.walker, step, loss]
        if self._reports:
            info = {k: float(v) for k, v in self._optimizer().step_info.items()}
            row += ([info["kinetic_energy"], float(np.sqrt(info["momentum_sq"]))] if self._momentum else []) + [
                float(np.sqrt(info["noise_sq"]))]
        run_info.append(row)
        trajectory.append([self.walker, step, loss] + [float(x) for x in self._snapshot])

    def on_train_end(self, logs=None):
        for table in self._tables:
            table.close()

    @property
    def run_info(self):
        return self._table(0)

    @property
    def trajectory(self):
        return self._table(1)

    def _table(self, k):
        if self._tables is None:
            raise InputError("TrajectoryRecorder: nothing recorded yet; pass it to model.fit(callbacks=[...]) first")
        return self._tables[k].frame()
