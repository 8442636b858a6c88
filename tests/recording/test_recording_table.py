"""Table streams complete lines: one write call per block (a SIGKILL cannot fall between two
halves of a block), and appending after a killed writer's partial line cuts that line off."""

import numpy as np
import pandas as pd

from tati.recording.table import Table


class CountingFile:
    def __init__(self, file):
        self.file, self.calls = file, 0

    def write(self, data):
        self.calls += 1
        return self.file.write(data)


def test_a_long_block_is_one_write_of_complete_lines(tmp_path):
    path = tmp_path / "rows.csv"
    table = Table(["step", "loss"], str(path))
    counting = table._file = CountingFile(table._file)
    steps = np.arange(5000)
    table.extend({"step": steps, "loss": np.sqrt(steps + 0.5)})
    counting.file.close()
    assert counting.calls == 1
    text = path.read_text()
    assert len(text) > 8192 and text.endswith("\n")
    pd.testing.assert_frame_equal(pd.read_csv(path), table.frame())


def test_appending_cuts_a_partial_last_line(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("step,loss\n0,1.5\n1,2.")
    table = Table(["step", "loss"], str(path), append=True)
    table.append([2, 3.25])
    table.close()
    assert path.read_text() == "step,loss\n0,1.5\n2,3.25\n"


def test_appending_to_a_file_ending_in_a_newline_keeps_every_line(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("step,loss\n0,1.5\n")
    table = Table(["step", "loss"], str(path), append=True)
    table.append([1, 2.0])
    table.close()
    assert path.read_text() == "step,loss\n0,1.5\n1,2.0\n"


def test_integer_columns_anywhere_are_written_and_framed_in_the_table_order(tmp_path):
    """Integers by str, floats by repr, in the columns' order however the kinds interleave;
    the frame has int64 integer columns and shares no memory with the table."""
    path = tmp_path / "rows.csv"
    columns = ["loss", "step", "x", "divergences"]
    table = Table(columns, str(path))
    table.extend({"loss": np.array([0.1, -0.0]), "step": np.array([3, 4]), "x": np.array([1e-5, np.nan]),
                  "divergences": np.array([0, 2])})
    table.append([1e16, 5, 2.5, 1])
    table.close()
    assert path.read_text() == "loss,step,x,divergences\n0.1,3,1e-05,0\n-0.0,4,nan,2\n1e+16,5,2.5,1\n"
    frame = table.frame()
    assert list(frame.columns) == columns
    assert [str(t) for t in frame.dtypes] == ["float64", "int64", "float64", "int64"]
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    frame.iloc[0, 0] = 7.0
    assert table.frame().iloc[0, 0] == 0.1
