"""The Metropolis accept/reject step, once for every Metropolis-adjusted sampler.

A proposal from a volume-preserving, reversible (up to momentum flip) map is accepted with
probability min(1, exp(-beta (H_new - H_old))), beta (H_new - H_old) being the `energy_error`. A proposal whose energy is NaN or infinite
has probability 0: it is rejected and never enters the state. The energy error
beta (H_new - H_old) above DIVERGENCE_THRESHOLD (the value Stan, NumPyro, BlackJAX and TFP use),
or not finite, marks the leg as divergent: the integrator left the region where it is stable.
"""

import tensorflow as tf

DIVERGENCE_THRESHOLD = 1000.0


def energy_error(new_energy, old_energy, inverse_temperature):
    """beta (H_new - H_old): the proposal's energy error, which the decision reads."""
    return inverse_temperature * (new_energy - old_energy)


def reported_energy(new_energy, energy_error):
    """H_new as the tables show it: +inf where the energy error is not finite (always rejected)."""
    return tf.where(tf.math.is_finite(energy_error), new_energy, float("inf"))


def acceptance_probability(energy_error):
    """min(1, exp(-energy_error)) for energy_error = beta (H_new - H_old); 0 where not finite."""
    finite = tf.math.is_finite(energy_error)
    safe = tf.where(finite, energy_error, tf.zeros_like(energy_error))
    return tf.where(finite, tf.exp(-tf.maximum(safe, 0.0)), tf.zeros_like(energy_error))


def metropolis(energy_error, uniform):
    """(accepted, divergent) boolean tensors of the energy_error's shape, uniform ~ U[0, 1).

    uniform < acceptance_probability(energy_error), in fewer operations: with uniform < 1 the
    min(1, .) changes nothing."""
    finite = tf.math.is_finite(energy_error)
    accepted = finite & (uniform < tf.exp(-energy_error))
    divergent = tf.logical_not(finite) | (energy_error > DIVERGENCE_THRESHOLD)
    return accepted, divergent
