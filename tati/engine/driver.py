"""The compiled driver: chunk(n), up to n steps of one kernel inside one tf.function.

As TensorFlow Probability's sample_chain steps a kernel and traces each step through its
trace_fn, the driver steps a kernel and asks it, at a row's step, for the row's values. A
kernel the driver steps (`Kernel` below; its defaults suit a kernel of one step per call):

    rows                        its block of rows (tati/engine/rows.py Rows)
    steps_dtype                 the dtype of chunk(n)'s n (int64; HMC's legs: int32)
    start(n) -> (state, i)      before a chunk's steps: the State the loops carry (a NamedTuple
                                of tensors, () where the kernel keeps its state in variables)
                                and the steps taken before the first row's stretch (HMC: up to
                                its first evaluation)
    stride(state, i, n)         steps up to the next row, its own included, or None: every step
                                may be a row's (HMC's evaluations, L-BFGS's stretches)
    step(state, record, left)   one step -> (state, info); `record` (a Python bool) whether its
                                row is due, `left` the chunk's steps left, this one's included
    trace(state, info)          the trace hook: a row step's values {field: tensor} and step number
    taken(info), kept(info)     steps a step took (1) and whether its row is kept (True)
    going(state)                False stops the chunk early; None: never
    finish(state)               after the steps: the state to variables; returns the block's
                                other entries (nonfinite_step, nonfinite_walkers) or {}

The steps between rows carry no row (`record` False), so a kernel computes a row's values
only where one is written.
"""

import functools

import tensorflow as tf

from tati.engine.xla_cache import align_names
from tati.random.turns import chunk_compiled


def compiled_chunk(jit_compile):
    """tf.function(autograph=False, jit_compile=jit_compile) of a chunk(n), whose body is traced
    knowing whether the chunk is compiled by XLA as a whole (random/turns.py); traced under the
    names any process gives it, for XLA's persistent cache (xla_cache.align_names)."""
    def compile(body):
        @functools.wraps(body)
        def chunk(n):
            if jit_compile:
                align_names()
            with chunk_compiled(jit_compile):
                return body(n)
        return tf.function(chunk, autograph=False, jit_compile=jit_compile)
    return compile


class Kernel:
    """The defaults of a kernel the driver steps (see the module's docstring)."""

    rows = None
    steps_dtype = tf.int64

    def start(self, n):
        return (), tf.constant(0, n.dtype)

    def stride(self, state, i, n):
        return None

    def taken(self, info):
        return 1

    def kept(self, info):
        return True

    def going(self, state):
        return None

    def finish(self, state):
        return {}


def both(condition, other):
    """condition and other, where other None is True (no operation for it)."""
    return condition if other is None else tf.logical_and(condition, other)


def free_steps(kernel, state, k):
    """Steps 2..k of a row's stretch, without a row (while the kernel is going): (the next
    step's number in the stretch, the state)."""
    def step_on(j, state):
        return j + 1, kernel.step(state, False, None)[0]

    return tf.while_loop(lambda j, state: both(j < k, kernel.going(state)), step_on,
                         [tf.constant(1, k.dtype), state])


def row_stretch(kernel, n):
    """The loop body of a chunk: the steps up to the next row, the row's step and its row."""
    rows = kernel.rows

    def body(i, written, state, block):
        k = kernel.stride(state, i, n)
        j = None
        if k is not None:
            j, state = free_steps(kernel, state, k)
        state, info = kernel.step(state, True, n - i)
        row, step = kernel.trace(state, info)
        block = rows.write(block, written, row, step)
        kept = kernel.kept(info)
        written = written + 1 if kept is True else written + tf.cast(kept, written.dtype)
        return i + (kernel.taken(info) if j is None else j), written, state, block

    return body


def compile_driver(kernel):
    """The compiled chunk(n) of `kernel`: up to n steps (fewer where its block of rows is full
    or the kernel stops), returning their rows as a block (Rows.result); compiled with XLA as
    a whole where its rows are (`Rows.jit_compile`)."""
    rows = kernel.rows

    @compiled_chunk(rows.jit_compile)
    def chunk(n):
        state, i = kernel.start(n)
        # Loops written out as tf.while_loop, not converted by AutoGraph: its conversion was a
        # good part of a new process's first call (doc/benchmarks.md). While loops, not ranges:
        # XLA would compile one program per n.
        _, written, state, block = tf.while_loop(
            lambda i, written, state, _: both(tf.logical_and(i < n, written < rows.size), kernel.going(state)),
            row_stretch(kernel, n), [i, tf.constant(0), state, rows.empty()])
        return rows.result(block, written, **kernel.finish(state))

    return chunk
