"""HMC's legs (samplers/hmc.py): what each walker's next evaluation does, how long and how
wide its legs are, how the ensemble's phases cut them, and the per-walker state they live in.

A leg that starts at iteration n, with the chain's step width h and leg time T, is drawn
from uniforms u_w (per walker), u_L (one per leg for all walkers) and u_c (per walker):

    h' = h (0.7 + 0.6 u_w)                          the leg's step width   (STEP_WIDTH_JITTER)
    L  = max(1, round((0.9 + 0.2 u_L) T / h))       its number of steps    (LEG_LENGTH_JITTER)
    c  = first_kicks[floor(u_c K)]                  its first kick's fraction of h', K choices
    the leg ends (is evaluated) at iteration n + L.

Neither h' nor L depends on the state, so every leg is an exact proposal and, given the
sequence of L, the walkers' chains are independent.
"""

import collections

import tensorflow as tf

STEP_WIDTH_JITTER = (0.7, 1.3)
LEG_LENGTH_JITTER = (0.9, 1.1)
# What the evaluation at a leg's end does: the first call (or the first after restart()) takes the
# variables' values as the chain's state; a leg is decided; a pause (a standing walker of the
# ensemble's halves) keeps the stored chain state. None of them but LEG is a decision.
FIRST, LEG, PAUSE = 0.0, 1.0, 2.0
# A probe of the initial width's search: one step of the probed width from the chain's state,
# always returned from (not a decision, no row).
PROBE = 3.0


class Kinds(collections.namedtuple("Kinds", "first decides paused probed")):
    """[W] bools: what the evaluation at the end of each walker's current leg does (the leg_kind
    row: FIRST, LEG, PAUSE or PROBE)."""

    @classmethod
    def of(cls, leg_kind):
        return cls(*(tf.equal(leg_kind, kind) for kind in (FIRST, LEG, PAUSE, PROBE)))


def leg_width(h, uniform):
    """h' = h (low + (high - low) u_w): the leg's step width, per walker."""
    low, high = STEP_WIDTH_JITTER
    return h * (low + (high - low) * uniform)


def leg_steps(h, time, uniform):
    """L = max(1, round((low + (high - low) u_L) T / h)): the leg's number of steps."""
    low, high = LEG_LENGTH_JITTER
    return tf.maximum(tf.round((low + (high - low) * uniform) * time / h), 1.0)


def first_kick(first_kicks, uniform):
    """c, the first kick's fraction of h': first_kicks[floor(u_c K)] (leapfrog: always 1/2)."""
    if len(first_kicks) == 1:  # no choice to draw
        return tf.fill(tf.shape(uniform), tf.constant(first_kicks[0], tf.float64))
    choice = tf.minimum(tf.cast(uniform * len(first_kicks), tf.int32), len(first_kicks) - 1)
    return tf.gather(tf.constant(first_kicks, tf.float64), choice)


def schedule(now, steps, width):
    """(leg_end, leg_kind, leg_width) of legs that start at iteration `now` without the
    ensemble's phases: the leg ends at now + L."""
    return now + steps, tf.fill(tf.shape(now), tf.constant(LEG, tf.float64)), width


def ensemble_phases(now, steps, width, every, parity):
    """(leg_end, leg_kind, leg_width) of legs that start at iteration `now` with the ensemble's
    halves (walkers.md), which take turns in phases of `every` calls: walker w moves in the
    phases k = floor(n / every) with k mod 2 = parity_w and stands in the others.

        moving, and now before its phase's last call l = (k + 1) every - 1:
            a leg, cut to end there: leg_end = now + min(L, l - now)
        else: a pause of width 0 until the walker's next moving phase starts,
            leg_end = (k + 1) every if (k + 1) mod 2 = parity_w, else (k + 2) every

    So a leg never spans two phases, and the preconditioner B, refreshed at each phase's
    first call from the standing half, is fixed during every leg. The lengths depend on the
    iteration only, never on the state."""
    phase = tf.floor(now / every)
    last = (phase + 1.0) * every - 1.0  # the phase's last call
    moving = tf.equal(tf.math.floormod(phase, 2.0), parity)
    pause = tf.logical_not(moving) | (now >= last)
    resume = tf.where(tf.equal(tf.math.floormod(phase + 1.0, 2.0), parity),
                      (phase + 1.0) * every, (phase + 2.0) * every)
    return (tf.where(pause, resume, now + tf.minimum(steps, last - now)),
            tf.where(pause, tf.constant(PAUSE, tf.float64), LEG), tf.where(pause, tf.zeros_like(width), width))


class PackedState:
    """The per-walker state of HMC as named [W] float64 rows, packed into a few [rows, W]
    optimizer variables (`hmc_state_0`, ...; the names are the checkpoint's): the leg (the
    iteration of its evaluation, width, first-kick fraction, kind, steps), the chain's state and
    report, the last decision's energies and the counters. Read and written once per apply,
    never by the kick-and-drift loop.

    No group has more than 8 rows, because XLA on the CPU stacks more than 8 pieces of more
    than 64 numbers in all through a slow path (about 135 us instead of 1, from 4 walkers on)."""

    GROUPS = (("leg_end", "leg_width", "first_kick", "leg_kind", "leg_steps"),
              ("evaluated", "legs", "loss", "accuracy", "old_total_energy", "decided_old_total_energy",
               "total_energy", "kinetic_energy"),
              ("momentum_sq", "virial", "gradient_sq", "accepted", "rejected", "divergences", "counting_after"))
    NAMES = sum(GROUPS, ())

    def __init__(self, optimizer, walkers):
        """The variables, made by the optimizer (so that it saves and restores them)."""
        self.variables = [optimizer.add_variable((len(group), walkers), dtype="float64", name=f"hmc_state_{k}")
                          for k, group in enumerate(self.GROUPS)]

    @property
    def walkers(self):
        """The rows' shape, (W,)."""
        return tuple(self.variables[0].shape[1:])

    def read(self):
        """Every row, as a dict of [W] tensors."""
        return dict(zip(self.NAMES, sum((tf.unstack(v) for v in self.variables), [])))

    def row(self, name):
        """One row, [W]."""
        group = next(i for i, g in enumerate(self.GROUPS) if name in g)
        return self.variables[group][self.GROUPS[group].index(name)]

    def write(self, rows):
        """Assign every row from a dict of [W] tensors."""
        for variable, group in zip(self.variables, self.GROUPS):
            variable.assign(tf.stack([rows[name] for name in group]))

    def write_where(self, condition, rows, other_rows):
        """Assign each walker's rows from `rows` where `condition` ([W] bool), else from
        `other_rows`: one where per variable."""
        for variable, group in zip(self.variables, self.GROUPS):
            variable.assign(tf.where(condition, tf.stack([rows[name] for name in group]),
                                     tf.stack([other_rows[name] for name in group])))
