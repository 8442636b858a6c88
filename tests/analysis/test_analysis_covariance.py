"""Covariance, eigenvalues and eigenvectors (tati/analysis/covariance.py) and the plain and
Boltzmann-weighted moments (tati/analysis/moments.py) on draws with known answers."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from stats import seed, z_critical
from tati.analysis.covariance import covariance
from tati.analysis.moments import moments
from tati.analysis.runs import RunTables
from tati.diagnostics.equipartition import batch_means

EIGENVALUES = np.array([4.0, 1.0, 0.25])


def trajectory(chains, loss=None):
    rows, walkers, parameters = chains.shape
    table = pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                          "step": np.repeat(np.arange(1, rows + 1), walkers),
                          "loss": 0.0 if loss is None else loss.ravel()})
    for i in range(parameters):
        table[f"param{i}"] = chains[:, :, i].ravel()
    return RunTables(trajectory=table)


def rotation():
    """A fixed orthogonal matrix: its columns are the exact eigenvectors."""
    q, r = np.linalg.qr(np.random.default_rng(7).standard_normal((3, 3)))
    return q * np.sign(np.diag(r))


def gaussian_draws(rng, rows, walkers):
    vectors = rotation()
    return (rng.standard_normal((rows, walkers, 3)) * np.sqrt(EIGENVALUES)) @ vectors.T, vectors


@pytest.mark.statistical
def test_eigenvalues_and_eigenvectors_of_a_known_gaussian():
    """20000 independent draws (4 walkers x 5000) of N(0, V diag(4, 1, 0.25) V^T).

    Eigenvalues: each estimate is within z standard errors of the exact value, z for a
    false-failure budget of 1e-3 over the 3 eigenvalues (Bonferroni; the errors come from 280
    batches, so normal quantiles are close enough). The estimator's bias, relative
    sum_j lambda_j / (n (lambda_i - lambda_j)), is below 1e-4 here, 1% of a standard error.

    Eigenvectors, up to sign: to first order sin^2 of the angle between estimated and exact i-th
    eigenvector is sum_{j != i} g_j Z_j^2 with g_j = lambda_i lambda_j / (n (lambda_i - lambda_j)^2)
    and Z_j independent standard normals, which is at most max(g) chi^2(2); so 1 - |cos| < max(g)
    chi^2_2(1 - 1e-3/3) / 2 fails with probability below 1e-3/3 per eigenvector."""
    rows, walkers = 5000, 4
    n = rows * walkers
    draws, vectors = gaussian_draws(np.random.default_rng(seed(2000)), rows, walkers)
    found = covariance(trajectory(draws))
    eigen = found.eigen
    assert list(eigen.columns) == ["rank", "eigenvalue", "eigenvalue_error", "fraction", "walkers_r_hat", "param0",
                                   "param1", "param2"]
    z = z_critical(1e-3, tests=3)
    for i, exact in enumerate(EIGENVALUES):
        row = eigen.iloc[i]
        assert abs(row.eigenvalue - exact) < z * row.eigenvalue_error, (i, row.eigenvalue, row.eigenvalue_error)
        # the error is the right size: sqrt(2 / n) lambda for Gaussian draws, within 20%
        assert row.eigenvalue_error == pytest.approx(np.sqrt(2.0 / n) * exact, rel=0.2)
        estimate = row[["param0", "param1", "param2"]].to_numpy(dtype=float)
        assert np.linalg.norm(estimate) == pytest.approx(1.0)
        assert estimate[np.argmax(np.abs(estimate))] > 0  # sign convention
        g = [exact * other / (n * (exact - other) ** 2) for j, other in enumerate(EIGENVALUES) if j != i]
        tolerance = max(g) * stats.chi2.ppf(1 - 1e-3 / 3, 2) / 2
        assert 1 - abs(estimate @ vectors[:, i]) < tolerance, (i, 1 - abs(estimate @ vectors[:, i]), tolerance)
    assert eigen.fraction.sum() == pytest.approx(1.0)


def test_matrix_is_the_sample_covariance_pooled_or_per_walker():
    """Pooled: all rows about their common mean (np.cov of the stacked rows), so walkers apart
    add their spread; per walker: each walker's own np.cov."""
    rng = np.random.default_rng(seed(2010))
    draws = rng.standard_normal((500, 3, 2))
    draws[:, 2] += 5.0  # walker 2 sits elsewhere
    tables = trajectory(draws)
    pooled = covariance(tables)
    stacked = draws.transpose(1, 0, 2).reshape(-1, 2)
    np.testing.assert_allclose(pooled.matrix[["param0", "param1"]].to_numpy(), np.cov(stacked.T), rtol=1e-12)
    assert list(pooled.matrix.parameter) == ["param0", "param1"]
    assert pooled.eigen.eigenvalue.iloc[0] > 5  # the line between the basins
    each = covariance(tables, per_walker=True, components=1)
    assert list(each.matrix.columns) == ["id", "parameter", "param0", "param1"]
    assert list(each.eigen.id) == [0, 1, 2]
    for walker in range(3):
        block = each.matrix[each.matrix.id == walker][["param0", "param1"]].to_numpy()
        np.testing.assert_allclose(block, np.cov(draws[:, walker].T), rtol=1e-12)
        assert each.eigen.eigenvalue[walker] < 1.5
    narrow = covariance(tables, parameters="param1", burn_in=100)
    assert list(narrow.matrix.columns) == ["parameter", "param1"]


@pytest.mark.statistical
def test_plain_and_reweighted_moments():
    """x ~ N(0, 1) with loss U = x^2 / 2, rows of a run at beta_s = 1 reweighted to beta = 2 by
    exp(-(beta - beta_s) U) = exp(-U): the reweighted density is N(0, 1/2). The plain mean and variance are numpy's; the weighted ones are within
    z standard errors of 0 and 1/2, the self-normalised importance sampling error
    sqrt(sum w^2 (f - f_w)^2) / sum w, z for 1e-3 over the 2 comparisons. Kish's effective
    rows: n (E w)^2 / E w^2 = n sqrt(3) / 2 for these weights, within 3%."""
    rng = np.random.default_rng(seed(2020))
    x = rng.standard_normal((5000, 4, 1))
    tables = trajectory(x, loss=0.5 * x[:, :, 0] ** 2)
    table = moments(tables, inverse_temperature=2.0, run_inverse_temperature=1.0).set_index("parameter")
    assert list(table.index) == ["loss", "param0"]
    values = x.transpose(1, 0, 2).ravel()
    row = table.loc["param0"]
    assert row["mean"] == pytest.approx(values.mean(), rel=1e-12)
    assert row.variance == pytest.approx(values.var(ddof=1), rel=1e-12)
    assert row.mean_error == pytest.approx(batch_means(list(x[:, :, 0].T))[1], rel=1e-12)
    w = np.exp(-0.5 * values ** 2)
    z = z_critical(1e-3, tests=2)
    mean_error = np.sqrt(np.sum(w ** 2 * (values - row.weighted_mean) ** 2)) / w.sum()
    assert abs(row.weighted_mean) < z * mean_error
    centred = (values - row.weighted_mean) ** 2
    variance_error = np.sqrt(np.sum(w ** 2 * (centred - row.weighted_variance) ** 2)) / w.sum()
    assert abs(row.weighted_variance - 0.5) < z * variance_error, (row.weighted_variance, variance_error)
    assert row.weighted_rows == pytest.approx(20000 * np.sqrt(3) / 2, rel=0.03)
    each = moments(tables, per_walker=True)
    assert list(each.columns[:2]) == ["id", "parameter"] and len(each) == 8


def test_a_spread_needs_two_rows_and_an_empty_table_says_so():
    from tati.errors import InputError
    one = pd.DataFrame({"id": [0], "step": [5], "loss": [0.1], "param0": [0.2], "param1": [0.3]})
    with pytest.raises(InputError, match=r"covariance needs at least 2 rows of .* after burn_in_steps 0; it has 1"):
        covariance(RunTables(trajectory=one))
    with pytest.raises(InputError, match=r"has no rows$"):
        covariance(RunTables(trajectory=one.iloc[:0]))
