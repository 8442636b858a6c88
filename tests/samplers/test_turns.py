"""sin and cos of 2 pi u as Box-Muller computes them under XLA (tati/random/turns.py)."""

import numpy as np
import pytest
import tensorflow as tf

from tati.random.turns import sin_cos_of_turns

PI = np.longdouble("3.14159265358979323846264338327950288")


def turns():
    """Random u, a grid of 1/4096 turns (every quarter and octant boundary) and its neighbours,
    the extremes."""
    rng = np.random.default_rng(1)
    grid = np.arange(4096) / 4096.0
    u = np.concatenate([rng.random(200_000), grid, np.nextafter(grid, 0.0), np.nextafter(grid, 1.0),
                        [1.0 - 2.0 ** -53, 2.0 ** -53, 2.0 ** -1074]])
    return u[(u >= 0.0) & (u < 1.0)]


@pytest.mark.parametrize("dtype, units", [(np.float64, 2.0 ** -53), (np.float32, 2.0 ** -24)])
def test_xla_sin_cos_are_within_three_units_of_the_exact_values(dtype, units):
    """Against sin and cos of 2 pi u in x86 long double (64-bit mantissa, so its own error is
    below 1e-18). The Taylor terms left out are below 1e-19; the shift u - 1/4 of the sine
    rounds by at most 2 pi / 8 = 0.79 units; the series and its reduction round by about 1.5
    units (the cosine's, which has no shift: measured 1.38 and 1.41). Measured: 1.75 (float64)
    and 1.99 (float32) units of 2^-53 and 2^-24. TensorFlow's own float64 path, which rounds
    2 pi u first, is 6.2 units off on the same points."""
    u = turns().astype(dtype)
    sine, cosine = tf.function(sin_cos_of_turns, jit_compile=True, autograph=False)(tf.constant(u))
    angle = 2 * PI * u.astype(np.longdouble)
    assert sine.dtype == cosine.dtype == tf.as_dtype(dtype)
    assert np.max(np.abs(sine.numpy() - np.sin(angle))) <= 3 * units
    assert np.max(np.abs(cosine.numpy() - np.cos(angle))) <= 3 * units


def test_an_element_does_not_depend_on_the_length_of_its_array():
    """Elementwise arithmetic only: u[:n] gives the first n values of u's, bit for bit, for
    n around the vector widths (a vector tail and a scalar one compute alike), so walkers'
    draws stay their own."""
    u = tf.constant(turns()[:37])
    f = tf.function(sin_cos_of_turns, jit_compile=True, autograph=False)
    whole = [x.numpy() for x in f(u)]
    for n in (1, 2, 3, 5, 7, 8, 9, 15, 17, 31, 33):
        part = [x.numpy() for x in f(u[:n])]
        np.testing.assert_array_equal(part[0], whole[0][:n])
        np.testing.assert_array_equal(part[1], whole[1][:n])


def test_graph_mode_uses_tensorflows_own_sin_and_cos():
    u = tf.constant(turns()[:1000])
    sine, cosine = tf.function(sin_cos_of_turns, autograph=False)(u)
    np.testing.assert_array_equal(sine.numpy(), tf.sin(2 * np.pi * u).numpy())
    np.testing.assert_array_equal(cosine.numpy(), tf.cos(2 * np.pi * u).numpy())
