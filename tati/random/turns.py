"""sin and cos of a fraction of a turn, 2 pi u for u in [0, 1): Box-Muller's angles.

Under XLA on the CPU, sin and cos of float64 cost about 25 ns per number, most of a Box-Muller
draw (doc/benchmarks.md). Traced for XLA, cos 2 pi w is therefore computed from the nearest
quarter turn by Taylor series, in a few fused multiply-adds per number, and sin 2 pi u as
cos 2 pi (u - 1/4), so that both are one elementwise program:

    v = 4 w,  k = round(v),  x = (v - k) pi / 2  in [-pi/4, pi/4]   (4 w and v - k are exact)
    cos x = sum_{j=0}^{9} (-1)^j x^(2j) / (2j)!,  sin x = sum_{j=0}^{8} (-1)^j x^(2j+1) / (2j+1)!
    cos 2 pi w = cos x, -sin x, -cos x, sin x  for k mod 4 = 0, 1, 2, 3

The first term left out is below (pi/4)^19 / 19! < 1e-19, so the error is rounding, a few units
in the last place (tests/samplers/test_turns.py); u - 1/4 is exact from u = 1/8 on and off by
less than 2^-55 below. The result is elementwise arithmetic, the same bits for an element
whatever the array's length. In graph mode TensorFlow's own sin and cos are faster than the
series' dozens of operations and are used, also in the XLA functions that a graph-mode
chunk calls (`chunk_compiled`).
"""

import contextlib
import math
import threading

import tensorflow as tf
from tensorflow.python.framework import ops
from tensorflow.python.ops import control_flow_util

# Horner's coefficients of the two series, highest order first: cos x in x^2, and sin(x) / x in
# x^2 with a leading 0 so that both have ten (one loop picks per number).
_COSINE = [(-1) ** j / math.factorial(2 * j) for j in range(9, -1, -1)]
_SINE = [0.0] + [(-1) ** j / math.factorial(2 * j + 1) for j in range(8, -1, -1)]


_chunk = threading.local()  # .jit_compile of the chunk being traced in this thread


@contextlib.contextmanager
def chunk_compiled(jit_compile):
    """While a chunk's body is traced (tati/engine/driver.py): the series are used if and only if the
    chunk is compiled by XLA as a whole, not in the XLA functions that a graph-mode chunk calls
    (HMC's evaluation step), so that graph-mode runs keep their numbers; the series saved
    nothing measurable there (doc/benchmarks.md). Per thread: tf.distribute traces its
    replicas' chunks in threads of their own."""
    before = getattr(_chunk, "jit_compile", None)
    _chunk.jit_compile = bool(jit_compile)
    try:
        yield
    finally:
        _chunk.jit_compile = before


def traced_for_xla():
    """True while the code being traced will be compiled by XLA: in a chunk, when the chunk is
    (`chunk_compiled`); elsewhere, in a jit_compile tf.function or one it calls."""
    jit_compile = getattr(_chunk, "jit_compile", None)
    if jit_compile is not None:
        return jit_compile
    return control_flow_util.GraphOrParentsInXlaContext(ops.get_default_graph())


def cos_of_turns(w):
    """cos 2 pi w elementwise, w in [-1/4, 1) (module docstring): one series per number, the
    sine's in odd quarters, the cosine's in even ones."""
    v = 4.0 * w
    k = tf.round(v)
    x = (v - k) * (math.pi / 2)
    x2 = x * x
    quarter = tf.math.floormod(tf.cast(k, tf.int32), 4)
    odd = tf.equal(quarter % 2, 1)
    series = tf.where(odd, tf.constant(_SINE[0], w.dtype), tf.constant(_COSINE[0], w.dtype))
    for sine, cosine in zip(_SINE[1:], _COSINE[1:]):
        series = series * x2 + tf.where(odd, tf.constant(sine, w.dtype), tf.constant(cosine, w.dtype))
    value = tf.where(odd, x * series, series)  # cos x or sin x
    # cos(k pi / 2 + x) = cos x, -sin x, -cos x, sin x for k mod 4 = 0, 1, 2, 3.
    return tf.where((quarter == 1) | (quarter == 2), -value, value)


def sin_cos_of_turns(u):
    """(sin 2 pi u, cos 2 pi u) elementwise, u in [0, 1) (float32 or float64) along the last axis."""
    if not traced_for_xla():
        angle = (2.0 * math.pi) * u
        return tf.sin(angle), tf.cos(angle)
    # sin 2 pi u = cos 2 pi (u - 1/4): both from one elementwise program.
    values = cos_of_turns(tf.concat([u - 0.25, u], axis=-1))
    return tf.split(values, 2, axis=-1)
