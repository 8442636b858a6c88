"""The built-in multi-layer perceptron, evaluated from one flat parameter vector.

Each walker's row of theta holds, as in the original TATi, all weight matrices (layer by
layer, row-major [fan_in, fan_out]) and then all bias vectors: columns weight0.., bias0...
All walkers are evaluated at once by batched matrix products on the same batch. Weights start
Glorot-uniform, biases at zero; walker i draws them with seed + i.
"""

import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.models.flat import FlatModel, check_size, check_walkers
from tati.models.losses import ACTIVATIONS, LOSSES, accuracy


class MLP(FlatModel):
    def __init__(self, input_dimension, output_dimension, hidden_dimension=(),
                 hidden_activation="relu", output_activation="tanh", loss="mean_squared",
                 seed=0, dtype="float32", initial_parameters=None, walkers=1):
        for option, name, table in (("hidden_activation", hidden_activation, ACTIVATIONS),
                                    ("output_activation", output_activation, ACTIVATIONS),
                                    ("loss", loss, LOSSES)):
            if name not in table:
                raise InputError(f"{option} '{name}' is unknown; choose one of {', '.join(table)}")
        for option, width in (("input_dimension", input_dimension), ("output_dimension", output_dimension)):
            if int(width) < 1:
                classes = option == "output_dimension" and loss == "softmax_cross_entropy"
                raise InputError(f"{option} must be at least 1, got {width}" + (
                    " (loss softmax_cross_entropy takes it from a label column of class indices 0, 1, ...)"
                    if classes else ""))
        widths = [int(input_dimension), *[int(h) for h in hidden_dimension], int(output_dimension)]
        self.weight_shapes = list(zip(widths[:-1], widths[1:]))
        self.bias_sizes = widths[1:]
        self.activations = ([ACTIVATIONS[hidden_activation]] * (len(widths) - 2)
                            + [ACTIVATIONS[output_activation]])
        self.loss_name = loss
        self.loss_function = LOSSES[loss]  # (labels, outputs) -> [W]; a likelihood replaces it
        n_weights = sum(a * b for a, b in self.weight_shapes)
        n_biases = sum(self.bias_sizes)
        check_size(walkers, n_weights + n_biases, dtype)
        names = [f"weight{i}" for i in range(n_weights)] + [f"bias{i}" for i in range(n_biases)]
        if initial_parameters is None:
            initial_parameters = np.stack([self._initial(seed + walker, n_biases) for walker in range(walkers)])
        else:
            initial_parameters = check_walkers("initial_parameters", initial_parameters, walkers, len(names), dtype)
        super().__init__(initial_parameters, names, dtype)

    def _initial(self, seed, n_biases):
        rng = np.random.default_rng(seed)
        weights = [rng.uniform(-1, 1, a * b) * np.sqrt(6.0 / (a + b)) for a, b in self.weight_shapes]
        return np.concatenate(weights + [np.zeros(n_biases)])

    def _layers(self, theta):
        sizes = [a * b for a, b in self.weight_shapes] + self.bias_sizes
        pieces = tf.split(theta, sizes, axis=1)
        n = len(self.weight_shapes)
        weights = [tf.reshape(w, [-1, *shape]) for w, shape in zip(pieces[:n], self.weight_shapes)]
        return zip(weights, pieces[n:], self.activations)

    def outputs(self, features, theta=None):
        """[W, batch, outputs]: every walker's network on the same features."""
        h = features[None]
        for weight, bias, activation in self._layers(self.full_parameters(theta)):
            h = activation(tf.matmul(h, weight) + bias[:, None, :])
        return h

    def loss(self, features, labels, theta=None):
        return self.with_prior(self.loss_function(labels, self.outputs(features, theta)), theta)

    def loss_and_accuracy(self, features, labels, theta=None):
        outputs = self.outputs(features, theta)
        return (self.with_prior(self.loss_function(labels, outputs), theta),
                accuracy(self.loss_name, labels, outputs))

    def parameter_groups(self):
        """The column names of each weight and bias tensor, by the original's group names:
        layer1/weights, layer1/biases, ..., output/weights, output/biases (all parameters,
        fixed ones too)."""
        groups, weight, bias = {}, 0, 0
        layers = [f"layer{k + 1}" for k in range(len(self.weight_shapes) - 1)] + ["output"]
        for layer, (a, b), size in zip(layers, self.weight_shapes, self.bias_sizes):
            groups[f"{layer}/weights"] = [f"weight{i}" for i in range(weight, weight + a * b)]
            groups[f"{layer}/biases"] = [f"bias{i}" for i in range(bias, bias + size)]
            weight, bias = weight + a * b, bias + size
        return groups
