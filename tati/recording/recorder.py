"""One sample() or fit() call's tables: blocks of rows from the compiled chunk to DataFrames,
CSV streams and TensorBoard.

Every file is checked before any is opened (a call never loses what a file holds unless the
user allows it, tati/config/preflight.py); the run-info and averages columns are the common ones and
the kernel's own (its Info, tati/engine/kernels.py), which the chunk delivers under their names.
"""

from typing import NamedTuple

import numpy as np

from tati.config import preflight
from tati.recording.columns import (RUNNING_AVERAGES, averages_columns, momenta_columns, run_info_columns,
                                    trajectory_columns)
from tati.recording.table import Table, check_continues, check_header


class Files(NamedTuple):
    """Where one call's tables go and how they meet what its files hold.

    paths: {output option: path or None} (run_file, trajectory_file, averages_file,
    momenta_file, summaries_path); continuing: a later call of the run (its files are appended
    to, and must end at `step`, the run's step, or before it where not every call and
    interruption ends with a row: HMC's `rows_at_every_end` False); overwrite: the option;
    record_momenta: the momenta table is kept.
    """
    paths: dict
    continuing: bool
    overwrite: bool
    record_momenta: bool
    step: int = 0
    rows_at_every_end: bool = True


class Recorder:
    """The tables of one call: `append` a block of rows, `close`, then each table's `frame()`.

    model: parameter names, walkers, parameter groups; data: its `epoch(steps)`; info: the
    kernel's Info; files: a `Files`, where the tables go.
    """

    def __init__(self, model, data, info, has_accuracy, burn_in_steps, files):
        self.model, self.data, self.info, self.burn_in_steps = model, data, info, burn_in_steps
        paths = files.paths
        columns = {"run_file": run_info_columns(info, has_accuracy), "averages_file": averages_columns(info),
                   "trajectory_file": trajectory_columns(model.parameter_names),
                   "momenta_file": momenta_columns(model.parameter_names)}
        outputs = [name for name in preflight.OUTPUT_FILES if name != "momenta_file" or files.record_momenta]
        append = {}
        for name in outputs:  # every file is checked before any is opened
            append[name] = preflight.check_output_file(name, paths[name], files.continuing, files.overwrite)
            if append[name]:
                check_header(name, paths[name], columns[name])
                check_continues(name, paths[name], files.step, files.rows_at_every_end)
        self.tables = [Table(columns[name], paths[name], append[name]) for name in outputs]
        self.summaries = None
        self._summaries_path = paths["summaries_path"]

    def start_summaries(self):
        """TensorBoard's writers (summaries_path), once the files are open."""
        self.summaries = _summaries(self._summaries_path, self.tables[0].columns, self.model)

    def close(self):
        for table in self.tables:
            table.close()
        if self.summaries is not None:
            self.summaries.close()

    def append(self, block, first, last, elapsed):
        """The block's rows, one per walker and table (HMC: per walker whose row is due); rows
        at or after a non-finite step are left out. `elapsed` seconds were spent on the steps
        first+1 ... last, shared out over the rows by their steps. TensorBoard's writers
        (summaries_path) get every row."""
        walkers = self.model.num_walkers
        rows = int(block["rows"])
        steps = np.asarray(block["step"][:rows], dtype=np.int64)
        due = np.asarray(block.get("due", np.ones((rows, walkers), bool))[:rows], bool)
        if block["nonfinite_step"] >= 0:
            due &= (steps < block["nonfinite_step"])[:, None]
        r, w = np.nonzero(due)  # row-major: step order, walkers ascending
        if not len(r):
            return
        previous = np.concatenate([[first], steps[:-1]])
        seconds = elapsed * (steps - previous) / max(last - first, 1)
        pick = lambda name: np.asarray(block[name][:rows], dtype=np.float64)[r, w]  # noqa: E731
        loss = pick("loss")
        averages = np.asarray(block["averages"][:rows], dtype=np.float64)[r, :, w]  # [K, 4]
        columns = {"id": w.astype(np.int64), "step": steps[r], "epoch": np.asarray(self.data.epoch(steps[r]), np.int64),
                   "time_per_nth_step": seconds[r], "loss": loss,
                   "accuracy": pick("accuracy") if "accuracy" in block else np.full(len(r), np.nan)}
        columns.update(zip(RUNNING_AVERAGES, averages.T))
        columns.update({name: pick(name) for name in self.info.run_info})  # the kernel's own, by name
        columns.update({name: columns[name].astype(np.int64) for name in self.info.integers})
        parameters = np.asarray(block["parameters"][:rows], dtype=np.float64)  # [rows, W, d]
        # [K, d]: with every walker's row due (not HMC) the rows are the block's in order, a view.
        parameters = parameters.reshape(len(r), parameters.shape[2]) if due.all() else parameters[r, w]
        kept = steps[r] > self.burn_in_steps
        run_table, trajectory, averages_table = self.tables[:3]
        if len(self.tables) > 3:  # record_momenta: the rows' momenta and gradients
            momenta = np.asarray(block["momenta"][:rows], dtype=np.float64)[r, w]
            gradients = np.asarray(block["gradients"][:rows], dtype=np.float64)[r, w]
            self.tables[3].extend_arrays(np.stack([columns["id"], columns["step"]], axis=1),
                                         np.concatenate([momenta, gradients], axis=1))
        run_table.extend({c: columns[c] for c in run_table.columns})
        if trajectory.integer_columns == ["id", "step"] and trajectory.float_columns[0] == "loss":
            # The parameters as one matrix: 100 column views of it cost more to stack than the rest.
            floats = np.empty((len(r), 1 + parameters.shape[1]))
            floats[:, 0], floats[:, 1:] = loss, parameters
            trajectory.extend_arrays(np.stack([columns["id"], columns["step"]], axis=1), floats)
        else:  # a parameter named like an integer column
            trajectory.extend({**columns, **dict(zip(self.model.parameter_names, parameters.T))})
        if kept.any():
            averages_table.extend({c: columns[c][kept] for c in averages_table.columns})
        if self.summaries is not None:
            self.summaries.write({**columns, **dict(zip(self.model.parameter_names, parameters.T))})


def _summaries(path, run_info_columns, model):
    """TensorBoard's writers of one call (tati/export/tensorboard.py), or None without summaries_path."""
    if path is None:
        return None
    from tati.export.tensorboard import Summaries
    groups = model.parameter_groups() if hasattr(model, "parameter_groups") else None
    return Summaries(path, run_info_columns, model.parameter_names, model.num_walkers, groups)
