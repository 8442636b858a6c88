"""Dual averaging of the step width (tati/adaptation/dual_averaging.py; Hoffman & Gelman 2014,
Algorithm 5). Deterministic: no statistical tolerance."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tati.adaptation import dual_averaging as averaging


def test_converges_to_the_width_of_the_target_on_a_known_acceptance_curve():
    """With acceptance a(eps) = exp(-eps) (no noise) and target delta = 0.8, the iterates
    approach eps* = -log 0.8 from eps_0 = 1 as the algorithm's fixed point says: log eps_n =
    mu - sqrt(n) h_n / gamma holds at eps* only for h_n = gamma (mu - log eps*) / sqrt(n), so
    the acceptance stays off by d h_n n / dn, and the relative error of eps_n is

        (eps_n - eps*) / eps* = gamma (mu - log eps*) / (2 sqrt(n) eps* delta) = 1.0651 / sqrt(n),

    (a'(eps*) = -delta). Measured inside a tf.function, as the samplers run it: 1.0637 / sqrt(n)
    at n = 3000 (the rest of order 1 / n); 1% holds it, and gamma or mu off by a tenth, a wrong
    sign or weight is off by far more. The average eps_bar lags (its weight n^-kappa gives the
    early iterates their share): 2.1% off at n = 3000, below 3%."""
    target, steps = 0.8, 3000

    @tf.function
    def run():
        def step(i, state):
            acceptance = tf.exp(-averaging.width(state, tf.constant(False)))
            return i + 1, averaging.update(state, acceptance, target)
        return tf.while_loop(lambda i, _: i < steps, step, (0, averaging.init(1.0)))[1]

    state = run()
    right = -math.log(target)
    predicted = averaging.GAMMA * (math.log(10.0) - math.log(right)) / (2.0 * right * target)
    error = float(averaging.width(state, tf.constant(False))) / right - 1.0
    assert error * math.sqrt(steps) == pytest.approx(predicted, rel=0.01)
    assert 0.0 < float(averaging.width(state, tf.constant(True))) / right - 1.0 < 0.03
    assert float(state.count) == steps and float(state.mu) == pytest.approx(math.log(10.0), abs=1e-15)


def test_first_update_by_hand():
    """One step by the formulas: h_1 = (delta - a) / (1 + t0), log eps_1 = mu - h_1 / gamma,
    log eps_bar_1 = log eps_1 (weight 1^-kappa = 1); a NaN acceptance counts as 0."""
    start = averaging.init(0.5)
    for acceptance, counted in ((0.3, 0.3), (float("nan"), 0.0)):
        state = averaging.update(start, tf.constant(acceptance, tf.float64), 0.8)
        h = (0.8 - counted) / (1.0 + averaging.T0)
        mu = math.log(0.5) + math.log(10.0)
        assert float(state.h) == pytest.approx(h, rel=1e-14)
        assert float(state.log_step) == pytest.approx(mu - h / averaging.GAMMA, rel=1e-14)
        assert float(state.log_step_bar) == float(state.log_step)


def test_restarts_at_the_width_over_the_smallest_growth():
    """After a metric window the width restarts at exp(log eps_n) / growth, mu at ten times that."""
    state = averaging.init(0.1)
    for acceptance in (0.2, 0.9, 0.5):
        state = averaging.update(state, tf.constant(acceptance, tf.float64), 0.8)
    restarted = averaging.restart(state, tf.constant(True), tf.constant(1e-3, tf.float64))
    assert float(restarted.count) == 0.0 and float(restarted.h) == 0.0
    assert float(restarted.log_step) == float(restarted.log_step_bar)
    assert float(restarted.log_step) == pytest.approx(float(state.log_step) + math.log(1e3), rel=1e-14)
    assert float(restarted.mu) == pytest.approx(float(restarted.log_step) + math.log(10.0), rel=1e-14)
    kept = averaging.restart(state, tf.constant(False), tf.constant(1e-3, tf.float64))
    np.testing.assert_array_equal(averaging.pack(kept).numpy(), averaging.pack(state).numpy())


def test_packs_in_the_checkpoints_order():
    """The variable `dual_averaging` holds (count, h, log eps, log eps_bar, mu): checkpoints of
    earlier versions read back the same fields."""
    vector = np.array([3.0, 0.1, -1.0, -1.5, 0.7])
    state = averaging.unpack(tf.constant(vector))
    assert averaging.State._fields == ("count", "h", "log_step", "log_step_bar", "mu")
    assert [float(x) for x in state] == list(vector)
    np.testing.assert_array_equal(averaging.pack(state).numpy(), vector)


def test_a_width_per_walker_is_each_walkers_own_dual_averaging():
    """From a tensor of widths each element adapts alone, bitwise as a scalar state would: the
    step-width adaptation of samplers that keep a width per walker."""
    widths, targets = [0.1, 1.0, 3.0], [0.6, 0.8, 0.9]
    batched = averaging.init(tf.constant(widths, tf.float64))
    singles = [averaging.init(tf.constant(w, tf.float64)) for w in widths]
    for acceptances in ([0.2, 0.9, 0.5], [1.0, float("nan"), 0.7]):
        batched = averaging.update(batched, tf.constant(acceptances, tf.float64), tf.constant(targets, tf.float64))
        singles = [averaging.update(s, tf.constant(a, tf.float64), t)
                   for s, a, t in zip(singles, acceptances, targets)]
    np.testing.assert_array_equal(averaging.pack(batched).numpy(),
                                  np.stack([averaging.pack(s).numpy() for s in singles], axis=1))


def test_cautious_width_is_the_smaller_of_average_and_last_iterate_after_burn_in():
    """HMC's frozen width (cautious_width): during burn-in the iterate, after it the smaller of
    eps_bar and the last iterate, either way round."""
    wide_average = averaging.State(*(tf.constant(v, tf.float64) for v in
                                     (400.0, 0.0, math.log(0.0044), math.log(0.009), 0.0)))
    narrow_average = wide_average._replace(log_step=tf.constant(math.log(0.02), tf.float64))
    assert float(averaging.cautious_width(wide_average, tf.constant(True))) == pytest.approx(0.0044, rel=1e-14)
    assert float(averaging.cautious_width(narrow_average, tf.constant(True))) == pytest.approx(0.009, rel=1e-14)
    assert float(averaging.cautious_width(narrow_average, tf.constant(False))) == pytest.approx(0.02, rel=1e-14)


def test_cautious_width_follows_a_target_that_narrows_late_in_burn_in():
    """yacht's case in miniature (doc/benchmarks.md): acceptance a(eps) = exp(-eps / c), 400
    updates at c = 1 (ChEES's short legs) and 20 at c = 0.5 (the few long legs at the end, the
    chain gone to a narrower region; right width 0.5 log 1.25 = 0.11). The average eps_bar
    keeps the early width, 0.216, accepting 0.65 after burn-in; the last iterate, 0.128,
    accepts 0.77. Deterministic."""
    state = averaging.init(1.0)
    for n in range(420):
        scale = 1.0 if n < 400 else 0.5
        state = averaging.update(state, tf.exp(-averaging.width(state, tf.constant(False)) / scale), 0.8)
    averaged = float(averaging.width(state, tf.constant(True)))
    cautious = float(averaging.cautious_width(state, tf.constant(True)))
    assert math.exp(-averaged / 0.5) < 0.7 < 0.75 < math.exp(-cautious / 0.5)
