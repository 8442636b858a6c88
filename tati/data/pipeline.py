"""Batches for the compiled sampling loop.

Full batch (batch_size None or at least the dataset size): the data are constants of the graph
and every step sees all of them. Mini-batches: a seeded permutation per epoch, cut into
batches and read with `next()` inside the compiled loop; which batch comes next is a variable,
so checkpoints restore it. `extra_batch` gives evaluations (SGHMC's batch noise estimator)
batches of their own, keyed by the step, without moving the training batches.
"""

import math

import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.random.seed import seed_variable


def check_arrays(features, labels, dtype, points_of_any_shape=False):
    """(X, Y) as 2-D arrays of one dtype with as many rows, finite; InputError otherwise. With
    `points_of_any_shape` (a Keras model's inputs: images, sequences) X is [N, ...] of any rank."""
    arrays = []
    for name, array in (("features", features), ("labels", labels)):
        try:
            array = np.asarray(array, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float64
            hint = (" (class names: give class indices 0, 1, ..., e.g. np.unique(labels, return_inverse=True)[1])"
                    if name == "labels" else "")
            raise InputError(f"dataset {name} must be numeric arrays{hint}") from None
        if array.ndim == 1:
            array = array[:, None]
        shaped_points = name == "features" and array.ndim > 2 and 0 not in array.shape  # images, sequences
        if shaped_points and not points_of_any_shape:
            raise InputError(f"dataset features must be a 2-D array [points, columns], got shape "
                             f"{list(array.shape)}: points of more dimensions (images) need a Keras model (model=)")
        if (array.ndim != 2 and not shaped_points) or 0 in array.shape:
            raise InputError(f"dataset {name} must be a non-empty 2-D array, got shape {list(array.shape)}")
        # Checked after the cast: a value finite as float64 can overflow a narrower dtype.
        with np.errstate(over="ignore"):
            array = array.astype(tf.as_dtype(dtype).as_numpy_dtype)
        if not np.all(np.isfinite(array)):
            row = int(np.argwhere(~np.isfinite(array))[0][0])
            raise InputError(f"dataset {name} contain NaN, infinite or too large values (first in row {row})")
        arrays.append(array)
    if arrays[0].shape[0] != arrays[1].shape[0]:
        raise InputError(f"dataset features have {arrays[0].shape[0]} rows but labels have {arrays[1].shape[0]}")
    return tuple(arrays)


class Batches:
    """Full batch, or mini-batches read inside the compiled loop.

    Mini-batches: epoch e visits the points in a permutation drawn from (seed, e) and cut into
    batches of batch_size (the last one smaller when it does not divide the data). The batch
    of a step depends only on the seed and the count of batches already used, `position`, a
    variable that a checkpoint saves: a restored run reads the same batches as an unbroken one.
    """

    def __init__(self, features, labels, batch_size=None, seed=0):
        self.size = features.shape[0]
        self.full = batch_size is None or batch_size >= self.size
        self.batches_per_epoch = 1 if self.full else math.ceil(self.size / batch_size)
        self._all = (tf.constant(features), tf.constant(labels))
        if not self.full:
            self.batch_size, self.seed = batch_size, seed
            # In a dict: engine/checkpoint.py saves a Batches' Variable attributes, and the seed is an option.
            self._option_values = {"seed": seed_variable(seed, "batch_seed")}
            self.position = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="batches_used")
            # The current epoch's permutation, a cache of (seed, epoch) redrawn when the epoch changes.
            self._order = tf.Variable(tf.range(self.size, dtype=tf.int32), trainable=False, name="order")
            self._order_epoch = tf.Variable(tf.constant(-1, tf.int64), trainable=False, name="order_epoch")

    def _key(self, stream):
        """(seed, stream): the key of the epochs' permutations (2), of the extra batches (3) or of
        the batches that cover the data (4)."""
        return tf.stack([tf.convert_to_tensor(self._option_values["seed"]), tf.constant(stream, tf.int64)])

    def _permutation(self, epoch):
        key = tf.random.experimental.stateless_fold_in(
            self._key(2), epoch, alg="philox")
        draws = tf.random.stateless_uniform([self.size], seed=key, alg="philox")
        return tf.argsort(draws, stable=True)  # int32

    def next(self):
        """The next (features, labels) batch; call inside the compiled loop."""
        if self.full:
            return self._all
        position = tf.convert_to_tensor(self.position)
        epoch = position // self.batches_per_epoch

        def new_epoch():
            self._order.assign(self._permutation(epoch))
            self._order_epoch.assign(epoch)
            return tf.constant(True)

        tf.cond(tf.not_equal(epoch, self._order_epoch), new_epoch, lambda: tf.constant(False))
        start = (position % self.batches_per_epoch) * self.batch_size
        stop = tf.minimum(start + self.batch_size, self.size)
        indices = self._order[start:stop]
        self.position.assign_add(1)
        return tf.gather(self._all[0], indices), tf.gather(self._all[1], indices)

    def all(self):
        """The whole dataset as one batch."""
        return self._all

    def starts_epoch(self):
        """Whether the next `next()` batch is the first of an epoch (mini-batches only)."""
        return tf.equal(tf.math.floormod(tf.convert_to_tensor(self.position), self.batches_per_epoch), 0)

    def extra_batch(self, step, index):
        """The index-th batch of an evaluation at `step` (SGHMC's batch noise estimator): batch_size
        distinct points drawn at random, keyed by (seed, step, index) alone, so it is the same
        for any number of walkers and after a restore; neither `position` nor the epoch's
        permutation moves, so the training batches stay as they are. A full batch: all points."""
        if self.full:
            return self._all
        key = tf.random.experimental.stateless_fold_in(tf.random.experimental.stateless_fold_in(
            self._key(3), tf.cast(step, tf.int64), alg="philox"),
            tf.cast(index, tf.int64), alg="philox")
        draws = tf.random.stateless_uniform([self.size], seed=key, alg="philox")
        indices = tf.math.top_k(draws, k=self.batch_size, sorted=False).indices
        return tf.gather(self._all[0], indices), tf.gather(self._all[1], indices)

    def covering_batch(self, step, index):
        """The index-th batch of an evaluation at `step` that covers the data (the noise mass's
        gradient noise and measure_step_width's curvature, tati/adaptation/measured_width.py):
        batches 0 .. batches_per_epoch - 1 cut a permutation of the points as an epoch is, so that
        every point is in one of them, and each further batches_per_epoch another permutation;
        keyed by (seed, step, index // batches_per_epoch) alone; nothing moves. A full batch: all
        points."""
        if self.full:
            return self._all
        index = tf.cast(index, tf.int64)
        key = tf.random.experimental.stateless_fold_in(tf.random.experimental.stateless_fold_in(
            self._key(4), tf.cast(step, tf.int64), alg="philox"),
            index // self.batches_per_epoch, alg="philox")
        order = tf.argsort(tf.random.stateless_uniform([self.size], seed=key, alg="philox"), stable=True)
        start = tf.cast(index % self.batches_per_epoch, tf.int32) * self.batch_size
        indices = order[start:tf.minimum(start + self.batch_size, self.size)]
        return tf.gather(self._all[0], indices), tf.gather(self._all[1], indices)

    def epoch(self, step):
        """Number of completed passes over the data after `step` steps."""
        return step // self.batches_per_epoch


class NoData:
    """For potentials: no batches; every step counts as one epoch."""
    size = 0
    batches_per_epoch = 1

    def next(self):
        return None, None

    def extra_batch(self, step, index):
        return None, None

    covering_batch = extra_batch

    def epoch(self, step):
        return step
