"""The initial step width's search (Hoffman & Gelman 2014, Algorithm 4).

At the first step of burn-in, probes of one step each from the chain's state with fresh
momenta (or, for RWMH, one proposal) at the user's width, doubled while the walkers' mean
one-step acceptance min(1, exp(-beta dH)) stays above 1/2 or halved while it stays below,
until it crosses; dual averaging (dual_averaging.py) starts from the width found. The probes
themselves are the sampler's (samplers/proposal_kernel.py for NUTS/RWMH, samplers/hmc_adaptation.py for
HMC); this module is the rule that reads their acceptance.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import states

# The one-step acceptance the search crosses (the algorithm's 0.5); at most MAX_PROBES probes
# (a factor 2^30, about 1e9, from the start), then the last width is taken.
PROBE_ACCEPTANCE, MAX_PROBES = 0.5, 30


class State(NamedTuple):
    """Scalar float64 tensors: probes made, direction (+1 doubling, -1 halving, 0 before the
    first probe), log of the width of the next probe (or of the width found), 1 once found."""
    probes: tf.Tensor
    direction: tf.Tensor
    log_width: tf.Tensor
    found: tf.Tensor


def init(step_width):
    """The search's state before its first probe, from the user's width."""
    zero = tf.constant(0.0, tf.float64)
    return State(zero, zero, tf.math.log(tf.cast(step_width, tf.float64)), zero)


def update(state, acceptance, go_on=True):
    """The state after a probe at width exp(log_width) with mean one-step acceptance
    `acceptance` (a NaN counts as 0): the first probe sets the direction (doubling if it
    accepted more than PROBE_ACCEPTANCE, else halving); the width doubles or halves while the
    acceptance stays on that side, and is found at the first probe that crosses (Algorithm 4,
    which returns that probe's width), after MAX_PROBES probes, or where `go_on` is false."""
    acceptance = tf.where(tf.math.is_finite(acceptance), tf.cast(acceptance, tf.float64), 0.0)
    one = tf.ones_like(state.direction)
    direction = tf.where(tf.equal(state.probes, 0.0), tf.where(acceptance > PROBE_ACCEPTANCE, one, -one),
                         state.direction)
    probes = state.probes + 1.0
    same_side = direction * (acceptance - PROBE_ACCEPTANCE) > 0.0
    again = same_side & (probes < MAX_PROBES) & go_on
    log_width = state.log_width + tf.where(again, direction * tf.math.log(tf.constant(2.0, tf.float64)), 0.0)
    return State(probes, direction, log_width, tf.where(again, state.found, one))


def searching(state):
    """Whether the search goes on (a boolean tensor)."""
    return tf.equal(state.found, 0.0)


def width(state):
    """The width of the next probe, or the width found."""
    return tf.exp(state.log_width)


select = states.select


def pack(state):
    """The state as the one float64 vector [4] that the variables (and checkpoints) hold."""
    return states.stacked(state)


def unpack(vector):
    return states.unstacked(State, vector)
