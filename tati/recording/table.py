"""Table: rows kept for a DataFrame and, optionally, streamed to a CSV file as they come.

Each row is written with one write call of one complete line and flushed, so a run killed at
any moment leaves a file whose lines are complete rows, a prefix of the uninterrupted run.
Floats are written with repr (shortest round trip), so reading the file back with pandas
gives exactly the DataFrame's values.
"""

import pandas as pd

from tati.errors import InputError
from tati.recording.columns import INTEGER_COLUMNS


def _format(value):
    return str(value) if isinstance(value, int) else repr(float(value))


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


class Table:
    def __init__(self, columns, path=None, append=False):
        """A file is opened for appending or replaced as the caller says; the caller checked
        beforehand (tati/preflight.py, check_header) that this loses nothing."""
        self.columns = list(columns)
        self.rows = []
        self._file = None
        if path is not None:
            try:
                self._file = open(path, "a" if append else "w", encoding="utf-8", newline="")
            except OSError as error:
                raise InputError(f"cannot write '{path}': {error.strerror}") from None
            if self._file.tell() == 0:  # a new file, or appending to one that is not there yet
                self._write(",".join(self.columns))

    def _write(self, line):
        self._file.write(line + "\n")
        self._file.flush()

    def append(self, row):
        """row: one value per column, ints for id/step/epoch."""
        self.rows.append(row)
        if self._file is not None:
            self._write(",".join(_format(v) for v in row))

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def frame(self):
        frame = pd.DataFrame(self.rows, columns=self.columns)
        for column in INTEGER_COLUMNS:
            if column in frame:
                frame[column] = frame[column].astype("int64")
        float_columns = [c for c in frame.columns if c not in INTEGER_COLUMNS]
        frame[float_columns] = frame[float_columns].astype("float64")
        return frame
