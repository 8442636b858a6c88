"""BAOAB (Leimkuhler and Matthews 2013), in the cyclically permuted form BBAOA.

One BAOAB step of width h from (q^n, p^n), with alpha = exp(-gamma h):

    B: p' = p^n - h/2 grad U(q^n)
    A: q' = q^n + h/2 p'
    O: p'' = alpha p' + sqrt((1 - alpha^2) / beta) G,   G ~ N(0, I)
    A: q^{n+1} = q' + h/2 p''
    B: p^{n+1} = p'' - h/2 grad U(q^{n+1})

The last B needs the gradient at q^{n+1}, which a Keras optimizer only receives in its next
call. So each call performs B B A O A with the one gradient it is given, grad U(q^n): the first
B completes the previous step (it gives p^n), the second starts the current one. The very first
call therefore kicks the initial momentum once more than plain BAOAB would; starting from a
random momentum that changes nothing.

Target: the Gibbs density exp(-beta (U(q) + |p|^2 / 2)). Positions are exact on Gaussian
targets at any stable step width; averages of other observables carry an O(h^2) error.

Reported per step (`step_info`): kinetic energy and inertia of the full-step momentum p^n
(between the two B's), paired with q^n, the position whose loss and gradient the step
received. On a harmonic potential with frequency omega this momentum has variance
(1 - h^2 omega^2 / 4) / beta. scaled_noise is |sqrt((1 - alpha^2) / beta) G|.
With the ensemble preconditioner B (ensemble.py) the kicks use B^T grad U and the drifts B p.
With an adapted diagonal mass (samplers/mass.py) the kicks use s grad U and the drifts s p,
p being the whitened momentum (target exp(-beta (U(q) + |p|^2 / 2)) still).
"""

import keras
import tensorflow as tf

from tati.config.options import default
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.mass import AdaptedMass


@keras.saving.register_keras_serializable(package="tati")
class BAOAB(AdaptedMass, SamplerBase):
    """BAOAB Langevin sampler; `step_width` h, `friction_constant` gamma, `inverse_temperature` beta;
    `adapt_mass` with `adaptation_steps` adapts a diagonal mass during them (samplers/mass.py)."""

    parameters = ("inverse_temperature", "friction_constant")
    fixed_friction = True
    friction_constant = parameter_property("friction_constant", "gamma, the friction per unit time.")

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 adapt_mass=default("adapt_mass"), adaptation_steps=0, noise_mass_sizes=(1.0, 1.0),
                 name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, friction_constant=friction_constant, inverse_temperature=inverse_temperature))
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)

    def update_step(self, gradient, variable, learning_rate):
        h = self._step_width(learning_rate, variable.dtype)
        alpha, noise_scale = self._once(("ou", tf.as_dtype(variable.dtype)), lambda: self._ou(h, variable.dtype))
        momentum = self._momentum(variable)
        q = tf.convert_to_tensor(variable)
        force = self._scaled_force(gradient, variable)
        half = 0.5 * h
        p_full = splitting.kick(tf.convert_to_tensor(momentum), force, half)                    # completes step n-1
        p_half = splitting.kick(p_full, force, half)                                            # B
        q_half = splitting.drift(q, self._scaled_velocity(p_half, variable), half)              # A
        noise = noise_scale * self._normal(variable)
        p_new = splitting.ornstein_uhlenbeck(p_half, alpha, noise)                              # O
        variable.assign(splitting.drift(q_half, self._scaled_velocity(p_new, variable), half))     # A
        momentum.assign(p_new)
        self._report(self._inertia_position(q, variable), p_full, noise)

    def _ou(self, h, dtype):
        """The O step's alpha = exp(-gamma h) and noise amplitude, the same for every variable of a step."""
        alpha = splitting.ou_alpha(self._parameter("friction_constant", dtype), h)
        return alpha, splitting.ou_noise_scale(alpha, self._parameter("inverse_temperature", dtype))
