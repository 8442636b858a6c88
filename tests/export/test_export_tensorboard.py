"""summaries_path (tati/export/tensorboard.py): the event files of a run hold, per walker, a
scalar of every run-info column and the parameter histograms at exactly the steps and values of
the run-info table, read back with TensorFlow's summary iterator and with TensorBoard's own
reader; an interrupted call leaves its summaries complete; the path is checked before the run.
"""

import glob
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from stats import seed
from tati.errors import InputError


def read_events(directory):
    """{tag: [(step, value, plugin name)]} from every event file in `directory`."""
    events = {}
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                events.setdefault(value.tag, []).append(
                    (event.step, tf.make_ndarray(value.tensor), value.metadata.plugin_data.plugin_name))
    return events


def check_walker(events, run_info, parameters, groups):
    """Every run-info column (but id, step) is a scalar at each of the walker's rows with the
    table's value; each group of parameters a histogram at each row counting its values over
    their range (one value: a unit-wide range around it)."""
    scalars = [c for c in run_info.columns if c not in ("id", "step")]
    assert set(events) == {f"run_info/{c}" for c in scalars} | set(groups)
    steps = list(run_info["step"])
    for column in scalars:
        written = events[f"run_info/{column}"]
        assert [step for step, _, _ in written] == steps
        np.testing.assert_array_equal([value for _, value, _ in written], run_info[column].to_numpy(np.float64))
        assert written[0][2] == "scalars"
    for tag, names in groups.items():
        written = events[tag]
        assert [step for step, _, _ in written] == steps and written[0][2] == "histograms"
        for (_, histogram, _), (_, row) in zip(written, parameters[names].iterrows()):
            assert histogram.shape == (30, 3)
            assert histogram[:, 2].sum() == len(names)
            low, high = (row.min(), row.max()) if row.max() > row.min() else (row.min() - 0.5, row.max() + 0.5)
            assert histogram[0, 0] == low and histogram[-1, 1] == high


def test_a_network_run_writes_every_row_of_every_walker(tmp_path):
    logs = str(tmp_path / "logs")
    sim = tati.Simulation(dataset="two_clusters", hidden_dimension=[3], number_walkers=2, sampler="BAOAB",
                          max_steps=40, every_nth=3, seed=seed(61), summaries_path=logs)
    result = sim.sample()
    groups = {f"parameters/{name}": columns for name, columns in sim.model.parameter_groups().items()}
    assert sorted(os.listdir(logs)) == ["walker0", "walker1"]
    for walker in range(2):
        events = read_events(os.path.join(logs, f"walker{walker}"))
        run_info = result.run_info[result.run_info.id == walker]
        parameters = result.trajectory[result.trajectory.id == walker]
        assert "run_info/accuracy" in events
        check_walker(events, run_info, parameters, groups)


def test_hmc_rows_and_a_second_call_add_event_files(tmp_path):
    """HMC's rows are at its evaluation steps; a second call continues the steps in new event files."""
    logs = str(tmp_path / "logs")
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=[[1.0, 0.0], [0.0, 2.0]],
                          number_walkers=2, sampler="HMC2", step_width=0.3, hamiltonian_dynamics_time=0.9,
                          max_steps=60, seed=seed(62), summaries_path=logs)
    first, second = sim.sample(), sim.sample()
    run_info = pd.concat([first.run_info, second.run_info], ignore_index=True)
    trajectory = pd.concat([first.trajectory, second.trajectory], ignore_index=True)
    assert second.run_info["step"].min() > 60 and len(second.run_info) > 10
    for walker in range(2):
        directory = os.path.join(logs, f"walker{walker}")
        assert len(glob.glob(os.path.join(directory, "events.out.tfevents.*"))) == 2
        events = read_events(directory)
        for tag in events:  # files in any order: compare the rows sorted by step
            events[tag].sort(key=lambda event: event[0])
        check_walker(events, run_info[run_info.id == walker].sort_values("step"),
                     trajectory[trajectory.id == walker].sort_values("step"), {"parameters": ["param0", "param1"]})


def test_tensorboard_reads_scalars_and_histograms(tmp_path):
    """TensorBoard's own reader files the tags under its scalar and histogram plugins."""
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    logs = str(tmp_path / "logs")
    result = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=[1.0, -1.0],
                             max_steps=20, seed=seed(63), summaries_path=logs).sample()
    reader = event_accumulator.EventAccumulator(os.path.join(logs, "walker0"), size_guidance={"tensors": 0})
    reader.Reload()
    assert set(reader.PluginTagToContent("scalars")) == {f"run_info/{c}" for c in result.run_info.columns[2:]}
    assert set(reader.PluginTagToContent("histograms")) == {"parameters"}
    loss = reader.Tensors("run_info/loss")
    assert [event.step for event in loss] == list(result.run_info["step"])
    assert [float(tf.make_ndarray(event.tensor_proto)) for event in loss] == list(result.run_info["loss"])


def test_an_interrupted_call_leaves_complete_summaries(tmp_path):
    """SIGINT stops the call at a row boundary; the summaries hold every row the run file has."""
    run_file, logs = tmp_path / "run.csv", str(tmp_path / "logs")

    def interrupt():
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (run_file.exists() and run_file.stat().st_size > 20000):
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=[1.0],
                          max_steps=10 ** 9, seed=seed(64), run_file=str(run_file), summaries_path=logs)
    thread = threading.Thread(target=interrupt, daemon=True)
    thread.start()
    with pytest.raises(tati.Interrupted):
        sim.sample()
    thread.join()
    written = pd.read_csv(run_file)["step"].tolist()
    assert [step for step, _, _ in read_events(os.path.join(logs, "walker0"))["run_info/loss"]] == written


def test_summaries_path_is_a_directory(tmp_path):
    existing = tmp_path / "logs"
    existing.mkdir()
    tati.Simulation(potential=lambda x: tf.reduce_sum(x * x), initial_parameters=[1.0], max_steps=2,
                    summaries_path=str(existing)).sample()  # an existing directory takes more event files
    assert os.listdir(existing / "walker0")
    regular = tmp_path / "file"
    regular.write_text("x")
    is_a_file = f"summaries_path '{regular}' is a file; TensorBoard summaries need a directory"
    with pytest.raises(InputError, match=re.escape(is_a_file)):
        tati.Simulation(potential=lambda x: tf.reduce_sum(x * x), initial_parameters=[1.0], summaries_path=str(regular))
    with pytest.raises(InputError, match=re.escape(f"summaries_path '{regular}/logs': '{regular}' is a file, not a")):
        tati.Simulation(potential=lambda x: tf.reduce_sum(x * x), initial_parameters=[1.0],
                        summaries_path=str(regular / "logs"))
    done = subprocess.run([sys.executable, "-m", "tati.cli.sample", "--summaries_path", str(regular)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [f"tati-sample: error: {is_a_file}"]
