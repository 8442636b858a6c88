"""Dual averaging of the step width (Nesterov 2009, as Hoffman & Gelman 2014, Algorithm 5, and Stan).

It drives the mean acceptance statistic a_n towards the target delta:

    h_n = (1 - 1/(n + t0)) h_{n-1} + (delta - a_n) / (n + t0)
    log eps_n = mu - sqrt(n) / gamma * h_n
    log eps_bar_n = n^-kappa log eps_n + (1 - n^-kappa) log eps_bar_{n-1}

with mu = log(10 eps_0), gamma = 0.1, t0 = 10, kappa = 0.75, and a_n the acceptance
statistic averaged over the walkers. After burn-in the width is frozen at eps_bar, the average
of the iterates, which fluctuates less than the last one (HMC's at the smaller of the two:
`cautious_width`). Stan's gamma is 0.05; with it the
iterates swing further, partly beyond the width where acceptance falls off, so that the
frozen eps_bar accepted 0.86 instead of 0.8 on a Gaussian of condition number 1e4; with 0.1,
0.82 (doc/samplers.md). After a metric window it restarts (`restart`): the width's scale has
changed, so the old averages no longer apply.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import states

GAMMA, T0, KAPPA = 0.1, 10.0, 0.75


class State(NamedTuple):
    """Float64 tensors of one shape: the count n, h_n, log eps_n, log eps_bar_n and mu. Scalars
    for one width of all walkers (as the samplers adapt today); of a width per walker (or per
    parameter) from `init` of a tensor of widths, each element its own dual averaging."""
    count: tf.Tensor
    h: tf.Tensor
    log_step: tf.Tensor
    log_step_bar: tf.Tensor
    mu: tf.Tensor


def init(step_width):
    """The state at the start of an adaptation (or after a metric window) from width eps_0."""
    log_step = tf.math.log(tf.cast(step_width, tf.float64))
    zero = tf.zeros_like(log_step)
    return State(zero, zero, log_step, log_step, log_step + tf.math.log(tf.constant(10.0, tf.float64)))


def update(state, acceptance, target):
    """The state after one step with mean acceptance statistic `acceptance` (a NaN counts as 0)."""
    acceptance = tf.where(tf.math.is_finite(acceptance), tf.cast(acceptance, tf.float64), 0.0)
    count = state.count + 1.0
    h = (1.0 - 1.0 / (count + T0)) * state.h + (target - acceptance) / (count + T0)
    log_step = state.mu - tf.sqrt(count) / GAMMA * h
    weight = count ** -KAPPA
    log_step_bar = weight * log_step + (1.0 - weight) * state.log_step_bar
    return State(count, h, log_step, log_step_bar, state.mu)


def restart(state, where, growth=1.0):
    """The state restarted where `where` (a boolean tensor), as after a metric window, from the
    current width divided by `growth`, the smallest factor by which a parameter's scale grew
    (new / old): a width that fitted the old coordinates fits the new ones where that
    parameter set it; where scales shrank (growth < 1) the width grows with them, and dual
    averaging, which starts by trying widths up to ten times its start, finds it either way."""
    return select(where, init(tf.exp(state.log_step) / tf.cast(growth, tf.float64)), state)


def width(state, final):
    """The width to use: the current iterate during burn-in, the averaged one after (`final`,
    a boolean tensor)."""
    return tf.exp(tf.where(final, state.log_step_bar, state.log_step))


def cautious_width(state, final):
    """As `width`, but frozen at the smaller of the averaged width and the last iterate: for
    HMC, whose legs ChEES lengthens during burn-in (100-fold on yacht), so that the many short
    legs after a restart outvote the few long ones at the end in the average, while the chain
    may still be moving into narrower regions (doc/samplers.md). Too wide a width costs all
    legs (past leapfrog's stability limit every leg is rejected), too narrow one a little
    speed."""
    return tf.exp(tf.where(final, tf.minimum(state.log_step_bar, state.log_step), state.log_step))


select = states.select


def pack(state):
    """The state as the one float64 vector [5] that the variables (and checkpoints) hold
    ([5, ...] for a state of widths)."""
    return states.stacked(state)


def unpack(vector):
    return states.unstacked(State, vector)
