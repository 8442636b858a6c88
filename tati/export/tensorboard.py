"""TensorBoard summaries written while a run goes (option `summaries_path`).

    sim = tati.Simulation(..., summaries_path="logs")   # then: tensorboard --logdir logs

Each walker is one TensorBoard run, the directory `<summaries_path>/walker<k>`, so that its
charts lie over the other walkers'. Every table row of a walker writes, at the row's `step`,

* one scalar per run-info column (but id and step), tagged `run_info/<column>`;
* one histogram of the walker's parameters, tagged `parameters`, or for a network one per
  weight and bias tensor, tagged `parameters/<tensor>` (layer1/weights, ..., output/biases).

The events are written by TensorFlow's own summary writer ops in the formats of TensorBoard's
scalar and histogram plugins, so writing needs no TensorBoard; viewing does (`pip install
tati[tensorboard]`). One compiled function writes a walker's rows of a block at once (eager
summary ops would cost about a millisecond per value); it takes the walker's writer as an
argument, so it is traced once for all walkers. Every sample() or fit() call adds a new event
file to each walker's directory; TensorBoard reads them all.
"""

import functools
import os
import re
import uuid

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from tati.errors import InputError

# Buckets of a parameter histogram, as TensorBoard's own histogram summary uses by default.
BUCKETS = 30
# Values the writer queues before it writes them to disk, and the longest wait between writes.
MAX_QUEUE = 1000
FLUSH_MILLIS = 2000


def _metadata(plugin, data_class):
    return summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin),
                                       data_class=data_class).SerializeToString()


SCALAR = _metadata("scalars", summary_pb2.DATA_CLASS_SCALAR)
HISTOGRAM = _metadata("histograms", summary_pb2.DATA_CLASS_TENSOR)


class Summaries:
    """Writers of one sample() or fit() call: `write(columns)` with the rows of a block,
    `close()` at the end of the call (also when it is interrupted)."""

    def __init__(self, path, run_info_columns, parameter_names, walkers, groups=None):
        """`run_info_columns`: the run-info table's header; `groups`: {tensor name: parameter
        names} (the network's weight and bias tensors), or None for one histogram of all."""
        self.scalars = [c for c in run_info_columns if c not in ("id", "step")]
        self.parameter_names = list(parameter_names)
        index = {name: i for i, name in enumerate(self.parameter_names)}
        groups = {f"parameters/{tensor}": [index[name] for name in names if name in index]
                  for tensor, names in (groups or {}).items()}
        self.histograms = ({tag: block for tag, block in groups.items() if block}
                           or {"parameters": list(range(len(self.parameter_names)))})
        self._write = _block_writer(tuple(f"run_info/{c}" for c in self.scalars), tuple(self.histograms))
        self.writers = []
        for k in range(walkers):
            writer = tf.raw_ops.SummaryWriter(shared_name=f"tati_summaries_{uuid.uuid4().hex}", container="")
            try:
                tf.raw_ops.CreateSummaryFileWriter(writer=writer, logdir=os.path.join(path, f"walker{k}"),
                                                   max_queue=MAX_QUEUE, flush_millis=FLUSH_MILLIS,
                                                   filename_suffix=".v2")
            except tf.errors.OpError as error:  # e.g. a directory that may not be written to
                self.close()
                reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*$", "", error.message)  # TensorFlow's op names
                raise InputError(f"summaries_path '{path}': cannot write event files: {reason}") from None
            self.writers.append(writer)

    def write(self, columns):
        """The rows of one block: `columns` maps every run-info column and parameter name to an
        array with one value per row (rows of any walkers, `id` says whose)."""
        walkers = np.asarray(columns["id"], np.int64)
        if not len(walkers):
            return
        values = np.stack([np.asarray(columns[c], dtype=np.float64) for c in self.scalars], axis=-1)
        parameters = np.stack([np.asarray(columns[c], dtype=np.float64) for c in self.parameter_names], axis=1)
        histograms = np.stack([histograms_of(parameters[:, block]) for block in self.histograms.values()], axis=1)
        steps = np.asarray(columns["step"], np.int64)
        values = values.reshape(len(walkers), len(self.scalars))
        for k, writer in enumerate(self.writers):
            rows = walkers == k
            if rows.any():
                self._write(writer, values[rows], steps[rows], histograms[rows])

    def close(self):
        """Write what is queued, close the event files and free the writers."""
        for writer in self.writers:
            tf.raw_ops.CloseSummaryWriter(writer=writer)
            tf.raw_ops.DestroyResourceOp(resource=writer, ignore_lookup_error=True)
        self.writers = []


@functools.lru_cache(maxsize=16)
def _block_writer(scalar_tags, histogram_tags):
    """A compiled function(writer, values [K, scalars], steps [K], histograms [K, tags, BUCKETS, 3])
    that writes K rows of one walker; cached, so later calls of a run trace nothing."""
    spec = [tf.TensorSpec([], tf.resource), tf.TensorSpec([None, len(scalar_tags)], tf.float64),
            tf.TensorSpec([None], tf.int64), tf.TensorSpec([None, len(histogram_tags), BUCKETS, 3], tf.float64)]

    @tf.function(input_signature=spec)
    def write(writer, values, steps, histograms):
        for i in tf.range(tf.shape(steps)[0]):
            for c, tag in enumerate(scalar_tags):
                tf.raw_ops.WriteSummary(writer=writer, step=steps[i], tensor=values[i, c], tag=tag,
                                        summary_metadata=SCALAR)
            for h, tag in enumerate(histogram_tags):
                tf.raw_ops.WriteSummary(writer=writer, step=steps[i], tensor=histograms[i, h], tag=tag,
                                        summary_metadata=HISTOGRAM)
    return write


def histograms_of(values):
    """[rows, BUCKETS, 3]: for each row of values, the rows (left edge, right edge, count) of
    BUCKETS equal buckets over the row's range, the tensor of TensorBoard's histogram plugin;
    a row of equal values fills the middle bucket of a unit-wide range."""
    low, high = values.min(axis=1), values.max(axis=1)
    flat = ~(high > low)
    low, high = np.where(flat, low - 0.5, low), np.where(flat, high + 0.5, high)
    edges = low[:, None] + (high - low)[:, None] * np.linspace(0.0, 1.0, BUCKETS + 1)
    scaled = (values - low[:, None]) / (high - low)[:, None] * BUCKETS
    bucket = np.clip(np.floor(np.nan_to_num(scaled)), 0, BUCKETS - 1).astype(np.int64)  # the maximum: last bucket
    offsets = bucket + BUCKETS * np.arange(len(values))[:, None]
    counts = np.bincount(offsets.ravel(), minlength=len(values) * BUCKETS).reshape(len(values), BUCKETS)
    return np.stack([edges[:, :-1], edges[:, 1:], counts.astype(np.float64)], axis=-1)
