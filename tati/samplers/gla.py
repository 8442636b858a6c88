"""Geometric Langevin Algorithms (Leimkuhler 2015, section 2.2.3): GLA1 (BAO) and GLA2
(BABO, run in the cyclic form BOBA).

A first-order splitting of the Langevin dynamics into its Hamiltonian part and its
Ornstein-Uhlenbeck part O (alpha = exp(-gamma h), noise sqrt((1 - alpha^2) / beta) G).

GLA1, one step of width h from (q^n, p^n), first order:
    B: p' = p^n - h grad U(q^n)
    A: q^{n+1} = q^n + h p'
    O: p^{n+1} = alpha p' + sqrt((1 - alpha^2) / beta) G
Reported momentum: p^n, the momentum the step starts from.

GLA2, BABO, second order for the Hamiltonian part:
    B: p' = p^n - h/2 grad U(q^n)
    A: q^{n+1} = q^n + h p'
    B: p'' = p' - h/2 grad U(q^{n+1})
    O: p^{n+1} = alpha p'' + sqrt((1 - alpha^2) / beta) G
The second B needs grad U(q^{n+1}), which arrives with the next call; so each call performs
B O B A with its one gradient grad U(q^n): the first B and the O complete the previous step
(giving p^n), then B and A start the current one. The kinetic energy is taken after O: it is
that of p^n, paired with q^n.

Target: exp(-beta (U(q) + |p|^2 / 2)), with O(h) bias for GLA1 and O(h^2) for GLA2.
With the ensemble preconditioner B (ensemble.py) the kicks use B^T grad U and the drifts B p.
GLA1 and GLA2 take an adapted diagonal mass (samplers/mass.py): kicks s grad U, drifts s p, p whitened.
"""

import keras
import tensorflow as tf

from tati.config.options import default
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.mass import AdaptedMass


class _GLA(SamplerBase):
    parameters = ("inverse_temperature", "friction_constant")
    fixed_friction = True
    friction_constant = parameter_property("friction_constant", "gamma, the friction per unit time.")

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, friction_constant=friction_constant, inverse_temperature=inverse_temperature))

    def _thermostat(self, variable, h):
        """(alpha, noise) of this step's O part."""
        beta = self._parameter("inverse_temperature", variable.dtype)
        alpha = splitting.ou_alpha(self._parameter("friction_constant", variable.dtype), h)
        return alpha, splitting.ou_noise_scale(alpha, beta) * self._normal(variable)


@keras.saving.register_keras_serializable(package="tati")
class GLA1(AdaptedMass, _GLA):
    """First-order Geometric Langevin Algorithm, B A O; `adapt_mass` with `adaptation_steps`
    adapts a diagonal mass during them (samplers/mass.py)."""

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 adapt_mass=default("adapt_mass"), adaptation_steps=0, noise_mass_sizes=(1.0, 1.0),
                 name=None, **kwargs):
        super().__init__(step_width, friction_constant, inverse_temperature, seed, name, **kwargs)
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        momentum = self._momentum(variable)
        q, p = tf.convert_to_tensor(variable), tf.convert_to_tensor(momentum)
        p_kicked = splitting.kick(p, self._scaled_force(gradient, variable), h)           # B
        variable.assign(splitting.drift(q, self._scaled_velocity(p_kicked, variable), h))  # A
        alpha, noise = self._thermostat(variable, h)
        momentum.assign(splitting.ornstein_uhlenbeck(p_kicked, alpha, noise))  # O
        self._report(self._inertia_position(q, variable), p, noise)


@keras.saving.register_keras_serializable(package="tati")
class GLA2(AdaptedMass, _GLA):
    """Second-order Geometric Langevin Algorithm, B A B O run as B O B A; `adapt_mass` with
    `adaptation_steps` adapts a diagonal mass during them (samplers/mass.py)."""

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 adapt_mass=default("adapt_mass"), adaptation_steps=0, noise_mass_sizes=(1.0, 1.0),
                 name=None, **kwargs):
        super().__init__(step_width, friction_constant, inverse_temperature, seed, name, **kwargs)
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        momentum = self._momentum(variable)
        q = tf.convert_to_tensor(variable)
        alpha, noise = self._thermostat(variable, h)
        force = self._scaled_force(gradient, variable)
        p_previous = splitting.kick(tf.convert_to_tensor(momentum), force, 0.5 * h)    # B of step n-1
        p_full = splitting.ornstein_uhlenbeck(p_previous, alpha, noise)                # O: p^n
        p_half = splitting.kick(p_full, force, 0.5 * h)                                # B
        variable.assign(splitting.drift(q, self._scaled_velocity(p_half, variable), h))  # A
        momentum.assign(p_half)
        self._report(self._inertia_position(q, variable), p_full, noise)
