"""Ensemble preconditioning (Matthews, Weare and Leimkuhler 2018): walkers share what they
know of the target's shape.

For walker i, C_i is the covariance of the *other* walkers' positions, M_i = I + eta C_i with
eta = `covariance_blending`, and B_i its lower Cholesky factor (B_i B_i^T = M_i). The
Langevin dynamics of walker i become

    dq_i = B_i p_i dt,   dp_i = -B_i^T grad U(q_i) dt - gamma p_i dt + sqrt(2 gamma / beta) dW

(overdamped, SGLD: dq_i = -M_i grad U dt + sqrt(2 / beta) B_i dW). Since B_i does not depend
on q_i, the flows stay volume-preserving and energy-conserving in their Hamiltonian part, so
the product of the walkers' targets stays invariant; in the coordinates q = B_i x each step is
the unpreconditioned scheme on U(B_i x), so BAOAB keeps its exact Gaussian positions. Momenta
stay N(0, I / beta) (the kinetic energy is 1/2 |p|^2). B is recomputed every
`covariance_after_steps` steps and held fixed in between.

C_i needs at least 3 walkers. A factorisation that is not finite (it cannot fail in exact
arithmetic, since M_i >= I, but can in floating point) halves eta and is counted.
"""

import tensorflow as tf


def leave_one_out_covariance(theta):
    """[W, d, d]: for each walker the covariance of the other W - 1 walkers' positions."""
    walkers = tf.cast(tf.shape(theta)[0], theta.dtype)
    total = tf.reduce_sum(theta, axis=0)
    outer_sum = tf.einsum("wi,wj->ij", theta, theta)
    others_mean = (total[None] - theta) / (walkers - 1.0)
    scatter = outer_sum[None] - tf.einsum("wi,wj->wij", theta, theta)
    return (scatter - (walkers - 1.0) * tf.einsum("wi,wj->wij", others_mean, others_mean)) / (walkers - 2.0)


def preconditioner(theta, eta):
    """(B [W, d, d], finite): Cholesky factors of I + eta C_i, computed in float64."""
    covariance = leave_one_out_covariance(tf.cast(theta, tf.float64))
    eye = tf.eye(tf.shape(theta)[1], dtype=tf.float64)
    factor = tf.linalg.cholesky(eye[None] + tf.cast(eta, tf.float64) * covariance)
    return factor, tf.reduce_all(tf.math.is_finite(factor))


class Ensemble:
    """The walkers' shared state: B (the sampler's `preconditioner`), eta, and the refresh that
    runs inside the compiled loop every `every` steps (collapsing walkers first if asked)."""

    def __init__(self, walkers, dimension, eta, every, collapse):
        self.every, self.collapse, self.blending = every, collapse, eta > 0
        self.matrix = tf.Variable(tf.eye(dimension, batch_shape=[walkers], dtype=tf.float64),
                                  trainable=False, name="ensemble_preconditioner")
        self.eta = tf.Variable(tf.constant(eta, tf.float64), trainable=False, name="covariance_blending")
        self.failures = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="cholesky_failures")

    def maybe_refresh(self, theta, step):
        """At steps that are multiples of `every`: reset walkers to walker 0 (collapse), then
        recompute B from the positions, halving eta instead if the factor is not finite."""

        def refresh():
            if self.collapse:
                theta.assign(tf.broadcast_to(theta[:1], tf.shape(theta)))
            if self.blending:
                factor, finite = preconditioner(theta, self.eta)

                def accept():
                    self.matrix.assign(factor)
                    return tf.constant(0, tf.int64)

                def reduce():
                    self.eta.assign(self.eta / 2.0)
                    return tf.constant(1, tf.int64)

                self.failures.assign_add(tf.cond(finite, accept, reduce))
            return tf.constant(0)

        tf.cond(tf.equal(step % self.every, 0), refresh, lambda: tf.constant(0))
