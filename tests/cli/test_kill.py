"""A run killed with SIGKILL leaves CSV files whose lines are complete rows equal to the
first rows of an uninterrupted run with the same seed, and no partial line."""

import signal
import subprocess
import sys

import pandas as pd

import tati
from processes import signal_when_written
from stats import read_csv

OPTIONS = {"hidden_dimension": "4", "max_steps": "1000000", "every_nth": "1", "seed": "5",
           "batch_size": "100"}


def test_sigkill_leaves_a_prefix_of_the_uninterrupted_run(tmp_path):
    files = {name: str(tmp_path / f"{name}.csv") for name in ("run_file", "trajectory_file", "averages_file")}
    argv = [sys.executable, "-m", "tati.cli.sample"]
    for key, value in {**OPTIONS, **files}.items():
        argv += [f"--{key}", value]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        signal_when_written(process, files["averages_file"], 30000, signal.SIGKILL)
    finally:
        process.kill()
        process.wait()

    counts = {}
    for name, path in files.items():
        text = open(path, encoding="utf-8").read()
        assert text.endswith("\n"), f"{name} ends in a partial line"
        lines = text.splitlines()
        assert len({line.count(",") for line in lines}) == 1, f"{name} has a line with missing fields"
        counts[name] = len(lines) - 1
    rows = min(counts.values())
    assert rows > 100

    options = {k: v for k, v in OPTIONS.items() if k != "max_steps"}
    reference = tati.Simulation(max_steps=max(counts.values()), **options).sample()
    for name, frame in zip(files, (reference.run_info, reference.trajectory, reference.averages)):
        written = read_csv(files[name])
        expected = frame.iloc[:len(written)]
        pd.testing.assert_frame_equal(written.drop(columns="time_per_nth_step", errors="ignore"),
                                      expected.drop(columns="time_per_nth_step", errors="ignore"),
                                      check_exact=True)
