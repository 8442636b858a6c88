"""SamplerBase: what every tati sampler shares, on top of a Keras 3 optimizer.

A sampler is a Keras optimizer whose `update_step` moves a variable (the positions q) and its
momentum slot (p) by a composition of the split steps in `splitting.py`. The base class owns:

* the user's parameters: `step_width` (Keras' `learning_rate`, so schedules work),
  `inverse_temperature` beta and `friction_constant` gamma, the last two kept in optimizer
  variables so that changing them does not retrace a compiled loop;
* momentum slots, drawn from N(0, I / beta) at build time with the sampler's seed;
* seeded noise: stateless normal draws keyed by (seed, iteration, variable index, stream).
  The iteration counter is an optimizer variable, so a checkpoint restores the noise stream;
* the per-step report (`step_info`): kinetic energy 1/2 |p|^2, inertia q.p and |noise|^2,
  summed over all variables of one step, for the run-info and averages tables;
* validation: every option error is an `InputError` naming the option and the value, and base
  options that would change the dynamics (weight decay, clipping, EMA, gradient accumulation)
  are refused.
"""

import math

import keras
import tensorflow as tf

from tati.errors import InputError

# Base-optimizer options that would silently change the sampled dynamics.
_REFUSED = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "use_ema",
            "gradient_accumulation_steps")
# Companions of refused options that Keras' own get_config emits; harmless at any value once
# the option they tune is off.
_IGNORED = ("ema_momentum", "ema_overwrite_frequency")

INFO_NAMES = ("kinetic_energy", "inertia", "noise_sq")


def check_positive(option, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{option} must be a positive number, got {value!r}")
    return float(value)


def check_nonnegative(option, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise InputError(f"{option} must be a non-negative number, got {value!r}")
    return float(value)


class SamplerBase(keras.optimizers.Optimizer):
    """Base class of tati's samplers. Subclasses implement `update_step` with `self._report`."""

    uses_friction = True

    def __init__(self, step_width=0.1, inverse_temperature=1.0, friction_constant=1.0,
                 seed=0, name=None, **kwargs):
        cls_name = type(self).__name__
        if "learning_rate" in kwargs:  # Keras' name for the step width, e.g. from keras' own configs
            step_width = kwargs.pop("learning_rate")
        for option in _REFUSED:
            value = kwargs.pop(option, None)
            if value not in (None, False):
                raise InputError(f"{cls_name}: option {option}={value!r} would change the sampled "
                                 "dynamics and is refused")
        for option in _IGNORED:
            kwargs.pop(option, None)
        if not callable(step_width):
            check_positive("step_width", step_width)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise InputError(f"seed must be an integer, got {seed!r}")
        super().__init__(learning_rate=step_width, name=name, **kwargs)
        self._inverse_temperature_value = check_positive("inverse_temperature", inverse_temperature)
        self._friction_constant_value = check_nonnegative("friction_constant", friction_constant)
        self.seed = seed

    # -- parameters living in variables -------------------------------------------------------
    @property
    def step_width(self):
        return self.learning_rate

    @step_width.setter
    def step_width(self, value):
        self.learning_rate = check_positive("step_width", value)

    @property
    def inverse_temperature(self):
        return self._inverse_temperature if self.built else self._inverse_temperature_value

    @inverse_temperature.setter
    def inverse_temperature(self, value):
        self._set_parameter("inverse_temperature", check_positive("inverse_temperature", value))

    @property
    def friction_constant(self):
        return self._friction_constant if self.built else self._friction_constant_value

    @friction_constant.setter
    def friction_constant(self, value):
        self._set_parameter("friction_constant", check_nonnegative("friction_constant", value))

    def _set_parameter(self, name, value):
        setattr(self, f"_{name}_value", value)
        if self.built:
            getattr(self, f"_{name}").assign(value)

    # -- state ---------------------------------------------------------------------------------
    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._inverse_temperature = self.add_variable(
            (), initializer=keras.initializers.Constant(self._inverse_temperature_value),
            dtype="float64", name="inverse_temperature")
        self._friction_constant = self.add_variable(
            (), initializer=keras.initializers.Constant(self._friction_constant_value),
            dtype="float64", name="friction_constant")
        self._step_info = self.add_variable((len(INFO_NAMES),), dtype="float64", name="step_info")
        scale = 1.0 / math.sqrt(self._inverse_temperature_value)
        self._momenta = [
            self.add_variable_from_reference(
                v, name="momentum",
                initializer=lambda shape, dtype, i=i: scale * tf.random.stateless_normal(
                    shape, seed=[self.seed, -1 - i], dtype=dtype))
            for i, v in enumerate(variables)]

    @property
    def momenta(self):
        """The momentum slots, one per variable (in the order the optimizer was built with)."""
        return list(self._momenta)

    @property
    def step_info(self):
        """Quantities of the last step, summed over variables: a dict of float64 scalars."""
        return dict(zip(INFO_NAMES, tf.unstack(self._step_info)))

    def apply(self, grads, trainable_variables=None):
        if self.built:
            self._step_info.assign(tf.zeros_like(self._step_info))
        return super().apply(grads, trainable_variables)

    # -- helpers for update_step ---------------------------------------------------------------
    def _parameters(self, variable):
        """(beta, gamma) in the variable's dtype."""
        return (tf.cast(self._inverse_temperature, variable.dtype),
                tf.cast(self._friction_constant, variable.dtype))

    def _normal(self, variable, stream=0):
        """Standard normal draw of the variable's shape, keyed by (seed, iteration, variable, stream)."""
        index = self._get_variable_index(variable)
        key = tf.random.experimental.stateless_fold_in(
            tf.constant([self.seed, 0], tf.int64), tf.cast(self.iterations, tf.int64))
        key = tf.random.experimental.stateless_fold_in(key, index * 64 + stream)
        return tf.random.stateless_normal(tf.shape(variable), seed=key, dtype=variable.dtype)

    def _report(self, position, momentum, noise):
        """Add this variable's share of the step's kinetic energy, inertia q.p and |noise|^2."""
        q = tf.reshape(position, [-1])
        p = tf.reshape(momentum, [-1])
        n = tf.reshape(noise, [-1])
        values = tf.stack([0.5 * tf.tensordot(p, p, 1), tf.tensordot(q, p, 1), tf.tensordot(n, n, 1)])
        self._step_info.assign_add(tf.cast(values, tf.float64))

    # -- serialization -------------------------------------------------------------------------
    def get_config(self):
        config = super().get_config()
        config["step_width"] = config.pop("learning_rate")
        for option in _REFUSED + _IGNORED:
            config.pop(option, None)
        config.update(inverse_temperature=float(self._inverse_temperature_value),
                      friction_constant=float(self._friction_constant_value),
                      seed=self.seed)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("step_width"), dict):
            config["step_width"] = keras.saving.deserialize_keras_object(
                config["step_width"], custom_objects=custom_objects)
        return cls(**config)
