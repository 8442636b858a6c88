"""Table: rows kept for a DataFrame and, optionally, streamed to a CSV file as they come.

Rows come in blocks of columns (`extend`, one numpy array per column) or one at a time
(`append`). Each block goes to the file unbuffered, as complete lines in one write call (a
buffered writer splits a long write into two system calls, and a SIGKILL between them left
a partial line), so a run killed at any moment leaves a file whose lines are complete rows, a
prefix of the uninterrupted run. Appending to a file that a killed writer nevertheless left
with a partial last line first cuts that line off. Floats are written with repr (shortest
round trip), so reading the file back with pandas gives exactly the DataFrame's values.
"""

import numpy as np
import pandas as pd

from tati.errors import InputError
from tati.recording.columns import INTEGER_COLUMNS


def _strings(name, values):
    """A column's cells as text: integers as they are, floats by repr (via Python floats)."""
    if name in INTEGER_COLUMNS:
        return [str(v) for v in np.asarray(values, dtype=np.int64).tolist()]
    return [repr(v) for v in np.asarray(values, dtype=np.float64).tolist()]


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


class Table:
    def __init__(self, columns, path=None, append=False):
        """A file is opened for appending or replaced as the caller says; the caller checked
        beforehand (tati/preflight.py, check_header) that this loses nothing."""
        self.columns = list(columns)
        self.blocks = []  # dicts of column arrays
        self._file = None
        if path is not None:
            try:
                self._file = open(path, "ab" if append else "wb", buffering=0)
                if append:
                    _cut_partial_line(self._file)
            except OSError as error:
                raise InputError(f"cannot write '{path}': {error.strerror}") from None
            if self._file.tell() == 0:  # a new file, or appending to one that is not there yet
                self._write([",".join(self.columns)])

    def _write(self, lines):
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        while data:  # a regular file takes it in one call; the loop covers a short write
            data = data[self._file.write(data):]

    def append(self, row):
        """row: one value per column, ints for id/step/epoch."""
        self.extend({name: np.asarray([value]) for name, value in zip(self.columns, row)})

    def extend(self, block):
        """block: one 1-D array per column, all of one length."""
        block = {name: np.asarray(block[name]) for name in self.columns}
        self.blocks.append(block)
        if self._file is not None:
            cells = [_strings(name, block[name]) for name in self.columns]
            self._write([",".join(row) for row in zip(*cells)])

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def frame(self):
        data = {}
        for name in self.columns:
            parts = [block[name] for block in self.blocks]
            dtype = np.int64 if name in INTEGER_COLUMNS else np.float64
            data[name] = np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)
        return pd.DataFrame(data, columns=self.columns)
