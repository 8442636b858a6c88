"""Covariance-Controlled Adaptive Langevin (Shang, Zhu, Leimkuhler and Storkey 2015), in its
adaptive-thermostat form on the GLA2 (BOBA) splitting, as in the original TATi.

The dynamics add a Nose-Hoover variable xi, an adaptive friction, to Langevin dynamics with
additive noise amplitude sigma_A:

    dq  = p dt
    dp  = -grad U~(q) dt - xi p dt + sigma_A dW
    dxi = sigma (|p|^2 / N - 1 / beta) dt            (N: number of parameters)

With walkers (walker_axis) each walker has its own xi and N is its number of parameters.

Unknown gradient noise heats the momenta; xi grows until the friction removes that heat, so
the kinetic temperature |p|^2 / N stays at 1 / beta on average without an estimate of the
noise. (The covariance-control term of Shang et al., -h/2 beta Sigma p with Sigma an estimate
of the gradient-noise covariance, needs that estimate; it is left out, as in the original.)

Each call, with the one gradient grad U~(q^n):
    xi <- xi + h sigma (2 K^{n-1} / N - 1 / beta)      (K^{n-1}: last reported kinetic energy)
    B: p <- p - h/2 grad U~(q^n)
    O: p <- exp(-xi h) p + sigma_A sqrt((1 - exp(-2 xi h)) / (2 xi)) G   (exact OU at friction xi)
       -> p^n, reported (kinetic energy 1/2 |p^n|^2), paired with q^n
    B: p <- p - h/2 grad U~(q^n)
    A: q^{n+1} = q^n + h p
The first B and the O complete the previous step, as in GLA2. Parameters: `friction_constant`
is the initial xi; `sigmaA` defaults to sqrt(2 friction_constant / beta), which makes
friction_constant the equilibrium friction when gradients are exact (then the sampler is GLA2);
it is fixed when the sampler is made, so a later change of beta leaves it as it was.
`sigma` is the thermostat's coupling (inverse thermal mass). With the ensemble preconditioner B
(ensemble.py) the kicks use B^T grad U and the drift B p. With an adapted diagonal mass
(samplers/mass.py) the kicks use s grad U and the drift s p, p whitened: |p|^2 / N still
measures the kinetic temperature the thermostat holds at 1 / beta.
"""

import math

import keras
import tensorflow as tf

from tati.config.options import default
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.mass import AdaptedMass


@keras.saving.register_keras_serializable(package="tati")
class CCAdL(AdaptedMass, SamplerBase):
    """CCAdL (adaptive thermostat); `step_width`, `friction_constant`, `sigma`, `sigmaA`, beta;
    `adapt_mass` with `adaptation_steps` adapts a diagonal mass during them (samplers/mass.py)."""

    parameters = ("inverse_temperature", "friction_constant", "sigma", "sigmaA")
    friction_constant = parameter_property("friction_constant", "initial adaptive friction xi.")
    sigma = parameter_property("sigma", "coupling of xi to the kinetic temperature.")

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), sigma=default("sigma"),
                 sigmaA=default("sigmaA"), seed=default("seed"), adapt_mass=default("adapt_mass"),
                 adaptation_steps=0, noise_mass_sizes=(1.0, 1.0),
                 name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, friction_constant=friction_constant, inverse_temperature=inverse_temperature,
            sigma=sigma, sigmaA=sigmaA))
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)
        values = self._parameter_values
        if values["sigmaA"] is None:
            values["sigmaA"] = math.sqrt(2.0 * values["friction_constant"] / values["inverse_temperature"])

    @property
    def adaptive_friction(self):
        """xi, the current adaptive friction (a variable once built)."""
        return self._xi

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._xi, self._degrees_of_freedom = self._thermostat("adaptive_friction", variables)

    def _walker_state(self):
        return [self._xi]

    def _before_step(self):
        kinetic = self._step_info[..., 0]
        started = tf.cast(self.iterations > 0, tf.float64)  # no kinetic energy reported yet
        h = tf.cast(self.learning_rate, tf.float64)
        self._xi.assign_add(started * h * self._parameter_variables["sigma"] * (
            2.0 * kinetic / self._degrees_of_freedom - 1.0 / self._parameter_variables["inverse_temperature"]))

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        xi = tf.cast(self._xi, variable.dtype)
        alpha = self._per_walker(self._walkerwise(lambda x: splitting.ou_alpha(x, h), xi), variable)
        xi = self._per_walker(xi, variable)
        sigma_a = self._parameter("sigmaA", variable.dtype)
        momentum = self._momentum(variable)
        q = tf.convert_to_tensor(variable)
        # (1 - alpha^2) / (2 xi), continued to h at xi = 0 (xi may become negative)
        small = tf.abs(xi * h) < 1e-4
        safe_xi = tf.where(small, tf.ones_like(xi), xi)
        variance = tf.where(small, h * (1.0 - xi * h), (1.0 - alpha * alpha) / (2.0 * safe_xi))
        noise = sigma_a * tf.sqrt(variance) * self._normal(variable)
        force = self._scaled_force(gradient, variable)
        p_previous = splitting.kick(tf.convert_to_tensor(momentum), force, 0.5 * h)    # B of step n-1
        p_full = splitting.ornstein_uhlenbeck(p_previous, alpha, noise)                # O: p^n
        p_half = splitting.kick(p_full, force, 0.5 * h)                                # B
        variable.assign(splitting.drift(q, self._scaled_velocity(p_half, variable), h))  # A
        momentum.assign(p_half)
        self._report(self._inertia_position(q, variable), p_full, noise)
