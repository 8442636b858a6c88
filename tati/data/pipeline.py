"""Batches for the compiled sampling loop.

Full batch (batch_size None or at least the dataset size): the data are constants of the graph
and every step sees all of them. Mini-batches: a tf.data pipeline that reshuffles with the seed
at every epoch, repeats forever and is read with `next()` inside the compiled loop.
"""

import math

import numpy as np
import tensorflow as tf

from tati.errors import InputError


def check_arrays(features, labels, dtype):
    """(X, Y) as 2-D arrays of one dtype with as many rows, finite; InputError otherwise."""
    arrays = []
    for name, array in (("features", features), ("labels", labels)):
        try:
            array = np.asarray(array, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"dataset {name} must be numeric arrays") from None
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2 or array.shape[0] == 0:
            raise InputError(f"dataset {name} must be a non-empty 2-D array, got shape {list(array.shape)}")
        if not np.all(np.isfinite(array)):
            row = int(np.argwhere(~np.isfinite(array))[0][0])
            raise InputError(f"dataset {name} contain NaN or infinite values (first in row {row})")
        arrays.append(array.astype(tf.as_dtype(dtype).as_numpy_dtype))
    if arrays[0].shape[0] != arrays[1].shape[0]:
        raise InputError(f"dataset features have {arrays[0].shape[0]} rows but labels have {arrays[1].shape[0]}")
    return tuple(arrays)


class Batches:
    def __init__(self, features, labels, batch_size=None, seed=0):
        self.size = features.shape[0]
        self.full = batch_size is None or batch_size >= self.size
        self.batches_per_epoch = 1 if self.full else math.ceil(self.size / batch_size)
        self._all = (tf.constant(features), tf.constant(labels))
        if not self.full:
            data = (tf.data.Dataset.from_tensor_slices((features, labels))
                    .shuffle(self.size, seed=seed, reshuffle_each_iteration=True)
                    .batch(batch_size).repeat().prefetch(2))
            self._iterator = iter(data)

    def next(self):
        """The next (features, labels) batch; call inside the compiled loop."""
        return self._all if self.full else next(self._iterator)

    def all(self):
        """The whole dataset as one batch."""
        return self._all

    def epoch(self, step):
        """Number of completed passes over the data after `step` steps."""
        return step // self.batches_per_epoch


class NoData:
    """For potentials: no batches; every step counts as one epoch."""
    size = 0
    batches_per_epoch = 1

    def next(self):
        return None, None

    def epoch(self, step):
        return step
