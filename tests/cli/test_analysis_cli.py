"""tati-analyse (tati/cli/analyse.py): every subcommand writes its CSV file and, with --plot, a
readable PNG; every bad input is one line `tati-analyse: error: ...` and exit status 2, named
column included, before TensorFlow is imported; outputs are never replaced without
--overwrite true."""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from stats import seed
from tati.analysis import figures
from tati.cli.analyse import main

WALKERS, ROWS = 2, 400
RUN_INFO = ["id", "step", "epoch", "loss", "time_per_nth_step", "total_energy", "kinetic_energy",
            "scaled_momentum", "scaled_gradient", "virial", "scaled_noise"]
AVERAGES = ["id", "step", "epoch", "loss", "ensemble_average_loss", "average_kinetic_energy",
            "average_virials", "average_inertia"]

# subcommand, its extra options, the table file it needs and a column of it that it needs
NEEDS = [("traces", ["--parameters", "param1"], "run.csv", "kinetic_energy"),
         ("moments", [], "trajectory.csv", "loss"),
         ("covariance", ["--eigen_output", "eigen.csv"], "trajectory.csv", "loss"),
         ("autocorrelation", [], "trajectory.csv", "loss"),
         ("temperature", ["--estimators", "configurational"], "run.csv", "virial"),
         ("free_energy", ["--bins", "20"], "trajectory.csv", "loss")]


def write_run(directory, rng):
    """The three CSV files of a synthetic 2-walker run of a 2-D Gaussian (AR(1) rows, 0.5)."""
    noise = rng.standard_normal((ROWS, WALKERS, 2))
    q = lfilter([np.sqrt(0.75)], [1.0, -0.5], noise, axis=0) * np.array([1.0, 0.5])
    ids, steps = np.tile(np.arange(WALKERS), ROWS), np.repeat(np.arange(1, ROWS + 1) * 10, WALKERS)
    loss = 0.5 * (q[..., 0] ** 2 + 4 * q[..., 1] ** 2).ravel()
    kinetic = rng.gamma(1.0, 1.0, ROWS * WALKERS)
    run = pd.DataFrame({"id": ids, "step": steps, "epoch": steps, "loss": loss, "time_per_nth_step": 0.01,
                        "total_energy": loss + kinetic, "kinetic_energy": kinetic,
                        "scaled_momentum": np.sqrt(2 * kinetic), "scaled_gradient": 0.1, "virial": loss,
                        "scaled_noise": 0.5})
    trajectory = pd.DataFrame({"id": ids, "step": steps, "loss": loss, "param0": q[..., 0].ravel(),
                               "param1": q[..., 1].ravel()})
    averages = run[AVERAGES[:4]].assign(ensemble_average_loss=0.9, average_kinetic_energy=1.0,
                                        average_virials=1.0, average_inertia=0.0)
    for name, frame in (("run.csv", run), ("trajectory.csv", trajectory), ("averages.csv", averages)):
        frame.to_csv(directory / name, index=False)


@pytest.fixture
def run_dir(tmp_path):
    write_run(tmp_path, np.random.default_rng(seed(5000)))
    return tmp_path


def one_error_line(capsys, argv):
    """main(argv) exits with 2 and prints one error line on stderr, nothing on stdout."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == "", (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tati-analyse: error: "), err
    return lines[0]


def check_png(path, width):
    """A PNG file of some substance that matplotlib reads back at the figure's size."""
    from matplotlib import image
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 15000, len(data)
    pixels = image.imread(path)
    assert pixels.shape[1] == width and pixels.shape[0] >= 250 and pixels.shape[2] in (3, 4)
    assert pixels[..., :3].std() > 0.05  # not a blank canvas


@pytest.mark.parametrize("command, extra, _file, _column", NEEDS, ids=[n[0] for n in NEEDS])
def test_subcommand_writes_its_csv_and_a_readable_png(command, extra, _file, _column, run_dir, capsys,
                                                      monkeypatch):
    monkeypatch.chdir(run_dir)
    main([command, "--directory", ".", "--burn_in_steps", "500", "--plot", f"{command}.png", *extra])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"tati-analyse {command}: 700 rows of 2 walkers after burn-in 500 (steps 510 to 4000)", out
    assert out[-1].startswith(f"  wrote {command}.csv") and out[-1].endswith(f"{command}.png"), out
    table = pd.read_csv(f"{command}.csv")
    assert len(table) > 0
    check_png(f"{command}.png", 1100 if command == "covariance" else 800)
    if command == "covariance":
        assert list(pd.read_csv("eigen.csv").columns[:4]) == ["rank", "eigenvalue", "eigenvalue_error", "fraction"]


def test_the_burn_in_is_the_runs_where_the_averages_begin(run_dir, capsys, monkeypatch):
    """tati-sample writes averages rows only after burn-in: without --burn_in_steps the analysis
    leaves out the rows before them (a first analysis of a real run counted its warm-up: 7.7
    standard errors hot), and says so; without the averages file it says the burn-in is unknown."""
    monkeypatch.chdir(run_dir)
    averages = pd.read_csv("averages.csv")
    averages[averages.step > 500].to_csv("averages.csv", index=False)
    main(["temperature", "--directory", ".", "--dof", "2"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("tati-analyse temperature: 700 rows of 2 walkers after the run's burn-in 500 "
                      "(steps 510 to 4000, where its averages begin)"), out
    found = pd.read_csv("temperature.csv")
    main(["temperature", "--directory", ".", "--dof", "2", "--burn_in_steps", "500", "--overwrite"])
    assert capsys.readouterr().out.splitlines()[0].endswith("after burn-in 500 (steps 510 to 4000)")
    pd.testing.assert_frame_equal(found, pd.read_csv("temperature.csv"))
    main(["temperature", "--run_file", "run.csv", "--dof", "2", "--overwrite"])  # no averages: 0, and said
    assert capsys.readouterr().out.splitlines()[0] == (
        "tati-analyse temperature: 800 rows of 2 walkers after burn-in 0 (steps 10 to 4000); the run's "
        "burn-in is not in these files: give --burn_in_steps or --averages_file")


def test_temperature_of_a_run_without_momenta(run_dir, capsys, monkeypatch):
    """SGLD and pSGLD write no kinetic_energy: by default the temperatures the run info has (the
    configurational one), where asking for both had ended in an error line."""
    monkeypatch.chdir(run_dir)
    pd.read_csv("run.csv").drop(columns=["kinetic_energy", "total_energy", "scaled_momentum"]).to_csv(
        "run.csv", index=False)
    main(["temperature", "--directory", ".", "--dof", "2"])
    out = capsys.readouterr().out
    assert "configurational temperature" in out and "kinetic" not in out, out
    assert list(pd.read_csv("temperature.csv").estimator) == ["configurational"]


@pytest.mark.parametrize("command, extra, file, column", NEEDS, ids=[n[0] for n in NEEDS])
def test_a_missing_column_is_named_in_one_line(command, extra, file, column, run_dir, capsys):
    frame = pd.read_csv(run_dir / file).drop(columns=column)
    frame.to_csv(run_dir / file, index=False)
    option = "--run_file" if file == "run.csv" else "--trajectory_file"
    output = run_dir / "out.csv"
    argv = [command, option, str(run_dir / file), "--output", str(output), *extra]
    if command == "traces":
        argv += ["--quantities", "loss,kinetic_energy"]
    if command == "temperature":
        argv += ["--dof", "2"]
    line = one_error_line(capsys, argv)
    assert f"'{column}'" in line and f"'{run_dir / file}'" in line, line
    assert not output.exists()


@pytest.mark.parametrize("command, extra, _file, _column", NEEDS, ids=[n[0] for n in NEEDS])
def test_every_subcommand_checks_id_and_step(command, extra, _file, _column, run_dir, capsys):
    for name in ("run.csv", "trajectory.csv"):
        pd.read_csv(run_dir / name).drop(columns="step").to_csv(run_dir / name, index=False)
    line = one_error_line(capsys, [command, "--directory", str(run_dir), "--output", str(run_dir / "o.csv"),
                                   *extra])
    assert "has no column 'step'" in line or "holds no tati table" in line or "no tati table" in line, line


def test_outputs_are_not_replaced_without_overwrite(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    main(["moments", "--trajectory_file", "trajectory.csv"])
    capsys.readouterr()
    before = open("moments.csv", encoding="utf-8").read()
    line = one_error_line(capsys, ["moments", "--trajectory_file", "trajectory.csv", "--inverse_temperature", "3",
                                   "--run_inverse_temperature", "1"])
    assert line == ("tati-analyse: error: output 'moments.csv' exists: give overwrite=true "
                    "(--overwrite true) to replace it"), line
    assert open("moments.csv", encoding="utf-8").read() == before
    open("fig.png", "w").close()
    line = one_error_line(capsys, ["covariance", "--trajectory_file", "trajectory.csv", "--plot", "fig.png"])
    assert "plot 'fig.png' exists" in line and not os.path.exists("covariance.csv")
    main(["moments", "--trajectory_file", "trajectory.csv", "--inverse_temperature", "3", "--run_inverse_temperature",
          "1", "--overwrite", "true"])
    capsys.readouterr()
    assert open("moments.csv", encoding="utf-8").read() != before
    line = one_error_line(capsys, ["moments", "--trajectory_file", "trajectory.csv", "--output", "trajectory.csv",
                                   "--overwrite", "true"])
    assert "output 'trajectory.csv' is the run's trajectory_file" in line


@pytest.mark.parametrize("option, given, kind", [
    ("--trajectory_file", "run.csv", "a run-info table"),
    ("--run_file", "trajectory.csv", "a trajectory table"),
    ("--averages_file", "run.csv", "a run-info table"),
    ("--trajectory_file", "averages.csv", "an averages table"),
])
def test_a_named_table_of_another_kind_is_refused(option, given, kind, run_dir, capsys):
    """Issue #38: a run-info file given as --trajectory_file gave R-hat and ESS of its columns
    with exit status 0. Every named table is checked by its header, as a directory's files are."""
    command = "temperature" if option == "--run_file" else "autocorrelation" if option == "--trajectory_file" \
        else "traces"
    line = one_error_line(capsys, [command, option, str(run_dir / given), "--output", str(run_dir / "o.csv")])
    assert line.startswith(f"tati-analyse: error: {option[2:]} '{run_dir / given}' is {kind}, not "), line
    assert not (run_dir / "o.csv").exists()


def test_another_tools_output_is_refused_as_a_table(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    main(["traces", "--directory", "."])
    capsys.readouterr()
    line = one_error_line(capsys, ["moments", "--trajectory_file", "traces.csv"])
    assert line == ("tati-analyse: error: trajectory_file 'traces.csv' is the output of tati-analyse traces, "
                    "not a trajectory table: give the run's trajectory table (tati-sample --trajectory_file)")


def test_a_plot_is_written_in_its_suffix_format(run_dir, capsys, tmp_path):
    for suffix, magic in (("pdf", b"%PDF"), ("svg", b"<?xml")):
        main(["moments", "--directory", str(run_dir), "--output", str(tmp_path / f"m_{suffix}.csv"),
              "--plot", str(tmp_path / f"m.{suffix}")])
        assert (tmp_path / f"m.{suffix}").read_bytes().startswith(magic)
    capsys.readouterr()


def test_plot_without_matplotlib_names_the_extra(run_dir, capsys, monkeypatch):
    monkeypatch.setattr(figures, "available", lambda: False)
    line = one_error_line(capsys, ["traces", "--directory", str(run_dir), "--plot", str(run_dir / "t.png")])
    assert line == "tati-analyse: error: --plot needs matplotlib: pip install tati[plots]"


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: ANALYSIS"),
    (["histogram"], "argument ANALYSIS: invalid choice: 'histogram'"),
    (["free_energy", "--directory", "."], None),
    (["free_energy", "--bins", "1"], "bins must be >= 2, got '1'"),
    (["moments", "--burn_in_steps", "-5"], "burn_in_steps must be >= 0, got '-5'"),
    (["temperature", "--level", "1.5"], "level must be below 1, got 1.5"),
    (["temperature", "--estimators", "kinetik"], "estimators 'kinetik' is unknown; choose one of kinetic, "
                                                 "configurational (did you mean 'kinetic'?)"),
    (["moments", "--inverse_temperatur", "2"], "unrecognized arguments: --inverse_temperatur 2 "
                                              "(did you mean --inverse_temperature?)"),
    (["moments"], "moments needs the run's trajectory table: give --run_file, --trajectory_file, "
                  "--averages_file or --directory"),
    (["moments", "--trajectory_file", "nothing.csv"], "trajectory_file 'nothing.csv' does not exist"),
    (["moments", "--directory", "trajectory.csv"], "directory 'trajectory.csv' is not a directory"),
    (["covariance", "--directory", ".", "--eigen_output", "covariance.csv"],
     "output and eigen_output name the same file 'covariance.csv'"),
    (["temperature", "--trajectory_file", "trajectory.csv"], "temperature needs the run-info table"),
    (["autocorrelation", "--directory", ".", "--burn_in_steps", "4000"],
     "burn_in_steps 4000 leaves no row of trajectory_file './trajectory.csv' (its last step is 4000)"),
    (["moments", "--directory", ".", "--plot", "moments.jpg"],
     "--plot 'moments.jpg': a figure is written as .png, .pdf, .svg; name the file with one of these suffixes"),
    (["moments", "--trajectory_file", "nothing.csv", "--output", "trajectory.csv"],
     "trajectory_file 'nothing.csv' does not exist"),  # the input first, though the output exists
    (["traces", "--directory", ".", "--quantities", "virial,kinetik_energy"],
     "quantities: run_file './run.csv' has no column 'kinetik_energy' (did you mean 'kinetic_energy'?)"),
])
def test_bad_input_is_one_line(argv, message, run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    if message is None:  # a valid command for contrast
        main(argv)
        return
    line = one_error_line(capsys, argv)
    assert message in line, line


def test_no_tensorflow_before_the_inputs_are_checked(run_dir):
    """A bad column is refused without importing TensorFlow; the analyses other than
    autocorrelation never import it."""
    script = (
        "import sys\n"
        "from tati.cli.analyse import main\n"
        "try:\n"
        "    main(['autocorrelation', '--trajectory_file', 'bad.csv'])\n"
        "except SystemExit as stop:\n"
        "    print(stop.code, 'tensorflow' in sys.modules)\n"
        "for command in ('traces', 'moments', 'covariance', 'temperature', 'free_energy', 'inference_data'):\n"
        "    main([command, '--directory', '.'])\n"
        "print('tensorflow' in sys.modules)\n")
    pd.read_csv(run_dir / "trajectory.csv").drop(columns="loss").to_csv(run_dir / "bad.csv", index=False)
    done = subprocess.run([sys.executable, "-c", script], cwd=run_dir, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "2 False" and lines[-1] == "False", done.stdout
    assert done.stderr.splitlines() == ["tati-analyse: error: trajectory_file 'bad.csv' has no column 'loss' "
                                        "(needed by autocorrelation)"], done.stderr


def test_inference_data_writes_a_netcdf_file_that_arviz_reads(run_dir, capsys, monkeypatch):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its coming refactor
        az = pytest.importorskip("arviz")
    monkeypatch.chdir(run_dir)
    main(["inference_data", "--directory", ".", "--inverse_temperature", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (f"  groups posterior, sample_stats: {WALKERS} chains (walkers) of {ROWS} draws, "
                        "2 parameters; 11 sample stats"), lines
    assert lines[-1] == "  wrote inference_data.nc" and sorted(os.listdir(".")) == [
        "averages.csv", "inference_data.nc", "run.csv", "trajectory.csv"]  # no partial file left
    idata = az.from_netcdf("inference_data.nc")
    trajectory = pd.read_csv("trajectory.csv")
    first = trajectory[trajectory.id == 1]
    np.testing.assert_array_equal(idata.posterior["param1"].sel(chain=1), first["param1"])
    np.testing.assert_array_equal(idata.sample_stats["lp"].sel(chain=1), -2.0 * first["loss"])
    # the burn-in given leaves out its rows; the file is replaced only when asked
    one_error_line(capsys, ["inference_data", "--directory", "."])
    main(["inference_data", "--directory", ".", "--burn_in_steps", "2000", "--overwrite", "true"])
    assert az.from_netcdf("inference_data.nc").posterior.sizes["draw"] == ROWS - 200


@pytest.mark.parametrize("argv, message", [
    (["--plot", "trace.png"], "--plot is an option of another analysis"),
    (["--burn_in_steps", "4000"], "burn_in_steps 4000 leaves no row of"),
    (["--inverse_temperature", "0"], "inverse_temperature"),
])
def test_inference_data_bad_input_is_one_line(argv, message, run_dir, capsys, monkeypatch):
    pytest.importorskip("arviz")
    monkeypatch.chdir(run_dir)
    assert message in one_error_line(capsys, ["inference_data", "--directory", ".", *argv])
    pd.read_csv("trajectory.csv").drop(columns="loss").to_csv("trajectory.csv", index=False)
    line = one_error_line(capsys, ["inference_data", "--directory", "."])
    assert line.endswith("trajectory.csv' has no column 'loss' (needed by inference_data)"), line
    assert not os.path.exists("inference_data.nc")


def test_inference_data_without_arviz_names_the_extra(run_dir, capsys, monkeypatch):
    import importlib.util
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "arviz" else find_spec(name, *args))
    line = one_error_line(capsys, ["inference_data", "--directory", str(run_dir)])
    assert line == "tati-analyse: error: tati-analyse inference_data needs arviz: pip install tati[arviz]"
