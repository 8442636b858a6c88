"""Runs read back: the tables of a finished or interrupted run from its CSV files.

    result = tati.load_run(run_file="run.csv", trajectory_file="trajectory.csv",
                           averages_file="averages.csv", momenta_file="momenta.csv")
    result = tati.load_run("results/")          # a directory holding the run's CSV files
    result.layer_temperatures(burn_in=1000)    # with the momenta table (record_momenta)

`load_run` gives the `Result` a `sample()` (or `fit()`) call returns: the same DataFrames,
value for value (the files hold floats in shortest round-trip form, tati/recording/table.py),
with the counting columns (`id`, `step`, `epoch`, `divergences`, `gradient_evaluations`, ...,
tati/engine/registry.py's integer_columns()) as int64 and every other column float64. A file
that a run appended to over several calls gives all their rows. A table whose file is not
given is an empty DataFrame; the momenta table (`momenta_file`, written with record_momenta)
is None then, as in a Result of a run without it. The files do not say how the parameters
form layers: `parameter_groups` (name -> trajectory columns, e.g. the run's
`sim.model.parameter_groups()`) gives them to `layer_temperatures`, which without them
reports the whole vector only.

An interrupted run is read up to its last complete row: a final line without its newline (cut
by a kill while it was written) is left out. Any other malformed line is an InputError naming
the file and the line.

A directory: for each table, the file of the README's name (run.csv, trajectory.csv,
averages.csv, momenta.csv) if it exists, else the one CSV file in it whose header is of that
table's kind (an averages table has `average_virials`; a trajectory has id, step, loss and
then parameter columns only; a run-info table has id and step and other run-info columns; a
momenta table id, step and then momentum_ and gradient_ columns only; the output of
tati-analyse traces is none of them). Two candidates for one table are an InputError asking
for the file by name.

Every file, named or found, is checked against its header: a table of another kind given for
one (a run-info table as trajectory_file, a trajectory as averages_file, tati-analyse's or
tati-lossfunction-sampler's output as any of them) is an InputError naming the option, the
file and what the file holds, before any row is read. A header of no known kind is read as
given (a table written by hand), and the analyses name any column it lacks.

`read_run` does the same without TensorFlow (it returns a `RunTables`, not a `Result`), so the
command-line tool can check its inputs before importing TensorFlow. The tool's analyses need
no momenta, so `run_paths` looks for a momenta table in a directory only when asked.
"""

import glob
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tati.engine.registry import every_info, integer_columns
from tati.errors import InputError
from tati.recording import columns as table_columns

# (option name, Result field, file name in a directory)
KINDS = (("run_file", "run_info", "run.csv"), ("trajectory_file", "trajectory", "trajectory.csv"),
         ("averages_file", "averages", "averages.csv"), ("momenta_file", "momenta", "momenta.csv"))
FIELD = {option: name for option, name, _ in KINDS}


@dataclass
class RunTables:
    """The tables of a run, like a Result, and where each came from: `sources` maps a table
    ("run_info", "trajectory", "averages", "momenta") to the words that name its file in a
    message. `momenta` is None without a momenta file."""
    run_info: pd.DataFrame = field(default_factory=pd.DataFrame)
    trajectory: pd.DataFrame = field(default_factory=pd.DataFrame)
    averages: pd.DataFrame = field(default_factory=pd.DataFrame)
    sources: dict = field(default_factory=dict)
    momenta: pd.DataFrame = None


def load_run(directory=None, *, run_file=None, trajectory_file=None, averages_file=None, momenta_file=None,
             parameter_groups=None):
    """The Result of the run whose CSV files are given (or found in `directory`), with the
    parameter groups (name -> trajectory columns) for its layer_temperatures if given; see the
    module docstring. Raises InputError naming the file at fault."""
    tables = read_run(directory, run_file=run_file, trajectory_file=trajectory_file,
                      averages_file=averages_file, momenta_file=momenta_file)
    from tati.simulation import Result
    return Result(run_info=tables.run_info, trajectory=tables.trajectory, averages=tables.averages,
                  momenta=tables.momenta, parameter_groups=parameter_groups)


def read_run(directory=None, *, run_file=None, trajectory_file=None, averages_file=None, momenta_file=None):
    """The run's tables as a RunTables (no TensorFlow); see the module docstring."""
    return read_paths(run_paths(directory, run_file=run_file, trajectory_file=trajectory_file,
                                averages_file=averages_file, momenta_file=momenta_file, momenta=True))


def run_paths(directory=None, *, run_file=None, trajectory_file=None, averages_file=None, momenta_file=None,
              momenta=False):
    """{option: path or None} of the run's table files: those given, and for the others those
    found in `directory` (the momenta table's only if `momenta` or momenta_file is given)."""
    paths = {"run_file": run_file, "trajectory_file": trajectory_file, "averages_file": averages_file}
    if momenta or momenta_file is not None:
        paths["momenta_file"] = momenta_file
    if directory is not None:
        paths.update(find_files(directory, [option for option, path in paths.items() if path is None]))
    elif all(path is None for path in paths.values()):
        raise InputError("give the run's files: run_file, trajectory_file, averages_file, momenta_file, "
                         "or a directory")
    for option, path in paths.items():  # before the outputs are looked at: the input is the mistake
        if path is not None and not os.path.exists(path):
            raise InputError(f"{option} '{path}' does not exist")
    return paths


def read_paths(paths):
    """RunTables of the files {option: path or None}."""
    tables = RunTables()
    for option, path in paths.items():
        if path is not None:
            setattr(tables, FIELD[option], read_table(option, path))
            tables.sources[FIELD[option]] = f"{option} '{path}'"
    return tables


def find_files(directory, options=FIELD):
    """{option: path} of the run's tables in `directory` (see the module docstring), for the
    table `options` (run_file, trajectory_file, averages_file, momenta_file) asked for."""
    if not os.path.exists(directory):
        raise InputError(f"directory '{directory}' does not exist")
    if not os.path.isdir(directory):
        raise InputError(f"directory '{directory}' is not a directory")
    found, candidates = {}, {option: [] for option, _, _ in KINDS}
    for option, _, name in KINDS:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            found[option] = path
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        kind = classify(_header(path))
        if kind is not None and path not in found.values():
            candidates[kind].append(path)
    for option, paths in candidates.items():
        if option in found or not paths or option not in options:
            continue
        if len(paths) > 1:
            names = ", ".join(os.path.basename(p) for p in paths)
            label = {"run_file": "run-info"}.get(option, FIELD[option])
            raise InputError(f"directory '{directory}' holds several {label} tables ({names}): "
                             f"name one with {option} (--{option})")
        found[option] = paths[0]
    if not found and options:
        raise InputError(f"directory '{directory}' holds no tati table (run.csv, trajectory.csv, "
                         "averages.csv, momenta.csv or CSV files with their headers)")
    return {option: path for option, path in found.items() if option in options}


def _header(path):
    try:
        with open(path, encoding="utf-8", newline="") as file:
            line = file.readline()
    except (OSError, UnicodeDecodeError):
        return []
    return line.rstrip("\r\n").split(",") if line.endswith("\n") else []


def _known_columns():
    """Every column a run-info or averages table can have, besides id, step and loss."""
    names = set(table_columns.head(accuracy=True))
    for info in every_info():
        names.update(info.run_info + info.averages)
    return names - {"id", "step", "loss"}


# what a file of each kind is, in a message
KIND_WORDS = {"run_file": "a run-info table", "trajectory_file": "a trajectory table",
              "averages_file": "an averages table", "momenta_file": "a momenta table"}


def classify(header):
    """The option of the table kind a header belongs to, or None."""
    kind = describe_header(header)
    return kind if kind in FIELD else None


def describe_header(header):
    """The option of the table kind a header belongs to, words naming another tool's output
    (which is no table of a run), or None for a header of no known kind."""
    if "id" not in header or "step" not in header:
        return None
    if any(c.endswith("_running_mean") and c[: -len("_running_mean")] in header for c in header):
        return "the output of tati-analyse traces"
    if any(c.startswith("diffusion_coordinate") for c in header):
        return "the output of tati-analyse diffusion_map"
    if "recorded_loss" in header:
        return "the output of tati-lossfunction-sampler trajectory"
    if "average_virials" in header or "ensemble_average_loss" in header:  # RWMH has no virial
        return "averages_file"
    prefixes = (table_columns.MOMENTUM_PREFIX, table_columns.GRADIENT_PREFIX)
    if header[:2] == ["id", "step"] and len(header) > 2 and all(c.startswith(prefixes) for c in header[2:]):
        return "momenta_file"
    known = _known_columns()
    if header[:3] == ["id", "step", "loss"] and len(header) > 3 and not known & set(header[3:]):
        return "trajectory_file"
    if known & set(header):
        return "run_file"
    return None


def check_kind(option, path, header):
    """InputError if the header is of another kind than the table `option` asks for."""
    kind = describe_header(header)
    if kind is None or kind == option:
        return
    wanted = KIND_WORDS[option][KIND_WORDS[option].index(" ") + 1:]
    if kind in KIND_WORDS:
        raise InputError(f"{option} '{path}' is {KIND_WORDS[kind]}, not {KIND_WORDS[option]}: give it as "
                         f"{kind} (--{kind}) and the {wanted} as {option}")
    raise InputError(f"{option} '{path}' is {kind}, not {KIND_WORDS[option]}: give the run's {wanted} "
                     f"(tati-sample --{option})")


def read_table(option, path):
    """The DataFrame of one table file, its complete rows (see the module docstring); InputError
    if its header is of another kind of table (check_kind)."""
    what = f"{option} '{path}'"
    if not os.path.exists(path):
        raise InputError(f"{what} does not exist")
    if os.path.isdir(path):
        raise InputError(f"{what} is a directory, not a CSV file")
    try:
        with open(path, encoding="utf-8", newline="") as file:
            text = file.read()
    except UnicodeDecodeError:
        raise InputError(f"{what} is not a text (UTF-8) file") from None
    except OSError as error:
        raise InputError(f"{what} cannot be read: {error.strerror}") from None
    lines = text.split("\n")
    lines.pop()  # the empty rest after the last newline, or a line cut short by an interruption
    if not lines:
        raise InputError(f"{what} has no complete header line: not a tati table")
    header = lines[0].rstrip("\r").split(",")
    check_kind(option, path, header)
    for name in ("id", "step"):
        if name not in header:
            raise InputError(f"{what} has no column '{name}': not a tati table")
    body = []
    for number, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line:
            continue
        if line.count(",") != len(header) - 1:
            raise InputError(f"{what} line {number} has {line.count(',') + 1} fields, the header "
                             f"{len(header)}")
        body.append(line)
    return _frame(what, header, body)


def _frame(what, header, body):
    """The DataFrame of the lines (comma-separated numbers, as tati writes them), typed as
    Table.frame types the rows of a run."""
    for i, column in enumerate(header):
        if column in header[:i]:
            raise InputError(f"{what} has the column '{column}' twice")
    cells = np.array([line.split(",") for line in body], dtype=object).reshape(len(body), len(header))
    integers = integer_columns()
    # one frame from all columns at once: inserting them one by one fragments a wide trajectory's
    # frame, and pandas warns of it (a PerformanceWarning from 100 columns on)
    columns = {column: _convert(what, column, cells[:, j], column in integers) for j, column in enumerate(header)}
    return pd.DataFrame(columns, index=pd.RangeIndex(len(body)))


def _convert(what, column, values, integer):
    """float64 (or int64) values of one column's strings: Python's float() and int() read the
    files' repr exactly."""
    kind = np.int64 if integer else np.float64
    try:
        return values.astype(kind)
    except (ValueError, OverflowError, TypeError):
        pass
    for i, text in enumerate(values):  # find the culprit
        try:
            int(text) if integer else float(text)
        except (ValueError, OverflowError):
            wanted = "an integer" if integer else "a number"
            raise InputError(f"{what} row {i + 1}: column '{column}' must be {wanted}, "
                             f"got '{text[:40]}'") from None
    raise InputError(f"{what}: column '{column}' cannot be read as numbers")  # pragma: no cover
