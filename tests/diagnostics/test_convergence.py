"""R-hat and effective sample size across walkers (tati/diagnostics/convergence.py): exact
answers on synthetic chains, a sampled Gaussian, the command-line summary line.

The ESS bounds come from measuring the estimator over many seeds (TFP's cross-chain ESS with
Geyer's positive-pair truncation; numbers in each test). Its distribution is skewed (a long
lower tail) and, for iid draws, centred about 3% below the true value, so the bounds are
empirical quantiles, not normal ones. False-failure budget: 1e-3 for each test.
"""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy.signal import lfilter

import tati
from stats import seed
from tati.diagnostics.convergence import convergence

WALKERS, ROWS, PARAMETERS = 4, 1000, 8
# The bounds below were set on tfp's potential_scale_reduction, the ratio of the variance
# estimates; `convergence` now reports its square root (R-hat as Stan and ArviZ give it), so
# they compare r_hat ** 2: the same criteria.


def trajectory(chains):
    """A trajectory table from chains [rows, walkers, parameters], rows in the Simulation's
    order (step by step, walkers within a step)."""
    rows, walkers, parameters = chains.shape
    table = pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                          "step": np.repeat(np.arange(1, rows + 1), walkers), "loss": 0.0})
    for i in range(parameters):
        table[f"x{i}"] = chains[:, :, i].ravel()
    return table


def ar1(rng, rho, shape):
    """Stationary AR(1) chains with unit variance along axis 0: x_k = rho x_{k-1} + sqrt(1 - rho^2) e_k."""
    noise = rng.standard_normal(shape)
    noise[0] /= np.sqrt(1.0 - rho ** 2)  # x_0 ~ N(0, 1)
    return lfilter([np.sqrt(1.0 - rho ** 2)], [1.0, -rho], noise, axis=0)


@pytest.mark.statistical
def test_independent_draws_agree_and_count_every_row():
    """4 walkers x 1000 iid N(0, 1) draws, 8 parameters. Measured over 57,600 parameters
    (1,200 seeds): ESS / 4000 has mean 0.969, sd 0.058, quantiles 1e-4: 0.61, 1 - 1e-4: 1.12,
    P(< 0.6) = 3.5e-5, none above 1.15; the mean over 8 parameters has sd 0.021, min 0.868 in
    7,200 groups; no R-hat above 1.0091. So each ESS in [0.6, 1.15] x 4000 (false-failure rate
    about 8 x 3.5e-5), their mean in [0.87, 1.05] x 4000 (below 1.4e-4) and R-hat < 1.01."""
    rng = np.random.default_rng(seed(800))
    table = convergence(trajectory(rng.standard_normal((ROWS, WALKERS, PARAMETERS))))
    assert list(table.columns) == ["r_hat", "ess", "mean", "sd"]
    assert list(table.index) == [f"x{i}" for i in range(PARAMETERS)]
    total = WALKERS * ROWS
    assert (table.r_hat ** 2 < 1.01).all(), table.r_hat
    assert table.ess.between(0.6 * total, 1.15 * total).all(), table.ess
    assert 0.87 * total < table.ess.mean() < 1.05 * total, table.ess
    # pooled moments of 4000 N(0, 1) draws: mean within 5.5 / sqrt(4000), sd within 6 sqrt(1/8000)
    assert (table["mean"].abs() < 5.5 / np.sqrt(total)).all()
    assert (np.abs(table.sd - 1.0) < 6.0 / np.sqrt(2 * total)).all()


@pytest.mark.statistical
def test_ar1_chains_have_ess_n_times_one_minus_rho_over_one_plus_rho():
    """rho = 0.8, 4 walkers x 5000 rows: ESS = 20000 x 0.2 / 1.8 = 2222. Measured over 14,400
    parameters (300 seeds): ESS / 2222 has mean 0.982, sd 0.073, range 0.59-1.25; the mean
    over 8 parameters has sd 0.026, quantiles 1e-3: 0.90, 0.999: 1.05. Bounds for the mean
    of 8: [0.85, 1.12] x 2222, 5 sd either side (false-failure rate well below 1e-3)."""
    rho, rows = 0.8, 5000
    rng = np.random.default_rng(seed(810))
    table = convergence(trajectory(ar1(rng, rho, (rows, WALKERS, PARAMETERS))))
    exact = WALKERS * rows * (1 - rho) / (1 + rho)
    assert 0.85 * exact < table.ess.mean() < 1.12 * exact, (table.ess.mean(), exact)
    assert (table.r_hat ** 2 < 1.05).all()


@pytest.mark.statistical
def test_walkers_with_shifted_means_disagree():
    """One of 4 walkers shifted by 3 sd in x0 only: R-hat of x0 near sqrt(1 + 9 x 3/16) = 1.6,
    the cross-chain ESS of x0 collapses; x1 is unaffected."""
    rng = np.random.default_rng(seed(820))
    chains = rng.standard_normal((ROWS, WALKERS, 2))
    chains[:, 3, 0] += 3.0
    table = convergence(trajectory(chains))
    assert table.r_hat["x0"] ** 2 > 1.3, table
    assert table.ess["x0"] < 0.1 * WALKERS * ROWS, table
    assert table.r_hat["x1"] ** 2 < 1.01, table


def test_burn_in_order_and_input_checks():
    rng = np.random.default_rng(seed(830))
    chains = rng.standard_normal((ROWS, WALKERS, 2))
    chains[:100] += 50.0  # a start far away, left out by burn_in
    table = trajectory(chains)
    assert convergence(table).r_hat.min() ** 2 > 1.1
    kept = convergence(table, burn_in=100)
    shuffled = convergence(table.sample(frac=1.0, random_state=0), burn_in=100)
    pd.testing.assert_frame_equal(kept, shuffled)  # rows are put in step order per walker
    assert (kept.r_hat ** 2 < 1.01).all()
    with pytest.raises(tati.InputError, match="different numbers of rows"):
        convergence(table.iloc[:-1])
    with pytest.raises(tati.InputError, match="at least 4 rows"):
        convergence(table, burn_in=ROWS - 2)
    with pytest.raises(tati.InputError, match="columns id, step, loss"):
        convergence(table.drop(columns="loss"))
    one = convergence(table[table.id == 0], burn_in=100)
    assert one.r_hat.isna().all() and (one.ess > 0.6 * (ROWS - 100)).all()
    assert tati.convergence is convergence and tati.diagnostics.convergence is convergence


@pytest.mark.statistical
def test_walkers_sampling_a_gaussian_converge():
    """4 walkers of BAOAB on a 2-D standard Gaussian (h = 0.5, gamma = 1), all started at the
    origin, 2000 steps. The integrated autocorrelation time of q is about 2 gamma / omega^2 = 2
    time units, 4-5 steps, so each walker gives about 400 independent rows. Measured over seeds
    1-8: R-hat 1.0002-1.0055, ESS 1518-1633; the bounds are far outside that spread."""
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x ** 2), initial_parameters=[0.0, 0.0],
                          number_walkers=4, sampler="BAOAB", step_width=0.5, max_steps=2000,
                          seed=seed(1))
    table = sim.sample().convergence()
    assert list(table.index) == ["param0", "param1"]
    assert (table.r_hat ** 2 < 1.05).all(), table
    assert (table.ess > 1000).all(), table


@pytest.mark.parametrize("walkers", [4, 1])
def test_command_line_prints_r_hat_for_several_walkers(walkers, capsys):
    from tati.cli import sample
    sample.main(["--number_walkers", str(walkers), "--max_steps", "200"])
    lines = capsys.readouterr().out.splitlines()
    found = [line for line in lines if line.startswith("  R-hat max")]
    if walkers == 1:
        assert found == []
    else:
        assert len(found) == 1 and found[0].endswith(f"over {walkers} walkers"), lines
        assert "ESS min" in found[0]


def test_summary_line_compares_unequal_walkers_over_their_last_rows():
    """HMC writes rows at each walker's own evaluation steps, so walkers may have unequal rows:
    the summary then compares the last rows, as many as the shortest walker has."""
    from tati.diagnostics.summary.walkers import convergence_line
    rng = np.random.default_rng(seed(840))
    table = trajectory(rng.standard_normal((ROWS, WALKERS, 2)))
    table = table.drop(index=table.index[(table.id == 2) & (table.step <= 10)])
    [line] = convergence_line(table, WALKERS, burn_in=0)
    assert line.startswith("  R-hat max 1.0") and line.endswith("over 4 walkers"), line
    assert convergence_line(table, WALKERS, burn_in=ROWS - 3) == []


def test_result_convergence_uses_equal_last_rows():
    """Result.convergence on unequal walkers (as HMC writes them) uses each walker's last rows,
    as many as the shortest has; a burn_in that leaves nothing is a one-line InputError."""
    from tati.simulation import Result
    rng = np.random.default_rng(seed(850))
    table = trajectory(rng.standard_normal((ROWS, WALKERS, 2)))
    short = table.drop(index=table.index[(table.id == 2) & (table.step <= 10)])
    result = Result(run_info=pd.DataFrame(), trajectory=short, averages=pd.DataFrame())
    expected = convergence(table[table.step > 10])
    pd.testing.assert_frame_equal(result.convergence(), expected)
    with pytest.raises(tati.InputError, match="at least 4 rows"):
        result.convergence(burn_in=10 * ROWS)
