"""Ensemble preconditioning (Matthews, Weare and Leimkuhler 2018): walkers share what they
know of the target's shape.

The walkers are split into two halves (even and odd `id`) that take turns: for
`covariance_after_steps` steps one half moves while the other stands still, then they swap.
For a moving walker i, C is the covariance of the standing half's positions, M = I + eta C
with eta = `covariance_blending`, and B its lower Cholesky factor (B B^T = M). Its Langevin
dynamics become

    dq_i = B p_i dt,   dp_i = -B^T grad U(q_i) dt - gamma p_i dt + sqrt(2 gamma / beta) dW

(overdamped, SGLD: dq_i = -M grad U dt + sqrt(2 / beta) B dW). While a half moves, B depends
only on walkers that do not move, so each moving walker runs the unpreconditioned scheme in
the coordinates q = B x (the flows stay volume-preserving, BAOAB keeps its exact Gaussian
positions) and the product of the walkers' targets stays invariant. Moving all walkers at once
with B from the other walkers' moving positions is not: a walker's B then comes to depend on
positions correlated with its own, which measurably shrank the sampled variance with fewer
walkers than parameters (doc/benchmarks.md). Momenta stay N(0, I / beta) (kinetic energy
1/2 |p|^2). The price: each walker moves half of the steps.

With `covariance_blocks` = layers, B is block-diagonal: one factor per weight or bias tensor
of the network, from the covariance of that tensor's coordinates only; the argument above
holds block by block. Needs at least 4 walkers (2 per half). A factorisation that is not finite (it cannot fail in
exact arithmetic, since M >= I, but can in floating point) halves eta and is counted.
"""

import numpy as np
import tensorflow as tf


def standing_covariance(theta, standing):
    """[d, d]: the covariance of the positions of the walkers where `standing` is true."""
    weights = tf.cast(standing, theta.dtype)[:, None]
    count = tf.reduce_sum(weights)
    mean = tf.reduce_sum(weights * theta, axis=0) / count
    centred = (theta - mean) * weights
    return tf.einsum("wi,wj->ij", centred, centred) / (count - 1.0)


def preconditioner(theta, eta, standing):
    """(B, finite): the Cholesky factor [d, d] of I + eta C in float64, C the covariance of the
    standing walkers' positions."""
    covariance = standing_covariance(tf.cast(theta, tf.float64), standing)
    eye = tf.eye(tf.shape(theta)[1], dtype=tf.float64)
    factor = tf.linalg.cholesky(eye + tf.cast(eta, tf.float64) * covariance)
    return factor, tf.reduce_all(tf.math.is_finite(factor))


class Ensemble:
    """The walkers' shared state: B (applied by `force` and `velocity`, which the sampler
    calls), which half moves (the sampler's `moving`), eta, and the refresh that runs inside
    the compiled loop every `every` steps (collapsing walkers first if asked).

    `blocks` None: one B of all d parameters. Otherwise a partition of the parameter indices
    into blocks (covariance_blocks = layers): B is block-diagonal, one Cholesky factor of
    I + eta C_b per block b from the covariance C_b of that block's coordinates only.
    """

    def __init__(self, walkers, dimension, eta, every, collapse, blocks=None):
        self.every, self.collapse, self.blending = every, collapse, eta > 0
        self.blocks = None if blocks is None else [tf.constant(b, tf.int32) for b in blocks]
        sizes = [dimension] if blocks is None else [len(b) for b in blocks]
        # One B for all walkers: the moving half shares it, and the standing half does not use it.
        self.matrices = [tf.Variable(tf.eye(size, dtype=tf.float64), trainable=False,
                                     name="ensemble_preconditioner") for size in sizes]
        if blocks is not None:  # from the blocks' concatenation back to the parameters' order
            self._inverse = tf.constant(np.argsort(np.concatenate(blocks)), tf.int32)
        self.moving = tf.Variable(tf.ones([walkers], tf.bool), trainable=False, name="moving_walkers")
        self.parity = tf.range(walkers) % 2
        self.eta = tf.Variable(tf.constant(eta, tf.float64), trainable=False, name="covariance_blending")
        self.failures = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="cholesky_failures")
        # False for a replica's share of a distributed run: the whole run's ensemble is refreshed
        # between the replicas' calls (tati/engine/distribute.py), and each share takes its part.
        self.refresh_in_loop = True

    def _apply(self, equation, values):
        if self.blocks is None:
            return tf.einsum(equation, tf.cast(self.matrices[0], values.dtype), values)
        parts = [tf.einsum(equation, tf.cast(matrix, values.dtype), tf.gather(values, block, axis=1))
                 for matrix, block in zip(self.matrices, self.blocks)]
        return tf.gather(tf.concat(parts, axis=1), self._inverse, axis=1)

    def force(self, gradient):
        """B^T grad U per walker, [W, d]."""
        return self._apply("ji,wj->wi", gradient)

    def velocity(self, momentum):
        """B p per walker, [W, d]."""
        return self._apply("ij,wj->wi", momentum)

    def maybe_refresh(self, theta, step):
        """At steps that are multiples of `every`: reset walkers to walker 0 (collapse), then
        let the other half move with B from the now standing half's positions, halving eta
        instead if a factor is not finite."""
        if not self.refresh_in_loop:
            return

        def refresh():
            if self.collapse:
                theta.assign(tf.broadcast_to(theta[:1], tf.shape(theta)))
            if self.blending:
                half = tf.cast((step // self.every) % 2, tf.int32)
                moving = tf.equal(self.parity, half)
                standing = tf.logical_not(moving)
                blocks = [None] if self.blocks is None else self.blocks
                factors = [preconditioner(theta if block is None else tf.gather(theta, block, axis=1),
                                          self.eta, standing) for block in blocks]
                finite = tf.reduce_all(tf.stack([ok for _, ok in factors]))
                self.moving.assign(moving)

                def accept():
                    for matrix, (factor, _) in zip(self.matrices, factors):
                        matrix.assign(factor)
                    return tf.constant(0, tf.int64)

                def reduce():
                    self.eta.assign(self.eta / 2.0)
                    return tf.constant(1, tf.int64)

                self.failures.assign_add(tf.cond(finite, accept, reduce))
            return tf.constant(0)

        tf.cond(tf.equal(step % self.every, 0), refresh, lambda: tf.constant(0))
