"""The free energy along a coordinate (tati/analysis/free_energy.py): draws from a harmonic
potential give a quadratic of the right curvature, with errors of the right size."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.signal import lfilter

from stats import seed, z_critical
from tati.analysis import covariance
from tati.analysis.covariance import summary as covariance_summary
from tati.analysis.free_energy import free_energy, harmonic, offset, summary
from tati.analysis.runs import RunTables
from tati.errors import InputError

K, BETA = 4.0, 2.0


def harmonic_run(rng, rows=10000, walkers=4, rho=0.0):
    """Draws of U(x, y) = K x^2 / 2 + y^2 / 2 at inverse temperature BETA, independent or
    correlated in time as AR(1) chains with coefficient rho (as a sampler's rows are),
    stationary from the start."""
    noise = rng.standard_normal((rows, walkers, 2))
    noise[0] /= np.sqrt(1 - rho ** 2)
    unit = lfilter([np.sqrt(1 - rho ** 2)], [1.0, -rho], noise, axis=0)
    x, y = unit[..., 0] / np.sqrt(BETA * K), unit[..., 1] / np.sqrt(BETA)
    table = pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                          "step": np.repeat(np.arange(1, rows + 1), walkers),
                          "loss": (K * x ** 2 / 2 + y ** 2 / 2).ravel(), "x": x.ravel(), "y": y.ravel()})
    return RunTables(trajectory=table)


def quadratic_fit(rows, least=50):
    """Weighted least squares of free_energy = a + b c + (k/2) c^2 over the bins with at least
    `least` rows: (k, its standard error, chi^2, degrees of freedom)."""
    rows = rows[rows["count"] >= least]
    c, f, e = (rows[n].to_numpy() for n in ("center", "free_energy", "free_energy_error"))
    design = np.stack([np.ones_like(c), c, c ** 2 / 2], axis=1) / e[:, None]
    coef, *_ = np.linalg.lstsq(design, f / e, rcond=None)
    covariance = np.linalg.inv(design.T @ design)
    chi2 = np.sum((design @ coef - f / e) ** 2)
    return coef[2], np.sqrt(covariance[2, 2]), chi2, len(c) - 3


@pytest.mark.statistical
def test_harmonic_potential_gives_a_quadratic_of_curvature_k():
    """40000 independent draws (4 walkers) of x with U = 4 x^2 / 2 at beta = 2: the free energy
    along x is 4 x^2 / 2 + constant. A histogram's bins average the density, which lowers the
    fitted curvature by a relative w^2 beta K / 12 (w the bin width, 0.4% here); the fitted
    curvature is within z of its standard error of that, and the fit's chi^2 lies within its
    central interval: both at a false-failure budget of 1e-3 split over the 2 (z = 3.29, chi^2
    quantiles 2.5e-4 and 1 - 2.5e-4, about 26 degrees of freedom). Measured over seeds 0-299 of
    this setup: (k - expected) / error has mean -0.21 and sd 1.01 (largest |value| 3.61, 1 of
    300 beyond 3.29); chi^2 / dof mean 1.04, range 0.40 to 1.97."""
    tables = harmonic_run(np.random.default_rng(seed(3000)))
    table = free_energy(tables, inverse_temperature=BETA, parameters="x", bins=40)
    assert list(table.columns) == ["coordinate", "center", "left", "right", "count", "density",
                                   "free_energy", "free_energy_error", "walkers_r_hat"]
    assert len(table) == 40 and table["count"].sum() == 40000
    assert np.nanmin(table.free_energy) == 0.0
    width = table.right.iloc[0] - table.left.iloc[0]
    expected = K * (1 - width ** 2 * BETA * K / 12)
    k, error, chi2, dof = quadratic_fit(table)
    assert abs(k - expected) < z_critical(1e-3, tests=2) * error, (k, expected, error)
    assert stats.chi2.ppf(2.5e-4, dof) < chi2 < stats.chi2.ppf(1 - 2.5e-4, dof), (chi2, dof)
    assert error < 0.02 * K  # the answer is informative


@pytest.mark.statistical
def test_errors_account_for_correlated_rows():
    """Rows correlated in time (AR(1) with 0.95, as a slow sampler's) carry less information than
    independent ones: the batch-means error of the central bins is well above the error
    sqrt((1 - p) / (n p)) / beta that independent rows would have (measured: 2-3 times)."""
    tables = harmonic_run(np.random.default_rng(seed(3005)), rho=0.95)
    table = free_energy(tables, inverse_temperature=BETA, parameters="x", bins=40)
    central = table[table["count"] > 0.03 * 40000]
    p = central["count"] / 40000
    naive = np.sqrt((1 - p) / (40000 * p)) / BETA
    assert (central.free_energy_error / naive).median() > 1.5, central.free_energy_error / naive


@pytest.mark.statistical
def test_eigenvector_coordinates_and_the_harmonic_approximation():
    """Along the eigenvectors the soft direction y (variance 1/2) comes first, the stiff x (1/8)
    second; the harmonic approximation from the rows' variance is the exact quadratic up to the
    variance's sampling error, and offset() shifts a curve onto the free energy."""
    tables = harmonic_run(np.random.default_rng(seed(3010)))
    table = free_energy(tables, inverse_temperature=BETA, components=2)
    assert list(dict.fromkeys(table.coordinate)) == ["eigenvector1", "eigenvector2"]
    curves = harmonic(tables, inverse_temperature=BETA, components=2)
    for name, stiffness in (("eigenvector1", 1.0), ("eigenvector2", K)):
        rows = table[table.coordinate == name]
        k = quadratic_fit(rows)[0]
        assert k == pytest.approx(stiffness, rel=0.1)
        x = np.array([0.0, 0.3])
        assert np.diff(curves[name](x))[0] == pytest.approx(stiffness * 0.09 / 2, rel=0.05)
        curve = lambda c, k=stiffness: k * c ** 2 / 2  # noqa: E731
        exact = curve(rows.center) + offset(rows, curve)
        good = rows["count"] >= 200
        assert np.all(np.abs(exact[good] - rows.free_energy[good]) < 5 * rows.free_energy_error[good] + 0.05)


def test_walkers_apart_are_named_not_read_as_basins():
    """Walkers that never mixed (two at x + 3, two at x - 3, a network's walkers in their own
    modes) make a histogram of separate clusters: the summary says the profile between them is not
    sampled, along the parameter and along the pooled covariance's first eigenvector, whose
    eigenvalue is their spread. The same rows unshifted (R-hat 1.000) say nothing."""
    for shift in (3.0, 0.0):
        tables = harmonic_run(np.random.default_rng(seed(3015)))
        x = tables.trajectory["x"]
        tables.trajectory["x"] = x + np.where(tables.trajectory["id"] < 2, shift, -shift)
        table = free_energy(tables, inverse_temperature=BETA, parameters="x")
        eigen = covariance(tables).eigen
        lines = covariance_summary(covariance(tables))
        r_hat = table.walkers_r_hat.iloc[0]
        if shift:
            assert r_hat > 5 and eigen.walkers_r_hat.iloc[0] > 5, (r_hat, eigen)  # measured 9.9
            assert "walkers apart (R-hat" in summary(table)[0] and "walkers apart" in lines[0], lines
        else:
            assert r_hat < 1.01 and (eigen.walkers_r_hat < 1.01).all(), (r_hat, eigen)
            assert "apart" not in summary(table)[0] + "".join(lines)


def test_inputs_are_checked():
    tables = harmonic_run(np.random.default_rng(seed(3020)), rows=100, walkers=1)
    with pytest.raises(InputError, match="bins must be at least 2"):
        free_energy(tables, bins=1)
    with pytest.raises(InputError, match="no column 'z'"):
        free_energy(tables, parameters="x,z")
    tables.trajectory["x"] = 1.5
    with pytest.raises(InputError, match="x does not move"):
        free_energy(tables, parameters="x")
