"""What every adaptation state shares: a NamedTuple of tensors chosen field by field, and a
state of scalar fields (or of [W] fields) kept as one float64 vector ([k] or [k, W]) in its
user's variable."""

import tensorflow as tf


def select(where, chosen, otherwise):
    """`chosen` where the boolean `where` holds, else `otherwise`, field by field."""
    return type(chosen)(*(tf.where(where, a, b) for a, b in zip(chosen, otherwise)))


def stacked(state):
    """The state's fields stacked into the vector its variable holds."""
    return tf.stack(list(state))


def unstacked(kind, vector):
    """The state of type `kind` from the vector `stacked` made."""
    return kind(*tf.unstack(tf.convert_to_tensor(vector), num=len(kind._fields)))
