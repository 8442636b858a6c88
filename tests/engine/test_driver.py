"""The compiled driver (tati/engine/driver.py): a toy kernel's steps, rows, strides, stops and
multi-step steps. The engine's size limits are tests/engine/test_architecture.py's."""

from typing import NamedTuple

import numpy as np
import pytest
import tensorflow as tf

from tati.engine.driver import Kernel, compile_driver
from tati.engine.rows import Rows


class Count(NamedTuple):
    step: tf.Tensor
    x: tf.Tensor


class Counter(Kernel):
    """x grows by `by` per call, each call taking `by` steps; a row every `every_nth` steps (or
    at every call, stride None), kept where `keep(x)`; going while x < stop."""

    def __init__(self, every_nth=1, stop=None, by=1, keep=None, jit_compile=False):
        self.every_nth, self.stop, self.by, self.keep = every_nth, stop, by, keep
        self.rows = Rows({"x": [1]}, 1, 1, jit_compile)
        self.rows.size = 6

    def start(self, n):
        return Count(tf.constant(0, tf.int64), tf.constant(0.0, tf.float64)), tf.constant(0, tf.int64)

    def stride(self, state, i, n):
        if self.every_nth == 1:
            return None
        return tf.minimum(self.every_nth - tf.math.floormod(state.step, self.every_nth), n - i)

    def step(self, state, record, left):
        state = Count(state.step + self.by, state.x + self.by)
        return state, state.x

    def trace(self, state, info):
        return {"x": tf.reshape(info, [1])}, state.step

    def taken(self, info):
        return 1 if self.by == 1 else tf.constant(self.by, tf.int64)

    def kept(self, info):
        return True if self.keep is None else self.keep(info)

    def going(self, state):
        return None if self.stop is None else state.x < self.stop


def run(kernel, n):
    block = compile_driver(kernel)(tf.constant(n, tf.int64))
    rows = int(block["rows"])
    return block["step"].numpy()[:rows], block["x"].numpy()[:rows, 0]


@pytest.mark.parametrize("jit_compile", [False, True])
def test_rows_at_every_nth_and_the_last_step(jit_compile):
    steps, x = run(Counter(every_nth=3, jit_compile=jit_compile), 10)
    np.testing.assert_array_equal(steps, [3, 6, 9, 10])
    np.testing.assert_array_equal(x, steps)  # the row of the state after its step


def test_a_full_block_ends_the_chunk():
    steps, _ = run(Counter(), 100)
    np.testing.assert_array_equal(steps, [1, 2, 3, 4, 5, 6])


def test_a_stop_ends_the_row_stretch_with_its_row():
    """As a non-finite step does: the free steps stop, the row's step still comes."""
    steps, _ = run(Counter(every_nth=3, stop=4.5), 100)
    np.testing.assert_array_equal(steps, [3, 6])


def test_steps_of_several_steps_and_rows_kept_or_not():
    """As HMC's legs: a call takes `by` steps; only its kept rows count in the block."""
    steps, x = run(Counter(by=2, keep=lambda x: tf.equal(tf.math.floormod(x, 4.0), 0.0)), 9)
    np.testing.assert_array_equal(steps, [4, 8])  # calls at 0, 2, 4, 6, 8: steps 2..10, kept at 4, 8

