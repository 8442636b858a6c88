"""Datasets from CSV files: a header row, then rows of numbers, features first and labels last.

We parse with the standard csv module and convert the cells ourselves rather than let pandas do
it, so that every problem becomes one InputError line naming the file, line and column at fault.
"""

import csv
import os

import numpy as np

from tati.errors import InputError


def read_csv_files(paths, input_dimension, dtype=np.float32):
    """Return (X, Y) read from one CSV file or a list of them, rows concatenated in file order.

    The first ``input_dimension`` columns are features (X has shape [N, input_dimension]), all
    remaining columns, at least one, are labels (Y has shape [N, columns - input_dimension]).
    Every file needs the same number of columns. Blank lines are skipped.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(path) for path in paths]
    if not paths:
        raise InputError("batch_data_files: no file given")
    if isinstance(input_dimension, bool) or not isinstance(input_dimension, (int, np.integer)) \
            or input_dimension < 1:
        raise InputError(f"input_dimension must be an integer of at least 1, got {input_dimension!r}")
    dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))  # also accept a tf.DType

    tables = []
    for path in paths:
        header, lines, rows = _read_rows(path)
        if len(header) <= input_dimension:
            separator = next((c for c in ";\t|" if c in ",".join(header)), None)
            hint = f" (its header is separated by '{separator}'; tati reads commas)" if separator else ""
            raise InputError(f"batch_data_files: file '{path}' has {len(header)} column(s){hint}; "
                             f"{input_dimension} feature column(s) and at least one label column are needed")
        if tables and len(header) != tables[0].shape[1]:
            raise InputError(f"batch_data_files: file '{path}' has {len(header)} columns but file "
                             f"'{paths[0]}' has {tables[0].shape[1]}; all files need the same columns")
        # Check after the cast: a value finite as float64 can overflow a narrower dtype.
        with np.errstate(over="ignore"):
            table = _numbers(path, header, lines, rows).astype(dtype)
        bad = np.argwhere(~np.isfinite(table))
        if bad.size:
            i, j = bad[0]
            raise InputError(f"batch_data_files: file '{path}' line {lines[i]}, {_column(header, j)}: "
                             f"value '{rows[i][j].strip()}' is NaN, infinite or too large for {dtype.name}")
        tables.append(table)
    data = np.concatenate(tables)
    return data[:, :input_dimension], data[:, input_dimension:]


def check_file(path):
    """InputError unless `path` names an existing file (also checked before TensorFlow starts)."""
    if not os.path.exists(path):
        raise InputError(f"batch_data_files: file '{path}' does not exist")
    if os.path.isdir(path):
        raise InputError(f"batch_data_files: '{path}' is a directory, not a CSV file")


def header_columns(path):
    """The number of columns of the file's first row, or None if it cannot be read (read_csv_files
    then names the problem)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as file:
            return len(next(csv.reader(file))) or None
    except (OSError, StopIteration, UnicodeDecodeError, csv.Error):
        return None


def write_csv_file(path, features, labels, feature_names=None, label_names=None):
    """Write (features, labels) as a CSV file that read_csv_files reads back exactly: a header
    (x1, x2, ..., label or label1, label2, ...), then one row per point. Features are written as
    the shortest decimal that parses to the same float64 (so reading them as float64, or as
    float32 after rounding, gives what rounding the float64 array gives); labels that are whole
    numbers are written as integers."""
    features, labels = np.asarray(features, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    if labels.ndim == 1:
        labels = labels[:, None]
    feature_names = feature_names or [f"x{i + 1}" for i in range(features.shape[1])]
    label_names = label_names or (["label"] if labels.shape[1] == 1 else
                                  [f"label{i + 1}" for i in range(labels.shape[1])])
    integral = bool(np.all(labels == np.round(labels)) and np.all(np.abs(labels) < 2 ** 53))
    with open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(feature_names + label_names)
        for x, y in zip(features.tolist(), labels.tolist()):
            writer.writerow([repr(v) for v in x] + [str(int(v)) if integral else repr(v) for v in y])


def _read_rows(path):
    """(header, line numbers, rows of cell strings) of one file; the rows all have the header's length."""
    check_file(path)
    header, lines, rows = None, [], []
    try:
        # utf-8-sig: spreadsheet programs often start the file with a byte order mark.
        with open(path, encoding="utf-8-sig", newline="") as file:
            reader = csv.reader(file)
            for row in reader:
                if not row:
                    continue  # blank line
                if header is None:
                    header = row
                    continue
                if len(row) != len(header):
                    raise InputError(f"batch_data_files: file '{path}' line {reader.line_num} has {len(row)} "
                                     f"columns but the header has {len(header)}")
                lines.append(reader.line_num)
                rows.append(row)
    except UnicodeDecodeError:
        raise InputError(f"batch_data_files: file '{path}' is not UTF-8 text") from None
    except csv.Error as error:
        raise InputError(f"batch_data_files: file '{path}' line {reader.line_num} is not valid CSV: {error}") from None
    except OSError as error:
        raise InputError(f"batch_data_files: file '{path}' cannot be read: {error.strerror}") from None
    if header is None:
        raise InputError(f"batch_data_files: file '{path}' is empty; expected a header row, then rows of numbers")
    if not rows:
        raise InputError(f"batch_data_files: file '{path}' has a header but no data rows")
    return header, lines, rows


def _numbers(path, header, lines, rows):
    """The cells as a float64 array; on failure, find and name the first cell that is not a number."""
    try:
        return np.array(rows, dtype=np.float64)  # fast path: numpy parses the strings
    except ValueError:
        pass
    values = np.empty((len(rows), len(header)))
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            try:
                values[i, j] = float(cell)
            except ValueError:
                raise InputError(f"batch_data_files: file '{path}' line {lines[i]}, {_column(header, j)}: "
                                 f"'{cell.strip()[:40]}' is not a number") from None
    return values


def _column(header, j):
    return f"column {j + 1} '{header[j].strip()}'"
