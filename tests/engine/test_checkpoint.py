"""Checkpoint and resume, interruption and non-finite values (issue #6).

A run of 2n steps equals n steps, save_model, restore_model in a new Simulation (or a new
process, through the CLI), n steps: bitwise, with contiguous steps and no duplicate or missing
row. SIGTERM stops at a row boundary with files that are a prefix of the uninterrupted run,
and restoring continues to the same final rows. A non-finite loss stops a Langevin run with
a message naming step and walker and keeps every row before.
"""

import json
import signal
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from processes import signal_when_written, tool_here
from stats import read_csv
from tati.errors import InputError, SamplingError
from tati.engine.registry import spec_of


def quartic(q):
    return 0.5 * tf.reduce_sum(q ** 2) + 0.1 * tf.reduce_sum(q ** 4)


def files(directory):
    return {name: str(directory / f"{name}.csv") for name in ("run_file", "trajectory_file", "averages_file")}


def read_tables(paths):
    return {name: read_csv(path).drop(columns=["time_per_nth_step"], errors="ignore") for name, path in paths.items()}


def assert_same_tables(expected, actual):
    for name in expected:
        pd.testing.assert_frame_equal(expected[name], actual[name], check_exact=True, obj=name)


@pytest.mark.parametrize("sampler, walkers", [(sampler, 1) for sampler in ("BAOAB", "GLA2", "HMC2", "SGHMC")]
                         + [("GLA2", 3), ("SGHMC", 3), ("BAOAB", 4), ("HMC2", 4)])
def test_save_restore_continues_bitwise(tmp_path, sampler, walkers):
    """4 walkers: with the ensemble preconditioner, whose phase (7 steps) the split at step 20 cuts.

    Every sampler with one walker and with several: BAOAB and HMC2 with several walkers in
    their 4-walker cases (the same per-walker state, and the ensemble's besides), the others with
    3. (The checkpoint takes every variable of the sampler whatever the walker count, and BAOAB
    and HMC2 without the preconditioner are the 1-walker cases.)"""
    blending = dict(covariance_blending=0.5, covariance_after_steps=7) if walkers == 4 else {}
    options = dict(potential=quartic, initial_parameters=[0.3, -0.2], sampler=sampler, number_walkers=walkers,
                   step_width=0.3, seed=5, burn_in_steps=0, **blending)  # one run's and two calls' alike
    (tmp_path / "full").mkdir()
    (tmp_path / "split").mkdir()
    full, split = files(tmp_path / "full"), files(tmp_path / "split")
    checkpoint = str(tmp_path / "state.npz")
    tati.Simulation(max_steps=40, **options, **full).sample()
    tati.Simulation(max_steps=20, save_model=checkpoint, **options, **split).sample()
    tati.Simulation(max_steps=20, restore_model=checkpoint, **options, **split).sample()
    expected, actual = read_tables(full), read_tables(split)
    assert_same_tables(expected, actual)
    steps = actual["trajectory_file"].groupby("id")["step"]
    if sampler != "HMC2":  # HMC writes rows at evaluation steps only
        assert all((np.diff(s) == 1).all() and s.iloc[0] == 1 and s.iloc[-1] == 40 for _, s in steps)


def test_restore_continues_mini_batches_and_refuses_other_options(tmp_path):
    options = dict(hidden_dimension=[3], batch_size=50, number_walkers=2, seed=2, step_width=0.05)
    reference = tati.Simulation(max_steps=30, **options).sample()
    checkpoint = str(tmp_path / "state.npz")
    tati.Simulation(max_steps=12, save_model=checkpoint, **options).sample()
    resumed = tati.Simulation(max_steps=18, restore_model=checkpoint, **options).sample()
    tail = reference.trajectory[reference.trajectory.step > 12].reset_index(drop=True)
    pd.testing.assert_frame_equal(tail, resumed.trajectory, check_exact=True)
    with pytest.raises(InputError, match="restore_model"):
        tati.Simulation(restore_model=checkpoint, **dict(options, hidden_dimension=[4])).sample()
    with pytest.raises(InputError, match="restore_model"):
        tati.Simulation(restore_model=str(tmp_path / "none.npz"), **options).sample()
    with pytest.raises(InputError, match=r"was saved with batch_size 50, this run asks for batch_size none"):
        tati.Simulation(restore_model=checkpoint, **dict(options, batch_size=None)).sample()


def first_release_layout(path, simulation):
    """Rewrite a checkpoint as the first release stored it: format 1, each group's arrays by
    position in the order the run lists them (tati.engine.checkpoint.state_groups of `simulation`, the
    run that saved it: the order is that of its options, which the restoring run shares)."""
    from tati.engine import checkpoint as module
    with np.load(path) as file:
        arrays = {key: file[key] for key in file.files}
    meta = json.loads(str(arrays.pop("meta")))
    old = {"meta": np.array(json.dumps(dict(meta, format=1)))}
    for group, variables in module.state_groups(simulation, simulation._run).items():
        for i, (name, _) in enumerate(variables):
            old[f"{group}/{i}"] = arrays.pop(f"{group}/{name}")
    assert not arrays
    np.savez(path, **old)


def test_checkpoints_name_their_arrays_and_the_first_release_layout_restores(tmp_path):
    """Restored from the first release's layout, the run continues as the saving run does in its
    next call (made after the restore, since it writes the checkpoint again). Against the saving
    run, not an unbroken one (test_save_restore_continues_bitwise[HMC2-4], the same options): one
    Simulation less."""
    checkpoint = str(tmp_path / "state.npz")
    options = dict(potential=quartic, initial_parameters=[0.3, -0.2], sampler="HMC2", number_walkers=4,
                   step_width=0.3, seed=5, covariance_blending=0.5, covariance_after_steps=7, max_steps=12)
    saving = tati.Simulation(save_model=checkpoint, **options)
    saving.sample()
    with np.load(checkpoint) as file:
        names = set(file.files)
    assert {"model/parameters", "optimizer/iteration", "optimizer/hmc_state_0", "run/step",
            "ensemble/matrices_0", "ensemble/moving"} <= names
    first_release_layout(checkpoint, saving)
    resumed = tati.Simulation(restore_model=checkpoint, **options).sample()
    continued = saving.sample()
    assert len(continued.trajectory) > 0 and continued.trajectory.step.min() > 12
    pd.testing.assert_frame_equal(continued.trajectory, resumed.trajectory, check_exact=True)


BAOAB_OPTIONS = dict(potential=quartic, initial_parameters=[0.3, -0.2], sampler="BAOAB", seed=5)


def saved_baoab_state(tmp_path):
    """A 3-step BAOAB run's checkpoint: its path, its arrays by key, and the key of its momenta."""
    checkpoint = str(tmp_path / "state.npz")
    tati.Simulation(max_steps=3, save_model=checkpoint, **BAOAB_OPTIONS).sample()
    with np.load(checkpoint) as file:
        arrays = {key: file[key] for key in file.files}
    return checkpoint, arrays, next(key for key in arrays if key.startswith("optimizer/") and key.endswith("momentum"))


def refusal(checkpoint, arrays):
    """The InputError's line refusing to continue from `arrays`, written over the checkpoint."""
    np.savez(checkpoint, **arrays)
    with pytest.raises(InputError) as refused:
        tati.Simulation(max_steps=6, restore_model=checkpoint, **BAOAB_OPTIONS).sample()
    return str(refused.value)


def test_a_checkpoint_whose_state_shapes_differ_is_refused_naming_the_state(tmp_path):
    """A checkpoint whose state has the run's names in another shape (the noise mass's measured
    widths, one slot more since the measurement an epoch in) is refused in one line naming it and
    both shapes."""
    checkpoint, arrays, momentum = saved_baoab_state(tmp_path)
    shape = arrays[momentum].shape
    arrays[momentum] = np.zeros(shape[:-1] + (shape[-1] + 1,), arrays[momentum].dtype)
    assert refusal(checkpoint, arrays) == (
        f"restore_model '{checkpoint}' was saved with other options or another version of tati (optimizer state "
        f"differs: {momentum[len('optimizer/'):]} holds {arrays[momentum].dtype} {arrays[momentum].shape}, this "
        f"run's {arrays[momentum].dtype} {shape})")


def test_a_checkpoint_whose_state_names_differ_is_refused_naming_them(tmp_path):
    """A checkpoint of another version (a variable renamed, as a new sampler state would look to
    an old one) is refused in one line naming what the run lacks and what the file holds."""
    checkpoint, arrays, momentum = saved_baoab_state(tmp_path)
    arrays["optimizer/renamed"] = arrays.pop(momentum)
    assert refusal(checkpoint, arrays) == (
        f"restore_model '{checkpoint}' was saved with other options or another version of tati "
        f"(optimizer state differs: lacks {momentum[len('optimizer/'):]}; holds renamed)")


def cli(options, extra=()):
    argv = [sys.executable, "-m", "tati.cli.sample"]
    for key, value in options.items():
        argv += [f"--{key}", str(value)]
    return argv + list(extra)


CLI_OPTIONS = {"hidden_dimension": 3, "batch_size": 50, "number_walkers": 2, "seed": 3, "every_nth": 1,
               "sampler": "BAOAB", "step_width": 0.05, "burn_in_steps": 0}


def cli_arguments(options):
    return [argument for key, value in options.items() for argument in (f"--{key}", str(value))]


def run_tools(runs):
    """One new process running tati-sample once per options dict, in order."""
    script = ("import sys, json\nfrom tati.cli.sample import main\n"
              "for argv in json.loads(sys.argv[1]):\n    main(argv)\n")
    done = subprocess.run([sys.executable, "-c", script, json.dumps([cli_arguments(o) for o in runs])],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def as_the_tool_passes_them(options):
    """The options as tati-sample gives them to its Simulation: the command line's strings, which
    the option table converts (tati/cli/common.py). A Simulation given these is the tool's run
    without the new process: the tests below compare such runs' files with the tool's own, so a
    difference between the two fails them."""
    return {key: str(value) for key, value in options.items()}


def test_cli_restore_in_a_new_process_continues_bitwise(tmp_path):
    """A Langevin sampler with one walker and HMC with three: the unbroken run and the first
    half in this process, the second half by tati-sample in a new one; the network with
    mini-batches for BAOAB, so the data position must be restored too (HMC takes the whole
    dataset). (Every sampler with both walker
    counts: the in-process test above; what a new process adds, the keys and the data position,
    is the samplers' common code. The halves' files equal to the unbroken run's also show that
    the tool writes what a Simulation with its options writes. tati-sample saving: the SIGTERM
    test below. One new process, not two: a TensorFlow import, ~7 s of CPU, less.)"""
    seconds, pairs = [], []
    for sampler, walkers in [("BAOAB", 1), ("HMC2", 3)]:
        base = dict(CLI_OPTIONS, sampler=sampler, number_walkers=walkers)
        if spec_of(sampler).full_batch:
            del base["batch_size"]
        name = f"{sampler}{walkers}"
        (tmp_path / f"full{name}").mkdir()
        (tmp_path / f"split{name}").mkdir()
        full, split = files(tmp_path / f"full{name}"), files(tmp_path / f"split{name}")
        checkpoint = str(tmp_path / f"state{name}.npz")
        tati.Simulation(**as_the_tool_passes_them({**base, **full, "max_steps": 40})).sample()
        tati.Simulation(**as_the_tool_passes_them({**base, **split, "max_steps": 25,
                                                   "save_model": checkpoint})).sample()
        seconds.append({**base, **split, "max_steps": 15, "restore_model": checkpoint})
        pairs.append((walkers, full, split))
    run_tools(seconds)
    for walkers, full, split in pairs:
        expected, actual = read_tables(full), read_tables(split)
        assert set(expected["trajectory_file"]["id"]) == set(range(walkers))
        assert len(expected["trajectory_file"]) > 0
        assert_same_tables(expected, actual)


def test_sigterm_stops_at_a_row_and_restore_reaches_the_same_rows(tmp_path):
    """tati-sample stopped by SIGTERM in a process of its own; the uninterrupted run and the
    restore in this process, with the tool's options (as_the_tool_passes_them): the stopped
    files must be the prefix of the uninterrupted run's, so the tool writes what the Simulation
    writes, and the restore reads a checkpoint another process wrote (tati-sample restoring in
    a new process: the test above). Two processes, each a TensorFlow import (~7 s of CPU), less."""
    total = 2000
    (tmp_path / "full").mkdir()
    (tmp_path / "cut").mkdir()
    full, cut = files(tmp_path / "full"), files(tmp_path / "cut")
    checkpoint = str(tmp_path / "state.npz")
    process = subprocess.Popen(cli({**CLI_OPTIONS, **cut, "max_steps": total, "save_model": checkpoint}),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        signal_when_written(process, cut["trajectory_file"], 8000, signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, stderr
    message = stderr.strip().splitlines()
    assert len(message) == 1 and "SIGTERM" in message[0] and checkpoint in message[0], stderr
    stopped = read_tables(cut)
    last = int(stopped["trajectory_file"]["step"].max())
    assert 0 < last < total
    assert f"after step {last}; checkpoint written to {checkpoint} (restore_model it with max_steps " \
        f"{total - last} for the steps left)" in message[0], message  # what the restore below gives
    tati.Simulation(**as_the_tool_passes_them({**CLI_OPTIONS, **full, "max_steps": total})).sample()
    expected = read_tables(full)
    for name in expected:  # a prefix of the uninterrupted run, ending at a complete step
        assert set(stopped[name]["step"]) == set(range(1, last + 1))
        pd.testing.assert_frame_equal(expected[name].iloc[:len(stopped[name])], stopped[name], check_exact=True)
    tati.Simulation(**as_the_tool_passes_them({**CLI_OPTIONS, **cut, "max_steps": total - last,
                                               "restore_model": checkpoint})).sample()
    assert_same_tables(expected, read_tables(cut))


def downhill_to_nan(q):
    """A slope towards a region where the loss is NaN: walker 1, started 10 closer, meets it
    first (at steps 3-12 over seeds 0-19; the others need more than 15)."""
    return tf.where(q[0] < -0.5, tf.constant(np.nan, q.dtype), 2.0 * q[0])


def test_nonfinite_loss_stops_with_step_and_walker_and_keeps_rows(tmp_path):
    paths = files(tmp_path)
    simulation = tati.Simulation(potential=downhill_to_nan, initial_parameters=[[10.0], [0.0], [10.0]],
                                 number_walkers=3, step_width=0.2, seed=1, max_steps=500, every_nth=3, **paths)
    with pytest.raises(SamplingError, match=r"non-finite loss or gradient at step (\d+) \(walker 1\): step_width") as error:
        simulation.sample()
    step = int(error.value.args[0].split("at step ")[1].split()[0])
    trajectory = read_csv(paths["trajectory_file"])
    assert trajectory["step"].max() < step <= trajectory["step"].max() + 3
    assert np.isfinite(trajectory.drop(columns=["id", "step"]).to_numpy()).all()
    assert (trajectory[trajectory.id == 1]["param0"] >= -0.5).all()
    continued = tati.Simulation(potential=downhill_to_nan, initial_parameters=[[10.0], [0.0], [10.0]], number_walkers=3,
                                step_width=0.2, seed=1, max_steps=500, every_nth=3, on_nan="continue").sample()
    assert continued.trajectory["step"].max() == 500


def test_cli_nonfinite_run_exits_nonzero_with_one_line(tmp_path, capfd):
    """tati-sample's main() in this process (processes.tool_here: its exit status and stderr
    as a new process would have them; TensorFlow's C++ lines, written to the file descriptor,
    caught by capfd)."""
    from tati.cli.sample import main
    paths = files(tmp_path)
    # a linear output makes the loss unbounded: the first noise of width 1e150 overflows it
    code, stderr, _ = tool_here(main, cli_arguments({**paths, "max_steps": 200, "step_width": 1e300,
                                                     "sampler": "SGLD", "output_activation": "linear"}))
    stderr += capfd.readouterr().err
    assert code == 1, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "non-finite" in lines[0] and "step_width" in lines[0], stderr
    assert open(paths["trajectory_file"], encoding="utf-8").read().endswith("\n")
