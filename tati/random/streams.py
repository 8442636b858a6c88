"""The numbers every sampler's noise is made of: Philox streams per (iteration, variable,
stream), Box-Muller in whole SIMD packets, and the padding that keeps a walker's numbers the
same bits whatever the number of walkers (tati/samplers/base.py draws them; tati/random/
walker_draws.py hands TensorFlow Probability's kernels the same per-walker keys).
"""

import functools

import tensorflow as tf

from tati.random.turns import sin_cos_of_turns

# Random streams per (iteration, variable index): `_philox(..., index, stream)` takes stream < NOISE_STREAMS.
NOISE_STREAMS = 64
# From this many numbers on, Box-Muller on Philox uniforms beats TensorFlow's normal kernel
# (0.53-0.67 of its time for 118,282); below, its ten operations cost more than they save, so
# a variable without walkers uses the kernel.
BOX_MULLER_SIZE = 4096
# Numbers in the widest SIMD packet (16 floats of AVX-512), see _normal and walkerwise.
PACKET = 16


@functools.cache
def _register_bytes():
    """The widest SIMD register of this CPU in bytes: 64 with AVX-512, 32 with AVX; 64 where the
    CPU does not say (no padding is too wide, only slower)."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line for line in info if line.startswith("flags")), "").split()
    except OSError:
        return 64
    return 64 if "avx512f" in flags or "avx" not in flags else 32


def values_per_register(dtype):
    """Values of `dtype` in one of this CPU's widest SIMD registers: TensorFlow's CPU kernels
    compute the elements of an array that fill whole registers by one code path and a tail by a
    scalar one, so arrays of whole registers compute each element the same way whatever their
    length (proposal.py pads its walkers to such a count, as TFP's arithmetic runs on every
    padded walker). PACKET stays fixed where the padding must not depend on the machine (the
    Box-Muller pairs, hence the random numbers) or costs nothing (tati's own [W] vectors)."""
    return _register_bytes() // tf.as_dtype(dtype).size


def packed_pairs(numbers):
    """Pairs of uniforms per walker for `numbers` normals, rounded up to whole SIMD packets."""
    return -(-((numbers + 1) // 2) // PACKET) * PACKET


def box_muller(uniforms):
    """[W, 2k] uniforms in [0, 1) -> [W, 2k] standard normals (Box-Muller): the first k of a
    row give the radii, the last k the angles. With k a multiple of PACKET, log, cos and sin
    compute every element by the same code path, wherever the row ends."""
    half = uniforms.shape[1] // 2
    radius = tf.sqrt(-2.0 * tf.math.log(1.0 - uniforms[:, :half]))  # 1 - u in (0, 1] exactly
    sine, cosine = sin_cos_of_turns(uniforms[:, half:])  # of the angle 2 pi u
    return tf.concat([radius * cosine, radius * sine], 1)
