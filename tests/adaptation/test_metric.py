"""The metric's pieces (tati/adaptation/metric.py): Welford's moments against numpy, Stan's
shrinkage, the Fisher scale, the growths of a dense metric. Exact up to rounding: no
statistical tolerance."""

import numpy as np
import pytest
import tensorflow as tf

from tati.adaptation import metric as moments


def batches(rng, shape):
    """Draws in batches of 4, 1 and 3 rows (walkers), far from 0 as Welford's case is."""
    return [rng.normal(loc=100.0, scale=[1.0, 1e-3, 5.0], size=(rows,) + shape) for rows in (4, 1, 3)]


def test_welford_equals_numpys_variance_and_covariance():
    """Diagonal: count, mean and m2 / (n - 1) = numpy's var(ddof=1) of all rows added; dense:
    m2 / (n - 1) = numpy's cov; both packed and unpacked through the variables' vectors."""
    parts = batches(np.random.default_rng(1), (3,))
    draws = np.concatenate(parts)
    diagonal, dense = moments.init([3]), moments.init([3], dense=True)
    for part in parts:
        diagonal = moments.unpack(moments.pack(moments.update(diagonal, part)))
        dense = moments.unpack_dense(moments.pack_dense(moments.update_dense(dense, part)), 3)
    for state in (diagonal, dense):
        assert float(state.count) == len(draws)
        np.testing.assert_allclose(state.mean.numpy(), draws.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(diagonal.m2.numpy() / (len(draws) - 1), draws.var(axis=0, ddof=1), rtol=1e-10)
    np.testing.assert_allclose(dense.m2.numpy() / (len(draws) - 1), np.cov(draws.T), rtol=1e-10, atol=1e-16)


def test_welford_of_walkers_of_any_shape():
    """HMC's variables keep a walker's part in its own shape: rows [n, 2, 3] as numpy's."""
    parts = [np.random.default_rng(2).normal(size=(rows, 2, 3)) for rows in (2, 5)]
    state = moments.init([2, 3])
    for part in parts:
        state = moments.update(state, part)
    np.testing.assert_allclose(state.m2.numpy() / 6.0, np.concatenate(parts).var(axis=0, ddof=1), rtol=1e-12)


def test_variance_scale_is_stans_shrinkage_relative_to_the_last_scale():
    """s^2 = (n / (n + 5)) var + 1e-3 previous^2 (5 / (n + 5)); with previous 1, Stan's rule."""
    draws = np.random.default_rng(3).normal(size=(10, 3))
    state = moments.update(moments.init([3]), draws)
    previous = np.array([1.0, 2.0, 0.5])
    expected = np.sqrt(10.0 / 15.0 * draws.var(axis=0, ddof=1) + 1e-3 * previous ** 2 * 5.0 / 15.0)
    np.testing.assert_allclose(moments.variance_scale(state, previous).numpy(), expected, rtol=1e-13)


def test_dense_factor_is_the_cholesky_of_stans_regularised_covariance():
    """L L^T = (n / (n + 5)) C + 1e-3 (5 / (n + 5)) diag(L_prev L_prev^T), the centre the mean."""
    draws = np.random.default_rng(4).normal(size=(12, 3)) @ np.array([[1.0, 0.0, 0.0], [0.5, 2.0, 0.0],
                                                                     [0.1, -0.3, 0.2]])
    previous = np.array([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.5, 3.0]])
    centre, factor = moments.dense_factor(moments.update_dense(moments.init([3], dense=True), draws), previous)
    expected = 12.0 / 17.0 * np.cov(draws.T) + np.diag(1e-3 * 5.0 / 17.0 * np.sum(previous ** 2, axis=1))
    np.testing.assert_allclose(factor.numpy() @ factor.numpy().T, expected, rtol=1e-12)
    assert np.all(np.triu(factor.numpy(), 1) == 0.0)
    np.testing.assert_allclose(centre.numpy(), draws.mean(axis=0), rtol=1e-14)


def test_fisher_scale_is_the_fourth_root_of_the_variances_ratio_or_the_previous_scale():
    """s = (m2 / m2_gradient)^(1/4); the previous scale where either sum is 0 or not finite."""
    m2 = tf.constant([16.0, 0.0, 1.0, 2.0, np.inf], tf.float64)
    gradient_m2 = tf.constant([1.0, 1.0, 0.0, 2.0, 1.0], tf.float64)
    previous = tf.constant([7.0, 7.0, 7.0, 7.0, 7.0], tf.float64)
    np.testing.assert_array_equal(moments.fisher_scale(m2, gradient_m2, previous).numpy(), [2.0, 7.0, 7.0, 1.0, 7.0])


def test_extreme_growths_are_the_singular_values_of_the_old_factors_inverse_times_the_new():
    """Power iteration from inside: within 1e-6 of numpy's SVD for well separated singular
    values (ratio 0.1 per iteration), and the growths new s / old s for diagonal factors."""
    old = np.array([[1.0, 0.0, 0.0], [0.3, 2.0, 0.0], [0.2, -0.4, 0.5]])
    new = np.array([[3.0, 0.0, 0.0], [0.1, 0.2, 0.0], [0.5, 0.5, 1.0]])
    singular = np.linalg.svd(np.linalg.solve(old, new), compute_uv=False)
    smallest, largest = moments.extreme_growths(tf.constant(old), tf.constant(new))
    assert float(smallest) == pytest.approx(singular[-1], rel=1e-6)
    assert float(largest) == pytest.approx(singular[0], rel=1e-6)
    assert float(smallest) >= singular[-1] * (1 - 1e-12) and float(largest) <= singular[0] * (1 + 1e-12)
    smallest, largest = moments.extreme_growths(tf.constant(np.diag([1.0, 2.0, 4.0])),
                                                tf.constant(np.diag([3.0, 1.0, 2.0])))
    assert float(smallest) == pytest.approx(0.5, rel=1e-12) and float(largest) == pytest.approx(3.0, rel=1e-12)
