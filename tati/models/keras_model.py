"""A user's Keras model with a loss, seen through the flat parameter view.

`KerasModel` is the view of the model's own variables ([1, d] parameters), as the recording
callback of `model.fit` reads it: the flat vector concatenates the variables, weight variables
first and bias variables (named ``bias``) after, each flattened row-major. Columns are
weight0.., bias0.. as for the built-in network.

`KerasNetwork` is how the Simulation samples a Keras model: a FlatModel whose [W, d] parameters
are W walkers of that vector, evaluated by Keras 3's stateless call (the model run with given
values for its variables), vectorised over the walkers. So a Keras model gets what the built-in
network has: several walkers, fixed parameters, priors, the ensemble preconditioner and its
per-layer blocks, and every sampler. Walker 0 starts at the model's values, the others at
fresh draws of the layers' initializers (seeded), unless initial_parameters are given. After
each sample() or fit() call the model's own variables are set to walker 0's parameters.
"""

import keras
import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.models.flat import FlatModel, check_walkers
from tati.models.losses import LOSSES, accuracy


# Layers that act otherwise in training: the Simulation calls the model as at inference
# (training=False), so dropout and noise are off and batch normalization uses its moving statistics,
# which sampling does not update (they are constants of U, as after model.fit).
_TRAINING_LAYERS = ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "AlphaDropout",
                    "GaussianDropout", "GaussianNoise", "BatchNormalization")


def _layer_classes(names):
    """The classes of keras.layers of these names that this Keras version has."""
    return tuple(getattr(keras.layers, name) for name in names if hasattr(keras.layers, name))


def training_layers(model):
    """Names of the model's layer classes (of _TRAINING_LAYERS, in order of first use) that act
    otherwise in training than at inference, as the Simulation calls the model."""
    kinds = _layer_classes(_TRAINING_LAYERS)
    names = [type(layer).__name__ for layer in model._flatten_layers(include_self=False) if isinstance(layer, kinds)]
    return list(dict.fromkeys(names))


# Layers whose gradient carries a forward-mode tangent, also under the walkers' vectorised map
# (tf.vectorized_map); with any other layer (a convolution's backward pass fails there, an LSTM's
# loop fails even without the map) the measured width's Hessian-vector products take reverse over
# reverse mode, which both carry.
_FORWARD_OVER_REVERSE = ("InputLayer", "Dense", "Activation", "ReLU", "LeakyReLU", "ELU", "PReLU", "Softmax",
                         "Flatten", "Reshape", "Normalization", "Rescaling", "LayerNormalization", "Concatenate",
                         "Add", "Subtract", "Multiply", "Average", "Identity") + _TRAINING_LAYERS


def _forward_over_reverse(model):
    kinds = _layer_classes(_FORWARD_OVER_REVERSE) + (keras.Model,)
    return all(isinstance(layer, kinds) for layer in model._flatten_layers(include_self=False))


def output_squashing(model, names=("softmax", "sigmoid")):
    """(the model's last layer, its activation's name) where that layer applies one of `names` (an
    activation, or a Softmax or Activation layer), else None: the likelihoods bernoulli and
    categorical, and the cross-entropy losses, take logits, not softmax's or sigmoid's
    probabilities; poisson and negative_binomial take the log of the mean, not exponential's, softplus'
    or relu's rate."""
    layer = model
    while isinstance(layer, keras.Model) and layer.layers:  # a nested model's own last layer
        layer = layer.layers[-1]
    for kind, name in ((keras.layers.Softmax, "softmax"), (keras.layers.ReLU, "relu")):  # activations as layers
        if isinstance(layer, kind) and name in names:
            return layer, name
    activation = getattr(layer, "activation", None)
    for name in names:
        if activation is getattr(keras.activations, name):
            return layer, name
    return None


class KerasModel:
    """The flat view of a Keras model's own variables (names, order, values); it also checks
    the model and its loss for KerasNetwork."""

    def __init__(self, model, loss=None, input_dimension=None):
        """loss None: only the flat parameter view (as the Keras callback uses it)."""
        if not isinstance(model, keras.layers.Layer):
            raise InputError(f"model must be a keras.Model, got {model!r:.60}")
        if not model.built:  # input_dimension: the features' columns, or a point's shape (images)
            model.build((None, *np.atleast_1d(input_dimension)))
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

    def _split(self, vector):
        """One flat parameter vector [d] as tensors shaped as self.variables."""
        sizes = [int(np.prod(v.shape)) for v in self.variables]
        return [tf.reshape(tf.cast(piece, v.dtype), v.shape)
                for piece, v in zip(tf.split(vector, sizes), self.variables)]


class KerasNetwork(FlatModel):
    """A Keras model sampled through [W, d] flat parameters (see the module docstring)."""

    def __init__(self, model, loss, input_dimension, dtype, walkers=1, initial_parameters=None, seed=0,
                 vectorize=True):
        """`vectorize`: the walkers through tf.vectorized_map; else one call per walker, which
        XLA needs (it compiles a vectorised stateless call anew at every call of the loop)."""
        self.view = KerasModel(model, loss, input_dimension)
        self.computes_in = self.view.dtype.name  # the model's own float type, whatever `dtype` holds theta in
        self.vectorize = vectorize
        self.hessian_by_reverse_mode = not _forward_over_reverse(model)
        values = self._initial(walkers, seed) if initial_parameters is None else initial_parameters
        values = check_walkers("initial_parameters", values, walkers, self.view.num_parameters, dtype)
        super().__init__(values, self.view.parameter_names, dtype)
        self.loss_name = self.view.loss_name
        # (labels, outputs) -> [W] for a built-in loss (a likelihood replaces it), else None
        self.loss_function = LOSSES[self.loss_name] if self.loss_name is not None else None

    def _initial(self, walkers, seed):
        """[W, d]: walker 0 the model's values, walker w > 0 drawn by each variable's initializer
        (the layer's `<name>_initializer` for its variable `<name>`) seeded with (seed, w,
        variable); a variable without one keeps the model's values."""
        initializers = {}
        for layer in self.view.model._flatten_layers(include_self=True):
            for name, value in vars(layer).items():
                variable = getattr(layer, name[:-len("_initializer")], None) if name.endswith("_initializer") else None
                if isinstance(variable, keras.Variable) and isinstance(value, keras.initializers.Initializer):
                    initializers[id(variable)] = value
        rows = [self.view.get_parameters()[0]]
        for walker in range(1, walkers):
            pieces = []
            for index, v in enumerate(self.view.variables):
                initializer = initializers.get(id(v))
                config = initializer.get_config() if initializer is not None else {}
                if initializer is None or "seed" not in config:
                    pieces.append(np.asarray(v.numpy(), np.float64).ravel())
                    continue
                key = int(np.random.SeedSequence([seed, walker, index]).generate_state(1)[0] % 2 ** 31)
                fresh = type(initializer).from_config(dict(config, seed=key))
                pieces.append(np.asarray(fresh(tuple(v.shape), dtype=v.dtype), np.float64).ravel())
            rows.append(np.concatenate(pieces))
        return np.stack(rows)

    def _network(self, vector, features):
        """The model's outputs at one walker's full parameter vector [d_all]."""
        view = self.view
        values = dict(zip((id(v) for v in view.variables), view._split(vector)))
        trainable = [values[id(v)] for v in view.model.trainable_variables]
        non_trainable = [tf.convert_to_tensor(v) for v in view.model.non_trainable_variables]
        outputs = view.model.stateless_call(trainable, non_trainable, features, training=False)[0]
        return tf.cast(outputs, self.dtype)

    def outputs(self, features, theta=None):
        """[W, batch, outputs]: every walker's model on the same features."""
        rows = self.num_walkers if theta is None else (theta.shape[0] or self.num_walkers)
        theta = self.full_parameters(theta)
        if rows == 1:
            return self._network(theta[0], features)[None]
        if not self.vectorize:
            return tf.stack([self._network(theta[w], features) for w in range(rows)])
        # The features broadcast to every walker: with them shared, the vectorised map would
        # make one matrix product of all walkers' weights, whose columns beyond whole SIMD
        # packets TensorFlow's CPU kernel sums another way, so a walker's outputs would depend
        # on the number of walkers (tests/samplers/test_walker_randomness.py, tati/engine/distribute.py).
        batched = tf.broadcast_to(features[None], tf.concat([[rows], tf.shape(features)], 0))
        return tf.vectorized_map(lambda args: self._network(*args), (theta, batched))

    def _losses(self, labels, outputs):
        if self.loss_function is not None:
            return self.loss_function(labels, outputs)
        loss = self.view._loss  # the user's callable, on one walker's outputs

        def one(walker_labels, walker_outputs):
            return tf.cast(tf.reshape(loss(walker_labels, walker_outputs), []), self.dtype)
        rows = outputs.shape[0] or self.num_walkers
        if rows == 1 or not self.vectorize:
            return tf.stack([one(labels, outputs[w]) for w in range(rows)])
        # The labels broadcast to every walker, as the features in `outputs`.
        batched = tf.broadcast_to(labels[None], tf.concat([[rows], tf.shape(labels)], 0))
        return tf.vectorized_map(lambda args: one(*args), (batched, outputs))

    def loss(self, features, labels, theta=None):
        return self.with_prior(self._losses(labels, self.outputs(features, theta)), theta)

    def loss_and_accuracy(self, features, labels, theta=None):
        outputs = self.outputs(features, theta)
        loss = self.with_prior(self._losses(labels, outputs), theta)
        if self.loss_name is None:
            return loss, tf.fill([self.num_walkers], tf.constant(np.nan, self.dtype))
        return loss, accuracy(self.loss_name, labels, outputs)

    def parameter_groups(self):
        """The column names of each variable of the model, by its path (e.g. dense/kernel)."""
        groups, start = {}, {"weight": 0, "bias": 0}
        for v in self.view.variables:
            kind = "bias" if v.path.split("/")[-1].startswith("bias") else "weight"
            size = int(np.prod(v.shape))
            groups[v.path] = [f"{kind}{i}" for i in range(start[kind], start[kind] + size)]
            start[kind] += size
        return groups

    def sync(self):
        """Set the Keras model's own variables to walker 0's parameters."""
        for v, value in zip(self.view.variables, self.view._split(self.full_parameters()[0])):
            v.assign(value)

