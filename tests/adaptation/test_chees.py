"""HMC's leg length by ChEES (tati/adaptation/chees.py; Hoffman, Radul & Sountsov 2021).
Exact assertions (the arithmetic of one step), no statistical tolerance."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tati.adaptation import chees


def test_leg_length_restarts_at_most_at_the_users():
    """After a window, log T restarts at min(log T - log growth, log T_user), its averages reset."""
    state = chees.init(8.0)
    longer = chees.restart(state, tf.constant(True), tf.constant(2.0, tf.float64), 1.0)
    assert float(longer.log_time) == float(longer.log_time_bar) == 0.0 and float(longer.count) == 0.0  # 8 / 2 > 1
    shorter = chees.restart(state, tf.constant(True), tf.constant(16.0, tf.float64), 1.0)
    assert float(shorter.log_time) == math.log(8.0) - math.log(16.0)  # 0.5 < 1: from T / growth
    np.testing.assert_array_equal(chees.pack(chees.restart(state, tf.constant(False), 2.0, 1.0)).numpy(),
                                  chees.pack(state).numpy())


def test_first_step_is_an_adam_step_of_the_rate_and_capped():
    """The first step along g is rate * sign(g) (Adam's bias-corrected v = g^2), T_bar = T;
    T stays at most the largest time; a zero gradient leaves T."""
    state = chees.init(1.0)
    up = chees.update(state, tf.constant(-3.0, tf.float64), tf.constant(100.0, tf.float64))
    assert float(up.log_time) == pytest.approx(-chees.CHEES_RATE, rel=1e-12)
    assert float(up.log_time_bar) == float(up.log_time) and float(up.count) == 1.0
    capped = chees.update(state, tf.constant(3.0, tf.float64), tf.constant(1.01, tf.float64))
    assert float(capped.log_time) == pytest.approx(math.log(1.01), rel=1e-12)
    assert float(chees.update(state, tf.constant(0.0, tf.float64), tf.constant(100.0, tf.float64)).log_time) == 0.0
    assert float(chees.time(up, tf.constant(True))) == pytest.approx(math.exp(-chees.CHEES_RATE), rel=1e-12)


def test_gradient_is_the_acceptance_weighted_mean_of_finite_terms():
    """g = sum_w a_w t_w dspread_w heading_w / sum_w a_w, a non-finite term or a walker of
    weight 0 counting as 0."""
    weight = tf.constant([0.5, 1.0, 0.0, 0.5], tf.float64)
    time = tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)
    spread = tf.constant([1.0, -1.0, 5.0, np.inf], tf.float64)
    heading = tf.constant([2.0, 3.0, 7.0, 1.0], tf.float64)
    gradient = chees.gradient(weight, tf.reduce_sum(weight), time, spread, heading)
    assert float(gradient) == pytest.approx((0.5 * 2.0 - 1.0 * 6.0) / 2.0, rel=1e-14)
    assert float(chees.centre_weight(tf.constant(10.0, tf.float64))) == 0.1
    assert float(chees.centre_weight(tf.constant(500.0, tf.float64))) == 1.0 / chees.CENTRE_LEGS
