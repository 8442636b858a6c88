"""No run is lost by mistake, and bad input answers before TensorFlow is imported (issue #16).

Resuming compares the checkpoint with the options: the same sampler in another case continues,
another sampler, walker count, network or dtype is refused with exit status 2 and the files
byte-for-byte unchanged; an existing output file is replaced only with overwrite.
"""

import hashlib
import json
import pathlib
import shutil
import subprocess
import sys
import types
import warnings

import numpy as np
import pandas as pd
import pytest

import tati
from processes import tool_here
from stats import read_csv
from tati.config import preflight
from tati.errors import InputError

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_cli(runs, cwd, monkeypatch):
    """tati-sample's main() once per argv, in this process and in the directory `cwd`: per call
    its exit status and stderr (processes.tool_here: as a new process would have them; what the
    tool checks and refuses is the same in any process, and the checkpoint is read from its file.
    This process's TensorFlow instead of a new process's: ~7 s of CPU less per test)."""
    from tati.cli.sample import main
    monkeypatch.chdir(cwd)
    return [dict(zip(("code", "stderr"), tool_here(main, argv))) for argv in runs]


def digest(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


BASE = ["--hidden_dimension", "3", "--seed", "2", "--every_nth", "1", "--step_width", "0.05",
        "--trajectory_file", "t.csv", "--run_file", "r.csv"]


def test_resume_refuses_another_run_and_keeps_the_files(tmp_path, monkeypatch):
    first = run_cli([BASE + ["--max_steps", "20", "--save_model", "s.npz", "--sampler", "BAOAB"]], tmp_path,
                    monkeypatch)
    assert first[0]["code"] == 0, first[0]["stderr"]
    before = {name: digest(tmp_path / name) for name in ("t.csv", "r.csv")}
    refused = {
        "sampler": ["--sampler", "GLA2"],
        "number_walkers": ["--sampler", "BAOAB", "--number_walkers", "2"],
        "hidden_dimension": ["--sampler", "BAOAB", "--hidden_dimension", "4"],
        "dtype": ["--sampler", "BAOAB", "--dtype", "float64"],
    }
    new_file = ["--sampler", "BAOAB", "--trajectory_file", "other.csv"]  # an existing file without restore
    calls = [BASE + ["--max_steps", "5", "--restore_model", "s.npz"] + extra for extra in refused.values()]
    calls.append(BASE[:-4] + ["--max_steps", "5", "--trajectory_file", "t.csv"])
    calls.append(BASE + ["--max_steps", "5", "--restore_model", "s.npz"] + new_file[:2] + ["--run_file", "t.csv"])
    outcomes = run_cli(calls, tmp_path, monkeypatch)
    for (option, _), outcome in zip(refused.items(), outcomes):
        assert outcome["code"] == 2, (option, outcome)
        line = outcome["stderr"].strip()
        assert "\n" not in line and "Traceback" not in line
        assert f"with {option} " in line and "restore_model 's.npz'" in line, line
    assert outcomes[-2]["code"] == 2 and "trajectory_file 't.csv' exists" in outcomes[-2]["stderr"]
    assert outcomes[-1]["code"] == 2 and "name the same file" in outcomes[-1]["stderr"]
    assert before == {name: digest(tmp_path / name) for name in ("t.csv", "r.csv")}
    assert not (tmp_path / "other.csv").exists()


def test_resume_with_the_sampler_in_another_case_continues(tmp_path, monkeypatch):
    full = ["--max_steps", "30"] + [a.replace(".csv", "_full.csv") for a in BASE] + ["--sampler", "BAOAB"]
    split = BASE + ["--sampler", "BAOAB"]
    outcomes = run_cli([full, split[:-2] + ["--max_steps", "12", "--save_model", "s.npz", "--sampler", "baoab"],
                        split[:-2] + ["--max_steps", "18", "--restore_model", "s.npz",
                                      "--sampler", "baoab", "--step_width", "0.04"]], tmp_path, monkeypatch)
    assert [o["code"] for o in outcomes] == [0, 0, 0], outcomes
    note = outcomes[2]["stderr"].strip()
    assert note == "tati-sample: warning: restore_model 's.npz': continuing with changed options: step_width 0.05 -> 0.04"
    resumed = read_csv(tmp_path / "t.csv")
    assert list(resumed.step) == list(range(1, 31))
    reference = read_csv(tmp_path / "t_full.csv")
    # up to the checkpoint bitwise; after it the step width differs
    pd.testing.assert_frame_equal(resumed.iloc[:12], reference.iloc[:12], check_exact=True)


def test_overwrite_replaces_an_existing_file(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("something the user wants to keep\n")
    options = dict(potential=lambda x: 0.5 * (x[0] ** 2), initial_parameters=[0.0], max_steps=5,
                   trajectory_file=str(path))
    with pytest.raises(InputError, match="trajectory_file .* exists: give overwrite=true"):
        tati.Simulation(**options)
    assert path.read_text() == "something the user wants to keep\n"
    result = tati.Simulation(overwrite=True, **options).sample()
    pd.testing.assert_frame_equal(read_csv(path), result.trajectory)


def test_resume_appends_only_to_a_file_of_the_same_columns(tmp_path):
    checkpoint, path = str(tmp_path / "s.npz"), tmp_path / "t.csv"
    options = dict(potential=lambda x: 0.5 * (x[0] ** 2), initial_parameters=[0.0], max_steps=5)
    tati.Simulation(save_model=checkpoint, **options).sample()
    path.write_text("id,step,loss,something_else\n")
    with pytest.raises(InputError, match="trajectory_file .* has other columns"):
        tati.Simulation(restore_model=checkpoint, trajectory_file=str(path), **options).sample()
    assert path.read_text() == "id,step,loss,something_else\n"


def test_resume_appends_only_where_the_file_ends(tmp_path):
    """A file continued by restore_model ends at the checkpoint's step: a resume from an older
    checkpoint (a copy kept from step 5) would repeat steps 6-10, a file cut short would miss
    rows. Both are refused with the file unchanged; with the checkpoint saved alongside, it goes on."""
    checkpoint, older, path = str(tmp_path / "s.npz"), str(tmp_path / "older.npz"), tmp_path / "t.csv"
    options = dict(potential=lambda x: 0.5 * (x[0] ** 2), initial_parameters=[0.0], max_steps=5,
                   trajectory_file=str(path))
    tati.Simulation(save_model=checkpoint, **options).sample()
    shutil.copyfile(checkpoint, older)
    tati.Simulation(restore_model=checkpoint, **options).sample()  # steps 6-10, the checkpoint updated
    kept = path.read_text()
    with pytest.raises(InputError, match=r"trajectory_file .* ends at step 10, after step 5 where the run "
                                         "continues: its rows would repeat"):
        tati.Simulation(restore_model=older, **options).sample()
    assert path.read_text() == kept
    path.write_text("".join(kept.splitlines(True)[:4]))  # the header and steps 1-3
    with pytest.raises(InputError, match=r"ends at step 3, before step 5 where the run continues: the rows "
                                         "of steps 4-5 are not in it"):
        tati.Simulation(restore_model=older, **options).sample()
    path.write_text("".join(kept.splitlines(True)[:6]))  # up to the checkpoint's step 5
    tati.Simulation(restore_model=older, **options).sample()
    assert list(read_csv(path)["step"]) == list(range(1, 11))


def test_save_model_replaces_no_file_by_mistake(tmp_path):
    """An existing save_model file is replaced only when it is the checkpoint restored or with
    overwrite; a file the run reads is never an output."""
    data, checkpoint = tmp_path / "data.csv", str(tmp_path / "s.npz")
    data.write_text("x1,label\n0.5,1\n-0.5,-1\n")
    options = dict(batch_data_files=[str(data)], max_steps=2)
    for overwrite in (False, True):
        with pytest.raises(InputError, match=r"save_model '.*data.csv' is the run's input batch_data_files"):
            tati.Simulation(save_model=str(data), overwrite=overwrite, **options)
    with pytest.raises(InputError, match=r"trajectory_file '.*data.csv' is the run's input batch_data_files"):
        tati.Simulation(trajectory_file=str(data), overwrite=True, **options)
    assert data.read_text() == "x1,label\n0.5,1\n-0.5,-1\n"
    tati.Simulation(save_model=checkpoint, **options).sample()
    saved = digest(checkpoint)
    with pytest.raises(InputError, match=r"save_model '.*s.npz' exists: give overwrite=true"):
        tati.Simulation(save_model=checkpoint, **options)
    assert digest(checkpoint) == saved
    tati.Simulation(restore_model=checkpoint, save_model=checkpoint, **options).sample()
    assert digest(checkpoint) != saved
    tati.Simulation(save_model=checkpoint, overwrite=True, **options).sample()


def test_an_output_under_a_file_says_the_file_is_not_a_directory(tmp_path, monkeypatch):
    """/dev/null/x.csv: '/dev/null' exists, as a device, so "does not exist" would mislead; the
    nearest existing path above the file is named, also a few levels up. A missing directory
    still says so."""
    (tmp_path / "plain.txt").write_text("")
    expected = {"/dev/null/x.csv": "'/dev/null' is not a directory",
                str(tmp_path / "plain.txt" / "a" / "x.csv"): f"'{tmp_path / 'plain.txt'}' is not a directory",
                str(tmp_path / "no" / "x.csv"): f"the directory '{tmp_path / 'no'}' does not exist"}
    for path, message in expected.items():
        with pytest.raises(InputError) as raised:
            preflight.check({"run_file": path})
        assert str(raised.value) == f"run_file '{path}': {message}"
    [outcome] = run_cli([["--trajectory_file", "/dev/null/x.csv"]], tmp_path, monkeypatch)
    assert outcome == {"code": 2, "stderr": "tati-sample: error: trajectory_file '/dev/null/x.csv': '/dev/null' "
                                            "is not a directory\n"}


def test_a_bad_option_exits_2_before_tensorflow_is_imported(tmp_path):
    (tmp_path / "t.csv").write_text("keep\n")
    script = """
import json, sys
from tati.cli.sample import main
from tati.cli.optimize import main as optimize
codes = []
for tool, argv in [(main, ["--step_width", "-1"]), (main, ["--sampler", "hmc3"]),
                   (main, ["--trajectory_file", "t.csv"]), (main, ["--restore_model", "missing.npz"]),
                   (main, ["--batch_data_files", "missing.csv"]),
                   (main, ["--number_walkers", "2", "--covariance_blending", "1"]),
                   (optimize, ["--dataset", "two_moons"])]:
    try:
        tool(argv)
        codes.append(0)
    except SystemExit as exit:
        codes.append(exit.code)
print(json.dumps({"codes": codes, "tensorflow": "tensorflow" in sys.modules}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"codes": [2] * 7, "tensorflow": False}, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 7 and all(line.startswith("tati-") and ": error: " in line for line in lines)
    assert (tmp_path / "t.csv").read_text() == "keep\n"


def tati_modules_holding_tqdm():
    """The imported tati modules with tqdm, or something of it, among their globals."""
    def of_tqdm(value):
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        return isinstance(name, str) and name.split(".")[0] == "tqdm"
    return [name for name, module in list(sys.modules.items())
            if name.split(".")[0] == "tati" and module is not None and any(map(of_tqdm, vars(module).values()))]


def test_progress_without_tqdm_warns_once_and_runs(monkeypatch):
    """In this process, as if the extra were not installed: tqdm's import fails (None in
    sys.modules) and the once-per-process note is not yet given. tati imports tqdm only where a
    bar is asked for (running.progress_bar): no tati module holds it from its own import, which
    would also break `import tati` without it. (Not a new process: ~7 s of CPU less.)"""
    from tati.engine import running
    tati.Simulation  # every module a run needs imported, for the check below
    assert tati_modules_holding_tqdm() == []
    for name in {"tqdm"} | {name for name in sys.modules if name.startswith("tqdm.")}:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(running, "_progress_warned", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim = tati.Simulation(potential=lambda x: 0.5 * (x[0] ** 2), initial_parameters=[0.0], max_steps=4,
                              progress=True)
        sim.sample()
        sim.sample()
        count = len(sim.sample().run_info)
    messages = [str(w.message) for w in caught]
    assert count == 4
    assert str(messages).count("tqdm") == 1 and "pip install tati[progress]" in str(messages), messages


def test_recorder_refuses_an_existing_file_and_appends_across_fits(tmp_path):
    import keras
    import numpy as np
    path = tmp_path / "trajectory.csv"
    path.write_text("keep\n")
    with pytest.raises(InputError, match="trajectory_file .* exists"):
        tati.callbacks.TrajectoryRecorder(trajectory_file=str(path))
    assert path.read_text() == "keep\n"
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=tati.samplers.BAOAB(step_width=0.01, seed=0), loss="mse")
    recorder = tati.callbacks.TrajectoryRecorder(every_nth=2, trajectory_file=str(path), overwrite=True)
    x = np.random.default_rng(0).normal(size=(32, 2)).astype("float32")
    model.fit(x, x[:, :1], epochs=1, batch_size=8, verbose=0, callbacks=[recorder])
    model.fit(x, x[:, :1], epochs=1, batch_size=8, verbose=0, callbacks=[recorder])
    assert list(recorder.trajectory.step) == [2, 4, 6, 8]
    pd.testing.assert_frame_equal(read_csv(path), recorder.trajectory, check_exact=True)


def test_a_checkpoint_of_an_unknown_format_is_refused_naming_the_version(tmp_path):
    import numpy as np
    checkpoint = str(tmp_path / "s.npz")
    options = dict(potential=lambda x: 0.5 * (x[0] ** 2), initial_parameters=[0.0], max_steps=2)
    tati.Simulation(save_model=checkpoint, **options).sample()
    with np.load(checkpoint) as file:
        arrays = {key: file[key] for key in file.files}
    meta = json.loads(str(arrays["meta"]))
    arrays["meta"] = np.array(json.dumps(dict(meta, format=7)))
    np.savez(checkpoint, **arrays)
    with pytest.raises(InputError, match=r"has checkpoint format 7; this version of tati reads formats 1 and 2$"):
        tati.Simulation(restore_model=checkpoint, **options)


def test_the_untuned_langevin_run_takes_the_noise_mass_width_and_friction():
    """GLA1, GLA2, BAOAB, CCAdL with a likelihood, batch_size and no step_width tune themselves:
    measure_step_width on, friction_constant auto, adapt_mass noise from 20 burn-in steps
    (windows.py's least; preflight keeps its own copy so that bad input exits before TensorFlow).
    A given step_width, friction_constant or adapt_mass is kept; SGHMC and SGNHT tune themselves too
    (SGHMC not with a gradient_noise_estimator), SGLD and pSGLD without a friction (they have none)."""
    from tati.adaptation import windows
    assert preflight.MIN_METRIC_BURN_IN == windows.MIN_METRIC_BURN_IN
    x = np.arange(20.0).reshape(10, 2)
    base = dict(dataset=(x, x[:, :1]), likelihood="gaussian", batch_size=5, burn_in_steps=20)

    def resolved(**options):
        values, _ = preflight.check({**base, **options})
        return values["measure_step_width"], values["adapt_mass"], values["friction_constant"]

    assert resolved(sampler="BAOAB") == (True, "noise", "auto")
    assert resolved(sampler="GLA2", burn_in_steps=19) == (True, "auto", "auto")
    assert resolved(sampler="CCAdL", friction_constant=2.0, adapt_mass=False) == (True, False, 2.0)
    assert resolved(sampler="BAOAB", step_width=0.01) == (False, "auto", 1.0)
    assert resolved(sampler="BAOAB", measure_step_width=False) == (False, "auto", 1.0)
    assert resolved(sampler="SGHMC") == (True, "noise", "auto")
    assert resolved(sampler="SGHMC", gradient_noise_estimator="adam") == (False, "auto", 1.0)
    assert resolved(sampler="SGNHT") == (True, "noise", "auto")
    assert resolved(sampler="SGLD") == (True, "noise", 1.0)
    assert resolved(sampler="pSGLD") == (True, "noise", 1.0)
    assert resolved(sampler="BAOAB", likelihood="none", loss="mean_squared") == (False, "auto", 1.0)


def test_a_sampler_that_cannot_tune_itself_says_so_in_one_line(tmp_path, monkeypatch):
    """SGHMC with a gradient_noise_estimator, a likelihood, batch_size and no step_width steps with the
    option's default, blind to U's scale: one note names it and the cure (a step_width, or a sampler
    that tunes itself); none with a step_width, no likelihood, no batch_size, or for the samplers
    that tune themselves. The command line says the same on stderr, once."""
    x = np.arange(20.0).reshape(10, 2)
    base = dict(dataset=(x, x[:, :1]), likelihood="gaussian", batch_size=5)

    def notes(**options):
        return preflight.check({**base, **options})[1]

    estimating = dict(sampler="SGHMC", gradient_noise_estimator="adam")
    [note] = notes(**estimating)
    assert note == ("sampler SGHMC does not tune itself here: it steps with the default step_width 0.1, "
                    "which knows nothing of this likelihood's scale (U grows with the data); give step_width, "
                    "or a sampler that tunes itself with a likelihood and batch_size: SGLD, GLA1, GLA2, BAOAB, "
                    "CCAdL, SGHMC, SGNHT, pSGLD (without gradient_noise_estimator)")
    assert notes(**estimating, step_width=1e-4) == []
    assert notes(sampler="SGHMC") == notes(sampler="SGNHT") == notes(sampler="SGLD") == []  # they tune themselves
    assert notes(sampler="pSGLD") == []
    assert notes(**estimating, likelihood="none", loss="mean_squared") == notes(sampler="BAOAB") == []
    assert notes(**estimating, batch_size=None) == notes(sampler="HMC2", batch_size=None) == []
    (tmp_path / "d.csv").write_text("x1,x2,y\n" + "".join(f"{a},{b},{a}\n" for a, b in x))
    argv = ["--sampler", "SGHMC", "--gradient_noise_estimator", "adam", "--batch_data_files", "d.csv",
            "--likelihood", "gaussian", "--batch_size", "5", "--max_steps", "2", "--hidden_dimension", ""]
    default, given = run_cli([argv, argv + ["--step_width", "1e-4"]], tmp_path, monkeypatch)
    assert default["code"] == 0 and default["stderr"].count("does not tune itself") == 1, default["stderr"]
    assert given["code"] == 0 and "does not tune itself" not in given["stderr"], given["stderr"]


def test_samplers_of_the_whole_dataset_refuse_mini_batches_with_the_cure():
    """NUTS and RWMH evaluate the target at every step; HMC's accept/reject compares the energy
    at a leg's two ends, which two mini-batches would take from two targets (before, HMC2 ran
    on mini-batches without adapting and wrote no row). Refused before anything runs, naming
    the samplers that take mini-batches."""
    from tati.engine.registry import samplers_where
    whole = samplers_where("full_batch")
    assert {"HMC1", "HMC2", "NUTS", "RWMH"} <= set(whole)
    for sampler in whole:
        with pytest.raises(InputError, match=rf"^batch_size: {sampler} .*; drop batch_size, or sample "
                                             r"mini-batches with a stochastic-gradient sampler \(BAOAB, SGHMC\)$"):
            preflight.check(dict(sampler=sampler, batch_size=10))
    preflight.check(dict(sampler="SGHMC", batch_size=10))
