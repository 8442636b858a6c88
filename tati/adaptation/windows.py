"""When the metric adapts: Stan's windowed schedule, and HMC's windows counted in legs.

Stan's windows (Stan reference manual, "HMC algorithm parameters: automatic parameter tuning";
NUTS, RWMH, the Langevin samplers' adapt_mass): an initial buffer of 75 steps where only the
width adapts, then windows of 25, 50, 100, ... steps, the last stretched to end 50 steps before
burn-in does, whose terminal buffer again adapts only the width; shorter burn-ins scale these
as 15% / 75% / 10%; fewer than MIN_METRIC_BURN_IN steps leave the metric at 1. At each window's
end the metric becomes the window's (metric.py), the collection starts again, and dual
averaging restarts.

HMC1/HMC2 count their burn-in in gradient evaluations, not in legs of unknown length: their
windows are counted in legs instead (`window_legs`; the state `LegWindow`), from 15% of the
burn-in until 90% of it or until TERMINAL_LEGS legs are left (estimated at the current leg
length; not before the first window closes), for the step width and leg length to settle in
the metric's coordinates; the first window closes after its 25 legs or at FIRST_WINDOW_END
(30%) of the burn-in, whichever comes first, if it holds the least draws; a window is taken
only if at least MIN_LEGS_AFTER_WINDOW legs of burn-in follow it, else the metric stays.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import states

INITIAL_BUFFER, TERMINAL_BUFFER, BASE_WINDOW = 75, 50, 25
# Fewer burn-in steps than this leave the metric at 1 (a window needs some draws).
MIN_METRIC_BURN_IN = 20
# HMC's metric windows: from 15% of its burn-in (in gradient evaluations) until 90% of it or
# until the legs of the burn-in left (at the current leg length) are TERMINAL_LEGS, enough for
# the width's average to settle after the last window (with 50 it accepted visibly above its
# target on the Gaussian of condition number 1e4); a burn-in of fewer evaluations than
# MIN_LEG_METRIC_BURN_IN, or a last window of fewer than MIN_METRIC_DRAWS draws, leaves the
# metric as it is.
LEG_METRIC_START, LEG_METRIC_END, MIN_LEG_METRIC_BURN_IN = 0.15, 0.9, 200
# The first window closes by FIRST_WINDOW_END of the burn-in even with fewer than its 25 legs;
# MIN_METRIC_DRAWS draws (2 legs of 4 walkers) give each scale within about 20% on a Gaussian
# (s^4 is a ratio of two variances of 7 degrees of freedom each).
FIRST_WINDOW_END = 0.3
TERMINAL_LEGS, MIN_METRIC_DRAWS = 200, 8
# A window's metric is taken only if at least this many legs of burn-in follow it (at the
# restarted width and leg length), for dual averaging to try the restarted width: the last
# window of a short burn-in with long legs could otherwise close with no leg left, and the
# width be frozen at its restart, a guess (on the 1-D network of examples/bayesian_regression_1d.py
# with 500 burn-in steps, legs of 80 steps: acceptance 0.27 after burn-in).
MIN_LEGS_AFTER_WINDOW = 20


class Schedule(NamedTuple):
    """Stan's windows: draws are collected at steps first < step <= ends[-1], in windows
    ending at the steps `ends` (1-based step numbers; empty for short burn-ins)."""
    first: int
    ends: list


def metric_windows(burn_in_steps):
    """The Schedule of a burn-in of `burn_in_steps` steps (Python numbers, fixed per run)."""
    n = int(burn_in_steps)
    if n < MIN_METRIC_BURN_IN:
        return Schedule(0, [])
    initial, terminal, window = INITIAL_BUFFER, TERMINAL_BUFFER, BASE_WINDOW
    if initial + terminal + window > n:
        initial, terminal = int(0.15 * n), int(0.1 * n)
        window = n - initial - terminal
    ends, start = [], initial
    while True:
        end = start + window
        if end + 2 * window > n - terminal:  # the next window would not fit: stretch this one
            ends.append(n - terminal)
            return Schedule(initial, ends)
        ends.append(end)
        start, window = end, 2 * window


def collecting(step, first, ends):
    """Whether step `step` (int64 tensor) adds its draw: first < step <= the last end."""
    return tf.logical_and(step > first, step <= ends[-1])


def window_end(step, ends):
    """Whether a window ends at step `step` (`ends` an int64 tensor)."""
    return tf.reduce_any(tf.equal(step, ends))


def window_legs(index):
    """Legs in HMC's metric window number `index` (a float tensor): 25, 50, 100, ..."""
    return BASE_WINDOW * tf.pow(tf.constant(2.0, tf.float64), index)


class LegWindow(NamedTuple):
    """HMC's windows, scalar float64 tensors: the window's number k (windows taken so far),
    the legs and the draws collected in it, and 1 once the last window closed."""
    index: tf.Tensor
    legs: tf.Tensor
    count: tf.Tensor
    done: tf.Tensor


def leg_window_open(state, now, burn_in, legs_left):
    """Whether the collection goes on at evaluation `now` (float64) of `burn_in`, with
    `legs_left` legs of burn-in left at the current leg length. Before the first window
    closes, legs are as long as the unscaled target needs: their count says little about the
    legs left."""
    return ((now < float(int(LEG_METRIC_END * burn_in))) & tf.equal(state.done, 0.0)
            & ((legs_left > TERMINAL_LEGS) | tf.equal(state.index, 0.0)))


def leg_collecting(window_open, decided, now, burn_in):
    """Whether the legs decided now (`decided`) add their starts to the window."""
    return decided & window_open & (now >= float(int(LEG_METRIC_START * burn_in)))


def leg_window_closes(state, collecting, window_open, decided, now, burn_in, legs_left, enough):
    """(close, last) after this evaluation's collection (`state` with its legs and draws):
    the window closes once it holds its legs and twice as many legs would follow before the
    terminal ones, or (the first) by FIRST_WINDOW_END of burn-in with `enough` draws, or where
    the collection ends (`last`)."""
    target = window_legs(state.index)
    last = decided & tf.logical_not(window_open) & (state.legs > 0)
    # A burn-in of long legs (an unscaled target) may never hold the first window's 25: it
    # closes by FIRST_WINDOW_END of burn-in, for the rest to run in the new metric.
    first_due = tf.equal(state.index, 0.0) & (now >= float(int(FIRST_WINDOW_END * burn_in))) & enough
    close = (collecting & (((state.legs >= target)
                            & ((legs_left - TERMINAL_LEGS >= 2.0 * target) | tf.equal(state.index, 0.0)))
                           | first_due)) | last
    return close, last


def leg_window_next(state, close, last, taken):
    """The state after a window closed (`close`; the next window's number counts the windows
    `taken`), or as it is; done once the `last` window closed."""
    done = tf.where(last, tf.ones_like(state.done), state.done)
    zero = tf.zeros_like(state.legs)
    closed = LegWindow(state.index + tf.cast(taken, tf.float64), zero, zero, done)
    return LegWindow(*(tf.where(close, a, b) for a, b in zip(closed, state._replace(done=done))))


def pack(state):
    """A LegWindow as the float64 vector [4] that HMC's variable `metric_window` holds."""
    return states.stacked(state)


def unpack(vector):
    return states.unstacked(LegWindow, vector)
