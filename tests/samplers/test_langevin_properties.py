"""Langevin samplers: SGLD's exact bias under gradient noise, CCAdL's thermostat against GLA2,
CCAdL's positions at a small step width, deterministic limits, seeds and configurations."""

import numpy as np
import pytest
import tensorflow as tf

from langevin_harness import LINEAR, exact_draws, run_standalone
from stats import seed, t_critical
from tati.diagnostics import kinetic_temperature_interval, momentum_chi_square
from tati.samplers import CCAdL, GLA2, SGLD, get_sampler
from tati.engine.contract import GRADIENT
from tati.engine.registry import samplers_where

ALL = tuple(samplers_where(kind=GRADIENT))  # the one-gradient-per-step (Langevin) samplers


def noisy_gradient(precision, variance, generator_seed):
    """grad U(x) = x A plus N(0, variance) noise per component, from a seeded generator."""
    generator = tf.random.Generator.from_seed(generator_seed)
    a = tf.constant(precision, tf.float64)
    return lambda x: tf.matmul(x, a) + np.sqrt(variance) * generator.normal(tf.shape(x), dtype=x.dtype)


@pytest.mark.statistical
def test_sgld_bias_under_gradient_noise_matches_closed_form():
    """On N(0, sigma^2) with gradient noise of variance V, SGLD's stationary variance is
    sigma^2 (1 + h V / 2) / (1 - h / (2 sigma^2)). 256 independent chains from exact draws;
    Student-t across chains at false-failure rate 1e-4."""
    sigma2, variance, h, chains = 2.0, 4.0, 0.2, 256
    exact = sigma2 * (1 + h * variance / 2) / (1 - h / (2 * sigma2))
    rng = np.random.default_rng(seed(300))
    q0 = rng.normal(scale=np.sqrt(exact), size=(chains, 1))
    qs, _, _, _ = run_standalone(SGLD(step_width=h, seed=seed(300)),
                                 noisy_gradient([[1.0 / sigma2]], variance, seed(301)),
                                 q0, np.zeros_like(q0), 4000, 2)
    per_chain = (qs ** 2).mean(axis=0)[:, 0]
    error = per_chain.std(ddof=1) / np.sqrt(chains)
    assert abs(per_chain.mean() - exact) < t_critical(1e-4, chains - 1) * error, (per_chain.mean(), exact)
    # the noise-free answer is far outside that bound: the test sees the bias
    assert abs(sigma2 / (1 - h / (2 * sigma2)) - exact) > 10 * error


@pytest.mark.statistical
def test_ccadl_thermostat_absorbs_gradient_noise_where_gla2_overheats():
    """100 degrees of freedom (50 chains of the correlated 2-D Gaussian in one variable, which
    CCAdL's single thermostat sees as one system), gradient noise of variance 4, h = 0.05.
    Kinetic energy read every 60 steps (far beyond the momentum correlation time): CCAdL's mean
    kinetic temperature stays inside the 99% chi-square interval of 1 / beta, GLA2's leaves it
    upwards. The T_0.99 diagnostic is reported for both."""
    covariance = np.array([[1.0, 1.8], [1.8, 4.0]])
    precision = np.linalg.inv(covariance)
    chains, h, steps, thin = 50, 0.05, 60000, 60
    rng = np.random.default_rng(seed(400))
    q0 = exact_draws(covariance, chains, rng)
    p0 = rng.normal(size=(chains, 2))
    dof = 2 * chains
    results = {}
    for name, sampler in (("CCAdL", CCAdL(step_width=h, friction_constant=1.0, seed=seed(401))),
                          ("GLA2", GLA2(step_width=h, friction_constant=1.0, seed=seed(401)))):
        _, _, _, kinetic = run_standalone(sampler, noisy_gradient(precision, 4.0, seed(402)), q0, p0, steps, thin)
        kinetic = kinetic[20:]  # leave out the thermostat's start-up
        temperature = 2.0 * kinetic.mean() / dof
        fraction, interval = momentum_chi_square(kinetic, dof)
        results[name] = (temperature, fraction, interval)
    low, high = kinetic_temperature_interval(dof, len(kinetic))
    assert low <= results["CCAdL"][0] <= high, (results, (low, high))
    assert results["GLA2"][0] > high, (results, (low, high))


@pytest.mark.statistical
def test_ccadl_positions_at_small_step_width():
    """Exact gradients, h = 0.02: the position covariance of the correlated 2-D Gaussian
    (50 chains in one variable from exact draws) agrees with the target covariance within
    Monte Carlo error plus an O(h) allowance of h times each entry's magnitude. Errors from the
    spread of the 50 chains (they share one thermostat, which couples them only through xi).
    False-failure budget 1e-4 over the 3 entries."""
    covariance = np.array([[1.0, 1.8], [1.8, 4.0]])
    chains, h = 50, 0.02
    rng = np.random.default_rng(seed(500))
    q0 = exact_draws(covariance, chains, rng)
    qs, _, _, _ = run_standalone(CCAdL(step_width=h, friction_constant=1.0, seed=seed(500)),
                                 lambda x: tf.matmul(x, tf.constant(np.linalg.inv(covariance))),
                                 q0, rng.normal(size=(chains, 2)), 30000, 5)
    moments = np.einsum("tki,tkj->kij", qs, qs) / len(qs)
    critical = t_critical(1e-4, chains - 1, 3)
    for i, j in ((0, 0), (0, 1), (1, 1)):
        values = moments[:, i, j]
        error = values.std(ddof=1) / np.sqrt(chains)
        assert abs(values.mean() - covariance[i, j]) < critical * error + h * abs(covariance[i, j]), (i, j)


@pytest.mark.parametrize("name", [name for name in ALL if name in LINEAR])
def test_deterministic_limit_on_the_harmonic_oscillator(name):
    """Noise off (zero friction; for SGLD beta = 1e30, as good as zero temperature): the
    second-order schemes all move positions as leapfrog / symplectic Euler do,
    q_{n+1} - 2 q_n + q_{n-1} = -h^2 q_n with q_1 = q_0 + h (p_0 - h q_0), whose closed form is
    q_n = q_0 cos(n theta) + b sin(n theta), cos(theta) = 1 - h^2 / 2; SGLD is gradient descent,
    q_n = (1 - h)^n q_0."""
    h, q0, p0, n = 0.375, 1.0, 0.25, np.arange(25)
    cls = get_sampler(name)
    options = {"step_width": h, "seed": 1}
    if "friction_constant" in cls.parameters:
        options["friction_constant"] = 0.0
    if name == "SGLD":
        options["inverse_temperature"] = 1e30
    if name == "CCAdL":
        options.update(sigmaA=0.0, sigma=1e-30)
    qs, _, _, _ = run_standalone(cls(**options), lambda x: x * 1.0, np.array([[q0]]), np.array([[p0]]), 25, 1)
    positions = qs[:, 0, 0]
    if name == "SGLD":
        expected = (1 - h) ** n * q0
    else:
        theta = np.arccos(1.0 - h * h / 2.0)
        b = (q0 + h * (p0 - h * q0) - q0 * np.cos(theta)) / np.sin(theta)
        expected = q0 * np.cos(n * theta) + b * np.sin(n * theta)
    np.testing.assert_allclose(positions, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_output_other_seed_other_output(name):
    cls = get_sampler(name)

    def run(run_seed):
        return run_standalone(cls(step_width=0.1, seed=run_seed), lambda x: x * 1.0,
                              np.ones((3, 2)), np.zeros((3, 2)), 50, 1)[0]

    first, again, other = run(7), run(7), run(8)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("name", ALL)
def test_config_round_trip(name):
    cls = get_sampler(name)
    sampler = cls(step_width=0.25, seed=4, inverse_temperature=2.0)
    config = sampler.get_config()
    assert cls.from_config(config).get_config() == config
    assert config["step_width"] == 0.25 and config["seed"] == 4 and config["inverse_temperature"] == 2.0


@pytest.mark.parametrize("name", ALL)
def test_model_fit_with_the_recording_callback(name, tmp_path):
    """Every sampler trains and samples a Keras model through model.fit; the callback's tables
    hold the pre-step parameters and equal their CSV files."""
    import keras
    import tati
    from stats import read_csv
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
    model.compile(optimizer=get_sampler(name)(step_width=0.01, seed=2), loss="mse")
    x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
    y = np.tanh(x[:, :1] - x[:, 1:])
    path = str(tmp_path / "trajectory.csv")
    recorder = tati.callbacks.TrajectoryRecorder(every_nth=3, trajectory_file=path)
    first = np.concatenate([w.ravel() for w in model.get_weights()[::2]] + [w.ravel() for w in model.get_weights()[1::2]])
    model.fit(x, y, epochs=3, batch_size=16, verbose=0, callbacks=[recorder])
    trajectory = recorder.trajectory
    assert list(trajectory.step) == list(range(3, 13, 3))
    assert trajectory.shape[1] == 3 + 4 * 2 + 4 + 4 + 1
    assert np.all(np.isfinite(trajectory.to_numpy()))
    assert not np.allclose(trajectory.iloc[-1, 3:].to_numpy(), first)
    assert np.isfinite(recorder.run_info.scaled_noise).all()
    import pandas as pd
    pd.testing.assert_frame_equal(read_csv(path), trajectory, check_exact=True)
