"""Stochastic Gradient Langevin Dynamics (Welling and Teh 2011).

Euler-Maruyama discretisation of the overdamped Langevin dynamics
dq = -grad U(q) dt + sqrt(2 / beta) dW, with step width h:

    q^{n+1} = q^n - h grad U(q^n) + sqrt(2 h / beta) G^n,   G^n ~ N(0, I)

The gradient is not scaled by beta (as in the original TATi); the target is exp(-beta U),
reached with an O(h) bias. On U = q^2 / (2 sigma^2) with gradient noise of variance V the
stationary variance is sigma^2 (1 + h V / 2) / (1 - h / (2 sigma^2)) at beta = 1.
No momenta: scaled_noise is |sqrt(2 h / beta) G|, the kinetic energy is not reported.
With the ensemble preconditioner B (ensemble.py), M = B B^T:
q^{n+1} = q^n - h M grad U(q^n) + sqrt(2 h / beta) B G^n.
"""

import keras
import tensorflow as tf

from tati.config.options import default
from tati.recording.columns import SGLD_INFO
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase


@keras.saving.register_keras_serializable(package="tati")
class SGLD(SamplerBase):
    """SGLD; `step_width` h and `inverse_temperature` beta."""

    parameters = ("inverse_temperature",)
    has_momentum = False
    info = SGLD_INFO

    def __init__(self, step_width=default("step_width"), inverse_temperature=default("inverse_temperature"),
                 seed=default("seed"), name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(kwargs, inverse_temperature=inverse_temperature))

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        noise = tf.sqrt(2.0 * h / beta) * self._normal(variable)
        drift = self._velocity(self._force(gradient))  # M grad U, M = B B^T
        variable.assign(splitting.kick(tf.convert_to_tensor(variable), drift, h) + self._velocity(noise))
        self._report(None, None, noise)
