"""Result.to_inference_data (tati/export/arviz.py): ArviZ's own diagnostics on the exported
draws agree with tati's convergence figures, the draws and sample stats are the tables' rows,
divergences become ArviZ's `diverging`, a run read back exports alike, the pointwise
log-likelihood gives a conjugate regression's exact leave-one-out density through az.loo, the
posterior predictive replicates the data per draw for az.plot_ppc, and without arviz the call says
which extra to install.

ArviZ and tati compute their statistics from the same numbers, so most checks are exact
(equal up to rounding, or equal through a stated identity); the one estimator that the two
libraries implement differently, the ESS, gets a stated tolerance.
"""

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from stats import seed
from tati.bayes import predictive
from tati.errors import InputError
from tati.export import MissingExtra
from tati.export.arviz import _diverging

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its coming refactor
    az = pytest.importorskip("arviz")

WALKERS, STEPS, BURN_IN = 4, 2000, 200  # 1800 draws per walker: even, so both libraries split alike


def gaussian(x):
    """U = x0^2 / 2 + 4 x1^2 / 2: standard deviations 1 and 1/2 at beta = 1."""
    return 0.5 * tf.reduce_sum(x * x * tf.constant([1.0, 4.0], x.dtype))


@pytest.fixture(scope="module")
def baoab():
    start = np.random.default_rng(seed(3)).normal(scale=2.0, size=(WALKERS, 2))
    sim = tati.Simulation(potential=gaussian, initial_parameters=start, number_walkers=WALKERS,
                          sampler="BAOAB", step_width=0.3, max_steps=STEPS, seed=seed(31))
    return sim.sample()


def test_walkers_become_chains_and_rows_draws(baoab):
    idata = baoab.to_inference_data(burn_in=BURN_IN, inverse_temperature=2.0)
    assert list(idata.posterior.data_vars) == ["param0", "param1"]
    assert list(idata.posterior.chain.values) == list(range(WALKERS))
    assert idata.posterior.sizes["draw"] == STEPS - BURN_IN
    stats = idata.sample_stats
    for walker in range(WALKERS):
        rows = baoab.trajectory[(baoab.trajectory.id == walker) & (baoab.trajectory.step > BURN_IN)]
        run_info = baoab.run_info[(baoab.run_info.id == walker) & (baoab.run_info.step > BURN_IN)]
        np.testing.assert_array_equal(idata.posterior["param1"].sel(chain=walker), rows["param1"])
        np.testing.assert_array_equal(stats["step"].sel(chain=walker), rows["step"])
        np.testing.assert_array_equal(stats["kinetic_energy"].sel(chain=walker), run_info["kinetic_energy"])
        np.testing.assert_array_equal(stats["lp"].sel(chain=walker), -2.0 * rows["loss"])
    # BAOAB has no divergences, step sizes per draw or trees: nothing is renamed or made up
    assert not {"diverging", "step_size", "n_steps", "tree_depth", "energy", "id"} & set(stats.data_vars)
    assert idata.posterior.attrs["inference_library"] == "tati"


def test_arviz_diagnostics_agree_with_tati_convergence(baoab):
    """tati: R-hat is the root of tfp's split potential scale reduction, ESS tfp's across walkers
    (tati/diagnostics/convergence.py). Against ArviZ on the same draws:

    * mean and sd: the same numbers (az.summary, unrounded);
    * R-hat: tfp uses Brooks and Gelman's corrected ratio, (M + 1) / M * sigma_+^2 / W
      - (N - 1) / (M N) over M split chains of N draws, ArviZ's method="split" its uncorrected
      sigma_+^2 / W; so R_tati^2 = (M + 1) / M R_arviz^2 - (N - 1) / (M N) exactly;
    * ESS: both are Geyer's initial-positive-sequence estimate of the unsplit chains combined
      as Stan does (ArviZ's method="identity"); they differ only in the tail of the
      autocorrelation sum (tfp weights lag k by (n - k) / n, ArviZ makes the sequence monotone
      and keeps the last positive lag), terms of relative size about tau / n = 0.3% here
      (tau <= 5 draws, n = 1800): within 2%;
    * ArviZ's defaults (rank-normalized split R-hat and bulk ESS): for a Gaussian target the
      ranks' normal scores are almost an affine map of the draws, so the same verdict
      (R-hat < 1.01 and within 0.005 of tati's) and bulk ESS within 5%."""
    idata = baoab.to_inference_data(burn_in=BURN_IN)
    tati_table = baoab.convergence(burn_in=BURN_IN)
    summary = az.summary(idata, round_to="none")
    np.testing.assert_allclose(summary["mean"], tati_table["mean"], rtol=1e-12)
    np.testing.assert_allclose(summary["sd"], tati_table["sd"], rtol=1e-12)

    split = az.rhat(idata, method="split").to_array().values
    m, n = 2 * WALKERS, (STEPS - BURN_IN) // 2
    np.testing.assert_allclose(tati_table["r_hat"] ** 2, (m + 1) / m * split ** 2 - (n - 1) / (m * n), rtol=1e-10)

    identity = az.ess(idata, method="identity").to_array().values
    np.testing.assert_allclose(tati_table["ess"], identity, rtol=0.02)

    assert (summary["r_hat"] < 1.01).all() and (tati_table["r_hat"] < 1.01).all()
    np.testing.assert_allclose(summary["r_hat"], tati_table["r_hat"], atol=0.005)
    np.testing.assert_allclose(summary["ess_bulk"], tati_table["ess"], rtol=0.05)


def test_nuts_sample_stats_get_arviz_names():
    sim = tati.Simulation(potential=gaussian, initial_parameters=[[1.0, 1.0], [-1.0, 0.5]], number_walkers=2,
                          sampler="NUTS", max_steps=120, burn_in_steps=60, seed=seed(32))
    result = sim.sample()
    idata = result.to_inference_data(burn_in=60, inverse_temperature=1.0)
    stats = idata.sample_stats
    run_info = result.run_info[result.run_info.step > 60].sort_values(["id", "step"])
    pairs = {"step_size": "step_width", "n_steps": "leapfrog_steps", "tree_depth": "tree_depth",
             "divergences": "divergences", "energy": "total_energy"}
    for arviz_name, column in pairs.items():
        np.testing.assert_array_equal(stats[arviz_name].values.ravel(), run_info[column])
    assert stats["n_steps"].dtype == np.int64 and stats["diverging"].dtype == bool
    assert "leapfrog_steps" not in stats and "step_width" not in stats
    assert az.bfmi(idata).shape == (2,)  # ArviZ finds the energy it needs


def test_divergences_become_diverging_per_draw():
    """Hand-made counts: a draw diverged when the walker's count rose since its previous row.
    HMC counts over the whole run; NUTS starts again at 0 after burn-in, at the walker's first
    trajectory row (step 4 here), so its 2 -> 1 there is one divergence, and 1 -> 1 none."""
    steps = [1, 2, 3, 4, 5, 6]
    hmc = pd.DataFrame({"id": 0, "step": steps, "divergences": [0, 1, 1, 2, 2, 3]})
    trajectory = pd.DataFrame({"id": 0, "step": steps[3:]})
    assert list(_diverging(hmc, trajectory)) == [False, True, False, True, False, True]
    nuts = hmc.assign(divergences=[1, 1, 2, 1, 1, 2], tree_depth=1)
    assert list(_diverging(nuts, trajectory)) == [True, False, True, True, False, True]
    both = pd.concat([hmc, hmc.assign(id=1, divergences=[1, 1, 1, 1, 1, 1])])  # each walker its own
    assert list(_diverging(both, trajectory)) == [False, True, False, True, False, True] + [True] + [False] * 5


def test_hmc_divergences_are_flagged():
    """A leapfrog step beyond the stability limit (h omega = 3 > 2) diverges often: every
    divergence counted in the run is one flagged draw (every_nth = 1, the whole run)."""
    sim = tati.Simulation(potential=lambda x: 4.5 * tf.reduce_sum(x * x), initial_parameters=[[1.0], [0.5]],
                          number_walkers=2, sampler="HMC2", step_width=1.0, hamiltonian_dynamics_time=3.0,
                          max_steps=120, seed=seed(33), burn_in_steps=0)  # the divergences of the fixed width
    result = sim.sample()
    idata = result.to_inference_data()
    last = result.run_info.sort_values("step").groupby("id")["divergences"].last()
    flagged = idata.sample_stats["diverging"].sum("draw").values
    assert (last > 0).all()
    np.testing.assert_array_equal(flagged, last.to_numpy())


def test_a_run_read_back_exports_alike(tmp_path, baoab):
    paths = {name: str(tmp_path / f"{name}.csv") for name in ("run_file", "trajectory_file", "averages_file")}
    start = np.random.default_rng(seed(3)).normal(scale=2.0, size=(WALKERS, 2))
    written = tati.Simulation(potential=gaussian, initial_parameters=start, number_walkers=WALKERS, sampler="BAOAB",
                              step_width=0.3, max_steps=150, seed=seed(31), **paths).sample()
    loaded = tati.load_run(**paths).to_inference_data(burn_in=50, inverse_temperature=1.0)
    expected = written.to_inference_data(burn_in=50)  # the run's inverse_temperature 1: lp
    for group in ("posterior", "sample_stats"):
        a, b = getattr(loaded, group), getattr(expected, group)
        assert list(a.data_vars) == list(b.data_vars)
        for name in a.data_vars:
            np.testing.assert_array_equal(a[name].values, b[name].values)


def test_by_default_a_sample_calls_export_leaves_out_its_burn_in(tmp_path):
    """A sample() result knows its run's burn_in_steps and inverse_temperature: az.summary of
    result.to_inference_data() leaves the burn-in out (it took every row, warm-up included) and
    has lp; so do convergence() and momentum_test(). A run read back knows neither: every row, no lp."""
    path = str(tmp_path / "trajectory.csv")
    start = np.random.default_rng(seed(4)).normal(scale=2.0, size=(WALKERS, 2))
    result = tati.Simulation(potential=gaussian, initial_parameters=start, number_walkers=WALKERS, step_width=0.3,
                             burn_in_steps=60, max_steps=150, inverse_temperature=2.0, seed=seed(41),
                             trajectory_file=path).sample()
    idata = result.to_inference_data()
    explicit = result.to_inference_data(burn_in=60, inverse_temperature=2.0)
    assert idata.sample_stats["step"].values.min() == 61 and "lp" in idata.sample_stats
    for group in ("posterior", "sample_stats"):
        for name in getattr(idata, group).data_vars:
            np.testing.assert_array_equal(getattr(idata, group)[name].values, getattr(explicit, group)[name].values)
    pd.testing.assert_frame_equal(result.convergence(), result.convergence(burn_in=60))
    assert result.momentum_test() == result.momentum_test(2.0, 60)
    loaded = tati.load_run(trajectory_file=path).to_inference_data()
    assert loaded.sample_stats["step"].values.min() == 1 and "lp" not in loaded.sample_stats


POINTS, PRIOR_SD = 40, 1.0  # Bayesian linear regression y = x . w + b + N(0, 1), prior N(0, 1) on w and b


def regression(inverse_temperature=1.0):
    """(Simulation, its NUTS Result, design [POINTS, 3] with the bias column, y): 4 walkers, 1000 draws each."""
    rng = np.random.default_rng(seed(7))
    x = rng.normal(size=(POINTS, 2))
    y = 1.0 + x @ [2.0, -1.0] + rng.normal(size=POINTS)
    sim = tati.Simulation(dataset=(x, y[:, None]), hidden_dimension=[], output_activation="linear",
                          likelihood="gaussian", prior_standard_deviation=PRIOR_SD, dtype="float64",
                          sampler="nuts", number_walkers=WALKERS, burn_in_steps=300, max_steps=1300,
                          inverse_temperature=inverse_temperature, seed=seed(8))
    return sim, sim.sample(), np.hstack([x, np.ones((POINTS, 1))]), y


def exact_posterior(design, y):
    """The conjugate posterior's mean and covariance (noise sd 1)."""
    covariance = np.linalg.inv(design.T @ design + np.eye(design.shape[1]) / PRIOR_SD ** 2)
    return covariance @ design.T @ y, covariance


def exact_loo(design, y):
    """sum_i log p(y_i | y_-i): the posterior without point i, predictive N(x_i m_-i, 1 + x_i S_-i x_i)."""
    total = 0.0
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        mean, covariance = exact_posterior(design[keep], y[keep])
        variance = 1.0 + design[i] @ covariance @ design[i]
        total += -0.5 * np.log(2.0 * np.pi * variance) - 0.5 * (y[i] - design[i] @ mean) ** 2 / variance
    return total


def loo_errors(idata, design, y):
    """(az.loo's elpd - the exact, its tolerance; the draws' mean log-likelihood of the data - the exact
    expectation, its tolerance). Tolerances: 4 Monte Carlo standard errors each (two checks, false
    failure about 1.3e-4): of the data's log-likelihood per draw, sd / sqrt(ESS); of elpd_loo, the
    per-point delta-method error of -log mean(1 / p) over the draws, summed linearly (a bound
    whatever the points' errors' correlation)."""
    values = idata.log_likelihood["y"].values  # [chain, draw, point]
    mean, covariance = exact_posterior(design, y)
    expected = np.sum(-0.5 * np.log(2.0 * np.pi) - 0.5 * ((y - design @ mean) ** 2
                                                          + np.einsum("ij,jk,ik->i", design, covariance, design)))
    total = values.sum(axis=-1)
    total_error = 4.0 * total.std() / np.sqrt(float(az.ess(total)))
    inverse = np.exp(-values.reshape(-1, len(y)))
    point_errors = [inverse[:, i].std() / inverse[:, i].mean() / np.sqrt(float(az.ess(values[..., i])))
                    for i in range(len(y))]
    loo = az.loo(idata)
    return (loo.elpd_loo - exact_loo(design, y), 4.0 * float(np.sum(point_errors)),
            total.mean() - expected, total_error)


@pytest.fixture(scope="module")
def posterior():
    return regression()


def test_the_log_likelihood_is_each_draws_log_density_of_each_point(posterior, monkeypatch):
    sim, result, design, y = posterior
    idata = result.to_inference_data(log_likelihood=sim)
    values = idata.log_likelihood["y"]
    assert values.dims == ("chain", "draw", "point") and values.shape == (WALKERS, 1000, POINTS)
    assert idata.log_likelihood.attrs["inference_library"] == "tati"
    np.testing.assert_array_equal(idata.observed_data["y"].values, y)
    assert idata.observed_data["y"].dims == ("point",)
    for walker in (0, WALKERS - 1):
        rows = result.trajectory[(result.trajectory.id == walker) & (result.trajectory.step > 300)]
        theta = rows[["weight0", "weight1", "bias0"]].to_numpy()
        expected = -0.5 * np.log(2.0 * np.pi) - 0.5 * (y[None] - theta @ design.T) ** 2
        np.testing.assert_allclose(values.sel(chain=walker).values, expected, rtol=1e-12, atol=1e-12)
    # the draws go through the network in blocks: blocks of 3 draws give the same numbers
    monkeypatch.setattr(predictive, "BLOCK_VALUES", 3 * POINTS)
    np.testing.assert_array_equal(result.to_inference_data(log_likelihood=sim).log_likelihood["y"], values)


@pytest.mark.statistical
def test_loo_of_a_conjugate_regression_is_the_exact_leave_one_out(posterior):
    sim, result, design, y = posterior
    loo_error, loo_tolerance, mean_error, mean_tolerance = loo_errors(
        result.to_inference_data(log_likelihood=sim), design, y)
    assert abs(loo_error) < loo_tolerance and abs(mean_error) < mean_tolerance
    # negative control: the posterior cooled to beta 4 (a quarter of its variance) fits the data closer
    sim, result, design, y = regression(inverse_temperature=4.0)
    loo_error, loo_tolerance, mean_error, mean_tolerance = loo_errors(
        result.to_inference_data(log_likelihood=sim), design, y)
    assert loo_error > loo_tolerance and mean_error > mean_tolerance


def test_the_posterior_predictive_replicates_the_data_per_draw(posterior, tmp_path):
    sim, result, design, y = posterior
    idata = result.to_inference_data(posterior_predictive=sim)
    values = idata.posterior_predictive["y"]
    assert values.dims == ("chain", "draw", "point") and values.shape == (WALKERS, 1000, POINTS)
    assert "log_likelihood" not in idata.groups() and idata.posterior_predictive.attrs["inference_library"] == "tati"
    np.testing.assert_array_equal(idata.observed_data["y"].values, y)
    # the draws' replicates in the draws' order, by the simulation's seed (tests/bayes/test_predictive.py
    # checks their distribution)
    draws = result.trajectory[result.trajectory.step > 300].sort_values(["id", "step"], kind="stable")
    expected = predictive.posterior_predictive_draws(sim, draws, sim.options["seed"])[..., 0]
    np.testing.assert_array_equal(values.values.reshape(-1, POINTS), expected)
    both = result.to_inference_data(log_likelihood=sim, posterior_predictive=sim)
    assert {"log_likelihood", "posterior_predictive", "observed_data"} <= set(both.groups())
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    az.plot_ppc(idata, num_pp_samples=20).figure.savefig(tmp_path / "ppc.png")


def test_predictions_replicate_new_points_per_draw(posterior):
    """predictions: a replicate per draw at each new point, by the draws' outputs there (their
    distribution: tests/bayes/test_predictive.py), from a generator apart from posterior_predictive's
    (at the run's own points the two groups' replicates differ, in distribution alike: the
    standardised residuals' KS distance between them under the DKWM bound of two samples at
    alpha 1e-6); the features in predictions_constant_data. Without posterior_predictive: one line."""
    from scipy import stats as scipy_stats
    from stats import dkwm_bound
    sim, result, design, y = posterior
    new = np.array([[0.0, 0.0], [1.0, -1.0], [-2.0, 0.5]])
    idata = result.to_inference_data(posterior_predictive=sim, predictions=new)
    values = idata.predictions["y"]
    assert values.dims == ("chain", "draw", "point") and values.shape == (WALKERS, 1000, 3)
    np.testing.assert_array_equal(idata.predictions_constant_data["x"].values, new)
    assert idata.predictions_constant_data["x"].dims[0] == "point"
    draws = result.trajectory[result.trajectory.step > 300].sort_values(["id", "step"], kind="stable")
    expected = predictive.posterior_predictive_draws(sim, draws, (sim.options["seed"], 1), features=new)[..., 0]
    np.testing.assert_array_equal(values.values.reshape(-1, 3), expected)
    theta = draws[["weight0", "weight1", "bias0"]].to_numpy()
    at_run = result.to_inference_data(posterior_predictive=sim, predictions=design[:, :2])
    mean = theta @ design.T
    residuals = [(at_run[group]["y"].values.reshape(-1, POINTS) - mean).ravel()
                 for group in ("posterior_predictive", "predictions")]
    assert not np.array_equal(*residuals)
    assert scipy_stats.ks_2samp(*residuals).statistic < 2.0 * dkwm_bound(len(residuals[0]))
    with pytest.raises(InputError, match="predictions are drawn with posterior_predictive's Simulation"):
        result.to_inference_data(log_likelihood=sim, predictions=new)


def test_the_log_likelihood_takes_a_simulation_with_data_and_a_likelihood(baoab):
    with pytest.raises(InputError, match="log_likelihood takes the Simulation that ran .*not DataFrame"):
        baoab.to_inference_data(log_likelihood=baoab.trajectory)
    with pytest.raises(InputError, match="posterior_predictive takes the Simulation that ran .*not Result"):
        baoab.to_inference_data(posterior_predictive=baoab)
    potential = tati.Simulation(potential=gaussian, initial_parameters=[0.0, 0.0])
    with pytest.raises(InputError, match="log_likelihood needs a network; this simulation samples a potential"):
        baoab.to_inference_data(log_likelihood=potential)
    network = tati.Simulation(hidden_dimension=[], max_steps=20, step_width=0.01)
    result = network.sample()
    with pytest.raises(InputError, match=r"log_likelihood needs a likelihood \(option likelihood\)"):
        result.to_inference_data(log_likelihood=network)


def test_bad_input_is_one_line(baoab):
    with pytest.raises(InputError, match="no trajectory rows with step > burn_in 5000"):
        baoab.to_inference_data(burn_in=5000)
    without = tati.Result(run_info=baoab.run_info, trajectory=pd.DataFrame(), averages=pd.DataFrame())
    with pytest.raises(InputError, match="needs the trajectory table"):
        without.to_inference_data()
    for beta in (0, "1"):
        with pytest.raises(InputError, match="inverse_temperature must be a positive number"):
            baoab.to_inference_data(inverse_temperature=beta)


def test_without_arviz_the_extra_is_named(baoab, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "arviz" else find_spec(name, *args))
    with pytest.raises(MissingExtra) as error:
        baoab.to_inference_data()
    assert str(error.value) == "to_inference_data needs arviz: pip install tati[arviz]"
    assert isinstance(error.value, ImportError) and isinstance(error.value, InputError)
