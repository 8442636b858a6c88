"""A user's Keras model with a loss, seen through the flat parameter view.

The optimizer updates the model's own variables; the flat view concatenates them, weight
variables first and bias variables (named ``bias``) after, each flattened row-major. Columns
are weight0.., bias0.. as for the built-in network. One walker only: the view presents it
with a leading walker axis of length 1 ([1, d] parameters, [1] losses).
"""

import keras
import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.models.flat import check_walkers
from tati.models.losses import LOSSES, accuracy


class KerasModel:
    uses_data = True
    walker_axis = False
    num_walkers = 1
    prior = None  # a priors.Prior whose energy the losses include

    def __init__(self, model, loss=None, input_dimension=None):
        """loss None: only the flat parameter view (as the Keras callback uses it)."""
        if not isinstance(model, keras.layers.Layer):
            raise InputError(f"model must be a keras.Model, got {model!r:.60}")
        if not model.built:
            model.build((None, input_dimension))
        variables = list(model.trainable_variables)
        if not variables:
            raise InputError("model has no trainable variables")
        is_bias = [v.path.split("/")[-1].startswith("bias") for v in variables]
        self.variables = ([v for v, b in zip(variables, is_bias) if not b]
                          + [v for v, b in zip(variables, is_bias) if b])
        n_bias = sum(int(np.prod(v.shape)) for v, b in zip(variables, is_bias) if b)
        n_weight = sum(int(np.prod(v.shape)) for v in variables) - n_bias
        self.parameter_names = ([f"weight{i}" for i in range(n_weight)]
                                + [f"bias{i}" for i in range(n_bias)])
        if loss is None or callable(loss):
            self.loss_name, self._loss = None, loss
        elif loss in LOSSES:
            self.loss_name, self._loss = loss, LOSSES[loss]
        else:
            raise InputError(f"loss '{loss}' is unknown; choose one of {', '.join(LOSSES)} or pass a callable")
        self.model = model
        self.dtype = tf.as_dtype(self.variables[0].dtype)

    @property
    def num_parameters(self):
        return len(self.parameter_names)

    def flat_parameters(self):
        return tf.concat([tf.reshape(tf.cast(v, self.dtype), [-1]) for v in self.variables], 0)[None]

    def get_parameters(self):
        return self.flat_parameters().numpy()

    def set_parameters(self, values):
        values = check_walkers("parameters", values, 1, self.num_parameters, self.dtype)[0]
        start = 0
        for v in self.variables:
            size = int(np.prod(v.shape))
            v.assign(values[start:start + size].reshape(v.shape))
            start += size

    def outputs(self, features, theta=None):
        if theta is None:
            return self.model(features, training=False)[None]
        # Keras 3's stateless call: the model evaluated with the given values for its variables.
        values = dict(zip((id(v) for v in self.variables), self._split(theta[0])))
        trainable = [values[id(v)] for v in self.model.trainable_variables]
        non_trainable = [tf.convert_to_tensor(v) for v in self.model.non_trainable_variables]
        return self.model.stateless_call(trainable, non_trainable, features, training=False)[0][None]

    def _split(self, vector):
        """One flat parameter vector [d] as tensors shaped as self.variables."""
        sizes = [int(np.prod(v.shape)) for v in self.variables]
        return [tf.reshape(tf.cast(piece, v.dtype), v.shape)
                for piece, v in zip(tf.split(vector, sizes), self.variables)]

    def assign_flat(self, theta):
        """Set the variables from a [1, d] tensor (in a compiled graph too)."""
        for v, value in zip(self.variables, self._split(theta[0])):
            v.assign(value)

    def _losses(self, labels, outputs):
        if self.loss_name is None:  # the user's callable on one walker's outputs
            return tf.reshape(tf.cast(self._loss(labels, outputs[0]), self.dtype), [1])
        return self._loss(labels, outputs)

    def _with_prior(self, losses, theta=None):
        if self.prior is None:
            return losses
        return self.prior.add(losses, self.flat_parameters() if theta is None else theta)

    def loss(self, features, labels, theta=None):
        return self._with_prior(self._losses(labels, self.outputs(features, theta)), theta)

    def loss_and_accuracy(self, features, labels, theta=None):
        outputs = self.outputs(features, theta)
        loss = self._with_prior(self._losses(labels, outputs), theta)
        if self.loss_name is None:
            return loss, tf.constant([np.nan], self.dtype)
        return loss, accuracy(self.loss_name, labels, outputs)
