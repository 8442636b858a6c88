"""Runs read back (tati/analysis/runs.py): load_run of a finished run equals the Result of the
call that wrote it, exactly, for one walker (BAOAB) and several (HMC2, whose walkers have rows
at different steps); the momenta table too, and its per-layer diagnostics; an interrupted run
loads its complete rows; bad files are one-line InputErrors. Two short real runs; everything
else on their files."""

import os

import numpy as np
import pandas as pd
import pytest

import tati
from stats import seed
from tati.analysis.autocorrelation import autocorrelation
from tati.analysis.runs import RunTables, classify, find_files, load_run, read_run, read_table, run_paths
from tati.analysis.temperature import temperature
from tati.recording.table import Table

TABLES = ("run_info", "trajectory", "averages")
FILES = ("run_file", "trajectory_file", "averages_file")


def gaussian(x):
    """U = x^T A x / 2 with A = diag(1, 4) (potential_batched=False: one walker's x)."""
    return 0.5 * (x[0] ** 2 + 4.0 * x[1] ** 2)


def run(directory, names, calls=1, **options):
    paths = {option: str(directory / name) for option, name in zip(FILES, names)}
    sim = tati.Simulation(potential=gaussian, initial_parameters=[0.5, -0.5], dtype="float64", **paths,
                          **options)
    results = [sim.sample() for _ in range(calls)]
    return results, paths


@pytest.fixture(scope="module")
def baoab(tmp_path_factory):
    """BAOAB, one walker, 2 calls of 1500 steps (the files hold both calls' rows), burn-in 300,
    with its momenta table."""
    directory = tmp_path_factory.mktemp("baoab")
    momenta = str(directory / "momenta.csv")
    results, paths = run(directory, ("run.csv", "trajectory.csv", "averages.csv"), calls=2, sampler="BAOAB",
                         step_width=0.3, max_steps=1500, every_nth=3, burn_in_steps=300, seed=seed(11),
                         momenta_file=momenta)
    return directory, results, dict(paths, momenta_file=momenta)


@pytest.fixture(scope="module")
def hmc(tmp_path_factory):
    """HMC2, 3 walkers: rows at each walker's own evaluation steps. Files of other names."""
    directory = tmp_path_factory.mktemp("hmc")
    results, paths = run(directory, ("info.csv", "samples.csv", "running.csv"), sampler="HMC2",
                         number_walkers=3, step_width=0.3, hamiltonian_dynamics_time=1.0, max_steps=1500,
                         every_nth=1, burn_in_steps=100, seed=seed(12))
    return directory, results[0], paths


def assert_same(loaded, result):
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(result, name), check_exact=True)


def test_load_run_of_one_walker_equals_the_results_of_its_calls(baoab):
    directory, results, paths = baoab
    whole = tati.simulation.Result(*(pd.concat([getattr(r, name) for r in results], ignore_index=True)
                                     for name in TABLES))
    loaded = load_run(**paths)
    assert type(loaded) is type(results[0])
    assert_same(loaded, whole)  # time_per_nth_step included: repr floats read back exactly
    assert_same(load_run(directory), whole)
    assert loaded.run_info.dtypes["step"] == np.int64 and loaded.run_info.dtypes["loss"] == np.float64
    assert loaded.trajectory["step"].is_monotonic_increasing and loaded.averages["step"].min() > 300
    only = load_run(trajectory_file=paths["trajectory_file"])
    assert only.run_info.empty and len(only.run_info.columns) == 0
    pd.testing.assert_frame_equal(only.trajectory, whole.trajectory, check_exact=True)


def test_a_run_read_back_knows_its_burn_in_from_its_averages(baoab, hmc):
    """The averages table starts after burn_in_steps: a run read back takes the burn-in it shows as the
    analyses' default, which keeps the rows the run's (300 and 100 here) keeps; a trajectory alone 0."""
    from tati.analysis import select
    for (directory, *_), burn_in in ((baoab, 300), (hmc, 100)):
        loaded = load_run(directory)
        shown = select.run_burn_in(loaded, None)  # HMC's rows are its legs' ends: 99, none at 100
        assert shown == loaded.run_info.step[loaded.run_info.step <= burn_in].max() > 0
        pd.testing.assert_frame_equal(temperature(loaded), temperature(loaded, burn_in=burn_in))
    only = load_run(trajectory_file=baoab[2]["trajectory_file"])
    assert select.shown_burn_in(only) is None and select.run_burn_in(only, None) == 0


def test_load_run_of_hmc_walkers_equals_the_result(hmc):
    directory, result, paths = hmc
    loaded = load_run(**paths)
    assert_same(loaded, result)
    assert_same(load_run(directory), result)  # found by their headers
    counts = loaded.trajectory.groupby("id").size()
    assert len(counts) == 3 and loaded.run_info["divergences"].dtype == np.int64
    assert np.isinf(loaded.run_info["total_energy"]).sum() == np.isinf(result.run_info["total_energy"]).sum()
    # the analyses run on it: walkers compared over their last rows, as many as the shortest has
    table = autocorrelation(loaded, burn_in=100, components=1)
    assert list(table.coordinate) == ["param0", "param1", "eigenvector1"]
    after = loaded.trajectory[loaded.trajectory.step > 100].groupby("id").size()
    assert (table.rows == after.min()).all() and (table.walkers == 3).all()
    assert (table.r_hat < 1.1).all(), table


@pytest.mark.statistical
def test_momenta_table_and_layer_diagnostics_read_back(baoab, tmp_path):
    """The momenta file (momenta_file) loads as the calls' momenta tables, exactly, given or found
    in a directory (by name, or by its header under another name), and the loaded run's
    layer_temperatures equal those of the run in memory, per group given. Without the file the
    table is None and layer_temperatures names momenta_file; tati-analyse's run_paths does not
    look for it."""
    directory, results, paths = baoab
    groups = {"x": ["param0"], "y": ["param1"]}
    whole = tati.simulation.Result(*(pd.concat([getattr(r, name) for r in results], ignore_index=True)
                                     for name in TABLES + ("momenta",)), parameter_groups=groups)
    loaded = load_run(**paths, parameter_groups=groups)
    pd.testing.assert_frame_equal(loaded.momenta, whole.momenta, check_exact=True)
    assert list(loaded.momenta.columns) == ["id", "step", "momentum_param0", "momentum_param1",
                                            "gradient_param0", "gradient_param1"]
    assert loaded.momenta.dtypes["step"] == np.int64 and len(loaded.momenta) == len(whole.trajectory) == 1000
    table = loaded.layer_temperatures(burn_in=300)
    pd.testing.assert_frame_equal(table, whole.layer_temperatures(burn_in=300), check_exact=True)
    assert list(table.index) == ["all", "x", "y"] and (table.configurational_readings > 0).all(), table
    pd.testing.assert_frame_equal(load_run(directory).momenta, whole.momenta, check_exact=True)
    assert list(load_run(directory).layer_temperatures(burn_in=300).index) == ["all"]  # no groups given
    os.symlink(paths["momenta_file"], tmp_path / "readings.csv")
    assert classify(list(whole.momenta.columns)) == "momenta_file"
    assert find_files(str(tmp_path)) == {"momenta_file": str(tmp_path / "readings.csv")}
    assert read_run(str(tmp_path)).sources == {"momenta": f"momenta_file '{tmp_path / 'readings.csv'}'"}
    assert "momenta_file" not in run_paths(str(directory))
    without = load_run(trajectory_file=paths["trajectory_file"])
    assert without.momenta is None
    with pytest.raises(tati.InputError, match="momenta_file"):
        without.layer_temperatures()


@pytest.mark.statistical
def test_configurational_temperature_of_a_sampled_gaussian(baoab):
    """BAOAB samples a Gaussian's positions exactly, so q . grad U / d averages to 1/beta = 1;
    the interval at level 1 - 1e-3 holds it (false-failure budget 1e-3, if the batch-means
    error is right). The kinetic temperature carries BAOAB's step-width bias (doc/columns.md):
    per component 1 - h^2 omega^2 / 4, here (1 - 0.0225 + 1 - 0.09) / 2 = 0.944."""
    _, _, paths = baoab
    table = temperature(read_run(**{k: paths[k] for k in FILES}), burn_in=300, level=1 - 1e-3)
    table = table.set_index("estimator")
    conf = table.loc["configurational"]
    assert conf.low <= 1.0 <= conf.high and conf.verdict == "consistent", conf
    kinetic = table.loc["kinetic"]
    assert kinetic.low <= 0.944 <= kinetic.high, kinetic
    assert table.loc["kinetic", "batches"] >= 10


def test_interrupted_run_loads_its_complete_rows(baoab, tmp_path):
    """A kill while a line is written leaves it without its newline: every cut of the last
    lines loads as the rows before the cut line. Tables cut at different rows load as they are."""
    _, results, paths = baoab
    text = open(paths["trajectory_file"], encoding="utf-8").read()
    full = read_table("trajectory_file", paths["trajectory_file"])
    lines = text.splitlines(keepends=True)
    start = len("".join(lines[:-2]))
    cut = tmp_path / "cut.csv"
    for end in range(start, len(text) + 1, 7):
        cut.write_text(text[:end], encoding="utf-8")
        complete = text[:end].count("\n") - 1
        loaded = read_table("trajectory_file", str(cut))
        pd.testing.assert_frame_equal(loaded, full.iloc[:complete], check_exact=True)
    run_info = tmp_path / "run.csv"
    run_info.write_text("".join(open(paths["run_file"], encoding="utf-8").readlines()[:11]) + "1,33,33,0.5",
                        encoding="utf-8")
    loaded = load_run(run_file=str(run_info), trajectory_file=paths["trajectory_file"])
    assert len(loaded.run_info) == 10 and len(loaded.trajectory) == len(full)


def test_header_only_file_gives_the_typed_empty_table(tmp_path):
    columns = ["id", "step", "epoch", "loss", "average_virials"]
    path = tmp_path / "averages.csv"
    Table(columns, str(path)).close()
    pd.testing.assert_frame_equal(read_table("averages_file", str(path)), Table(columns).frame())



def test_a_wide_trajectory_reads_back_without_pandas_warnings(tmp_path):
    """A network's trajectory has hundreds of parameter columns (641 on a 30-20-1 network): read as one
    frame, not column by column, which fragmented it and made pandas warn at every tati-predictive."""
    import warnings
    columns = ["id", "step", "loss"] + [f"weight{i}" for i in range(641)]
    table = Table(columns, str(tmp_path / "trajectory.csv"))
    values = np.random.default_rng(seed(50)).normal(size=(5, 641))
    table.extend_arrays(np.column_stack([np.zeros(5), np.arange(1, 6)]), np.column_stack([np.ones(5), values]))
    table.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = read_table("trajectory_file", str(tmp_path / "trajectory.csv"))
    pd.testing.assert_frame_equal(frame, table.frame())


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    ("", "has no complete header line"),
    ("id,step,loss", "has no complete header line"),
    ("id,loss,param0\n0,0.5,1.0\n", "has no column 'step'"),
    ("id,step,loss,param0\n0,1,0.5,1.0\n0,2,0.5\n0,3,0.5,1.0\n", "line 3 has 3 fields, the header 4"),
    ("id,step,loss,param0\n0,1,0.5,abc\n", "row 1: column 'param0' must be a number, got 'abc'"),
    ("id,step,loss,param0\n0,1.5,0.5,1.0\n", "row 1: column 'step' must be an integer, got '1.5'"),
    ("id,step,loss,loss\n0,1,0.5,1.0\n", "has the column 'loss' twice"),
])
def test_bad_files_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "t.csv"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(tati.InputError, match=message) as caught:
        load_run(trajectory_file=str(path))
    assert "\n" not in str(caught.value) and f"trajectory_file '{path}'" in str(caught.value)


def test_named_files_of_another_kind_are_refused(baoab, tmp_path):
    """load_run checks a named file's kind by its header, as in a directory: a run-info table as
    trajectory_file, a momenta table as run_file, ... each one line naming option, file and kind."""
    _, _, paths = baoab
    words = {"run_file": "a run-info table", "trajectory_file": "a trajectory table",
             "averages_file": "an averages table", "momenta_file": "a momenta table"}
    for option, given in (("trajectory_file", "run_file"), ("run_file", "momenta_file"),
                          ("averages_file", "trajectory_file"), ("momenta_file", "averages_file")):
        with pytest.raises(tati.InputError) as caught:
            load_run(**{option: paths[given]})
        wanted = words[option].split(" ", 1)[1]
        assert str(caught.value) == (f"{option} '{paths[given]}' is {words[given]}, not {words[option]}: "
                                     f"give it as {given} (--{given}) and the {wanted} as {option}")
    os.symlink(paths["trajectory_file"], tmp_path / "run.csv")  # a README name does not make the kind
    with pytest.raises(tati.InputError, match="run_file '.*run.csv' is a trajectory table"):
        read_run(str(tmp_path))


def test_directory_rules(baoab, hmc, tmp_path):
    _, _, paths = baoab
    with pytest.raises(tati.InputError, match="does not exist"):
        load_run(str(tmp_path / "nowhere"))
    with pytest.raises(tati.InputError, match="holds no tati table"):
        load_run(str(tmp_path))
    for option in FILES:  # two runs' files side by side: README names win, others are ambiguous
        os.symlink(paths[option], tmp_path / f"a_{option}.csv")
        os.symlink(hmc[2][option], tmp_path / f"b_{option}.csv")
    with pytest.raises(tati.InputError, match="several run-info tables \\(a_run_file.csv, "
                                              "b_run_file.csv\\): name one with run_file \\(--run_file\\)"):
        find_files(str(tmp_path))
    os.symlink(paths["run_file"], tmp_path / "run.csv")
    with pytest.raises(tati.InputError, match="several trajectory tables"):
        find_files(str(tmp_path))
    found = read_run(str(tmp_path), run_file=paths["run_file"], trajectory_file=paths["trajectory_file"],
                     averages_file=paths["averages_file"])
    assert found.sources["trajectory"] == f"trajectory_file '{paths['trajectory_file']}'"
    os.symlink(paths["trajectory_file"], tmp_path / "trajectory.csv")
    assert find_files(str(tmp_path), ["trajectory_file"]) == {"trajectory_file": str(tmp_path / "trajectory.csv")}
    with pytest.raises(tati.InputError, match="give the run's files"):
        read_run()
    own = tmp_path / "own"  # a trajectory of another name beside the output of tati-analyse traces
    own.mkdir()
    os.symlink(paths["trajectory_file"], own / "samples.csv")
    (own / "traces.csv").write_text("id,step,loss,loss_running_mean\n0,1,0.5,\n", encoding="utf-8")
    # and beside the outputs of tati-analyse diffusion_map and tati-lossfunction-sampler trajectory
    (own / "diffusion_map.csv").write_text("id,step,loss,diffusion_coordinate1\n0,1,0.5,0.1\n", encoding="utf-8")
    (own / "loss_trajectory.csv").write_text("id,step,loss,accuracy,recorded_loss\n0,1,0.5,1.0,0.5\n",
                                             encoding="utf-8")
    assert find_files(str(own)) == {"trajectory_file": str(own / "samples.csv")}
    assert isinstance(read_run(trajectory_file=paths["trajectory_file"]), RunTables)
