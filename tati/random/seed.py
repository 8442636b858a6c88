"""The seed inside compiled programs."""

import tensorflow as tf


def seed_variable(value, name="seed"):
    """A run's seed as an int64 variable's value, not a constant: a compiled program then does not
    depend on the seed, and XLA's persistent cache serves a run with another seed
    (tati/engine/xla_cache.py). Not a model's or an optimizer's variable: the seed is an option,
    which a checkpoint does not carry. `value` is already in the form its draws take (the
    caller's conversion); made outside any graph being traced, as a variable must be."""
    with tf.init_scope():
        return tf.Variable(tf.constant(value, tf.int64), trainable=False, name=name)
