"""T_c, kinetic and configurational temperatures per layer (tati/diagnostics/momentum.py).

Budget: each statistical test fails a correct implementation with probability at most 1e-3,
Bonferroni-split over the groups it checks (the intervals are taken at level 1 - 1e-3 / groups).
"""

import numpy as np
import pytest

from stats import seed
from tati.diagnostics import (configurational_temperatures, integrated_autocorrelation_time,
                              kinetic_temperatures, quantile_fractions)

GROUPS = {"layer1/weights": list(range(0, 12)), "layer1/biases": list(range(12, 16)),
          "output/weights": list(range(16, 20))}
MASS = np.repeat([1.0, 0.5, 3.0], [12, 4, 4])
LEVEL = 1 - 1e-3 / (len(GROUPS) + 1)


def ornstein_uhlenbeck(rng, steps, variance, decay=0.8, noise_times=1):
    """Momenta [steps, 20] of p <- a p + sqrt(1 - a^2) sqrt(M) G, the noise added `noise_times`
    times per step: stationary N(0, noise_times M), i.e. overheated for noise_times = 2."""
    p = np.sqrt(variance * MASS) * rng.standard_normal(20)
    rows = np.empty((steps, 20))
    for n in range(steps):
        p = decay * p + sum(np.sqrt((1 - decay ** 2) * MASS) * rng.standard_normal(20) for _ in range(noise_times))
        rows[n] = p
    return rows


@pytest.mark.statistical
def test_exact_gaussian_momenta():
    """Independent draws of N(0, M): T_0.99 inside its interval around 0.99, overall and per
    layer, with as many readings assumed as rows; kinetic temperature inside its chi-square
    interval; configurational temperature of a Gaussian U = q^T K q / 2 within z = 3.5
    standard errors of 1 (Bonferroni over 4 groups at 1e-3 needs 3.3)."""
    rng = np.random.default_rng(seed(31))
    momenta = np.sqrt(MASS) * rng.standard_normal((3000, 20))
    table = quantile_fractions(momenta, mass=MASS, groups=GROUPS, level=LEVEL, readings=3000)
    print(table)
    assert list(table.index) == ["all"] + list(GROUPS)
    assert np.all(table.readings == 3000) and table.loc["layer1/biases", "dof"] == 4
    assert np.all((table.low <= 0.99) & (0.99 <= table.high))
    kinetic = kinetic_temperatures(momenta, mass=MASS, groups=GROUPS, level=LEVEL, readings=3000)
    assert np.all((kinetic.low <= kinetic.temperature) & (kinetic.temperature <= kinetic.high))
    stiffness = np.linspace(0.5, 4.0, 20)
    positions = rng.standard_normal((3000, 20)) / np.sqrt(stiffness)
    configurational = configurational_temperatures(positions, positions * stiffness, groups=GROUPS, readings=3000)
    assert np.all(np.abs(configurational.temperature - 1) < 3.5 * configurational.standard_error)


@pytest.mark.statistical
def test_overheated_momenta_fall_below():
    """Momenta of a correlated chain with the noise added twice (temperature 2): T_0.99 falls
    below its interval around 0.99 overall and per layer, the kinetic temperature above its
    interval; the readings assumed (from the autocorrelation time) are fewer than the rows.
    The same chain with the noise added once passes (the control)."""
    rng = np.random.default_rng(seed(32))
    for times, hot in ((2, True), (1, False)):
        momenta = ornstein_uhlenbeck(rng, 6000, times, noise_times=times)
        table = quantile_fractions(momenta, mass=MASS, groups=GROUPS, level=LEVEL)
        kinetic = kinetic_temperatures(momenta, mass=MASS, groups=GROUPS, level=LEVEL)
        print(times, table, kinetic, sep="\n")
        assert np.all(table.readings < 6000 / 4)  # tau of the AR(1) kinetic energy is about 3.6
        if hot:
            assert np.all(table.high < 0.99)
            assert np.all(kinetic.temperature > kinetic.high)
        else:
            assert np.all((table.low <= 0.99) & (0.99 <= table.high))
            assert np.all((kinetic.low <= kinetic.temperature) & (kinetic.temperature <= kinetic.high))


@pytest.mark.statistical
def test_autocorrelation_time_of_ar1():
    """tau of an AR(1) with coefficient a is (1 + a) / (1 - a) = 9 for a = 0.8; from 40 chains
    of 2000 steps the estimate is within 15% (its relative standard error is about
    sqrt(2 (2 M + 1) / n) ~ 3% for a window M ~ 5 tau, n = 80000)."""
    rng = np.random.default_rng(seed(33))
    x = np.zeros((2000, 40))
    for n in range(1, 2000):
        x[n] = 0.8 * x[n - 1] + rng.standard_normal(40)
    assert integrated_autocorrelation_time(x) == pytest.approx(9.0, rel=0.15)


@pytest.mark.statistical
def test_autocorrelation_time_of_an_oscillating_series():
    """A stiff mode's kinetic energy at low friction swings at twice its frequency while it decays
    over 1 / gamma: autocorrelation rho_k = exp(-k / 50) (1 + cos(2 pi k / 9)) / 2, whose troughs
    touch 0 (a 1-D double well of curvature 320 at step 0.02 and friction 1 read healthy walkers
    cold: doc/benchmarks.md). Gaussian series with exactly that autocorrelation (circulant
    embedding; both factors are positive definite), 8 chains of 20000: tau = 1 + 2 sum rho_k = 50.0
    within 25%: the larger of two sums, Sokal's window reading 43.0-53.5 over 10 seeds (sd 3.2
    about 47.6, the window's truncation; a false failure below 1e-3). Geyer's initial positive
    sequence alone, which stops at the first pair of lags summing to 0 or less, read 17.5, 17.7
    and 33.8 in 3 of them (with 4 chains of 4000: 4.1-4.3 in 6 of 10, stopped at the first trough)."""
    n, chains = 20000, 8
    lags = np.arange(n + 1)
    rho = np.exp(-lags / 50.0) * (1.0 + np.cos(2.0 * np.pi * lags / 9.0)) / 2.0
    exact = 1.0 + 2.0 * rho[1:].sum()
    circulant = np.concatenate([rho, rho[-2:0:-1]])  # 2n: the first row of the circulant covariance
    eigenvalues = np.clip(np.fft.fft(circulant).real, 0.0, None)
    rng = np.random.default_rng(seed(34))
    noise = rng.standard_normal((2 * n, chains)) + 1j * rng.standard_normal((2 * n, chains))
    x = np.fft.fft(np.sqrt(eigenvalues / (2 * n))[:, None] * noise, axis=0).real[:n]
    assert exact == pytest.approx(50.0, abs=0.5)
    assert integrated_autocorrelation_time(x) == pytest.approx(exact, rel=0.25)


def test_bad_groups():
    with pytest.raises(ValueError, match="group 'x'"):
        quantile_fractions(np.zeros((5, 3)), groups={"x": [3]})


def test_result_momentum_test_and_the_summary_line():
    """NUTS draws exact momenta: T_0.99 of its kinetic energies lies in its interval (level
    1 - 1e-3); read as if the run were at beta = 1.5 (momenta too hot for it) it falls below.
    The summary judges no momenta of NUTS."""
    import tensorflow as tf

    import tati
    from tati.diagnostics.summary import summarise
    sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q ** 2), initial_parameters=[0.0] * 10,
                          sampler="NUTS", number_walkers=2, max_steps=1500, burn_in_steps=300, seed=1)
    result = sim.sample()
    exact = result.momentum_test(1.0, burn_in=300, level=1 - 1e-3)
    assert exact["dof"] == 10 and exact["readings"] > 1500
    assert exact["low"] <= 0.99 <= exact["high"], exact
    hot = result.momentum_test(1.5, burn_in=300, level=1 - 1e-3)
    assert hot["high"] < 0.99, hot
    # which is why the summary gives NUTS no momentum verdict: it would pass whatever the chain does
    text = summarise("tati-sample", sim, result, True)
    assert "momentum test" not in text and "  momenta not judged: NUTS draws them afresh every step" in text, text
    sgld = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q ** 2), initial_parameters=[0.0] * 3,
                           sampler="SGLD", max_steps=20).sample()
    with pytest.raises(tati.errors.InputError, match="no momenta"):
        sgld.momentum_test()
