"""XLA's persistent cache (option xla_cache_directory, tati/engine/xla_cache.py): a first process
fills the directory with the programs it compiled; a second, with the same options, loads them
and writes the same tables. In processes of their own, since TensorFlow reads its XLA flags
once per process, at the first compilation."""

import os
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from tati.engine import xla_cache


def sample(directory, cache, seed=4, warm_start=False):
    argv = [sys.executable, "-m", "tati.cli.sample", "--hidden_dimension", "3", "--sampler", "HMC2",
            "--number_walkers", "2", "--max_steps", "60", "--jit_compile", "true", "--seed", str(seed),
            "--adapt_step_width", "false", "--adapt_mass", "false", "--adapt_trajectory_length", "false",  # no warning
            "--warm_start", str(warm_start).lower(),
            "--xla_cache_directory", str(cache), "--trajectory_file", str(directory / "trajectory.csv")]
    os.makedirs(directory)
    environment = {name: value for name, value in os.environ.items() if name != "TF_XLA_FLAGS"}
    done = subprocess.run(argv, capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""  # TensorFlow's log line at each program loaded from the cache is hidden
    return pd.read_csv(directory / "trajectory.csv")


def test_a_second_process_loads_the_compiled_programs_and_samples_the_same(tmp_path):
    cache = tmp_path / "xla"
    first = sample(tmp_path / "first", cache)
    files = sorted(os.listdir(cache))
    assert files and all(name.startswith("xla_compile_cache") for name in files), files
    second = sample(tmp_path / "second", cache)
    assert sorted(os.listdir(cache)) == files  # nothing compiled anew
    pd.testing.assert_frame_equal(first, second, check_exact=True)
    # The seed is a variable's value in the programs, not a constant: another seed compiles nothing
    # (before, with the seed a constant: a new program); nor does a warm start before the run,
    # whose eager operations move the counter that TensorFlow names the traced functions after
    # (xla_cache.align_names; before, a new program).
    other = sample(tmp_path / "other", cache, seed=5, warm_start=True)
    assert sorted(os.listdir(cache)) == files
    assert not other["loss"].equals(first["loss"])


def test_the_flag_replaces_an_earlier_directory_and_keeps_other_flags(tmp_path, monkeypatch):
    monkeypatch.setattr(xla_cache, "_runtime_started", lambda: False)
    monkeypatch.setenv("TF_XLA_FLAGS", f"--tf_xla_auto_jit=0 {xla_cache.FLAG}=/elsewhere")
    xla_cache.use(str(tmp_path / "new"))
    assert os.environ["TF_XLA_FLAGS"] == f"--tf_xla_auto_jit=0 {xla_cache.FLAG}={tmp_path / 'new'}"
    assert (tmp_path / "new").is_dir()


def test_a_directory_named_after_tensorflow_started_is_a_warning(tmp_path, monkeypatch):
    """In this (test) process TensorFlow already runs: the option cannot take effect, and says so."""
    import tensorflow as tf

    import tati
    tf.constant(0.0) + 0.0
    monkeypatch.setenv("TF_XLA_FLAGS", "")  # restored after the test
    with pytest.warns(UserWarning, match=r"xla_cache_directory '.*' has no effect: TensorFlow already ran in this "
                                         r"process \(start Python with TF_XLA_FLAGS=--tf_xla_persistent_cache_directory="):
        tati.Simulation(potential=lambda q: tf.reduce_sum(q * q), initial_parameters=[1.0],
                        xla_cache_directory=str(tmp_path / "late"))


def test_a_directory_that_cannot_be_made_or_named_is_one_line(tmp_path):
    from tati.errors import InputError
    with pytest.raises(InputError, match=r"^xla_cache_directory '/dev/null/xla' cannot be created: Not a directory$"):
        xla_cache.use("/dev/null/xla")
    with pytest.raises(InputError, match=r"^xla_cache_directory '.*a b' has white space in its path"):
        xla_cache.use(str(tmp_path / "a b"))


def test_the_cache_is_on_by_default_in_the_user_cache_directory_and_can_be_turned_off(tmp_path, monkeypatch):
    """The option's default, auto, names $XDG_CACHE_HOME/tati/xla (made if missing); none removes the
    flag, as another directory moves it. Before TensorFlow's runtime starts (pretended here)."""
    from tati.config.preflight import check
    monkeypatch.setattr(xla_cache, "_runtime_started", lambda: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")
    assert check({})[0]["xla_cache_directory"] == xla_cache.AUTO
    xla_cache.apply(xla_cache.AUTO)
    assert os.environ["TF_XLA_FLAGS"] == f"--tf_xla_auto_jit=0 {xla_cache.FLAG}={tmp_path / 'cache' / 'tati' / 'xla'}"
    assert (tmp_path / "cache" / "tati" / "xla").is_dir()
    xla_cache.apply(check({"xla_cache_directory": "none"})[0]["xla_cache_directory"])
    assert os.environ["TF_XLA_FLAGS"] == "--tf_xla_auto_jit=0"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert xla_cache.default_directory() == str(tmp_path / "home" / ".cache" / "tati" / "xla")


def test_the_default_keeps_a_directory_the_user_named_and_is_quiet_when_too_late(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(xla_cache, "_runtime_started", lambda: False)
    monkeypatch.setenv("TF_XLA_FLAGS", f"{xla_cache.FLAG}=/mine")
    xla_cache.apply(xla_cache.AUTO)
    assert os.environ["TF_XLA_FLAGS"] == f"{xla_cache.FLAG}=/mine"
    monkeypatch.setattr(xla_cache, "_runtime_started", lambda: True)
    monkeypatch.setenv("TF_XLA_FLAGS", "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xla_cache.apply(xla_cache.AUTO)
    assert os.environ["TF_XLA_FLAGS"] == "" and not (tmp_path / "cache").exists()


def test_import_tati_names_the_default_directory_before_tensorflow_runs(tmp_path):
    """So that a user's own TensorFlow operations before the first Simulation (a tf.constant in the
    potential, as the quick start's) do not leave the cache off; importing tati starts no TensorFlow."""
    code = "import os, sys, tati; print(os.environ['TF_XLA_FLAGS']); print('tensorflow' in sys.modules)"
    environment = {name: value for name, value in os.environ.items() if name != "TF_XLA_FLAGS"}
    environment["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [f"{xla_cache.FLAG}={tmp_path / 'cache' / 'tati' / 'xla'}", "False"]
