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
With an adapted diagonal metric (samplers/mass.py; adapt_mass noise: the scales s from the
mini-batch gradient noise) the same step in z = q / s:
q^{n+1} = q^n - h s^2 grad U(q^n) + sqrt(2 h / beta) s G^n,
whose width measure_step_width sets by the overdamped rules (tati/adaptation/measured_width.py, 5.),
so that with a likelihood and batch_size SGLD tunes itself as the samplers with momenta do.
"""

import keras
import tensorflow as tf

from tati.config.options import default
from tati.recording.columns import SGLD_INFO
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase
from tati.samplers.mass import AdaptedMass


@keras.saving.register_keras_serializable(package="tati")
class SGLD(AdaptedMass, SamplerBase):
    """SGLD; `step_width` h and `inverse_temperature` beta; `adapt_mass` with `adaptation_steps`
    adapts a diagonal metric during them (samplers/mass.py)."""

    parameters = ("inverse_temperature",)
    has_momentum = False
    overdamped = True
    info = SGLD_INFO

    def __init__(self, step_width=default("step_width"), inverse_temperature=default("inverse_temperature"),
                 seed=default("seed"), adapt_mass=default("adapt_mass"), adaptation_steps=0,
                 noise_mass_sizes=(1.0, 1.0), name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(kwargs, inverse_temperature=inverse_temperature))
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        noise = tf.sqrt(2.0 * h / beta) * self._normal(variable)
        drift = self._scaled_velocity(self._scaled_force(gradient, variable), variable)  # M grad U, M = B B^T s^2
        variable.assign(splitting.kick(tf.convert_to_tensor(variable), drift, h) + self._scaled_velocity(noise, variable))
        self._report(None, None, noise)
