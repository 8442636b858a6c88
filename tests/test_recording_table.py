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
