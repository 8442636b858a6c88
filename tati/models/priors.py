"""Priors: energy terms added to the potential, U(theta) = loss(theta) + U_prior(theta).

Being part of U, they act in every sampler and optimizer alike, enter HMC's energies and its
accept/reject step, and show in the `loss` column. For a parameter theta_i:

Walls (`prior_lower_boundary` l and/or `prior_upper_boundary` u, l < u), on every parameter.
With wall width tau = 0.01 (u - l) (0.01 when only one boundary is given), factor a =
`prior_factor` and power n = `prior_power`, the distance d to a wall (theta_i - l, or
u - theta_i) costs

    U_wall(d) = a tau / (n + 1) * max(0, 1 - d / tau)^(n + 1),

that is a force a (1 - d / tau)^n pointing back inside for d < tau, zero further in. The force
at the boundary itself is a and it grows beyond it: a wall is soft, and a parameter stays
within about a wall width of its boundary when a / tau is large against the temperature.
(The original guide's "a |min(d / tau, 1) - 1|^n" is this force, not an energy.)

Tethering (l == u = c): U = a / (n + 1) |theta_i - c|^(n + 1), a force a |theta_i - c|^n
towards c; with n = 1 each parameter is Gaussian around c with variance 1 / (beta a) (without
other terms).

Gaussian prior (`prior_standard_deviation` s): U = |w|^2 / (2 s^2) over the weights of a
network (not its biases), or over every parameter of a potential.
"""

import numpy as np
import tensorflow as tf

from tati.errors import InputError

WALL_FRACTION = 0.01


class Prior:
    """The prior's energy for a [W, d] parameter batch, [W]; None when no prior option is set."""

    def __init__(self, lower, upper, factor, power, standard_deviation, gaussian_mask):
        if lower is not None and upper is not None and lower > upper:
            raise InputError(f"prior_lower_boundary {lower:g} must not exceed prior_upper_boundary {upper:g}")
        self.lower, self.upper = lower, upper
        self.factor, self.power = float(factor), float(power)
        self.tether = lower is not None and lower == upper
        self.width = WALL_FRACTION * (upper - lower) if lower is not None and upper is not None else WALL_FRACTION
        self.standard_deviation = standard_deviation
        self.gaussian_mask = np.asarray(gaussian_mask, dtype=bool)

    @classmethod
    def from_options(cls, options, parameter_names, is_network):
        o = options
        if o["prior_lower_boundary"] is None and o["prior_upper_boundary"] is None and o["prior_standard_deviation"] is None:
            return None
        mask = [not is_network or name.startswith("weight") for name in parameter_names]
        return cls(o["prior_lower_boundary"], o["prior_upper_boundary"], o["prior_factor"], o["prior_power"],
                   o["prior_standard_deviation"], mask)

    def add(self, losses, theta):
        """losses [W] plus the prior's energy at theta [W, d], in the losses' dtype."""
        return losses + tf.cast(self.energy(theta), losses.dtype)

    def energy(self, theta):
        theta = tf.cast(theta, tf.float64)
        terms = tf.zeros_like(theta)
        a, n = self.factor, self.power
        if self.tether:
            terms += a / (n + 1.0) * tf.abs(theta - self.lower) ** (n + 1.0)
        else:
            for distance in ([theta - self.lower] if self.lower is not None else []) + (
                    [self.upper - theta] if self.upper is not None else []):
                inside = tf.nn.relu(1.0 - distance / self.width)
                terms += a * self.width / (n + 1.0) * inside ** (n + 1.0)
        if self.standard_deviation is not None and self.gaussian_mask.any():
            mask = tf.constant(self.gaussian_mask, tf.float64)
            terms += mask * tf.square(theta) / (2.0 * self.standard_deviation ** 2)
        return tf.reduce_sum(terms, axis=1)
