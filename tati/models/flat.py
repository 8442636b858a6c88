"""FlatModel: a model whose parameters are one flat variable theta of length d.

This is the parameter view every table and sampler works with. The built-in network and
user potentials store theta directly (one variable, so a sampler's update is a single
vectorised operation); a user's Keras model is mapped onto it by `KerasModel`.

Interface the Simulation relies on (all models):
    variables          trainable variables handed to the optimizer
    parameter_names    trajectory column names, in flat order
    num_parameters     d
    flat_parameters()  theta as a tensor (works in a compiled graph)
    get_parameters()   theta as a numpy array;  set_parameters(values)
    loss(features, labels) -> scalar U;  outputs(features);  uses_data
"""

import numpy as np
import tensorflow as tf

from tati.errors import InputError


class FlatModel:
    uses_data = True

    def __init__(self, initial_parameters, parameter_names, dtype):
        self.parameter_names = list(parameter_names)
        self.theta = tf.Variable(tf.constant(initial_parameters, dtype=dtype), name="parameters")
        self.variables = [self.theta]

    @property
    def num_parameters(self):
        return len(self.parameter_names)

    @property
    def dtype(self):
        return self.theta.dtype

    def flat_parameters(self):
        return tf.convert_to_tensor(self.theta)

    def get_parameters(self):
        return self.theta.numpy().copy()

    def set_parameters(self, values):
        self.theta.assign(check_flat("parameters", values, self.num_parameters, self.dtype))


def check_flat(option, values, length, dtype):
    """values as a 1-D numpy array of the given length, or InputError naming the option."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{option} must be a list of numbers, got {values!r:.60}") from None
    if array.ndim != 1 or array.shape[0] != length:
        raise InputError(f"{option} must have {length} values, got shape {list(array.shape)}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{option} contains NaN or infinite values")
    return array.astype(tf.as_dtype(dtype).as_numpy_dtype)
