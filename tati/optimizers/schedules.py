"""Learning-rate schedules of fit(): a constant rate, exponential decay, SWAG's cyclic schedule,
or in Python any Keras LearningRateSchedule given as `learning_rate`.

A schedule is a function of the optimizer's own iteration counter (`optimizer.iterations`, the
number of steps it has taken), which Keras evaluates before each step: step k (1, 2, ...) uses
the rate at k - 1, and after k steps `optimizer.learning_rate` reads the rate at k. That counter
is an optimizer variable, saved by save_model, so a restored fit continues the schedule bitwise.

    exponential (learning_rate_decay_rate r, learning_rate_decay_steps s, Keras' ExponentialDecay):
        rate(k) = learning_rate * r^(k / s)
    cyclic (learning_rate_cycle_steps c, learning_rate_cycle_minimum a2; Izmailov et al. 2018,
    as SWAG collects its snapshots), falling linearly from a1 = learning_rate within each cycle:
        t(k) = (k mod c + 1) / c,   rate(k) = (1 - t) a1 + t a2
    so the c-th step of each cycle is taken at a2, and with every_nth = c the rows are the ends
    of the cycles: SWAG's snapshots.
"""

import keras

from tati.errors import InputError
from tati.engine.registry import optimizer_spec


@keras.saving.register_keras_serializable(package="tati")
class CyclicLearningRate(keras.optimizers.schedules.LearningRateSchedule):
    """Linearly from `maximum` to `minimum` within each cycle of `cycle_steps` steps, then back."""

    def __init__(self, maximum, minimum, cycle_steps):
        self.maximum, self.minimum, self.cycle_steps = float(maximum), float(minimum), int(cycle_steps)
        if not 0 < self.minimum <= self.maximum < float("inf"):
            raise InputError(f"CyclicLearningRate needs 0 < minimum <= maximum, got maximum {maximum!r} "
                             f"and minimum {minimum!r}")
        if self.cycle_steps < 1 or self.cycle_steps != cycle_steps:
            raise InputError(f"CyclicLearningRate: cycle_steps must be a whole number >= 1, got {cycle_steps!r}")

    def __call__(self, step):
        c = self.cycle_steps
        t = keras.ops.cast(keras.ops.mod(step, c) + 1, "float32") / c
        return (1.0 - t) * self.maximum + t * self.minimum

    def get_config(self):
        return {"maximum": self.maximum, "minimum": self.minimum, "cycle_steps": self.cycle_steps}


def is_schedule(value):
    return isinstance(value, keras.optimizers.schedules.LearningRateSchedule)


def learning_rate_of(o):
    """fit()'s learning rate from the options: the number `learning_rate`, or a schedule."""
    rate = o["learning_rate"]
    decay, cycle = o["learning_rate_decay_rate"], o["learning_rate_cycle_steps"]
    given = "learning_rate_decay_rate" if decay is not None else "learning_rate_cycle_steps" if cycle else None
    if not isinstance(rate, float) and not is_schedule(rate):
        raise InputError(f"learning_rate must be a positive number or a keras.optimizers.schedules."
                         f"LearningRateSchedule, got {type(rate).__name__}")
    if given is None:
        return rate
    spec = optimizer_spec(o["optimizer"])
    if spec is not None and not spec.takes_learning_rate:
        raise InputError(f"{given}: optimizer {spec.name} has no learning rate (it chooses its steps); drop {given}")
    if is_schedule(rate):
        raise InputError(f"{given} schedules a number learning_rate; learning_rate is already a schedule")
    if decay is not None and cycle is not None:
        raise InputError("give either learning_rate_decay_rate or learning_rate_cycle_steps, not both")
    if decay is not None:
        return keras.optimizers.schedules.ExponentialDecay(rate, o["learning_rate_decay_steps"], decay)
    minimum = rate / 10 if o["learning_rate_cycle_minimum"] is None else o["learning_rate_cycle_minimum"]
    if minimum > rate:
        raise InputError(f"learning_rate_cycle_minimum {minimum:g} must not exceed learning_rate {rate:g}")
    return CyclicLearningRate(rate, minimum, cycle)
