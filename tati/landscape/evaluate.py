"""The loss (and accuracy) of a Simulation's model at many parameter vectors.

Each model's loss takes `theta=`, a [n, d] batch of parameter vectors (tati/models/flat.py), so
a grid is evaluated in chunks of many vectors per compiled call instead of one Python call per
point: the built-in network by batched matrix products, a potential by its batched form or
vectorised over the rows, a Keras model with a built-in loss by its vectorised stateless call.
A Keras model with a callable loss (evaluated one walker at a time) is evaluated W vectors per
call through its variables, as `Simulation.loss()` does.

`exact(vector)` evaluates one vector exactly as `sim.parameters = vector; sim.loss()` does
(same code path, same bits); the landscapes use it for their marked points (the three points
of a plane, the ends of a segment), so that the table reproduces their loss exactly.
"""

import numpy as np
import tensorflow as tf

from tati.models import MLP, KerasNetwork, Potential

# Numbers one chunk may hold in its largest intermediate (about 128 MiB in float64).
CHUNK_NUMBERS = 2 ** 24
MAX_CHUNK = 4096


class Evaluator:
    """loss and accuracy of `sim`'s model at [n, d] parameter vectors, on the whole dataset."""

    def __init__(self, sim):
        self.sim = sim
        self.model = model = sim.model
        self.has_accuracy = bool(sim.has_accuracy)
        self.features, self.labels = sim.data.all() if model.uses_data else (None, None)
        self.numpy_dtype = tf.as_dtype(model.dtype).as_numpy_dtype
        self._batched = self._batched_function()
        self._compiled = {}

    def _batched_function(self):
        """theta [n, d] -> (loss [n], accuracy [n] or None), or None if the model cannot take n rows."""
        model, features, labels = self.model, self.features, self.labels
        if isinstance(model, Potential):
            return lambda theta: (model.loss(theta=theta), None)
        if isinstance(model, MLP) or (isinstance(model, KerasNetwork) and model.loss_function is not None):
            if self.has_accuracy:
                return lambda theta: model.loss_and_accuracy(features, labels, theta=theta)
            return lambda theta: (model.loss(features, labels, theta=theta), None)
        return None

    def chunk_size(self):
        """Rows per compiled call: as many as keep the largest intermediate near CHUNK_NUMBERS."""
        model = self.model
        per_row = model.num_parameters
        if model.uses_data:
            points = int(self.features.shape[0])
            widths = (sum(model.bias_sizes) + model.weight_shapes[0][0] if isinstance(model, MLP)
                      else 64 + int(self.features.shape[1]))  # a Keras model's widths are unknown: a guess
            per_row += points * widths
        return int(np.clip(CHUNK_NUMBERS // max(per_row, 1), 1, MAX_CHUNK))

    def __call__(self, vectors):
        """(loss [n], accuracy [n] or None) in float64 at the rows of `vectors` [n, d]."""
        vectors = np.asarray(vectors, dtype=np.float64)
        n = len(vectors)
        losses, accuracies = np.empty(n), np.empty(n)
        if n == 0:
            return losses, accuracies if self.has_accuracy else None
        if self._batched is None:
            return self._through_walkers(vectors)
        size = min(n, self.chunk_size())
        function = self._compiled.get(size)
        if function is None:  # one trace per chunk size: the last chunk is padded to it
            function = self._compiled[size] = tf.function(self._batched)
        for start in range(0, n, size):
            rows = vectors[start:start + size]
            padded = np.concatenate([rows, np.repeat(rows[-1:], size - len(rows), axis=0)])
            loss, accuracy = function(tf.constant(padded.astype(self.numpy_dtype)))
            losses[start:start + len(rows)] = np.asarray(loss, np.float64)[:len(rows)]
            if accuracy is not None:
                accuracies[start:start + len(rows)] = np.asarray(accuracy, np.float64)[:len(rows)]
        return losses, accuracies if self.has_accuracy else None

    def _through_walkers(self, vectors):
        """W rows at a time through the model's variables (restored afterwards)."""
        model, walkers = self.model, self.model.num_walkers
        saved = model.get_parameters()
        losses, accuracies = np.empty(len(vectors)), np.empty(len(vectors))
        try:
            for start in range(0, len(vectors), walkers):
                rows = vectors[start:start + walkers]
                model.set_parameters(np.concatenate([rows, np.repeat(rows[-1:], walkers - len(rows), axis=0)]))
                if self.has_accuracy:
                    loss, accuracy = model.loss_and_accuracy(self.features, self.labels)
                    accuracies[start:start + len(rows)] = np.asarray(accuracy, np.float64)[:len(rows)]
                else:
                    loss = model.loss(self.features, self.labels)
                losses[start:start + len(rows)] = np.asarray(loss, np.float64)[:len(rows)]
        finally:
            model.set_parameters(saved)
        return losses, accuracies if self.has_accuracy else None

    def exact(self, vector):
        """(loss, accuracy or nan) at one vector [d], as sim.loss() and sim.score() give them
        with every walker at that vector; the model's parameters are restored afterwards."""
        saved = self.model.get_parameters()
        try:
            self.model.set_parameters(np.asarray(vector, np.float64))
            loss = np.atleast_1d(self.sim.loss())[0]
            accuracy = np.atleast_1d(self.sim.score())[0] if self.has_accuracy else np.nan
        finally:
            self.model.set_parameters(saved)
        return float(loss), float(accuracy)
