"""tati-predictive (tati/cli/predictive.py): the CSV file holds what Simulation.predictive
computes from the same trajectory, the summary line its summed log predictive density, --plot a
PNG; bad input is one line and exit status 2, an existing output is kept without --overwrite."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tati
from stats import read_csv, seed
from tati.cli.predictive import main
from tati.data.csv import write_csv_file
from tati.analysis.runs import RunTables
from tati.bayes.swag import swag
from tati.export.arviz import to_inference_data

NETWORK = dict(hidden_dimension=[], output_activation="linear", likelihood="gaussian",
               noise_standard_deviation=0.3, dtype="float64")


def flags(options):
    return [item for name, value in options.items()
            for item in (f"--{name}", ",".join(map(str, value)) if isinstance(value, list) else str(value))]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A deep ensemble of 3 walkers fitting y = 0.8 x - 0.2 + noise, a row every 5 steps, and
    held-out points beyond the data."""
    directory = tmp_path_factory.mktemp("predictive")
    rng = np.random.default_rng(seed(5300))
    x = rng.uniform(-1, 1, size=(30, 1))
    write_csv_file(directory / "train.csv", x, 0.8 * x - 0.2 + 0.3 * rng.normal(size=x.shape))
    x_test = np.linspace(-2, 2, 21)[:, None]
    y_test = 0.8 * x_test - 0.2 + 0.3 * rng.normal(size=x_test.shape)
    write_csv_file(directory / "test.csv", x_test, y_test)
    write_csv_file(directory / "test2d.csv", np.hstack([x_test, x_test]), y_test)
    options = dict(batch_data_files=[str(directory / "train.csv")], **NETWORK)
    sim = tati.Simulation(**options, number_walkers=3, learning_rate=0.002, max_steps=200, every_nth=5,
                          trajectory_file=str(directory / "trajectory.csv"), seed=seed(53))
    result = sim.fit()
    return directory, options, sim, result.trajectory, x_test, y_test


def tool(capsys, directory, options, *extra):
    """(exit status, stdout, stderr) of tati-predictive run in this process."""
    argv = flags(options) + ["--trajectory_file", str(directory / "trajectory.csv"), "--test_data_files",
                             str(directory / "test.csv"), *map(str, extra)]
    try:
        main(argv)
        status = 0
    except SystemExit as exit:
        status = exit.code
    out, err = capsys.readouterr()
    return status, out, err


def test_csv_and_summary_are_the_python_predictive(run, capsys):
    """The same numbers as sim.predictive on the run's trajectory, exactly (the files hold
    shortest round-trip floats); with --swag_rank those of predictive on swag(...).sample."""
    directory, options, sim, trajectory, x_test, y_test = run
    output, png = directory / "out.csv", directory / "out.png"
    status, out, err = tool(capsys, directory, options, "--burn_in_steps", 100, "--draws", 50, "--output",
                            output, "--plot", png)
    assert status == 0, err
    table, lpd = sim.predictive(x_test, y_test, trajectory=trajectory, burn_in=100, draws=50)
    written = read_csv(output)
    assert list(written.columns) == ["x1", "label", "mean_0", "lower_0", "upper_0", "log_predictive_density",
                                     "pit_0"]
    np.testing.assert_array_equal(written[["x1", "label"]].to_numpy(), np.hstack([x_test, y_test]))
    pd.testing.assert_frame_equal(written[table.columns], table, check_exact=True)
    # burn_in_steps given: the line and the held-out scores
    assert out.count("\n") == 2 and f"log predictive density {lpd:.6g}" in out
    inside = int(((table["lower_0"] <= y_test[:, 0]) & (y_test[:, 0] <= table["upper_0"])).sum())
    rmse = np.sqrt(np.mean((table["mean_0"] - y_test[:, 0]) ** 2))
    assert out.splitlines()[1] == (f"  held-out: RMSE {rmse:.4g} of the predictive mean; the central 0.95 band "
                                   f"holds {inside} of 21 labels ({inside / 21:.0%})")
    assert "50 draws from trajectory_file" in out and "(3 walkers" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    status, out, err = tool(capsys, directory, options, "--burn_in_steps", 100, "--swag_rank", 4, "--draws", 60,
                            "--output", directory / "swag.csv")
    assert status == 0, err
    draws = swag(trajectory, rank=4, burn_in=100).sample(20, seed=0)
    table, lpd = sim.predictive(x_test, y_test, trajectory=draws, burn_in=200, draws=60)
    pd.testing.assert_frame_equal(read_csv(directory / "swag.csv")[table.columns], table, check_exact=True)
    assert "SWAG (rank 4)" in out and f"log predictive density {lpd:.6g}" in out


def test_without_burn_in_every_row_is_a_draw_and_it_says_so(run, capsys):
    """burn_in_steps not given (the trajectory does not record the run's): every row is a draw, as
    burn_in_steps 0 gives, and a second line says so with the option."""
    directory, options, *_ = run
    outputs = [directory / "all0.csv", directory / "all.csv"]
    status, out, err = tool(capsys, directory, options, "--burn_in_steps", 0, "--output", outputs[0])
    assert status == 0 and out.count("\n") == 2, err
    status, out, err = tool(capsys, directory, options, "--output", outputs[1])
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 3 and "steps after 0)" in lines[0], out
    assert lines[2] == ("  burn_in_steps not given: every row was a draw, the run's burn-in too (give "
                        "--burn_in_steps, the run's)")
    pd.testing.assert_frame_equal(read_csv(outputs[0]), read_csv(outputs[1]), check_exact=True)


def test_the_runs_command_line_serves_with_its_prior(run, capsys):
    """The tool takes the run's network options as they were given, the prior's too (a Bayesian run
    has prior_standard_deviation; it was refused): the prior does not change the predictive."""
    directory, options, *_ = run
    written = []
    for extra in ({}, dict(prior_standard_deviation=2.0)):
        output = directory / f"prior{len(extra)}.csv"
        status, _, err = tool(capsys, directory, dict(options, **extra), "--burn_in_steps", 100, "--output", output)
        assert status == 0, err
        written.append(read_csv(output))
    pd.testing.assert_frame_equal(written[0], written[1], check_exact=True)


@pytest.mark.parametrize("extra, message", [
    (["--output", "{d}/out.csv"], "output '{d}/out.csv' exists: give overwrite=true"),
    (["--trajectory_file", "{d}/none.csv"], "trajectory_file '{d}/none.csv' does not exist"),
    (["--test_data_files", "{d}/none.csv"], "test_data_files: file '{d}/none.csv' does not exist"),
    (["--burn_in_steps", "500"], "has no row after burn_in_steps 500"),
    (["--level", "1.5"], "level must be below 1"),
    (["--output", "{d}/trajectory.csv", "--overwrite", "true"], "is the run's trajectory_file"),
    (["--test_data_files", "{d}/features2d.csv", "--input_dimension", "2", "--plot", "{d}/x.png"],
     "plot draws the band over 1-D inputs (the network takes 2 features), or the calibration of held-out "
     "labels: give test_data_files with label columns"),
    (["--trajectory_file", "{d}/info.csv"], "trajectory_file '{d}/info.csv' is a run-info table, not a "
                                            "trajectory table: give it as run_file (--run_file)"),
    (["--swag_rank", "1"], "error: swag_rank must be 0 (the diagonal alone) or at least 2"),
    (["--inference_data", "{d}/run.nc", "--swag_rank", "2"], "inference_data holds the trajectory's rows, not "
                                                             "SWAG's draws: leave out swag_rank"),
    (["--inference_data", "{d}/run.nc", "--input_dimension", "1"], "inference_data needs the run's data "
                                                                   "(batch_data_files)"),
    (["--inference_data", "{d}/out.csv"], "'{d}/out.csv' exists"),
    (["--test_data_files", "{d}/test2d.csv"], "file '{d}/test2d.csv' has 3 columns: 1 feature and 2 label "
                                              "columns; the run's data has 1 label column(s)"),
    (["--test_data_files", "{d}/bad.csv"], "tati-predictive: error: test_data_files: file '{d}/bad.csv' line 3, "
                                           "column 2 'label': 'abc' is not a number"),
    (["--trajectory_file", "{d}/wider.csv"], "trajectory_file '{d}/wider.csv' has the column 'weight1', which is "
                                             "not a parameter of this model (it has 3 parameter columns, this "
                                             "model 2)"),
])
def test_bad_input_is_one_line_and_status_2(run, capsys, extra, message):
    directory, options, *_ = run
    (directory / "out.csv").touch()
    (directory / "bad.csv").write_text("x1,label\n0.5,1.0\n0.7,abc\n")
    (directory / "features2d.csv").write_text("x1,x2\n0.5,1.0\n0.7,0.2\n")
    (directory / "info.csv").write_text("id,step,epoch,loss,time_per_nth_step,total_energy\n0,200,200,1.0,0.1,1.0\n")
    pd.DataFrame({"id": [0], "step": [200], "loss": [1.0], "weight0": [0.5], "weight1": [0.1],
                  "bias0": [0.0]}).to_csv(directory / "wider.csv", index=False)  # a network of 2 inputs
    if "--input_dimension" in extra:  # a network of 2 inputs: the held-out file describes it
        options = {k: v for k, v in options.items() if k != "batch_data_files"}
    status, out, err = tool(capsys, directory, options, *(e.format(d=directory) for e in extra))
    assert status == 2 and err.count("\n") == 1 and err.startswith("tati-predictive: error: ")
    assert message.format(d=directory) in err, err


def test_inference_data_is_the_python_export(run, capsys):
    """--inference_data writes what Result.to_inference_data gives with the run's Simulation as
    log_likelihood and posterior_predictive and the held-out features as predictions (--seed the
    replicates' seed), through NetCDF bit for bit; the summary line names the file."""
    az = pytest.importorskip("arviz")
    directory, options, sim, trajectory, x_test, y_test = run
    path = directory / "run.nc"
    status, out, err = tool(capsys, directory, options, "--burn_in_steps", 100, "--output", directory / "id.csv",
                            "--inference_data", path, "--seed", sim.options["seed"])
    assert status == 0, err
    rows = int((trajectory["step"] > 100).sum())  # every walker's rows after burn-in: the fit's are equally many
    assert out.splitlines()[0].endswith(f"wrote {directory / 'id.csv'}, {path} (all {rows} draws)"), out
    assert not (directory / "run.nc.partial").exists()
    written = az.from_netcdf(path)
    expected = to_inference_data(RunTables(trajectory=trajectory), 100, log_likelihood=sim, posterior_predictive=sim,
                                 predictions=x_test)
    assert set(written.groups()) == set(expected.groups()) >= {
        "posterior", "log_likelihood", "posterior_predictive", "observed_data", "predictions",
        "predictions_constant_data"}
    for group in expected.groups():
        for name in expected[group].data_vars:
            np.testing.assert_array_equal(written[group][name].values, expected[group][name].values)
    assert written.posterior.sizes["chain"] == 3 and written.predictions["y"].shape[-1] == len(x_test)


def test_inference_data_needs_a_likelihood_and_arviz(run, capsys, monkeypatch):
    """Without a likelihood the loss is no log-likelihood, and without arviz nothing writes the file:
    each one line and exit status 2, before TensorFlow builds anything."""
    import importlib.util
    directory, options, *_ = run
    plain = {k: v for k, v in options.items() if k not in ("likelihood", "noise_standard_deviation")}
    status, out, err = tool(capsys, directory, plain, "--inference_data", directory / "none.nc")
    assert status == 2 and err.count("\n") == 1, err
    assert "inference_data needs the run's likelihood (--likelihood)" in err
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "arviz" else find_spec(name, *a))
    status, out, err = tool(capsys, directory, options, "--inference_data", directory / "none.nc")
    assert status == 2 and err == "tati-predictive: error: inference_data needs arviz: pip install tati[arviz]\n", err
    assert not (directory / "none.nc").exists()


def test_the_module_runs_as_a_tool(run):
    """As a process: features only (no labels), the held-out file alone describing the network."""
    directory, *_ = run
    (directory / "features.csv").write_text("x1\n-1.5\n0.0\n1.5\n")
    done = subprocess.run([sys.executable, "-m", "tati.cli.predictive", *flags(NETWORK), "--input_dimension", "1",
                           "--trajectory_file", str(directory / "trajectory.csv"), "--test_data_files",
                           str(directory / "features.csv"), "--output", str(directory / "features_out.csv")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "3 points" in done.stdout and "no labels, so no log predictive density" in done.stdout
    assert list(read_csv(directory / "features_out.csv").columns) == ["x1", "mean_0", "lower_0", "upper_0"]
