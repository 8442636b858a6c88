"""The one block of rows (tati/engine/rows.py) that every kind of chunk returns."""

import numpy as np
import pytest
import tensorflow as tf

from tati.engine.rows import MAX_BLOCK_ROWS, Rows, block_rows, row_fields


def test_block_rows_bounds():
    assert block_rows(1, 1) == MAX_BLOCK_ROWS
    assert block_rows(16, 10 ** 9) == 1  # one row however large, never none
    assert block_rows(16, 100) == 2 ** 21 // (16 * 116)


def test_row_fields_order_and_extras():
    fields = row_fields(3, 2, ("virial", "step_width"), True, extra={"due": [3]})
    assert fields == {"loss": [3], "parameters": [3, 2], "averages": [4, 3], "virial": [3], "step_width": [3],
                      "accuracy": [3], "due": [3]}
    assert "accuracy" not in row_fields(3, 2, (), False)


def written_block(rows, jit_compile):
    """Two rows written into a fresh block, read back as the chunk returns them."""
    @tf.function(autograph=False, jit_compile=jit_compile)
    def block():
        empty = rows.empty()
        walkers = rows.walkers
        first = {"loss": tf.fill([walkers], 1.0), "parameters": tf.ones([walkers, 2], tf.float32)}
        block = rows.write(empty, 0, first, tf.constant(3, tf.int64))
        second = {"loss": tf.fill([walkers], 2.0), "parameters": 2 * tf.ones([walkers, 2], tf.float64)}
        block = rows.write(block, 1, second, tf.constant(6, tf.int64))
        return rows.result(block, tf.constant(2))
    return {name: value.numpy() for name, value in block().items()}


@pytest.mark.parametrize("packed", [False, True])
def test_written_rows_come_back_by_field(packed):
    rows = Rows({"loss": [3], "parameters": [3, 2]}, 3, 2, False, packed=packed)
    rows.size = 5
    block = written_block(rows, False)
    assert block["rows"] == 2
    np.testing.assert_array_equal(block["step"], [3, 6])
    np.testing.assert_array_equal(block["loss"], [[1.0] * 3, [2.0] * 3])
    assert block["parameters"].dtype == np.float64  # a float32 row is cast
    np.testing.assert_array_equal(block["parameters"], np.stack([np.ones((3, 2)), 2 * np.ones((3, 2))]))
    assert block["nonfinite_step"] == -1 and not block["nonfinite_walkers"].any()


def test_a_compiled_block_returns_every_row():
    """Under XLA the whole block comes back (static shapes); its caller reads `rows` of them."""
    rows = Rows({"loss": [1], "parameters": [1, 2]}, 1, 2, True, packed=True)
    rows.size = 4
    block = written_block(rows, True)
    assert block["rows"] == 2 and block["step"].shape == (4,) and block["loss"].shape == (4, 1)
    np.testing.assert_array_equal(block["step"][:2], [3, 6])
