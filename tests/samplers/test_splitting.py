"""The pure split steps of tati/dynamics/splitting.py, each against its formula, and the
properties the samplers rely on: the O step keeps N(0, 1/beta) exactly, and the leapfrog
B(h/2) A(h) B(h/2) built from kick and drift is symplectic and time-reversible (checked on a
harmonic oscillator, where one step is a linear map known in closed form)."""

import math

import numpy as np
import pytest
import tensorflow as tf

from tati.dynamics import splitting

F64 = tf.float64


def test_kick_and_drift_are_their_formulas():
    p, g, q = tf.constant([1.0, -2.0], F64), tf.constant([0.5, 4.0], F64), tf.constant([3.0, 0.25], F64)
    np.testing.assert_array_equal(splitting.kick(p, g, 0.25).numpy(), [1.0 - 0.125, -2.0 - 1.0])
    np.testing.assert_array_equal(splitting.drift(q, p, 0.5).numpy(), [3.5, -0.75])


@pytest.mark.parametrize("friction, h", [(1.0, 0.1), (10.0, 0.5), (0.0, 0.3)])
def test_ornstein_uhlenbeck_keeps_the_momentum_distribution(friction, h):
    """alpha^2 Var(p) + noise^2 = 1/beta whenever Var(p) = 1/beta, for every gamma and h."""
    beta = 2.5
    alpha = splitting.ou_alpha(tf.constant(friction, F64), tf.constant(h, F64))
    assert float(alpha) == pytest.approx(math.exp(-friction * h), rel=1e-15)
    scale = splitting.ou_noise_scale(alpha, tf.constant(beta, F64))
    assert float(alpha) ** 2 / beta + float(scale) ** 2 == pytest.approx(1.0 / beta, rel=1e-14)
    p, noise = tf.constant([0.5, -1.5], F64), tf.constant([0.1, 0.2], F64)
    np.testing.assert_allclose(splitting.ornstein_uhlenbeck(p, alpha, noise).numpy(),
                               float(alpha) * np.array([0.5, -1.5]) + [0.1, 0.2], rtol=1e-15)


def test_fresh_momentum_is_its_formula():
    """HMC's redraw p = G / sqrt(beta)."""
    normal = tf.constant([1.0, -2.0], F64)
    np.testing.assert_array_equal(splitting.fresh_momentum(normal, tf.constant(4.0, F64)).numpy(), [0.5, -1.0])


def test_euler_maruyama_is_its_formula():
    q, g, normal = tf.constant([1.0], F64), tf.constant([2.0], F64), tf.constant([0.5], F64)
    h, beta = tf.constant(0.01, F64), tf.constant(4.0, F64)
    expected = 1.0 - 0.01 * 2.0 + math.sqrt(2.0 * 0.01 / 4.0) * 0.5
    assert float(splitting.euler_maruyama(q, g, h, beta, normal)[0]) == pytest.approx(expected, rel=1e-15)


def leapfrog(q, p, h, omega):
    """One B(h/2) A(h) B(h/2) step on U = omega^2 q^2 / 2 (gradient omega^2 q)."""
    p = splitting.kick(p, omega ** 2 * q, h / 2)
    q = splitting.drift(q, p, h)
    return q, splitting.kick(p, omega ** 2 * q, h / 2)


def test_leapfrog_of_kick_and_drift_is_symplectic_and_reversible():
    omega, h = 1.7, 0.3
    # The step's matrix from its images of (1, 0) and (0, 1): a linear map on the oscillator.
    columns = [leapfrog(tf.constant(q, F64), tf.constant(p, F64), h, omega) for q, p in ((1.0, 0.0), (0.0, 1.0))]
    matrix = np.array([[float(c[0]), float(c[1])] for c in columns]).T
    assert np.linalg.det(matrix) == pytest.approx(1.0, abs=1e-14)  # area-preserving
    exact = np.array([[1 - (h * omega) ** 2 / 2, h], [-h * omega ** 2 * (1 - (h * omega) ** 2 / 4), 1 - (h * omega) ** 2 / 2]])
    np.testing.assert_allclose(matrix, exact, rtol=1e-14, atol=1e-15)
    # Forward, flip the momentum, forward again, flip: back where it started.
    q, p = tf.constant(0.8, F64), tf.constant(-0.3, F64)
    for _ in range(10):
        q, p = leapfrog(q, p, h, omega)
    q, p = leapfrog(q, -p, h, omega)
    for _ in range(9):
        q, p = leapfrog(q, p, h, omega)
    assert float(q) == pytest.approx(0.8, abs=1e-13) and float(-p) == pytest.approx(-0.3, abs=1e-13)
