"""HMC's leg length by ChEES (Hoffman, Radul & Sountsov 2021, as TFP's
GradientBasedTrajectoryLengthAdaptation).

The time T of a leg maximises

    ChEES(T) = 1/4 E[(|z' - E z|^2 - |z - E z|^2)^2],

z the leg's start and z' its proposal (in the metric's coordinates), a change of the squared
distance from the centre, which rewards legs that decorrelate second moments, not only means.
Its gradient in log T, estimated from the walkers' legs of times t_w, acceptance
probabilities a_w and end momenta p'_w (dz/dt = p in these coordinates), is

    g = sum_w a_w t_w (|z'_w - m|^2 - |z_w - m|^2) (z'_w - m) . p'_w / sum_w a_w,

m a moving average of the walkers' mean leg start over the last CENTRE_LEGS legs or so (not
the walkers' mean of this leg's starts, as TFP's, which contains each walker's own start and,
with few walkers, pushes T towards anti-correlated legs). log T climbs g by Adam without
momentum (rate 0.05, squared-gradient decay 0.95; TFP's rate is 0.025, for burn-ins of
thousands of legs); after burn-in T is frozen at the average of its iterates, weighted as the
step width's (dual_averaging.KAPPA). At each metric window T starts again, divided by the
largest growth of a scale and at most the user's `hamiltonian_dynamics_time` (`restart`).
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import states

from tati.adaptation.dual_averaging import KAPPA

# TFP's rate is 0.025; a burn-in of HMC counted in gradient evaluations holds few legs.
CHEES_RATE, CHEES_SQUARED_DECAY, MAX_LEG_STEPS = 0.05, 0.95, 1000
CENTRE_LEGS = 50


class State(NamedTuple):
    """Scalar float64 tensors: the count n, log T_n, log T_bar_n, the squared gradient's
    moving average v, and the count of leg starts in the centre m."""
    count: tf.Tensor
    log_time: tf.Tensor
    log_time_bar: tf.Tensor
    squared_gradient: tf.Tensor
    centre_count: tf.Tensor


def init(time):
    log_time = tf.math.log(tf.cast(time, tf.float64))
    zero = tf.constant(0.0, tf.float64)
    return State(zero, log_time, log_time, zero, zero)


def gradient(weight, total, leg_time, spread_change, heading):
    """g above from the walkers' weights a_w (0 for legs not decided; `total` their sum),
    leg times t_w, spread changes |z' - m|^2 - |z - m|^2 and headings (z' - m) . p'; a walker
    whose term is not finite counts as 0."""
    gradients = leg_time * spread_change * heading
    gradients = tf.where(tf.math.is_finite(gradients) & (weight > 0), gradients, 0.0)
    return tf.reduce_sum(weight * gradients) / tf.maximum(total, 1e-300)


def update(state, gradient, largest_time):
    """The state after one ascent step along the ChEES gradient g in log T (finite), T kept at
    most `largest_time`."""
    count = state.count + 1.0
    squared = CHEES_SQUARED_DECAY * state.squared_gradient + (1.0 - CHEES_SQUARED_DECAY) * tf.square(gradient)
    unbiased = squared / (1.0 - tf.pow(tf.constant(CHEES_SQUARED_DECAY, tf.float64), count))
    step = CHEES_RATE * gradient / (tf.sqrt(unbiased) + 1e-300)
    log_time = tf.minimum(state.log_time + tf.where(unbiased > 0, step, 0.0), tf.math.log(largest_time))
    weight = count ** -KAPPA
    log_time_bar = weight * log_time + (1.0 - weight) * state.log_time_bar
    return State(count, log_time, log_time_bar, squared, state.centre_count)


def centre_weight(centre_count):
    """The weight of the newest leg start in the centre m once it is the `centre_count`-th:
    its mean over the first CENTRE_LEGS (1 replaces the zeros), then an exponential average."""
    return 1.0 / tf.minimum(centre_count, CENTRE_LEGS)


def restart(state, where, shrink, longest=float("inf")):
    """Start again where `where` (after a metric window) from T divided by `shrink`, the
    largest factor by which a parameter's scale grew: the widest direction, which sets T, is
    that much narrower in the new coordinates; and from at most `longest` (the user's T). The
    criterion is periodic in T for a Gaussian (in z, with period pi), so ascent from a T that
    fitted the old coordinates could stop at a later maximum (legs of one and a half turns and
    more, as good as the first but longer); in the new metric every parameter's scale is about
    1, so the first maximum lies near pi / 2 and ascent from at most the user's T (1 by default)
    climbs to it (on the logistic regression of tools/benchmark_adapted.py, with seed 1, T
    settled at 8.7 without this bound)."""
    zero = tf.zeros_like(state.count)
    log_start = tf.minimum(state.log_time - tf.math.log(tf.cast(shrink, tf.float64)),
                           tf.math.log(tf.cast(longest, tf.float64)))
    return select(where, State(zero, log_start, log_start, zero, state.centre_count), state)


def time(state, final):
    """T to use: the current iterate during burn-in, the averaged one after (`final`)."""
    return tf.exp(tf.where(final, state.log_time_bar, state.log_time))


select = states.select


def pack(state):
    """The state as the one float64 vector [5] that HMC's variable `chees` holds."""
    return states.stacked(state)


def unpack(vector):
    return states.unstacked(State, vector)
