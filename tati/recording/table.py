"""Table: rows kept for a DataFrame and, optionally, streamed to a CSV file as they come.

Rows come in blocks (`extend`: one 1-D array per column; `extend_arrays`: the integer and the
float columns as two matrices) or one at a time (`append`). A block is kept as those two
matrices, so the DataFrame is built from one float matrix at once, not column by column.
Each block goes to the file unbuffered, as complete lines in one write call (a buffered
writer splits a long write into two system calls, and a SIGKILL between them left a partial
line), so a run killed at any moment leaves a file whose lines are complete rows, a prefix of
the uninterrupted run. Appending to a file that a killed writer nevertheless left with a
partial last line first cuts that line off. Floats are written with repr (shortest round
trip), so reading the file back with pandas gives exactly the DataFrame's values; repr is
most of a row's cost (about a microsecond per number), the rest is one %-format per line.
"""

import os
from operator import itemgetter

import numpy as np
import pandas as pd

from tati.errors import InputError
from tati.engine.registry import integer_columns


# Tables of at most this many columns are built from a dict of columns (doc/benchmarks.md).
DICT_COLUMNS = 30


def check_header(name, path, columns):
    """InputError unless the file to append to is missing, empty or has exactly these columns."""
    try:
        with open(path, encoding="utf-8", newline="") as file:
            header = file.readline().rstrip("\r\n")
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{name} '{path}' cannot be read to append to it: {error}") from None
    if header and header != ",".join(columns):
        raise InputError(f"{name} '{path}' has other columns than this run's table, so the rows cannot "
                         "be appended; give another file name")


def check_continues(name, path, step, exact):
    """InputError unless the rows of the file to append to end where the run continues: its last
    complete row is at `step` (`exact`: every call and every interruption ends with a row), or,
    for HMC, whose rows come where a walker's leg ends, at most at `step`. A file without rows
    continues anywhere."""
    last = _last_step(path)
    if last is None or last == step or (last < step and not exact):
        return
    if last > step:
        raise InputError(f"{name} '{path}' ends at step {last}, after step {step} where the run continues: "
                         "its rows would repeat; give the checkpoint saved with this file, or another file name")
    raise InputError(f"{name} '{path}' ends at step {last}, before step {step} where the run continues: the "
                     f"rows of steps {last + 1}-{step} are not in it; give the checkpoint saved with this file, "
                     "or another file name")


def _last_step(path):
    """The step of a CSV file's last complete row, or None (no such file, or no row)."""
    try:
        with open(path, "rb") as file:
            header = file.readline().decode("utf-8", "replace").rstrip("\r\n").split(",")
            rows_start, end = file.tell(), file.seek(0, 2)
            size = 1 << 16
            while True:  # a tail long enough to hold the last complete row (a network's can be long)
                start = max(rows_start, end - size)
                file.seek(start)
                tail = file.read().split(b"\n")
                # the last piece is empty or a partial line; the first partial if the tail starts inside one
                lines = [line for line in tail[int(start > rows_start):-1] if line.strip()]
                if lines or start == rows_start:
                    break
                size *= 8
    except FileNotFoundError:
        return None
    if "step" not in header or not lines:
        return None
    cells = lines[-1].decode("utf-8", "replace").rstrip("\r").split(",")
    try:
        return int(cells[header.index("step")])
    except (IndexError, ValueError):
        raise InputError(f"'{path}': its last row has no step a run can continue from") from None


def _cut_partial_line(file):
    """Truncate a file opened to append after its last newline (nothing if it ends in one)."""
    end = position = file.seek(0, 2)
    with open(file.name, "rb") as reader:
        while position > 0:
            start = max(0, position - 4096)
            reader.seek(start)
            newline = reader.read(position - start).rfind(b"\n")
            if newline >= 0:
                position = start + newline + 1
                break
            position = start
    if position != end:
        file.truncate(position)
        file.seek(position)


def machine_memory():
    """Bytes of this machine's memory, or None where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def rows_beyond_memory(walkers, steps, every_nth, columns, length="max_steps"):
    """The warning where a call's rows (a row per walker every every_nth of the steps and at the
    last, kept in memory as float64 and returned as DataFrames) of `columns` numbers would take
    more than half this machine's memory, else None: a network's trajectory with a row at every
    step (every_nth 1, the default) ends in a crash. Not refused: a run meant to be stopped by
    SIGINT may ask for more steps than it will take. `length`: the option that sets the steps."""
    memory = machine_memory()
    rows = walkers * -(-steps // every_nth)
    needed = 8 * rows * columns
    if memory is None or needed <= memory / 2:
        return None
    return (f"every_nth {every_nth}: {steps} steps of {walkers} walker(s) give {rows} rows of {columns} numbers, "
            f"{needed / 2 ** 30:.3g} GiB in memory, more than half this machine's {memory / 2 ** 30:.3g} GiB: "
            f"the run will run out of memory before it ends; raise every_nth (a row every nth step), or lower "
            f"{length}")


class Table:
    def __init__(self, columns, path=None, append=False):
        """A file is opened for appending or replaced as the caller says; the caller checked
        beforehand (tati/config/preflight.py, check_header) that this loses nothing."""
        self.columns = list(columns)
        integers = integer_columns()
        integer = [name in integers for name in self.columns]
        self.integer_columns = [name for name, flag in zip(self.columns, integer) if flag]
        self.float_columns = [name for name, flag in zip(self.columns, integer) if not flag]
        # A line: %d for integers, %r (repr) for floats, in the columns' order. A row comes as its
        # integers then its floats; _in_order puts them in the columns' order (None: they are).
        self._line = ",".join("%d" if flag else "%r" for flag in integer) + "\n"
        order = [i for i, flag in enumerate(integer) if flag] + [i for i, flag in enumerate(integer) if not flag]
        position = [0] * len(order)
        for place, column in enumerate(order):
            position[column] = place
        self._in_order = None if order == sorted(order) else itemgetter(*position)
        # (int64 [k, integers], float64 [k, floats]) per block; TrajectoryRecorder shares the list.
        self.blocks = []
        self._file = None
        if path is not None:
            try:
                self._file = open(path, "ab" if append else "wb", buffering=0)
                if append:
                    _cut_partial_line(self._file)
            except OSError as error:
                raise InputError(f"cannot write '{path}': {error.strerror}") from None
            if self._file.tell() == 0:  # a new file, or appending to one that is not there yet
                self._write(",".join(self.columns) + "\n")

    def _write(self, text):
        data = text.encode("utf-8")
        while data:  # a regular file takes it in one call; the loop covers a short write
            data = data[self._file.write(data):]

    def append(self, row):
        """row: one value per column, ints for id/step/epoch."""
        block = dict(zip(self.columns, row))
        self.extend_arrays(np.asarray([[block[c] for c in self.integer_columns]], np.int64).reshape(1, -1),
                           np.asarray([[block[c] for c in self.float_columns]], np.float64).reshape(1, -1))

    def extend(self, block):
        """block: one 1-D array per column, all of one length."""
        length = len(block[self.columns[0]]) if self.columns else 0
        self.extend_arrays(_matrix(block, self.integer_columns, np.int64, length),
                           _matrix(block, self.float_columns, np.float64, length))

    def extend_arrays(self, integers, floats):
        """A block as two matrices with one row per table row: the integer columns
        ([k, len(integer_columns)], cast to int64) and the float columns (cast to float64),
        each in the table's column order. The table keeps them: do not change them later."""
        integers, floats = np.asarray(integers, np.int64), np.asarray(floats, np.float64)
        self.blocks.append((integers, floats))
        if self._file is not None and len(floats):
            line, in_order = self._line, self._in_order
            if in_order is None:
                self._write("".join([line % tuple(i + f) for i, f in zip(integers.tolist(), floats.tolist())]))
            else:
                self._write("".join([line % in_order(i + f) for i, f in zip(integers.tolist(), floats.tolist())]))

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def frame(self):
        """The rows so far as a DataFrame: int64 integer columns, float64 the others."""
        integers = np.concatenate([b[0] for b in self.blocks] or [np.zeros((0, len(self.integer_columns)), np.int64)])
        floats = np.concatenate([b[1] for b in self.blocks] or [np.zeros((0, len(self.float_columns)))])
        # concatenate made new arrays: the frame shares no memory with the blocks. pandas builds
        # a frame of a few columns fastest from a dict of them, one of many columns (a
        # trajectory's parameters) from the float matrix with the integer columns inserted.
        if len(self.columns) <= DICT_COLUMNS:
            named = dict(zip(self.integer_columns, integers.T))
            named.update(zip(self.float_columns, floats.T))
            return pd.DataFrame({name: named[name] for name in self.columns}, copy=False)
        frame = pd.DataFrame(floats, columns=self.float_columns, copy=False)
        for k, name in enumerate(self.integer_columns):  # left to right: each lands at its place
            frame.insert(self.columns.index(name), name, integers[:, k])
        return frame


def _matrix(block, names, dtype, length):
    """[length, len(names)]: the block's columns of those names, cast to dtype."""
    if not names:
        return np.zeros((length, 0), dtype)
    return np.stack([np.asarray(block[name], dtype) for name in names], axis=1)
