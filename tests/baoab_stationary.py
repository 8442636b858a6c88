"""Exact stationary <q^2> of the discrete BAOAB chain on U(q) = 2 log cosh q (unit mass, beta = 1).

Why: BAOAB's error of <q^2> on this target is about 1e-3, so Monte Carlo needs some 1e10
samples to measure it well. The invariant density of the discrete chain, however, can be
computed deterministically; tests/samplers/test_order.py compares tati's BAOAB with it (as the
exact-covariance tests compare with the discrete Lyapunov equation on Gaussians) and checks
the order claims on the chain itself, free of Monte Carlo noise.

One step from (q, p), alpha = exp(-gamma h), G ~ N(0, 1):

    B: p -= h/2 U'(q)   A: q += h/2 p   O: p = alpha p + sqrt(1 - alpha^2) G   A   B

`q2(h, gamma)` uses one of two methods (both spectrally accurate, so coarse grids suffice):

* Any gamma, `transfer`: the density on a periodic (q, p) grid is pushed through the step
  until it stops changing (power iteration). B and A are shears, i.e. every grid line is shifted
  by a constant, done exactly by FFT phase factors; O is the Gaussian kernel along p, applied
  by trapezoid quadrature (one matrix product).
* gamma = infinity (alpha = 0, momentum fully resampled; gamma h >= 40 is the same to double
  precision), `overdamped`: the position x at the O step is a Markov chain on its own,
  y = x + (h/2) R with R ~ N(0, 1), x' = c(y) - x with c(y) = 2y - (h^2/2) U'(y), so
  x' has density K(x, x') = N(y; x, h^2/4) / c'(y) at y = c^{-1}(x + x') (c' >= 2 - h^2 > 0).
  Nystrom (trapezoid) discretisation, stationary vector by one linear solve; the position at
  the step boundary is y, so <q^2> = <x^2> + h^2 / 4.

Accuracy: on the grids below both agree within 1e-8 with an independent computation on grids
twice as fine and wider (dq = dp = 0.05 on [-16, 16) x [-10, 10)), whose values are kept in
FINE; `check()` also verifies both methods on U = q^2 / 2, where BAOAB's positions are exactly
N(0, 1) at any step width, and against each other at h = 0.8, gamma = infinity.
About 0.1-1 s per value.
"""

import functools
import math

import numpy as np

EXACT = math.pi ** 2 / 12   # <q^2> under exp(-2 log cosh q): the logistic distribution, scale 1/2


def log_cosh():
    """U, U', U'' of U(q) = 2 log cosh q."""
    return (lambda q: 2.0 * np.log(np.cosh(q)), lambda q: 2.0 * np.tanh(q),
            lambda q: 2.0 / np.cosh(q) ** 2)


def harmonic():
    """U, U', U'' of U(q) = q^2 / 2."""
    return lambda q: 0.5 * q * q, lambda q: q, lambda q: np.ones_like(q)


# <q^2>_h - pi^2 / 12 from the fine grids (accurate to about 1e-9), keyed by (h, gamma).
FINE = {(0.3, 1.0): -8.79546e-4, (0.4, 1.0): -1.6034310e-3, (0.5, 1.0): -2.548064e-3,
        (0.6, 1.0): -3.611945e-3, (0.8, 1.0): -4.6422623e-3, (0.4, 20.0): -1.772386e-4,
        (0.3, math.inf): -5.63378e-5, (0.4, math.inf): -1.770220e-4,
        (0.5, math.inf): -4.243994e-4, (0.6, math.inf): -8.446454e-4,
        (0.8, math.inf): -2.1368576e-3}


def _shift(f, shifts, spacing, axis):
    """g(x) = f(x - s) along `axis` (periodic, band-limited), one shift s per line of the other axis."""
    k = 2.0 * np.pi * np.fft.rfftfreq(f.shape[axis], spacing)
    phase = np.exp(-1j * (np.outer(k, shifts) if axis == 0 else np.outer(shifts, k)))
    return np.fft.irfft(np.fft.rfft(f, axis=axis) * phase, n=f.shape[axis], axis=axis)


def transfer(h, gamma, potential=log_cosh, dq=0.2, nq=128, dp=0.2, np_=80, tol=1e-13):
    """Stationary <q^2> of BAOAB at any friction, by the transfer operator on a (q, p) grid."""
    energy, force, _ = potential()
    q = dq * (np.arange(nq) - nq // 2)
    p = dp * (np.arange(np_) - np_ // 2)
    alpha = math.exp(-gamma * h)
    variance = 1.0 - alpha * alpha
    # O: rho(q, p_i) <- sum_j dp rho(q, p_j) N(p_i; alpha p_j, 1 - alpha^2)
    ou = dp * np.exp(-(p[None, :] - alpha * p[:, None]) ** 2 / (2 * variance)) / math.sqrt(2 * math.pi * variance)
    kick, drift = -0.5 * h * force(q), 0.5 * h * p
    rho = np.exp(-energy(q)[:, None] - 0.5 * p[None, :] ** 2)   # start at the target
    weight = (q * q)[:, None]
    last = math.inf
    for _ in range(20000):
        rho = _shift(rho, kick, dp, 1)                         # B: p -= h/2 U'(q)
        rho = _shift(rho, drift, dq, 0)                        # A: q += h/2 p
        rho = rho @ ou                                         # O
        rho = _shift(rho, drift, dq, 0)                        # A
        rho = _shift(rho, kick, dp, 1)                         # B
        rho /= rho.sum()
        value = (weight * rho).sum()
        if abs(value - last) < tol:
            return value
        last = value
    raise RuntimeError(f"no convergence at h={h}, gamma={gamma}")


def overdamped(h, potential=log_cosh, length=14.0, dx=0.1):
    """Stationary <q^2> of BAOAB at infinite friction, by the Nystrom method on the O-step positions."""
    _, force, curvature = potential()
    n = int(round(2 * length / dx)) + 1
    x = np.linspace(-length, length, n)
    total = x[:, None] + x[None, :]                            # x + x'
    y = total / 2
    for _ in range(50):                                        # Newton: c(y) = x + x'
        y -= (2 * y - 0.5 * h * h * force(y) - total) / (2 - 0.5 * h * h * curvature(y))
    variance = h * h / 4
    kernel = (np.exp(-(y - x[:, None]) ** 2 / (2 * variance)) / math.sqrt(2 * math.pi * variance)
              / (2 - 0.5 * h * h * curvature(y)))              # kernel[i, j] = K(x_i, x_j)
    w = np.full(n, dx)
    w[[0, -1]] /= 2
    # rho_j = sum_i w_i rho_i K(x_i, x_j), with the last equation replaced by sum_i w_i rho_i = 1
    system = (w[:, None] * kernel).T - np.eye(n)
    system[-1] = w
    rho = np.linalg.solve(system, np.eye(n)[-1])
    return (w * x * x * rho).sum() + variance


@functools.lru_cache(maxsize=None)
def q2(h, gamma):
    """Exact stationary <q^2> of BAOAB on 2 log cosh q (gamma h >= 40 counts as infinite friction)."""
    return overdamped(h) if gamma * h >= 40 else transfer(h, gamma)


def error(h, gamma):
    """<q^2>_h - pi^2 / 12 of the discrete chain."""
    return q2(h, gamma) - EXACT


def check():
    """Self-check: exact answers on the harmonic oscillator, the two methods against each other,
    and the grids used here against FINE."""
    for value in (transfer(0.4, 1.0, harmonic), transfer(0.8, math.inf, harmonic),
                  overdamped(0.4, harmonic), overdamped(0.8, harmonic)):
        assert abs(value - 1.0) < 1e-9, value
    assert abs(transfer(0.8, math.inf) - overdamped(0.8)) < 1e-8
    for (h, gamma), fine in FINE.items():
        assert abs(error(h, gamma) - fine) < 1e-8, (h, gamma, error(h, gamma), fine)


if __name__ == "__main__":
    check()
    for (h, gamma), fine in sorted(FINE.items()):
        print(f"h={h} gamma={gamma}: {error(h, gamma):+.10f} (fine grid {fine:+.7e})")
