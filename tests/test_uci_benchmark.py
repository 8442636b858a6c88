"""tools/uci_benchmark.py: the reader of the UCI format, the standardisation and the units of the
published tables (exact numbers), bad input, and a short run end to end on the shipped copy of
yacht (tests/fixtures/uci/yacht: its first two splits)."""

import math
import pathlib

import numpy as np
import pandas as pd
import pytest

from processes import load_tool, tool_here

ROOT = pathlib.Path(__file__).resolve().parent.parent
YACHT = ROOT / "tests" / "fixtures" / "uci" / "yacht"


@pytest.fixture(scope="module")
def tool():
    return load_tool("uci_benchmark")


def write_folder(folder, splits=1):
    folder.mkdir()
    (folder / "data.txt").write_text("1 10 0\n2 10 1\n3 10 5\n4 10 9\n")
    (folder / "index_features.txt").write_text("0\n1\n")
    (folder / "index_target.txt").write_text("2\n")
    for k in range(splits):
        (folder / f"index_train_{k}.txt").write_text("0\n1\n2\n")
        (folder / f"index_test_{k}.txt").write_text("3\n")
    return folder


def test_reader_and_standardisation(tool, tmp_path):
    dataset = tool.read_dataset(str(write_folder(tmp_path / "toy", splits=2)))
    assert dataset["name"] == "toy" and dataset["hidden"] == 50
    np.testing.assert_array_equal(dataset["x"], [[1, 10], [2, 10], [3, 10], [4, 10]])
    np.testing.assert_array_equal(dataset["y"], [0, 1, 5, 9])
    assert len(dataset["splits"]) == 2
    np.testing.assert_array_equal(dataset["splits"][1][0], [0, 1, 2])
    (train_x, train_y), (test_x, test_y), y_sd = tool.standardise(dataset["x"], dataset["y"], *dataset["splits"][0])
    # training x0 = 1, 2, 3: mean 2, sd sqrt(2/3); x1 constant 10: only centred; y = 0, 1, 5: mean 2,
    # sd sqrt(14/3)
    assert y_sd == pytest.approx(math.sqrt(14 / 3), rel=1e-15)
    np.testing.assert_allclose(test_x, [[2 / math.sqrt(2 / 3), 0.0]], rtol=1e-15)
    np.testing.assert_allclose(train_y[:, 0], np.array([-2, -1, 3]) / math.sqrt(14 / 3), rtol=1e-15)
    np.testing.assert_allclose(test_y, [[7 / math.sqrt(14 / 3)]], rtol=1e-15)
    assert train_x.shape == (3, 2)


def test_units_of_the_published_tables(tool):
    # standardised residuals +-1 are residuals +-2 for sd_y 2; a density of y / sd_y is e times
    # the density of y for sd_y e
    rmse, ll = tool.in_target_units(np.array([1.0, -1.0]), np.array([-1.0, -2.0]), 2.0)
    assert rmse == 2.0
    rmse, ll = tool.in_target_units(np.array([0.5, 0.5]), np.array([-1.0, -2.0]), math.e)
    assert (rmse, ll) == (pytest.approx(0.5 * math.e, rel=1e-15), pytest.approx(-2.5, rel=1e-15))


def test_summary_mean_and_standard_error(tool):
    rows = pd.DataFrame({"method": ["baoab"] * 3, "test_rmse": [1.0, 2.0, 3.0], "test_log_likelihood": [0.0, 0.0, 3.0],
                         "test_coverage": [0.9, 0.95, 1.0], "seconds": [1.0, 2.0, 6.0],
                         "flagged": ["", "walker 1 far out", math.nan]})  # NaN: "" read back
    summary = tool.summarise(rows).iloc[0]
    assert (summary.rmse, summary.ll, summary.seconds, summary.splits, summary.flagged) == (2.0, 1.0, 3.0, 3, 1)
    assert summary.rmse_se == pytest.approx(1 / math.sqrt(3), rel=1e-15)
    assert summary.ll_se == pytest.approx(math.sqrt(3) / math.sqrt(3), rel=1e-15)
    assert (summary.coverage, summary.coverage_se) == pytest.approx((95.0, 5.0 / math.sqrt(3)), rel=1e-12)
    table = tool.format_summary(tool.summarise(rows), "yacht")
    assert "| baoab | 2.00 +- 0.58 | 1.00 +- 1.00 | 95 +- 3 | 3.0 | 3 | 1 |" in table
    assert "| published: MC dropout | 0.67 +- 0.05 | -1.25 +- 0.01 | | | 20 | |" in table


def test_a_sampler_run_reports_its_temperature_and_flagged_walkers(tool):
    """A Langevin run's draws: the kinetic temperature 2 beta K / d after burn-in, and what its
    summary flags (the walkers: tati.diagnostics.walker_outliers; a hot reading); HMC's redrawn
    momenta and a fit give NaN
    and nothing. Walker 2's loss 500 above the others' (d = 10, beta = 1) is far out."""
    from types import SimpleNamespace
    from tati.config.options import OPTIONS
    rng = np.random.default_rng(3)
    steps = np.arange(1, 201)
    loss = rng.gamma(5.0, 1.0, (4, 200)) + np.array([[0.0], [0.0], [500.0], [0.0]])
    run_info = pd.DataFrame({"id": np.repeat(np.arange(4), 200), "step": np.tile(steps, 4), "loss": loss.ravel(),
                             "kinetic_energy": np.where(np.tile(steps, 4) > 100, 5.5, 50.0)})
    options = {option.name: option.default for option in OPTIONS}
    options.update(sampler="BAOAB", burn_in_steps=100, inverse_temperature=1.0)
    simulation = SimpleNamespace(options=options, num_parameters=10, num_walkers=4)
    kept = run_info[run_info.step > 100]
    averages = kept.groupby("id").agg(step=("step", "max"), average_kinetic_energy=("kinetic_energy", "mean"))
    result = SimpleNamespace(run_info=run_info, averages=averages.reset_index())
    assert tool.kinetic_temperature(simulation, result) == pytest.approx(1.1)  # burn-in's 10 left out
    # and the kinetic energy, 10% above equipartition every row, hot (as sample()'s RunWarning says)
    assert tool.flagged(simulation, result) == "walker 2 far out; average kinetic energy hot"
    simulation.options["sampler"] = "HMC2"
    assert math.isnan(tool.kinetic_temperature(simulation, result))
    assert math.isnan(tool.kinetic_temperature(simulation, None)) and tool.flagged(simulation, None) == ""


@pytest.mark.parametrize("quick", [False, True])
def test_every_sampler_setting_reaches_the_simulation(tool, quick):
    """A sampling method's settings, but the tool's own, are its run's options (a filter used to drop
    jit_compile and hamiltonian_dynamics_time), and each is one its sampler takes."""
    from tati.config.options import check_sampler_options, resolve
    for name in ("nuts", "hmc2", "baoab", "sghmc", "sgld", "psgld"):
        s = tool.settings(name, quick)
        run = tool.sampler_options(s)
        assert set(run) == set(s) - set(tool.TOOL_KEYS), name
        resolve(run)
        check_sampler_options(run, run["sampler"])
    hmc2 = tool.sampler_options(tool.settings("hmc2", quick))
    assert hmc2["hamiltonian_dynamics_time"] == 0.01


def test_steps_factor_lengthens_the_sampling_methods_only(tool):
    """--steps-factor K: a sampler's burn-in and steps (SWAG's too) times K; a fit and the rest as they were."""
    for name in ("baoab", "nuts", "swag"):
        s, longer = tool.settings(name, False), tool.settings(name, False, 16)
        assert (longer["burn_in"], longer["steps"]) == (16 * s["burn_in"], 16 * s["steps"]), name
        assert {k: v for k, v in longer.items() if k not in ("burn_in", "steps")} == \
            {k: v for k, v in s.items() if k not in ("burn_in", "steps")}
    assert tool.settings("map", False, 16) == tool.settings("map", False)


def test_a_lengthened_method_or_another_likelihood_is_named_so(tool, monkeypatch):
    """--steps-factor 3: the sampling method's rows read "nuts x3", the fit's "map"; --likelihood student_t
    reaches the network and the names: "nuts x3 student_t"."""
    likelihoods = []

    def evaluate(name, options, *args):
        likelihoods.append(options["likelihood"])
        return 1.0, -1.0, 0.95, 10, 1.0, math.nan, ""
    monkeypatch.setattr(tool, "evaluate", evaluate)
    dataset = tool.read_dataset(str(YACHT))
    rows = tool.run_benchmark(dataset, [0], ["map", "nuts"], 1, True, 3)
    assert list(rows.method) == ["map", "nuts x3"]
    rows = tool.run_benchmark(dataset, [0], ["map", "nuts"], 1, True, 3, "student_t")
    assert list(rows.method) == ["map student_t", "nuts x3 student_t"]
    assert likelihoods == ["heteroscedastic_gaussian"] * 2 + ["student_t"] * 2


@pytest.mark.parametrize("case, named", [
    ("no folder", "nowhere"),
    ("no target", "index_target.txt"),
    ("no split", "index_train_0.txt"),
    ("row out of range", "index_test_0.txt"),
    ("split 3", "--splits: no split 3"),
    ("method", "--methods: unknown method mcmc"),
    ("steps factor", "--steps-factor: 0 is not a whole number of at least 1"),
])
def test_bad_input_is_one_line_and_status_2(tool, tmp_path, case, named):
    folder = write_folder(tmp_path / "toy")
    argv = [str(folder)]
    if case == "no folder":
        argv = [str(tmp_path / "nowhere")]
    elif case == "no target":
        (folder / "index_target.txt").unlink()
    elif case == "no split":
        (folder / "index_train_0.txt").unlink()
    elif case == "row out of range":
        (folder / "index_test_0.txt").write_text("4\n")
    elif case == "split 3":
        argv += ["--splits", "3"]
    elif case == "steps factor":
        argv += ["--steps-factor", "0"]
    else:
        argv += ["--methods", "map,mcmc"]
    code, err, out = tool_here(tool.main, argv)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("uci_benchmark.py: error: ")


def test_quick_run_on_yacht(tool, tmp_path, monkeypatch):
    """MAP and a tiny NUTS on split 1: every column, finite numbers, and the MAP's predictive
    mean closer to the test targets than the training mean (on yacht its RMSE is about a tenth)."""
    monkeypatch.setitem(tool.QUICK, "map", {"fit": {**tool.MAP_FIT, "max_steps": 100}})
    # graph mode: XLA's compile would cost more than these few transitions
    monkeypatch.setitem(tool.QUICK, "nuts", {"burn_in": 20, "steps": 30, "max_tree_depth": 4, "jit_compile": False})
    csv, png = tmp_path / "splits.csv", tmp_path / "summary.png"
    code, err, out = tool_here(tool.main, [str(YACHT), "--quick", "--splits", "1", "--methods", "map,nuts",
                                           "--csv", str(csv), "--plot", str(png)])
    assert code == 0, err
    rows = pd.read_csv(csv)
    assert list(rows.columns) == tool.COLUMNS
    assert list(rows.method) == ["map", "nuts"] and set(rows.split) == {1} and set(rows.dataset) == {"yacht"}
    assert np.isfinite(rows[["test_rmse", "test_log_likelihood", "seconds"]].to_numpy()).all()
    # a share of the 31 test targets; both bands hold most of them (29 of 31, measured)
    assert np.allclose(31 * rows.test_coverage, np.round(31 * rows.test_coverage)) and (rows.test_coverage > 0.5).all()
    assert list(rows.draws) == [1, 20]  # MAP's one point; NUTS's 2 walkers x 10 transitions after burn-in
    assert math.isnan(rows.loss_r_hat[0]) and np.isfinite(rows.loss_r_hat[1])
    assert rows.kinetic_temperature.isna().all()  # a fit, and NUTS's redrawn momenta
    data = np.loadtxt(YACHT / "data.txt")
    train, test = (np.loadtxt(YACHT / f"index_{part}_1.txt", dtype=int) for part in ("train", "test"))
    mean_rmse = math.sqrt(np.mean((data[test, 6] - data[train, 6].mean()) ** 2))
    assert rows.test_rmse[0] < 0.5 * mean_rmse
    assert "split 1 (1/1) nuts: test RMSE" in out and "loss R-hat" in out and "| published: PBP | 1.02 +- 0.05" in out
    assert png.stat().st_size > 0


def test_loss_r_hat_across_walkers(tool):
    """Walkers whose losses are draws of one distribution read about 1, walkers 10 sd apart far
    above; a fit (its walkers are separate optimisations) and too few rows read NaN. The
    draws are seeded; for 2 x 100 independent draws R-hat - 1 is of order 1 / 100, so 1.1 is
    many of its sd away. Placed after the quick run, whose R-hat pays TFP's first call (seconds)."""
    losses = np.random.default_rng(5).normal(size=(2, 100))
    rows = lambda offset, n=100: pd.DataFrame({"id": np.repeat([0, 1], n), "step": np.tile(np.arange(1, n + 1), 2),
                                               "loss": (losses[:, :n] + [[0.0], [offset]]).ravel()})
    assert tool.loss_r_hat("hmc2", rows(0.0)) < 1.1
    assert tool.loss_r_hat("hmc2", rows(10.0)) > 3
    assert math.isnan(tool.loss_r_hat("ensemble", rows(0.0)))
    assert math.isnan(tool.loss_r_hat("hmc2", rows(0.0, n=3)))


def test_swag_s_measured_learning_rate_keeps_sgd_stable(tool):
    """SWAG's SGD starts at the MAP, where yacht's fitted noise variance collapses and U's largest
    batch curvature lambda reaches about 2e9: the fixed learning rate 1e-7 it had diverged at the
    first step (SGD loss 2.9e6 from -1300, test RMSE 13,675). The measured rate 1 / lambda sits at
    half the stability bound 2 / lambda: SGD's loss stays within the typical set's reach of where it
    started (measured: +98 against a reach of 920, 10 hidden units); at 10 / lambda, five times the
    bound, it blows up (+36,652; the negative control)."""
    import tati
    from tati.errors import SamplingError
    dataset = tool.read_dataset(str(YACHT))
    train, _, _ = tool.standardise(dataset["x"], dataset["y"], *dataset["splits"][0])
    options = tool.model_options(train, 10, 1)
    fitted = tati.Simulation(**options, **{**tool.MAP_FIT, "max_steps": 300})
    fitted.fit()
    start, start_loss = fitted.parameters, fitted.loss()
    rate = tool.swag_learning_rate(options, 32, start, 1)
    assert 0 < rate < 1e-5, rate  # a curvature above 1e5 at the MAP: the fixed guess was 100 times too large

    def final_loss(learning_rate):
        sgd = tati.Simulation(**options, optimizer="GradientDescent", learning_rate=learning_rate, batch_size=32,
                              max_steps=300, every_nth=10, initial_parameters=start)
        try:
            return float(sgd.fit().run_info.loss.max())
        except SamplingError:  # a non-finite loss: diverged
            return math.inf

    reach = 10 * len(start)  # far beyond the typical set's d/2 + 4 sqrt(d/2) above the MAP
    assert final_loss(rate) < start_loss + reach
    assert final_loss(10 * rate) > start_loss + reach
