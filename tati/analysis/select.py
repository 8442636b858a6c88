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
    """burn_in, or where None the run's burn_in_steps (a sample() call's result; a
    TrajectoryRecorder's none), else for tables read back the burn-in their averages table shows
    (`shown_burn_in`), else 0."""
    if burn_in is not None:
        return burn_in
    known = getattr(result, "burn_in_steps", None)
    if known is not None:
        return known
    shown = shown_burn_in(result)
    return 0 if shown is None else shown


def shown_burn_in(result):
    """The burn-in a run's tables show, or None: the averages table has rows only for steps after
    burn_in_steps (doc/columns.md), so the burn-in ends at the last run-info or trajectory row before
    the averages' first (0 where there is none). None without averages rows (a run not past its
    burn-in, a fit, the averages file not given): the tables do not say."""
    averages = getattr(result, "averages", None)
    if averages is None or "step" not in averages.columns or averages.empty:
        return None
    first = averages["step"].min()
    before = [frame["step"][frame["step"] < first] for frame in
              (getattr(result, name, None) for name in ("run_info", "trajectory"))
              if frame is not None and "step" in frame.columns]
    return int(max((steps.max() for steps in before if len(steps)), default=0))


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


# Walkers whose R-hat along a coordinate exceeds this have not mixed along it (Gelman and Rubin's
# 1.1): a pooled covariance or histogram then shows their spread, not one basin's.
APART_R_HAT = 1.1


def walkers_r_hat(series):
    """Gelman and Rubin's R-hat of the walkers' series (1-D arrays), over each one's last rows, as many
    as the shortest has; NaN with fewer than 2 walkers or 2 rows, inf where none moves but they differ."""
    n = min((len(s) for s in series), default=0)
    if len(series) < 2 or n < 2:
        return np.nan
    rows = np.stack([np.asarray(s, dtype=np.float64)[-n:] for s in series])
    within = rows.var(axis=1, ddof=1).mean()
    between = rows.mean(axis=1).var(ddof=1)
    if within == 0:
        return np.inf if between > 0 else np.nan
    return float(np.sqrt(((n - 1) / n * within + between) / within))


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
