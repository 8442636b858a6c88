"""Integrated autocorrelation time, ESS and R-hat (tati/analysis/autocorrelation.py) on synthetic
chains with known answers. Seeds are fixed (stats.seed, shifted by TATI_TEST_SEED)."""

import numpy as np
import pandas as pd
import pytest
from scipy.signal import lfilter

from stats import seed, z_critical
from tati.analysis.autocorrelation import autocorrelation, summary
from tati.analysis.runs import RunTables
from tati.errors import InputError


def trajectory(chains, names=None):
    """A trajectory table of chains [rows, walkers, parameters], rows in the Simulation's order."""
    rows, walkers, parameters = chains.shape
    table = pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                          "step": np.repeat(np.arange(1, rows + 1), walkers), "loss": 0.0})
    for i, name in enumerate(names or [f"param{i}" for i in range(parameters)]):
        table[name] = chains[:, :, i].ravel()
    return RunTables(trajectory=table)


def ar1(rng, rho, shape):
    """Stationary AR(1) chains with unit variance along axis 0."""
    noise = rng.standard_normal(shape)
    noise[0] /= np.sqrt(1.0 - rho ** 2)
    return lfilter([np.sqrt(1.0 - rho ** 2)], [1.0, -rho], noise, axis=0)


@pytest.mark.statistical
def test_ar1_autocorrelation_time_is_19_within_its_standard_error():
    """x_k = 0.9 x_{k-1} + noise: rho_t = 0.9^t, tau = 1 + 2 sum 0.9^t = (1 + 0.9) / (1 - 0.9) = 19
    rows, so 4 walkers x 25000 rows are worth ESS = 100000 / 19 = 5263 draws. tau is within z
    standard errors of 19, z = 3.29 for a false-failure budget of 1e-3 (normal); the ESS
    correspondingly: 5263 lies in 100000 / (tau +- z tau_error), the same event. Measured with
    this code over seeds 0-199: (tau - 19) / tau_error has mean 0.21 and sd 0.93, largest
    |value| 2.64; tau_error is 5.2% of tau on average, and tau itself scatters by 1.06 (5.6%)
    about a mean of 19.37 (tfp's estimate is about 2% high here, 0.4 standard errors)."""
    rho, rows, walkers = 0.9, 25000, 4
    chains = ar1(np.random.default_rng(seed(1900)), rho, (rows, walkers, 1))
    table = autocorrelation(trajectory(chains), components=0).set_index("coordinate")
    exact_tau = (1 + rho) / (1 - rho)
    exact_ess = rows * walkers / exact_tau
    row = table.loc["param0"]
    z = z_critical(1e-3)
    assert abs(row.tau - exact_tau) < z * row.tau_error, (row.tau, row.tau_error)
    total = rows * walkers
    assert total / (row.tau + z * row.tau_error) < exact_ess < total / (row.tau - z * row.tau_error)
    assert row.ess == pytest.approx(total / row.tau)
    assert row.ess_error == pytest.approx(row.ess * row.tau_error / row.tau)
    assert 0.03 * exact_tau < row.tau_error < 0.08 * exact_tau  # about 5%: the error is informative
    assert row.r_hat < 1.01 and row.verdict == "ok" and row.rows == rows and row.walkers == walkers


@pytest.mark.statistical
def test_eigenvector_coordinates_have_the_autocorrelation_of_their_mode():
    """Two independent AR(1) modes (rho 0.9 with sd 3, rho 0.5 with sd 1) rotated by 30 degrees:
    the leading eigenvector is the slow, wide mode (tau 19), the second the fast one (tau 3);
    each parameter mixes them. Tolerances as above: normal, 1e-3 over the 2 eigenvectors."""
    rng = np.random.default_rng(seed(1910))
    rows, walkers = 20000, 4
    slow = 3.0 * ar1(rng, 0.9, (rows, walkers))
    fast = ar1(rng, 0.5, (rows, walkers))
    angle = np.pi / 6
    x = np.cos(angle) * slow - np.sin(angle) * fast
    y = np.sin(angle) * slow + np.cos(angle) * fast
    table = autocorrelation(trajectory(np.stack([x, y], axis=2))).set_index("coordinate")
    assert list(table.index) == ["param0", "param1", "eigenvector1", "eigenvector2"]
    limit = z_critical(1e-3, tests=2)
    for name, exact in (("eigenvector1", 19.0), ("eigenvector2", 3.0)):
        assert abs(table.tau[name] - exact) < limit * table.tau_error[name], table
    assert (table.verdict == "ok").all(), table


@pytest.mark.statistical
def test_walkers_that_disagree_get_a_verdict_naming_r_hat():
    """One of 4 walkers shifted by 3 sd: tfp's ratio of variances (split chains) is about
    1 + 2 = 3, R-hat its square root, and the verdict names it; too few rows for 100
    independent draws per walker names the ESS."""
    rng = np.random.default_rng(seed(1920))
    chains = rng.standard_normal((1000, 4, 2))
    chains[:, 3, 0] += 3.0
    table = autocorrelation(trajectory(chains), components=0).set_index("coordinate")
    assert table.r_hat["param0"] ** 2 > 2.0, table
    assert table.verdict["param0"].startswith("R-hat ") and "walkers disagree" in table.verdict["param0"]
    assert table.verdict["param1"] == "ok"
    short = autocorrelation(trajectory(ar1(rng, 0.9, (300, 2, 1))), components=0)
    assert "too few independent draws" in short.verdict.iloc[0]


def test_one_walker_has_no_r_hat():
    rng = np.random.default_rng(seed(1930))
    table = autocorrelation(trajectory(rng.standard_normal((4000, 1, 1))), components=0)
    assert np.isnan(table.r_hat.iloc[0]) and table.verdict.iloc[0] == "ok"
    assert 0.8 < table.tau.iloc[0] < 1.25 and table.tau_error.iloc[0] > 0
    assert summary(table)[-1] == ("  ok: ESS >= 100 for every coordinate; R-hat not checked: it compares "
                                  "walkers, and this run has one (number_walkers 4 gives it)")


def test_inputs_are_checked():
    rng = np.random.default_rng(seed(1940))
    tables = trajectory(rng.standard_normal((100, 2, 2)))
    with pytest.raises(InputError, match="burn_in_steps 100 leaves no row of the trajectory table"):
        autocorrelation(tables, burn_in=100)
    with pytest.raises(InputError, match="has no column 'parm0' \\(did you mean 'param0'\\?\\)"):
        autocorrelation(tables, parameters="parm0")
    with pytest.raises(InputError, match="needs the trajectory table"):
        autocorrelation(RunTables())
