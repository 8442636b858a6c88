"""Picking what an analysis reads from a run's tables: the table, its columns, the rows after
burn-in, the parameter columns, each walker's series. Every shortfall is an InputError that
names the table (or its file) and the missing column.

An analysis takes a `result`: a Result of sample() or load_run(), or a RunTables of read_run()
(tati/analysis/runs.py), whose `sources` name the files in messages.
"""

import difflib

import numpy as np

from tati.errors import InputError

LABELS = {"run_info": "run-info", "trajectory": "trajectory", "averages": "averages"}
OPTIONS = {"run_info": "run_file", "trajectory": "trajectory_file", "averages": "averages_file"}


def describe(result, table):
    """The words naming a table in a message: its file if known, else 'the trajectory table'."""
    sources = getattr(result, "sources", None) or {}
    return sources.get(table, f"the {LABELS[table]} table")


def table(result, name, purpose):
    """The DataFrame `name` of the result; InputError if it is missing or has no rows."""
    frame = getattr(result, name, None)
    if frame is None or len(frame.columns) == 0:
        raise InputError(f"{purpose} needs the {LABELS[name]} table: give its file, {OPTIONS[name]} "
                         f"(--{OPTIONS[name]}), or a directory holding it")
    require(result, name, frame, ("id", "step"), purpose)
    return frame


def require(result, name, frame, columns, purpose):
    """InputError naming the first of `columns` that the table lacks."""
    for column in columns:
        if column not in frame.columns:
            raise InputError(f"{describe(result, name)} has no column '{column}' (needed by {purpose})")


def parameter_names(result, purpose):
    """The trajectory's parameter columns: those after `loss`."""
    frame = table(result, "trajectory", purpose)
    require(result, "trajectory", frame, ("loss",), purpose)
    columns = list(frame.columns)
    names = columns[columns.index("loss") + 1:]
    if not names:
        raise InputError(f"{describe(result, 'trajectory')} has no parameter columns after 'loss'")
    return names


def check_names(result, name, frame, wanted, option, purpose):
    """`wanted` (names of columns the user asked for) all present, else InputError naming the
    first missing one and a close match."""
    for column in wanted:
        if column not in frame.columns:
            close = difflib.get_close_matches(column, [str(c) for c in frame.columns], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise InputError(f"{option}: {describe(result, name)} has no column '{column}'{hint} "
                             f"(needed by {purpose})")
    return list(wanted)


def run_burn_in(result, burn_in):
    """burn_in, or where None the run's burn_in_steps (a sample() call's result, a
    TrajectoryRecorder's none), else 0 (a table read back)."""
    return burn_in if burn_in is not None else getattr(result, "burn_in_steps", None) or 0


def run_inverse_temperature(result, inverse_temperature, unknown=1.0):
    """inverse_temperature, or where None the run's (a sample() call's result, a TrajectoryRecorder
    of a sampler), else `unknown` (a table read back)."""
    if inverse_temperature is not None:
        return inverse_temperature
    found = getattr(result, "inverse_temperature", None)
    return unknown if found is None else found


def after_burn_in(result, name, frame, burn_in, purpose, least=1):
    """The rows with step > burn_in in step order per walker (id, then step); InputError if
    fewer than `least` (a spread needs 2)."""
    if frame.empty:
        raise InputError(f"{describe(result, name)} has no rows")
    kept = frame[frame["step"] > burn_in].sort_values(["id", "step"], kind="stable")
    if 0 < len(kept) < least:
        raise InputError(f"{purpose} needs at least {least} rows of {describe(result, name)} after "
                         f"burn_in_steps {burn_in}; it has {len(kept)}")
    if kept.empty:
        last = int(frame["step"].max()) if len(frame) else 0
        raise InputError(f"burn_in_steps {burn_in} leaves no row of {describe(result, name)} "
                         f"(its last step is {last})")
    return kept


def by_walker(frame, columns):
    """[(walker id, [rows, len(columns)] float64 array in step order)] of rows sorted by id, step."""
    return [(int(walker), group[list(columns)].to_numpy(dtype=np.float64))
            for walker, group in frame.groupby("id", sort=True)]


def names_list(value):
    """A list of names from a list or a comma-separated string; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]
