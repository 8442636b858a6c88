"""HMC's metric windows (tati/samplers/adaptation.py, hmc_adaptation.py): the scale that
minimises the Fisher divergence, s^4 = var(q) / var(beta grad U), from the legs' starts and
their gradients; the first window closed by FIRST_WINDOW_END of a burn-in whose legs are long;
the leg length restarted no longer than the user's after a window. All assertions are exact
(no statistical tolerance)."""

import math

import numpy as np
import tensorflow as tf

import tati
from stats import seed
from tati.samplers import adaptation


def test_fisher_scale_is_the_fourth_root_of_the_variances_ratio_or_the_previous_scale():
    """s = (m2 / m2_gradient)^(1/4); the previous scale where either sum is 0 or not finite."""
    m2 = tf.constant([16.0, 0.0, 1.0, 2.0, np.inf], tf.float64)
    gradient_m2 = tf.constant([1.0, 1.0, 0.0, 2.0, 1.0], tf.float64)
    previous = tf.constant([7.0, 7.0, 7.0, 7.0, 7.0], tf.float64)
    np.testing.assert_array_equal(adaptation.fisher_scale(m2, gradient_m2, previous).numpy(), [2.0, 7.0, 7.0, 1.0, 7.0])


def test_leg_length_restarts_at_most_at_the_users():
    """After a window, log T restarts at min(log T - log growth, log T_user), its averages reset."""
    state = adaptation.chees_start(8.0)
    longer = adaptation.chees_restart(state, tf.constant(True), tf.constant(2.0, tf.float64), 1.0).numpy()
    assert longer[1] == longer[2] == 0.0 and longer[0] == 0.0  # 8 / 2 = 4 > 1: from 1
    shorter = adaptation.chees_restart(state, tf.constant(True), tf.constant(16.0, tf.float64), 1.0).numpy()
    assert shorter[1] == math.log(8.0) - math.log(16.0)  # 0.5 < 1: from T / growth
    np.testing.assert_array_equal(adaptation.chees_restart(state, tf.constant(False), 2.0, 1.0).numpy(), state.numpy())


def run(burn_in, **options):
    """HMC2, 4 walkers from uniform(-2, 2) draws, on N(0, diag(1e-3, 1)^2); only burn_in_steps
    and max_steps set otherwise."""
    sds = np.array([1e-3, 1.0])
    start = np.random.default_rng(seed(4600)).uniform(-2.0, 2.0, size=(4, 2))
    sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum((q / sds) ** 2, axis=-1), potential_batched=True,
                          initial_parameters=start, number_walkers=4, sampler="HMC2", burn_in_steps=burn_in,
                          max_steps=burn_in, dtype="float64", seed=seed(48), **options)
    result = sim.sample()
    return sim.sampler, sds, result.run_info.groupby("id").size().min()


def test_first_window_closes_by_30_percent_of_a_burn_in_of_long_legs(monkeypatch):
    """Before the metric, the width must fit the sd 1e-3 and legs of T = 1 take 1000 steps (the
    burn-in's cap): 10,000 steps hold about 18 legs, never the first window's 25. It closes at
    30% of burn-in with its 8 draws; the scales are the sds (the estimate is exact on a Gaussian
    of diagonal covariance, from draws still far from it), and the rest of the burn-in runs in
    them: thousands of legs (4508 measured). The control, the first window waiting for its 25
    legs (FIRST_WINDOW_END = 1): 18 legs, the one window at the end of the collection."""
    sampler, sds, legs = run(10000)
    assert sampler.metric_windows() >= 3 and legs > 1000, (sampler.metric_windows(), legs)
    np.testing.assert_allclose(sampler.metric_scales(), sds, rtol=1e-9)
    monkeypatch.setattr(adaptation, "FIRST_WINDOW_END", 1.0)
    sampler, _, legs = run(10000)
    assert sampler.metric_windows() <= 1 and legs < 100, (sampler.metric_windows(), legs)
