"""Resume traps (issue #38): a resumed run that appends to its files keeps them and a checkpoint
together. Without save_model it updates the restored checkpoint, so the next resume continues
the files; with another every_nth it is refused, since the appended rows would be spaced unlike
the file's. The tools run in this process (processes.tool_here), on the built-in network."""

import numpy as np
import pytest

import tati
from processes import tool_here
from stats import read_csv
from test_checkpoint import assert_same_tables, cli_arguments, files, read_tables
from tati.cli.sample import main
from tati.errors import InputError

OPTIONS = {"seed": 3, "sampler": "BAOAB", "step_width": 0.05, "every_nth": 2}


def sample(**options):
    """tati-sample in this process: (exit status, stderr)."""
    code, stderr, _ = tool_here(main, cli_arguments({**OPTIONS, **options}))
    return code, stderr


def saved_step(path):
    with np.load(path) as checkpoint:
        return int(checkpoint["run/step"])


def one_run_and_three(directory, **options):
    """tati-sample (in this process) of 30 steps, and of three of 10 that each resume the last
    one's checkpoint, into files of their own under `directory`: both runs' tables, read back
    (for a sampler's own test: assert_same_tables(*one_run_and_three(tmp_path, sampler=...)))."""
    (directory / "full").mkdir()
    (directory / "split").mkdir()
    full, split = files(directory / "full"), files(directory / "split")
    checkpoint = str(directory / "state.npz")
    assert sample(**options, **full, max_steps=30) == (0, "")
    assert sample(**options, **split, max_steps=10, save_model=checkpoint) == (0, "")
    for _ in range(2):
        assert sample(**options, **split, max_steps=10, restore_model=checkpoint) == (0, "")
    return read_tables(full), read_tables(split)


def test_a_resume_without_save_model_updates_the_restored_checkpoint(tmp_path):
    """Run 1 saves, run 2 resumes without save_model, run 3 resumes from the same file: the
    files equal one unbroken run of the three runs' steps (before, run 3 was refused: the
    checkpoint was still run 1's). Run 4 appends to no file (a new one, another every_nth, said
    nothing about): the checkpoint stays that of the files it continues."""
    (tmp_path / "full").mkdir()
    (tmp_path / "split").mkdir()
    full, split = files(tmp_path / "full"), files(tmp_path / "split")
    checkpoint = str(tmp_path / "state.npz")
    assert sample(**full, max_steps=30) == (0, "")
    assert sample(**split, max_steps=10, save_model=checkpoint) == (0, "")
    assert sample(**split, max_steps=10, restore_model=checkpoint) == (0, "")
    assert saved_step(checkpoint) == 20
    assert sample(**split, max_steps=10, restore_model=checkpoint) == (0, "")
    assert saved_step(checkpoint) == 30
    assert_same_tables(read_tables(full), read_tables(split))
    new = str(tmp_path / "new.csv")
    assert sample(trajectory_file=new, max_steps=3, every_nth=3, restore_model=checkpoint) == (0, "")
    assert saved_step(checkpoint) == 30 and read_csv(new).step.tolist() == [33]


def test_a_resume_with_another_every_nth_appending_to_a_file_is_refused(tmp_path):
    """Refused in one line naming every_nth, the saved and the given value, before any file is
    opened: by the tool (status 2) and by a Simulation; the file is unchanged."""
    paths = files(tmp_path)
    checkpoint = str(tmp_path / "state.npz")
    assert sample(**paths, max_steps=10, every_nth=5, save_model=checkpoint) == (0, "")
    before = {name: open(path, "rb").read() for name, path in paths.items()}
    code, stderr = sample(**paths, max_steps=10, every_nth=3, restore_model=checkpoint)
    expected = (f"restore_model '{checkpoint}' was saved with every_nth 5, this run asks for every_nth 3: "
                f"the rows appended to run_file '{paths['run_file']}' would be spaced unlike its rows; "
                "give every_nth 5 to continue it, or new output files")
    assert (code, stderr) == (2, f"tati-sample: error: {expected}\n")
    with pytest.raises(InputError) as refused:
        tati.Simulation(**dict(OPTIONS, **paths, max_steps=10, every_nth=3, restore_model=checkpoint)).sample()
    assert str(refused.value) == expected
    assert {name: open(path, "rb").read() for name, path in paths.items()} == before
