"""Parameter vectors, parameter selections and directions as the landscapes take them.

A point is a numpy vector (or list) of the model's d parameters, a trajectory row (a pandas
Series or a one-row DataFrame holding the parameter columns; other columns such as id, step and
loss are ignored), or None for the simulation's current parameters (walker 0's).
No TensorFlow here: the command-line tool selects its rows before importing it.
"""

import difflib

import numpy as np
import pandas as pd

from tati.errors import InputError
from tati.recording.columns import check_parameter_columns

# Columns of tati-analyse covariance's eigenvector table that are not parameters.
EIGEN_COLUMNS = ("id", "rank", "eigenvalue", "eigenvalue_error", "fraction", "walkers_r_hat")


def vector(sim, point, name):
    """The point as a float64 vector [d] of sim's parameters (see the module docstring)."""
    names = list(sim.model.parameter_names)
    if point is None:
        return np.asarray(sim.model.get_parameters()[0], np.float64)
    if isinstance(point, pd.DataFrame):
        if len(point) != 1:
            raise InputError(f"{name}: a DataFrame point must have one row, got {len(point)}")
        point = point.iloc[0]
    if isinstance(point, pd.Series):
        check_parameter_columns(point.index, names, f"{name}: the row")
        point = point[names].to_numpy()
    try:
        values = np.asarray(point, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a parameter vector or a trajectory row, got {point!r:.60}") from None
    if values.shape != (len(names),):
        raise InputError(f"{name} must have the model's {len(names)} parameters, got shape {list(values.shape)}")
    if not np.all(np.isfinite(values)):
        raise InputError(f"{name} contains NaN or infinite values")
    return values


def _close(name, candidates):
    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def parameter_indices(names, parameters=None, exclude=None, option="parameters"):
    """Indices into `names` of the chosen parameters: `parameters` (names or indices) or all but
    `exclude` (names or indices), or all."""
    def index(item, which):
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= item < len(names):
                raise InputError(f"{which}: index {item} is out of range (the model has {len(names)} parameters)")
            return int(item)
        if item not in names:
            raise InputError(f"{which}: '{item}' is not a parameter of this model" + _close(item, names))
        return names.index(item)
    if parameters is not None and exclude is not None:
        raise InputError("give parameters or exclude_parameters, not both")
    if parameters is not None:
        chosen = [index(item, option) for item in _as_list(parameters)]
        if not chosen:
            raise InputError(f"{option} is empty")
        if len(set(chosen)) != len(chosen):
            twice = next(i for i in chosen if chosen.count(i) > 1)
            raise InputError(f"{option} names the parameter {names[twice]} twice")
        return chosen
    left_out = {index(item, "exclude_parameters") for item in _as_list(exclude or [])}
    chosen = [i for i in range(len(names)) if i not in left_out]
    if not chosen:
        raise InputError("exclude_parameters leaves no parameter")
    return chosen


def _as_list(items):
    return [items] if isinstance(items, (str, int, np.integer)) else list(items)


def directions(sim, directions, components=None):
    """(directions [k, d] float64, coordinate names, eigenvalues [k] or None) from an array
    [k, d] (or one vector [d]) or tati-analyse covariance's eigenvector table (a DataFrame with
    rank, eigenvalue, ... and one column per parameter; parameters it lacks get 0)."""
    names = list(sim.model.parameter_names)
    eigenvalues = None
    if isinstance(directions, pd.DataFrame):
        frame = directions
        if "step" in frame.columns:
            raise InputError("directions: the table has a column step, so it is a trajectory, not directions: "
                             "give tati-analyse covariance's eigenvector table (--eigen_output) or one row "
                             "per direction with the parameter columns")
        if "id" in frame.columns and frame["id"].nunique() > 1:
            raise InputError("directions: the eigenvector table holds several walkers' eigenvectors (column id); "
                             "pick one walker's rows or write the pooled table (tati-analyse covariance "
                             "without --per_walker)")
        columns = [c for c in frame.columns if c not in EIGEN_COLUMNS]
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise InputError(f"directions: column '{unknown[0]}' is not a parameter of this model"
                             + _close(unknown[0], names))
        if not columns:
            raise InputError("directions: the table has no parameter columns")
        if len(frame) == 0:
            raise InputError("directions: the table has no rows")
        values = np.zeros((len(frame), len(names)))
        try:
            values[:, [names.index(c) for c in columns]] = frame[columns].to_numpy(dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("directions: the table has cells that are not numbers") from None
        labels = ([f"eigenvector{int(r)}" for r in frame["rank"]] if "rank" in frame.columns
                  else [f"direction{i + 1}" for i in range(len(frame))])
        if "eigenvalue" in frame.columns:
            eigenvalues = frame["eigenvalue"].to_numpy(dtype=np.float64)
    else:
        try:
            values = np.atleast_2d(np.asarray(directions, dtype=np.float64))
        except (TypeError, ValueError):
            raise InputError(f"directions must be an array [k, d] or an eigenvector table, got "
                             f"{directions!r:.60}") from None
        if values.ndim != 2 or values.shape[1] != len(names):
            raise InputError(f"directions must have the model's {len(names)} parameters per row, got shape "
                             f"{list(np.shape(directions))}")
        labels = [f"direction{i + 1}" for i in range(len(values))]
    if components is not None:
        if components > len(values):
            raise InputError(f"components {components}: there are only {len(values)} directions")
        values, labels = values[:components], labels[:components]
        eigenvalues = None if eigenvalues is None else eigenvalues[:components]
    if not np.all(np.isfinite(values)):
        raise InputError("directions contain NaN or infinite values")
    if np.any(np.linalg.norm(values, axis=1) == 0):
        raise InputError("directions: a direction is zero")
    return values, labels, eigenvalues


def select_rows(frame, source, count=None, rows=None, steps=None, walkers=None):
    """The rows of a points table (a trajectory or any table of parameter columns) to use:
    `rows` (0-based row numbers), or by `steps` and `walkers` (columns step and id; each one
    value or one per point; a step left out is each walker's last; one step alone takes the
    rows at that step, one walker alone its last rows), or the last `count` rows, or all rows
    when count is None. `source` names the table in messages."""
    if frame.empty:
        raise InputError(f"{source} has no rows")
    if rows is not None:
        if steps is not None or walkers is not None:
            raise InputError("give rows, or steps and walkers, not both")
        bad = [r for r in rows if not 0 <= r < len(frame)]
        if bad:
            raise InputError(f"rows: {source} has no row {bad[0]} (it has rows 0 to {len(frame) - 1})")
        _check_count("rows", len(rows), count)
        return frame.iloc[list(rows)]
    if steps is None and walkers is None:
        if count is None:
            return frame
        if len(frame) < count:
            raise InputError(f"{source} has {len(frame)} row(s); {count} points are needed")
        return frame.iloc[-count:]
    for column, given in (("step", steps), ("id", walkers)):
        if given is not None and column not in frame.columns:
            raise InputError(f"{'steps' if column == 'step' else 'walkers'}: {source} has no column '{column}'")
    if count is None:  # all rows of these steps and walkers
        kept = frame
        if steps is not None:
            kept = kept[kept["step"].isin(steps)]
        if walkers is not None:
            kept = kept[kept["id"].isin(walkers)]
        if kept.empty:
            raise InputError(f"{source} has no rows at these steps and walkers")
        return kept
    lengths = [len(v) for v in (steps, walkers) if v is not None]
    for option, values in (("steps", steps), ("walkers", walkers)):
        if values is not None and len(values) not in (1, count):
            raise InputError(f"{option} must give one value or {count} (one per point), got {len(values)}")
    n = max(lengths)
    if n == 1 and count > 1:  # the rows at that step (every walker's) or that walker's last rows
        kept, where = frame, []
        if steps is not None:
            kept, where = kept[kept["step"] == steps[0]], [f"at step {steps[0]}"]
        if walkers is not None:
            kept, where = kept[kept["id"] == walkers[0]], where + [f"of walker {walkers[0]}"]
            if steps is None:
                kept = kept.iloc[-count:]
        if len(kept) != count:
            raise InputError(f"{source} has {len(kept)} row(s) {' '.join(where)}; {count} points are needed: "
                             f"give {count} steps or walkers (one per point)")
        return kept
    picked = []
    for i in range(n):
        kept = frame
        walker = None if walkers is None else walkers[i % len(walkers)]
        if walker is not None:
            kept = kept[kept["id"] == walker]
            if kept.empty:
                raise InputError(f"walkers: {source} has no row of walker {walker}")
        if steps is not None:
            step = steps[i % len(steps)]
            kept = kept[kept["step"] == step]
            if kept.empty:
                raise InputError(f"steps: {source} has no row at step {step}"
                                 + ("" if walker is None else f" of walker {walker}"))
        elif "step" in kept.columns:
            kept = kept[kept["step"] == kept["step"].max()]
        if len(kept) != 1:
            where = f" at step {int(kept['step'].iloc[0])}" if "step" in kept.columns else ""
            raise InputError(f"{source} has {len(kept)} rows{where} for point {i + 1}: give walkers "
                             "(or rows) too")
        picked.append(kept.index[0])
    return frame.loc[picked]


def _check_count(option, given, count):
    if count is not None and given != count:
        raise InputError(f"{option} select {given} row(s); {count} points are needed")
