"""The metric from a window's draws: Welford's running moments, diagonal and dense, and what
a window's end makes of them.

Running moments: count, mean and sum of squared deviations (dense: of outer products of
deviations), each batch of draws (one per walker) added by Chan et al.'s pairwise
combination, equal to numpy's var / cov of all draws.

Diagonal (NUTS, RWMH, the Langevin samplers): the variance of the window's draws, pooled over
walkers and shrunk towards 1e-3 times the last window's (`variance_scale`), becomes the squared
scale s^2 of each coordinate; the kernel then moves z = theta / s, which is the same as giving
the momenta the mass matrix diag(1 / s^2). Dense (metric="dense"): the Cholesky factor of the
draws' covariance, regularised as Stan's dense_e (`dense_factor`). HMC's windows collect the
legs' starts with their gradients and estimate each scale by the diagonal metric that minimises
the Fisher divergence (`fisher_scale`; Seyboldt, Carlson & Carpenter, as nutpie):

    s_i^4 = var(theta_i) / var(beta dU/dtheta_i),

exact for a Gaussian target with a diagonal covariance from any draws of distinct gradients,
also from draws still on their way from dispersed starts, which the variance of the draws is
not: on a linear regression with predictors on scales 1 and 1000 (tools/benchmark_adapted.py,
model 4) a burn-in of 10,000 steps holds about 18 legs before any metric (legs of about 1000
steps at the width the slope's sd of 7e-5 allows), and the chains were still far from the
posterior at its end (R-hat 1.9); with a first window of 3 legs by 30% of it and this estimate,
the slope's scale came out as its sd (the other two 7-9 times too small, from draws far off the
posterior and correlated with the slope; right after the next windows), and the walkers reached
the posterior by half of the burn-in. After a window, HMC's restarts divide the width by the
smallest growth of a scale (new s / old s) and the leg length by the largest; for the dense
metric these are the extreme singular values of L_old^-1 L_new (`extreme_growths`).
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import states

# Stan's regularisation: (n / (n + 5)) C + 1e-3 (5 / (n + 5)) times the previous window's.
VARIANCE_SHRINK, VARIANCE_FLOOR = 5.0, 1e-3
# HMC's restarts after a dense metric's window take the extreme singular values of
# L_old^-1 L_new from this many power iterations: an SVD would cost seconds of XLA compilation
# in every run for a number the restarts need only roughly.
POWER_ITERATIONS = 30


class Welford(NamedTuple):
    """Running moments of the draws (float64): their count (scalar), mean [...] and sum of
    squared deviations [...] (diagonal) or of outer products of deviations [d, d] (dense)."""
    count: tf.Tensor
    mean: tf.Tensor
    m2: tf.Tensor


def init(shape, dense=False):
    """No draws yet, for draws of `shape` (dense: [d], its m2 [d, d])."""
    zeros = tf.zeros(shape, tf.float64)
    m2 = tf.zeros(list(shape) * 2, tf.float64) if dense else zeros
    return Welford(tf.constant(0.0, tf.float64), zeros, m2)


def update(state, draws):
    """The diagonal moments after adding the rows of `draws` [n, ...] (Chan et al.'s pairwise
    combination)."""
    draws = tf.cast(draws, tf.float64)
    n = tf.cast(tf.shape(draws)[0], tf.float64)
    batch_mean = tf.reduce_mean(draws, axis=0)
    batch_m2 = tf.reduce_sum(tf.square(draws - batch_mean), axis=0)
    total = state.count + n
    delta = batch_mean - state.mean
    return Welford(total, state.mean + delta * n / total,
                   state.m2 + batch_m2 + tf.square(delta) * state.count * n / total)


def update_dense(state, draws):
    """The dense moments after adding the rows of `draws` [n, d]."""
    draws = tf.cast(draws, tf.float64)
    n = tf.cast(tf.shape(draws)[0], tf.float64)
    batch_mean = tf.reduce_mean(draws, axis=0)
    centred = draws - batch_mean
    total = state.count + n
    delta = batch_mean - state.mean
    m2 = (state.m2 + tf.matmul(centred, centred, transpose_a=True)
          + delta[:, None] * delta[None, :] * state.count * n / total)
    return Welford(total, state.mean + delta * n / total, m2)


select = states.select


def variance_scale(state, previous):
    """The scale s = sqrt(variance) of the collected draws, shrunk towards VARIANCE_FLOOR times
    the previous window's variance `previous`^2 (1 at first, where this is Stan's rule). Stan
    shrinks towards 1e-3 itself, which holds a parameter of standard deviation 1e-4 (a
    coefficient of a predictor on a scale of 1000) at a scale 20 times too wide after a window
    of some thousand draws; relative to the last window, each window narrows it a thousandfold
    more until the draws' variance dominates."""
    count = state.count
    variance = state.m2 / tf.maximum(count - 1.0, 1.0)
    shrunk = (count / (count + VARIANCE_SHRINK)) * variance + VARIANCE_FLOOR * tf.square(previous) * (
        VARIANCE_SHRINK / (count + VARIANCE_SHRINK))
    return tf.sqrt(shrunk)


def dense_factor(state, previous_cholesky):
    """(centre, L): the collected draws' mean and the Cholesky factor of their covariance C,
    regularised as Stan's, (n / (n + 5)) C + 1e-3 (5 / (n + 5)) D, with D the previous metric's
    variances (diag(L_prev L_prev^T) of its factor `previous_cholesky`, 1 at first, where this
    is Stan's rule) as the diagonal metric's shrinkage is relative to the last window's."""
    previous_variance = tf.reduce_sum(tf.square(previous_cholesky), axis=1)
    covariance = state.m2 / tf.maximum(state.count - 1.0, 1.0)
    weight = VARIANCE_SHRINK / (state.count + VARIANCE_SHRINK)
    shrunk = (1.0 - weight) * covariance + tf.linalg.diag(VARIANCE_FLOOR * weight * previous_variance)
    return state.mean, tf.linalg.cholesky(0.5 * (shrunk + tf.transpose(shrunk)))


def fisher_scale(m2, gradient_m2, previous):
    """The scale s = (var theta / var beta grad U)^(1/4) from the sums of squared deviations of
    a window's draws `m2` and of their gradients times beta `gradient_m2` (same count): the
    diagonal metric that minimises the Fisher divergence (Seyboldt, Carlson & Carpenter; nutpie).
    For a Gaussian of diagonal covariance, beta grad U = Sigma^-1 (theta - mu), so the ratio is
    sigma^4 from any draws; for a correlated one it lies between the marginal and the conditional
    variance. `previous` where either variance is 0 (a parameter that did not move, or one the
    loss does not depend on) or the ratio is not finite."""
    ratio = m2 / gradient_m2
    known = tf.math.is_finite(ratio) & (ratio > 0.0)
    return tf.where(known, tf.sqrt(tf.sqrt(tf.where(known, ratio, 1.0))), tf.cast(previous, ratio.dtype))


def extreme_growths(previous, cholesky):
    """(smallest, largest) singular value of M = L_old^-1 L_new (`previous` L_old and `cholesky`
    L_new, float64 [d, d] lower triangular): the least and the most a direction of the new
    coordinates z_new is stretched in the old ones (q = c_old + L_old z_old = c_new + L_new
    z_new), the dense metric's counterpart of the smallest and largest growth new s / old s
    (for diagonal factors they are the same). The largest by power iteration on M^T M from a
    fixed start, |M v| after POWER_ITERATIONS steps v <- M^T M v / |M^T M v|; the smallest as
    1 / the largest of M^-1 = L_new^-1 L_old. Each estimate approaches its value from inside."""
    d = tf.shape(cholesky)[0]
    start = tf.linspace(tf.constant(1.0, tf.float64), 2.0, d)  # not orthogonal to any axis

    def largest(matrix):
        def power_step(i, v):
            w = tf.linalg.matvec(matrix, tf.linalg.matvec(matrix, v), transpose_a=True)
            return i + 1, w / tf.norm(w)
        _, v = tf.while_loop(lambda i, v: i < POWER_ITERATIONS, power_step, (0, start / tf.norm(start)))
        return tf.norm(tf.linalg.matvec(matrix, v))

    stretch = tf.linalg.triangular_solve(previous, cholesky, lower=True)
    shrink = tf.linalg.triangular_solve(cholesky, previous, lower=True)
    return 1.0 / largest(shrink), largest(stretch)


def pack(state):
    """Diagonal moments of draws [d] as the float64 vector [1 + 2d] the variables hold
    (`metric_draws`: count, mean, m2)."""
    return tf.concat([[state.count], state.mean, state.m2], 0)


def unpack(vector):
    vector = tf.convert_to_tensor(vector)
    d = (tf.shape(vector)[0] - 1) // 2
    return Welford(vector[0], vector[1:1 + d], vector[1 + d:])


def pack_dense(state):
    """Dense moments as the float64 vector [1 + d + d^2] (count, mean, m2 row by row)."""
    return tf.concat([[state.count], state.mean, tf.reshape(state.m2, [-1])], 0)


def unpack_dense(vector, d):
    vector = tf.convert_to_tensor(vector)
    return Welford(vector[0], vector[1:1 + d], tf.reshape(vector[1 + d:], [d, d]))
