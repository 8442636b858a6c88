"""SWAG (tati/bayes/swag.py): its moments are the running moments of fit()'s iterates, and its draws
have the SWAG covariance.

False-failure budget of the statistical test: 1e-3, split (Bonferroni) over its assertions."""

import math

import numpy as np
import pandas as pd
import pytest

import tati
from stats import seed, z_critical
from tati.bayes.swag import swag

U = 2.0 ** -53  # unit roundoff of float64


@pytest.fixture(scope="module")
def fitted():
    """Two walkers of SGD at a constant learning rate on a small regression network, a row
    every 4 steps."""
    rng = np.random.default_rng(seed(5100))
    x = rng.uniform(-2, 2, size=(64, 1))
    y = np.sin(x) + 0.1 * rng.normal(size=x.shape)
    sim = tati.Simulation(dataset=(x, y), hidden_dimension=[6], hidden_activation="tanh",
                          output_activation="linear", likelihood="gaussian", noise_standard_deviation=0.1,
                          prior_standard_deviation=1.0, optimizer="GradientDescent", learning_rate=1e-4,
                          number_walkers=2, max_steps=600, every_nth=4, dtype="float64", seed=seed(51))
    return sim, x, y, sim.fit().trajectory


def test_mean_and_variance_are_the_running_moments_of_the_iterates(fitted):
    """Per walker, SWAG's mean, diagonal variance and deviation columns equal numpy's mean,
    variance (ddof 0) and theta_i - mean of the first i snapshots of the same rows, to within
    float64 rounding. The bound: the running mean commits 3 roundings per update, each of at
    most u M (u = 2^-53, M = the largest |theta|), the error of earlier updates shrinking by
    n / (n + 1), so it is within 3 n u M after n snapshots; numpy's pairwise mean within
    (log2 n + 1) u M; together 4 n u M. The second moment alike with M^2, and the variance
    second - mean^2 adds 2 M x 4 n u M and a rounding: within 16 n u M^2 with numpy's variance's
    own error. A ddof-1 variance or a snapshot too many or too few would be off by ~1/n, far
    beyond these bounds."""
    _, _, _, trajectory = fitted
    burn_in, rank = 200, 5
    posterior = swag(trajectory, rank=rank, burn_in=burn_in)
    names = posterior.parameter_names
    assert names == [c for c in trajectory.columns if c.startswith(("weight", "bias"))]
    assert posterior.walkers == [0, 1] and posterior.rank == rank
    for w in (0, 1):
        rows = trajectory[(trajectory.id == w) & (trajectory.step > burn_in)].sort_values("step")[names].to_numpy()
        n, big = len(rows), np.abs(rows).max()
        assert n == posterior.snapshots[w] == 100
        assert np.all(np.abs(posterior.mean[w] - rows.mean(axis=0)) <= 4 * n * U * big)
        assert np.all(np.abs(posterior.variance[w] - rows.var(axis=0)) <= 16 * n * U * big ** 2)
        assert rows.var(axis=0).min() > 1e3 * 16 * n * U * big ** 2  # the iterates do move
        for column, i in enumerate(range(n - rank, n)):
            expected = rows[i] - rows[:i + 1].mean(axis=0)
            assert np.all(np.abs(posterior.deviations[w][:, column] - expected) <= 5 * n * U * big)


def synthetic_swag(walkers, d=4, n=30, rank=5):
    rng = np.random.default_rng(seed(5200))
    rows = []
    for w in range(walkers):
        path = np.cumsum(rng.normal(scale=0.3, size=(n, d)), axis=0) + rng.normal(size=d) * 3
        rows.append(pd.DataFrame({"id": w, "step": np.arange(1, n + 1) * 10, "loss": 0.0,
                                  **{f"weight{i}": path[:, i] for i in range(d)}}))
    trajectory = pd.concat(rows).sort_values(["step", "id"]).reset_index(drop=True)
    return swag(trajectory, rank=rank)


@pytest.mark.statistical
def test_draws_have_the_swag_mean_and_covariance():
    """20000 draws per walker, two walkers: each walker's sample mean and every entry of its
    sample covariance (about the exact mean) within z standard errors of SWAG's mean and
    covariance (diag(var) + D D^T / (K - 1)) / 2, z from the budget over 2 x (4 + 10)
    assertions; the error of a covariance entry of a Gaussian is sqrt((S_ii S_jj + S_ij^2) / N)."""
    posterior = synthetic_swag(walkers=2)
    n = 20000
    draws = posterior.sample(n, seed=seed(53))
    assert list(draws.columns) == ["id", "step"] + posterior.parameter_names
    assert len(draws) == 2 * n and draws["step"].min() == 301 and draws["step"].is_monotonic_increasing
    d = len(posterior.parameter_names)
    i, j = np.triu_indices(d)
    z = z_critical(1e-3, tests=2 * (d + len(i)))
    for w in (0, 1):
        x = draws[draws.id == w][posterior.parameter_names].to_numpy()
        mean, covariance = posterior.mean[w], posterior.covariance()[w]
        assert np.all(np.abs(x.mean(axis=0) - mean) <= z * np.sqrt(np.diag(covariance) / n))
        products = ((x - mean)[:, i] * (x - mean)[:, j]).mean(axis=0)
        error = np.sqrt((covariance[i, i] * covariance[j, j] + covariance[i, j] ** 2) / n)
        assert np.all(np.abs(products - covariance[i, j]) <= z * error), (products, covariance[i, j])
    # the covariance is the formula's: half the diagonal plus half the low-rank part
    D = posterior.deviations[0]
    np.testing.assert_allclose(posterior.covariance()[0],
                               0.5 * (np.diag(posterior.variance[0]) + D @ D.T / (posterior.rank - 1)), rtol=1e-14)


def test_draws_go_through_the_predictive(fitted):
    sim, x, y, trajectory = fitted
    posterior = swag(trajectory, rank=5, burn_in=200)
    table, lpd = sim.predictive(x, y, trajectory=posterior.sample(100, seed=1))
    assert len(table) == len(x) and math.isfinite(lpd)
    assert np.all(table["lower_0"] < table["mean_0"]) and np.all(table["mean_0"] < table["upper_0"])


def test_one_walker_and_bad_input():
    posterior = synthetic_swag(walkers=1, rank=0)
    assert posterior.mean.shape == (4,) and posterior.deviations.shape == (4, 0)
    np.testing.assert_array_equal(posterior.covariance(), 0.5 * np.diag(posterior.variance))
    with pytest.raises(tati.InputError, match="rank must be 0"):
        synthetic_swag(walkers=1, rank=1)
    with pytest.raises(tati.InputError, match="walker 0 has 30 snapshot"):
        synthetic_swag(walkers=1, rank=40)
    with pytest.raises(tati.InputError, match="no row after burn_in 500"):
        swag(pd.DataFrame({"id": [0], "step": [1], "weight0": [0.0]}), burn_in=500)
