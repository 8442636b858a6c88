"""The block of rows a compiled chunk returns: one implementation for every kind of kernel.

A row holds, per walker, the loss, the parameters, the running averages, the kernel's
run-info columns (its `info`), the accuracy where the model has one, and what a kernel adds
(HMC's `due`, the momenta and gradients of record_momenta). The chunk writes its rows into
TensorArrays of `block_rows` rows, each with its step, and hands them to Python at once: a
compiled call's rows in constant memory however long the run.
"""

import math
from typing import NamedTuple

import tensorflow as tf

# Numbers one block of rows may hold (16 MiB of float64), and at most this many rows.
BLOCK_NUMBERS = 2 ** 21
MAX_BLOCK_ROWS = 4096


def block_rows(walkers, parameters):
    """Rows of one block: every row holds the parameters and about 16 numbers per walker."""
    return int(max(1, min(MAX_BLOCK_ROWS, BLOCK_NUMBERS // (walkers * (parameters + 16)))))


def written_rows(array, written, jit_compile):
    """A block's TensorArray as one tensor: its first `written` elements. Under XLA, and in a
    replica of tf.distribute (tati/engine/distribute.py packs the replicas' blocks by their static
    shapes), all of them: the caller reads the first `written`. Elsewhere stacking the whole
    array would fill every unwritten row with zeros, a copy of the block's full size at every
    call however few rows it holds."""
    if jit_compile or tf.distribute.has_strategy():
        return array.stack()
    return array.gather(tf.range(written))


def row_fields(walkers, parameters, columns, has_accuracy, extra=None):
    """{field: shape} of a row: loss, parameters, the running averages, the kernel's run-info
    `columns`, the accuracy (with `has_accuracy`) and the `extra` fields {name: shape}."""
    fields = {"loss": [walkers], "parameters": [walkers, parameters], "averages": [4, walkers]}
    fields.update({name: [walkers] for name in columns})
    if has_accuracy:
        fields["accuracy"] = [walkers]
    fields.update(extra or {})
    return fields


def flat(value):
    """value as a float64 vector (no operation for one already)."""
    value = tf.convert_to_tensor(value)
    if value.dtype == tf.float64 and value.shape.rank == 1:
        return value
    return tf.reshape(tf.cast(value, tf.float64), [-1])


class Block(NamedTuple):
    """The rows written so far: their steps and their values (one TensorArray per field, or
    one of whole rows when packed)."""
    steps: tf.TensorArray
    values: tuple


class Rows:
    """The block of a chunk's rows: its fields {name: shape}, its size (`block_rows` of the
    walkers and the numbers per walker a row holds besides the ~16 of its columns).

    packed: each row is one float64 vector, written to one TensorArray (in graph mode each
    write is an operation: the proposal kernels' rows, written at every step with every_nth 1);
    otherwise one TensorArray per field."""

    def __init__(self, fields, walkers, numbers, jit_compile, packed=False):
        self.fields, self.walkers, self.jit_compile, self.packed = fields, walkers, jit_compile, packed
        self.size = block_rows(walkers, numbers)

    def empty(self):
        steps = tf.TensorArray(tf.int64, size=self.size, element_shape=[])
        if self.packed:
            width = sum(math.prod(shape) for shape in self.fields.values())
            return Block(steps, (tf.TensorArray(tf.float64, size=self.size, element_shape=[width]),))
        return Block(steps, tuple(tf.TensorArray(tf.float64, size=self.size, element_shape=shape)
                                  for shape in self.fields.values()))

    def write(self, block, index, row, step):
        """The block with `row` ({field: value}) and its `step` at `index`. A packed row's
        values are flattened and joined in their order, which may hold several fields already
        joined (the proposal kernels' bookkeeping returns them so)."""
        steps = block.steps.write(index, step)
        if self.packed:
            parts = [flat(value) for value in row.values()]
            vector = parts[0] if len(parts) == 1 else tf.concat(parts, 0)
            return Block(steps, (block.values[0].write(index, vector),))
        return Block(steps, tuple(array.write(index, tf.cast(row[name], tf.float64))
                                  for array, name in zip(block.values, self.fields)))

    def result(self, block, written, nonfinite_step=None, nonfinite_walkers=None):
        """The chunk's return: {field: [rows, ...shape]}, `step`, `rows` (how many were
        written) and the first non-finite step and its walkers (-1 and none by default)."""
        if self.packed:
            whole = written_rows(block.values[0], written, self.jit_compile)
            parts = tf.split(whole, [math.prod(shape) for shape in self.fields.values()], axis=1)
            result = {name: tf.reshape(part, [-1] + shape) for (name, shape), part in zip(self.fields.items(), parts)}
        else:
            result = {name: written_rows(array, written, self.jit_compile)
                      for name, array in zip(self.fields, block.values)}
        if nonfinite_step is None:
            nonfinite_step, nonfinite_walkers = tf.constant(-1, tf.int64), tf.zeros([self.walkers], tf.bool)
        result.update(step=written_rows(block.steps, written, self.jit_compile), rows=written,
                      nonfinite_step=nonfinite_step, nonfinite_walkers=nonfinite_walkers)
        return result
