"""Stochastic Gradient Hamiltonian Monte Carlo (Chen, Fox and Guestrin 2014).

Chen et al.'s update with step eps, mass M, friction C and gradient-noise estimate B-hat:

    theta^{n+1} = theta^n + eps M^{-1} r^n
    r^{n+1} = r^n - eps grad U~(theta^{n+1}) - eps C M^{-1} r^n + N(0, 2 (C - B-hat) eps)

Each call receives grad U~ at the current theta, so it performs the momentum update first and
then the position update (the same scheme, cyclically shifted):

    r <- (1 - eps C / M) r - eps grad U~(theta^n) + sqrt(2 eps (C / beta - B-hat)) G
    theta^{n+1} = theta^n + eps r / M

Mapping onto the Langevin parameters: eps = step_width, C = friction_constant (friction per
unit time for unit mass), M = mass, beta = inverse_temperature (Chen et al. have beta = 1),
B-hat = noise_estimate, with B-hat = eps V / 2 for gradient noise of variance V; it is
constant here and must stay below C / beta. The friction step is Euler's, so eps C / M < 2 is
needed for stability. Target: exp(-beta (U(theta) + |r|^2 / 2M)), with O(eps) bias.
Reported momentum: r^n, the momentum the call starts from; kinetic energy |r|^2 / 2M.
With the ensemble preconditioner B (ensemble.py) the kick uses B^T grad U and the drift B r.
"""

import math

import keras
import tensorflow as tf

from tati.errors import InputError
from tati.options import default
from tati.samplers import splitting
from tati.samplers.base import SamplerBase, parameter_property


@keras.saving.register_keras_serializable(package="tati")
class SGHMC(SamplerBase):
    """SGHMC; `step_width` eps, `friction_constant` C, `mass` M, `noise_estimate` B-hat."""

    parameters = ("inverse_temperature", "friction_constant", "mass", "noise_estimate")
    friction_constant = parameter_property("friction_constant", "C, the friction.")
    mass = parameter_property("mass", "M, the scalar mass of the momenta.")
    noise_estimate = parameter_property("noise_estimate", "B-hat, the gradient-noise estimate.")

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), mass=default("mass"),
                 noise_estimate=default("noise_estimate"), seed=default("seed"), name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, friction_constant=friction_constant, inverse_temperature=inverse_temperature,
            mass=mass, noise_estimate=noise_estimate))
        values = self._parameter_values
        limit = values["friction_constant"] / values["inverse_temperature"]
        if values["noise_estimate"] > 0 and values["noise_estimate"] >= limit:
            raise InputError(f"noise_estimate {values['noise_estimate']} must be below "
                             "friction_constant / inverse_temperature")

    def initial_momentum_scale(self):
        return math.sqrt(self._parameter_values["mass"] / self._parameter_values["inverse_temperature"])

    def update_step(self, gradient, variable, learning_rate):
        eps = tf.cast(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        friction = self._parameter("friction_constant", variable.dtype)
        mass = self._parameter("mass", variable.dtype)
        b_hat = self._parameter("noise_estimate", variable.dtype)
        momentum = self._momentum(variable)
        q, r = tf.convert_to_tensor(variable), tf.convert_to_tensor(momentum)
        noise = tf.sqrt(2.0 * eps * tf.maximum(friction / beta - b_hat, 0.0)) * self._normal(variable)
        r_new = splitting.kick(splitting.ornstein_uhlenbeck(r, 1.0 - eps * friction / mass, noise),
                               self._force(gradient), eps)
        variable.assign(splitting.drift(q, self._velocity(r_new) / mass, eps))
        momentum.assign(r_new)
        self._report(q, r, noise, mass)
