"""Split steps of Langevin and Hamiltonian dynamics, as pure tensor functions.

The dynamics (unit mass M = I, potential U, inverse temperature beta, friction gamma)

    dq = p dt,    dp = -grad U(q) dt - gamma p dt + sqrt(2 gamma / beta) dW

is split into three exactly solvable parts, each a function here with no state:

    B (kick):   p <- p - h grad U(q)
    A (drift):  q <- q + h p
    O (Ornstein-Uhlenbeck, solved exactly over time h):
                p <- alpha p + sqrt((1 - alpha^2) / beta) G,   alpha = exp(-gamma h), G ~ N(0, I)

HMC's momentum refresh p ~ N(0, I / beta) (`fresh_momentum`) is O in the limit gamma h -> infinity.
A sampler is a composition of these with fractions of the step width h. The overdamped
(first-order) Langevin dynamics dq = -grad U dt + sqrt(2 / beta) dW has the Euler-Maruyama step
`euler_maruyama`.
"""

import tensorflow as tf


def kick(momentum, gradient, h):
    """B: p - h grad U."""
    return momentum - h * gradient


def drift(position, momentum, h):
    """A: q + h p (unit mass)."""
    return position + h * momentum


def ou_alpha(friction_constant, h):
    """alpha = exp(-gamma h), the fraction of momentum the O step keeps."""
    return tf.exp(-friction_constant * h)


def ou_noise_scale(alpha, inverse_temperature):
    """sqrt((1 - alpha^2) / beta): the O step's noise amplitude, keeping N(0, I / beta) invariant."""
    return tf.sqrt((1.0 - alpha * alpha) / inverse_temperature)


def ornstein_uhlenbeck(momentum, alpha, noise):
    """O: alpha p + noise, the noise being ou_noise_scale(alpha, beta) G with G ~ N(0, I)."""
    return alpha * momentum + noise


def fresh_momentum(normal, inverse_temperature):
    """p ~ N(0, I / beta): G / sqrt(beta) for G ~ N(0, I) (HMC's redraw at the start of a leg)."""
    return normal / tf.sqrt(inverse_temperature)


def euler_maruyama(position, gradient, h, inverse_temperature, normal):
    """Overdamped Langevin step: q - h grad U + sqrt(2 h / beta) G."""
    return position - h * gradient + tf.sqrt(2.0 * h / inverse_temperature) * normal
