"""TensorFlow Probability's random numbers keyed per walker, for NUTS and RWMH (samplers/proposal.py).

TFP's kernels draw the numbers of all walkers at once: each draw is one stateless op of shape
[W, ...] from a key that TFP splits off the step's seed. Within `keyed_per_walker(first, W)`
TFP's normal and uniform draws are made walker by walker instead: the draw's key (from the
step's seed and the draw's place in the kernel, not from W) and Philox counters of the walker's
own, walker w of the kernel being walker first + w of the whole run. So a walker's numbers
depend on (seed, step, walker) only, not on the number of walkers or the devices they run on,
as the Langevin samplers' (samplers/base.py `_philox`).

TFP's own draws would not do: an op's numbers are a function of the element's index in the draw,
so the walkers of a device whose first walker is not 0 would take another walker's numbers
(and under XLA the normal kernel pairs its numbers by the whole shape). TFP takes no sampler
of its own, so this swaps two functions of its internal module `samplers` while the step is
traced (checked against TFP 0.25: NUTS and RWMH draw only through them); a TFP that draws
otherwise fails tests/samplers/test_walker_randomness.py's share test.
"""

import contextlib
import math

import tensorflow as tf

from tati.random.streams import box_muller, packed_pairs

_PHILOX = 1  # tf.random.Algorithm.PHILOX: the same numbers on every device


@contextlib.contextmanager
def keyed_per_walker(first_walker, walkers):
    """TFP's `samplers.normal` and `samplers.uniform` draw per walker while the block runs (the
    kernel's one_step is traced there); every draw's leading axis must be the `walkers` walkers."""
    from tensorflow_probability.python.internal import samplers

    def normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None):
        shape, numbers = _per_walker(shape, walkers)
        values = _normal(samplers.sanitize_seed(seed), first_walker, walkers, numbers, tf.as_dtype(dtype))
        values = _shaped(values, shape)
        if isinstance(mean, (int, float)) and isinstance(stddev, (int, float)) and (mean, stddev) == (0, 1):
            return values  # TFP's draws: no operations for the identity
        return tf.cast(mean, dtype) + tf.cast(stddev, dtype) * values

    def uniform(shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None):
        dtype = tf.as_dtype(dtype)
        shape, numbers = _per_walker(shape, walkers)
        work = dtype if dtype in (tf.float32, tf.float64) else tf.float64
        values = _shaped(_uniform(samplers.sanitize_seed(seed), first_walker, walkers, numbers, work), shape)
        if dtype.is_integer:  # [minval, maxval): TFP's direction of a tree's doubling
            return tf.cast(minval, dtype) + tf.cast(tf.floor(values * tf.cast(maxval - minval, work)), dtype)
        if isinstance(minval, (int, float)) and minval == 0 and maxval is None:
            return values
        if maxval is None:
            maxval = 1.0
        return tf.cast(minval, dtype) + values * (tf.cast(maxval, dtype) - tf.cast(minval, dtype))

    saved = samplers.normal, samplers.uniform
    samplers.normal, samplers.uniform = normal, uniform
    try:
        yield
    finally:
        samplers.normal, samplers.uniform = saved


def _per_walker(shape, walkers):
    """(the static shape, the numbers per walker) of a draw whose leading axis is the walkers'."""
    shape = tf.TensorShape(tf.get_static_value(tf.convert_to_tensor(shape, tf.int32)))
    if not shape.is_fully_defined() or shape.rank < 1 or shape[0] != walkers:
        raise AssertionError(f"a TFP draw of shape {shape} is not one per walker of {walkers}")
    return shape, math.prod(shape[1:])


def _shaped(values, shape):
    """[walkers, k >= numbers] values in the draw's shape."""
    if shape.rank == 1:
        return values[:, 0]
    numbers = math.prod(shape[1:])
    if values.shape[1] != numbers:
        values = values[:, :numbers]
    return values if shape.rank == 2 else tf.reshape(values, shape)


def _uniform(seed, first_walker, walkers, numbers, dtype):
    """[walkers, k] uniforms in [0, 1), k >= numbers: walker w's from the counters of walker
    first + w, each walker's numbers filling whole 128-bit Philox counters."""
    per_counter = 16 // dtype.size
    width = -(-numbers // per_counter) * per_counter
    key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=seed)
    if first_walker:  # TF derives the counter's low word as 0; a draw advances it by one per 128 bits
        counter = counter + tf.constant([first_walker * width // per_counter, 0], tf.uint64)
    return tf.raw_ops.StatelessRandomUniformV2(shape=[walkers, width], key=key, counter=counter, alg=_PHILOX,
                                               dtype=dtype)


def _normal(seed, first_walker, walkers, numbers, dtype):
    """[walkers, k] standard normals, k >= numbers, Box-Muller on `_uniform`'s numbers; each walker's
    row padded to whole SIMD packets, whose log, cos and sin would differ in the last bit from
    those of a tail."""
    work = tf.float64 if dtype == tf.float64 else tf.float32
    values = box_muller(_uniform(seed, first_walker, walkers, 2 * packed_pairs(numbers), work))
    return values if work == dtype else tf.cast(values, dtype)
