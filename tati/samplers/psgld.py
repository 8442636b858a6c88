"""Preconditioned Stochastic Gradient Langevin Dynamics, pSGLD (Li, Chen, Carlson and Carin 2016).

SGLD with RMSprop's diagonal preconditioner: each parameter's step is scaled by the inverse of
its recent root-mean-square gradient, so that narrow and wide directions move alike. Each call,
with the gradient g = grad U~(q^n), alpha = `rmsprop_decay`, lambda = `rmsprop_epsilon`
(elementwise):

    V^n     = alpha V^{n-1} + (1 - alpha) g * g,      V^0 = 0
    G^n     = 1 / (lambda + sqrt(V^n))
    q^{n+1} = q^n - h G^n g + sqrt(2 h G^n / beta) N^n,   N^n ~ N(0, I)

Li et al.'s Algorithm 1 writes q + (eps / 2) G grad log p + N(0, eps G); with tati's SGLD
convention (drift -h grad U, noise 2 h / beta, sgld.py) eps = 2 h, and beta scales the noise for
the target exp(-beta U). V is the RMSprop average of the gradient tati's samplers receive (of
U~, the whole loss), not of the per-example mean gradient of the paper; only G's scale, hence
h's and lambda's meaning, differs.

For a G that depends on q, the dynamics dq = -G grad U dt + sqrt(2 G / beta) dW need the drift
Gamma / beta, Gamma_i = sum_j dG_ij / dq_j, to keep exp(-beta U) stationary. It is dropped, as
in the paper's own experiments: G is an exponential average over about 1 / (1 - alpha) steps
(100 at the default 0.99), so it depends on the current q only through a weight 1 - alpha and
changes slowly; Li et al.'s analysis of ignoring Gamma bounds the extra bias by a term that
vanishes with 1 - alpha, and computing Gamma would need second derivatives of U at every step.
Measured (tests/samplers/test_psgld.py, doc/samplers.md): the variance rises by about
(1 - alpha) tau / 2, tau = sigma^2 / (h G) the steps a parameter takes to decorrelate, so
small step widths want alpha nearer 1. Besides that, as SGLD: an O(h) bias
(on a Gaussian of scale sigma with G constant, the variance is sigma^2 / (1 - h G / (2 sigma^2)))
and the heat of mini-batch noise, h G V_noise / 2 per step, which nothing removes.

No momenta (the columns are SGLD's); `preconditioning` reads G per parameter. V is a slot
(`rmsprop_mean_square`, per walker with walkers, checkpointed). Not with the ensemble
preconditioner (covariance_blending): pSGLD is a preconditioner of its own.

Tuning itself (adapt_mass "noise", set with a likelihood, batch_size and no step_width, as for
SGLD): after the warm start, V starts from the mean square of the batch gradients that cover the
data (per walker), not from 0, whose first steps take G = 1 / (lambda + sqrt(1 - alpha) |g|), 10
times the settled one; and the step width is measured by SGLD's overdamped rules
(tati/adaptation/measured_width.py, 5.) in the metric s = sqrt(G) of each walker: h lambda_max(s H s)
= 0.1 and h mean(G V_noise) / (2 T) = 5%, at the start, an epoch later and after each of Stan's windows in
burn-in (samplers/mass.py), with the G of the V of then. After burn-in h is fixed; G moves on.
A metric adapted from the draws (adapt_mass true) is not pSGLD's: refused.
"""

import keras
import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.config.options import default
from tati.recording.columns import SGLD_INFO
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.mass import NOISE, AdaptedMass


@keras.saving.register_keras_serializable(package="tati")
class PSGLD(AdaptedMass, SamplerBase):
    """pSGLD; `step_width` h, `rmsprop_decay` alpha, `rmsprop_epsilon` lambda, `inverse_temperature` beta;
    `adapt_mass` "noise" starts V from the measured gradients and measures h in G's metric (above)."""

    parameters = ("inverse_temperature", "rmsprop_decay", "rmsprop_epsilon")
    has_momentum = False
    overdamped = True
    info = SGLD_INFO
    noise_mass_words = "mass 1 / G (RMSprop's) at the last of the width's {count} measurements"
    rmsprop_decay = parameter_property("rmsprop_decay", "alpha, the decay of V, the mean squared gradient.")
    rmsprop_epsilon = parameter_property("rmsprop_epsilon", "lambda, added to sqrt(V): G <= 1 / lambda.")

    def __init__(self, step_width=default("step_width"), rmsprop_decay=default("rmsprop_decay"),
                 rmsprop_epsilon=default("rmsprop_epsilon"), inverse_temperature=default("inverse_temperature"),
                 seed=default("seed"), adapt_mass=False, adaptation_steps=0, name=None, **kwargs):
        kwargs.pop("noise_mass_sizes", None)  # the noise mass's (samplers/mass.py): pSGLD's metric is RMSprop's
        super().__init__(step_width, seed, name, dict(
            kwargs, rmsprop_decay=rmsprop_decay, rmsprop_epsilon=rmsprop_epsilon,
            inverse_temperature=inverse_temperature))
        if self._parameter_values["rmsprop_decay"] >= 1:
            raise InputError(f"rmsprop_decay must be < 1, got {self._parameter_values['rmsprop_decay']!r}")
        if self.preconditioner is not None:
            raise InputError("pSGLD has a preconditioner of its own (RMSprop's); it does not take the ensemble "
                             "preconditioner: drop covariance_blending")
        if adapt_mass is True:
            raise InputError("adapt_mass true is not available with sampler pSGLD (its metric is RMSprop's own; "
                             "adapt_mass noise starts it from the measured gradients and measures the step_width)")
        self._init_mass(adapt_mass if adapt_mass == NOISE else False, adaptation_steps)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._mean_squares = [self.add_variable_from_reference(v, name="rmsprop_mean_square", initializer="zeros")
                              for v in variables]

    def _walker_state(self):
        return list(self._mean_squares)

    def _preconditioner(self, mean_square, dtype):
        """G = 1 / (lambda + sqrt(V))."""
        return 1.0 / (self._parameter("rmsprop_epsilon", dtype) + tf.sqrt(mean_square))

    @property
    def preconditioning(self):
        """G, per parameter, as the last step used it (one tensor per variable; a single tensor
        for a single variable)."""
        scales = [self._preconditioner(tf.convert_to_tensor(v), v.dtype) for v in self._mean_squares]
        return scales[0] if len(scales) == 1 else scales

    # -- tuning itself (adapt_mass noise; samplers/mass.py measures, these say in which metric) ----
    def noise_scales(self, gradients):
        """numpy: each walker's s = sqrt(G) of V = the mean square of K batch gradients [K, W, d] (or
        [K, d]), as the first measurement in the loop sets V."""
        epsilon = self._parameter_values["rmsprop_epsilon"]
        return 1.0 / np.sqrt(epsilon + np.sqrt(np.mean(np.square(gradients), axis=0)))

    def _set_noise_metric(self, means, variances, count):
        """At the first measurement V = the gradients' mean square (mean^2 + variance (K - 1) / K,
        K = the measurement's batches); later V is RMSprop's own. The reported scales (metric_scales)
        are the walkers' mean sqrt(G) the width is measured in."""
        first = tf.equal(self._noise_measurements, 0)
        count = tf.cast(count, tf.float64)
        for slot, mean, variance, scale in zip(self._mean_squares, means, variances, self._scales):
            measured = tf.cast(tf.square(mean) + variance * (count - 1.0) / count, slot.dtype)
            slot.assign(tf.where(first, measured, tf.convert_to_tensor(slot)))
            root = tf.sqrt(self._preconditioner(tf.convert_to_tensor(slot), slot.dtype))
            mean_root = tf.reduce_mean(root, axis=0) if self._walkers is not None else root
            scale.assign(tf.reshape(mean_root, scale.shape))

    def _metric_vector(self, rows):
        """Each walker's sqrt(G), [rows, d]."""
        return tf.concat([tf.reshape(tf.sqrt(tf.cast(self._preconditioner(tf.convert_to_tensor(v), v.dtype),
                                                     tf.float64)), [rows, -1]) for v in self._mean_squares], 1)

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        alpha = self._parameter("rmsprop_decay", variable.dtype)
        slot = self._mean_squares[self._get_variable_index(variable)]
        mean_square = alpha * tf.convert_to_tensor(slot) + (1.0 - alpha) * tf.square(gradient)
        slot.assign(mean_square)
        scale = self._preconditioner(mean_square, variable.dtype)
        noise = tf.sqrt(2.0 * h * scale / beta) * self._normal(variable)
        variable.assign(tf.convert_to_tensor(variable) - h * scale * gradient + noise)
        self._report(None, None, noise)
