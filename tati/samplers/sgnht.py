"""Stochastic Gradient Nose-Hoover Thermostat (Ding, Fang, Babbush, Chen, Skeel and Neven 2014).

Langevin dynamics whose friction xi is a dynamical variable (a Nose-Hoover thermostat), with
injected noise of fixed amplitude set by the "diffusion" A = `friction_constant`, mass M = `mass`:

    dq  = M^{-1} p dt
    dp  = -grad U~(q) dt - xi p dt + sqrt(2 A M / beta) dW
    dxi = (p^T M^{-1} p / d - 1 / beta) dt                  (d: parameters per walker)

Why it absorbs gradient noise: a stochastic gradient grad U~ = grad U + zeta with zeta of
variance V per component, independent from step to step, kicks p by h zeta, i.e. adds h V to
the noise per unit time (2 A M / beta). The Fokker-Planck equation then has the stationary
density

    exp(-beta (U(q) + p^T M^{-1} p / 2)) exp(-beta d (xi - xi*)^2 / 2),   xi* = A + beta h V / (2 M),

for any constant V, known or not: xi rises until its friction removes the extra heat (Ding et
al.'s theorem, there with beta = M = 1; the Fokker-Planck operator of the dynamics above
annihilates this density exactly when xi* = beta D / (2 M), D the momentum noise per unit
time). This holds for noise of the same variance in every direction (a scalar V); a single
thermostat only holds the mean kinetic temperature over all parameters, not each one's; and
it needs noise independent from step to step: tati's
epoch-wise batches, whose noises sum to zero over an epoch, heat the momenta without diffusing
the positions, and the friction that removes their heat leaves the positions cold (measured in
doc/samplers.md, SGNHT).

Ding et al.'s Algorithm (SGNHT) is the Euler discretisation; each call, with the one gradient
grad U~(q^n) and xi^n:

    p^{n+1}  = p^n - h xi^n p^n - h grad U~(q^n) + sqrt(2 A M h / beta) G^n,   G^n ~ N(0, I)
    q^{n+1}  = q^n + h p^{n+1} / M
    xi^{n+1} = xi^n + h (|p^{n+1}|^2 / (M d) - 1 / beta)

xi^{n+1} needs every variable's p^{n+1}, which a Keras optimizer has only after all its
per-variable `update_step` calls; so the next call starts with it (`_before_step`, as CCAdL
does). Discretisation: O(h) bias in the positions (on a Gaussian, Var(q) = (1 - h E[xi] / 2) /
(beta omega^2) to first order); the stored momenta's mean |p|^2 / (M d) is exactly 1 / beta
in the discrete chain, since the mean increment of a stationary xi is zero. Stable for
h xi < 2 (the friction step is Euler's, as in SGHMC), whose O(h) error also lifts xi: it settles
near the root of xi (1 - h xi / 2) = xi*. xi falls at most 1 / beta per unit time, so after a hot
start it takes about (xi_max - xi*) beta / h steps to come back (burn-in).

A diagonal mass adapted during burn-in (`adapt_mass`; samplers/mass.py, as for BAOAB): p is kept
in whitened coordinates, each parameter has a scale s, the kick is h s grad U~ and the drift
h s p / M, so the scalar M stays and diag(1 / s^2) multiplies it; the thermostat reads the
whitened |p|^2 unchanged. With adapt_mass="noise" s^-2 = max(V_i B / N, floor) from the gradient
noise, which makes the whitened noise s_i^2 V_i the same in every direction (about N / B): the
single thermostat, which holds only the mean kinetic temperature, then holds each parameter's.

Thermostat: one xi per walker (each walker its own chain, d its parameters; without walkers one
for the whole model), global over the layers as in the paper; started at xi = A, the
equilibrium for exact gradients. It is a variable (`thermostat`, checkpointed) and a run-info
column. Reported momentum: p^n, the momentum the call starts from, paired with q^n;
kinetic energy p^T M^{-1} p / 2. With the ensemble preconditioner B (ensemble.py) the kick
uses B^T grad U and the drift B p / M.
"""

import math

import keras
import tensorflow as tf

from tati.config.options import default
from tati.engine.registry import spec_of
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.mass import AdaptedMass


@keras.saving.register_keras_serializable(package="tati")
class SGNHT(AdaptedMass, SamplerBase):
    """SGNHT; `step_width` h, `friction_constant` A (the injected noise's diffusion and the
    thermostat's start), `mass` M, `inverse_temperature` beta; `adapt_mass` with
    `adaptation_steps` adapts a diagonal mass during them (samplers/mass.py)."""

    parameters = ("inverse_temperature", "friction_constant", "mass")
    info = spec_of("SGNHT").infos[0]  # its registry line declares it: LANGEVIN_INFO and the thermostat
    friction_constant = parameter_property("friction_constant", "A: noise 2 A M / beta per unit time, xi's start.")
    mass = parameter_property("mass", "M, the scalar mass of the momenta.")

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), mass=default("mass"), seed=default("seed"),
                 adapt_mass=default("adapt_mass"), adaptation_steps=0, noise_mass_sizes=(1.0, 1.0), **kwargs):
        super().__init__(step_width, seed, kwargs.pop("name", None), dict(
            kwargs, friction_constant=friction_constant, inverse_temperature=inverse_temperature, mass=mass))
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)

    def initial_momentum_scale(self):
        return math.sqrt(self._parameter_values["mass"] / self._parameter_values["inverse_temperature"])

    @property
    def thermostat(self):
        """xi, the thermostat's friction of the next step ([W] with walkers, else a scalar)."""
        return self._xi

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._xi, self._degrees_of_freedom = self._thermostat("thermostat", variables)

    def _walker_state(self):
        return [self._xi]

    def _before_step(self):
        """xi^{n+1} from the momenta the last call stored (none before the first call)."""
        squares = tf.add_n([tf.cast(self._sum(tf.square(p)), tf.float64) for p in self._momenta])
        temperature = squares / (self._parameter_variables["mass"] * self._degrees_of_freedom)
        started = tf.cast(self.iterations > 0, tf.float64)
        h = tf.cast(self.learning_rate, tf.float64)
        self._xi.assign_add(started * h * (temperature - 1.0 / self._parameter_variables["inverse_temperature"]))

    def row_info(self, loss, per_walker):
        row = super().row_info(loss, per_walker)
        row["thermostat"] = tf.convert_to_tensor(self._xi)  # xi^n, the friction this step used
        return row

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        diffusion = self._parameter("friction_constant", variable.dtype)
        mass = self._parameter("mass", variable.dtype)
        xi = self._per_walker(tf.cast(self._xi, variable.dtype), variable)
        momentum = self._momentum(variable)
        q, p = tf.convert_to_tensor(variable), tf.convert_to_tensor(momentum)
        noise = tf.sqrt(2.0 * diffusion * mass * h / beta) * self._normal(variable)
        p_new = splitting.kick(splitting.ornstein_uhlenbeck(p, 1.0 - h * xi, noise),
                               self._scaled_force(gradient, variable), h)
        variable.assign(splitting.drift(q, self._scaled_velocity(p_new, variable) / mass, h))
        momentum.assign(p_new)
        self._report(self._inertia_position(q, variable), p, noise, mass)
