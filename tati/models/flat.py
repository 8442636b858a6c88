"""FlatModel: a model whose parameters are one variable theta of shape [W, d]: W walkers, each
a flat vector of d parameters.

This is the parameter view every table and sampler works with. The built-in network, user
potentials and a user's Keras model (`KerasNetwork`, evaluated by Keras 3's stateless call)
store theta directly, so one vectorised operation moves all walkers.

Interface the Simulation relies on (all models):
    variables          trainable variables handed to the optimizer
    walker_axis        True if the variables' leading axis is the walker (FlatModel)
    num_walkers, num_parameters (d), parameter_names (trajectory columns, flat order)
    flat_parameters()  theta as a [W, d] tensor (works in a compiled graph)
    prior              a priors.Prior whose energy the losses include, or None
    get_parameters()   theta as a numpy array [W, d];  set_parameters(values): [d] or [W, d]
    loss(features, labels) -> [W] losses;  loss_and_accuracy(...) -> ([W], [W])
    loss_and_gradient(features, labels, theta=None, with_accuracy=False)
                       -> ([W] losses, [W, d] gradient of their sum, [W] accuracy or None)
    outputs(features) -> [W, batch, outputs];  uses_data

Every model's loss (and loss_and_accuracy) also takes `theta=`, a [W, d] tensor to evaluate
at instead of the variables: a compiled loop can then keep the positions as loop tensors (HMC's
`integrate`, the proposal kernels); `assign_flat(theta)` sets the variables from one.
"""

import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.recording.table import machine_memory


def value_and_gradient(function, x, has_aux=False):
    """function(x) and its gradient with respect to x, a tensor or variable (zeros where x does
    not enter; a value of several numbers: the gradient of their sum). With has_aux, function
    returns (value, extra) and this (value, gradient, extra). The one tape of the package: every
    loss and log-density is differentiated here."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        result = function(x)
        value = result[0] if has_aux else result
    gradient = tape.gradient(value, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return (value, gradient, result[1]) if has_aux else (value, gradient)


class FlatModel:
    """Subclasses evaluate the model at `full_parameters()`, which puts the fixed parameters
    (`fix`) back between the sampled ones of theta."""
    uses_data = True
    walker_axis = True
    prior = None
    # Hessian-vector products (adaptation/measured_width.py) by reverse over reverse mode instead of
    # forward over reverse: for models whose gradient a forward-mode tangent cannot pass (a Keras
    # convolution's under the walkers' vectorised map, a recurrent layer's loop: KerasNetwork).
    hessian_by_reverse_mode = False
    # The walkers of a one-walker potential or Keras model through tf.vectorized_map; false under XLA,
    # which fails on that map: one call per walker (Potential, KerasNetwork).
    vectorize = True

    def __init__(self, initial_parameters, parameter_names, dtype):
        self.parameter_names = list(parameter_names)
        self.theta = tf.Variable(tf.constant(initial_parameters, dtype=dtype), name="parameters")
        self.variables = [self.theta]
        self._fixed = None

    def fix(self, fixed):
        """Keep the parameters {index: value} (indices into the full vector) at their values:
        they leave theta, so no sampler or optimizer can move them, and leave the columns."""
        if not fixed:
            return
        names, values = self.parameter_names, self.theta.numpy()
        free = [i for i in range(len(names)) if i not in fixed]
        if not free:
            raise InputError("fix_parameters fixes every parameter; nothing is left to sample")
        slots = {i: k for k, i in enumerate(free)}
        slots.update({i: len(free) + k for k, i in enumerate(sorted(fixed))})
        self._fixed = (tf.constant([fixed[i] for i in sorted(fixed)], self.dtype),
                       tf.constant([slots[i] for i in range(len(names))], tf.int32))
        self.parameter_names = [names[i] for i in free]
        self.theta = tf.Variable(tf.constant(values[:, free]), name="parameters")
        self.variables = [self.theta]

    def full_parameters(self, theta=None):
        """[W, d_all]: theta (by default the variable) with the fixed parameters in their places."""
        theta = tf.convert_to_tensor(self.theta if theta is None else theta)
        if self._fixed is None:
            return theta
        values, slots = self._fixed
        fixed = tf.broadcast_to(values, [tf.shape(theta)[0], tf.shape(values)[0]])
        return tf.gather(tf.concat([theta, fixed], axis=1), slots, axis=1)

    def loss_and_gradient(self, features, labels, theta=None, with_accuracy=False):
        """Every walker's loss [W] at theta ([W, d], by default the variable), the gradient of
        their sum with respect to theta ([W, d]: walkers do not interact through it, so row w is
        walker w's gradient) and, with_accuracy, the accuracy [W] (else None)."""
        at = {} if theta is None else {"theta": theta}

        def losses_of(_):
            if with_accuracy:
                losses, accuracy = self.loss_and_accuracy(features, labels, **at)
            else:
                losses, accuracy = self.loss(features, labels, **at), None
            return tf.reduce_sum(losses), (losses, accuracy)

        _, gradient, (losses, accuracy) = value_and_gradient(losses_of, self.theta if theta is None else theta,
                                                             has_aux=True)
        return losses, gradient, accuracy

    def with_prior(self, losses, theta=None):
        """losses [W] plus the prior's energy at theta (by default the variable)."""
        return losses if self.prior is None else self.prior.add(losses, self.theta if theta is None else theta)

    @property
    def num_parameters(self):
        return len(self.parameter_names)

    @property
    def num_walkers(self):
        return int(self.theta.shape[0])

    @property
    def dtype(self):
        return self.theta.dtype

    def flat_parameters(self):
        return tf.convert_to_tensor(self.theta)

    def get_parameters(self):
        return self.theta.numpy().copy()

    def assign_flat(self, theta):
        """Set the parameters from a [W, d] tensor (in a compiled graph too)."""
        self.theta.assign(tf.cast(theta, self.dtype))

    def set_parameters(self, values):
        self.theta.assign(check_walkers("parameters", values, self.num_walkers, self.num_parameters,
                                        self.dtype))


def finite_walkers(losses, gradient):
    """Per walker, whether its loss ([W]) and gradient ([W, d]), numpy arrays, are all finite."""
    return np.isfinite(losses) & np.all(np.isfinite(gradient), axis=1)


def check_size(walkers, length, dtype):
    """InputError, before anything is allocated, if W x d parameters cannot fit in this
    machine's memory three times over (parameters, gradients and one more copy: the least any
    step needs), instead of a crash deep inside TensorFlow."""
    memory = machine_memory()
    needed = 3 * walkers * length * tf.as_dtype(dtype).size
    if memory is not None and needed > memory:  # no memory said: nothing to check against
        raise InputError(f"number_walkers x parameters = {walkers} x {length} needs at least "
                         f"{needed / 2 ** 30:.3g} GiB, more than this machine's {memory / 2 ** 30:.3g} GiB: "
                         "use fewer number_walkers or a smaller hidden_dimension")


def check_walkers(option, values, walkers, length, dtype):
    """values as a [walkers, length] array: one vector for all walkers or one per walker."""
    check_size(walkers, length, dtype)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float64
        raise InputError(f"{option} must be a list of numbers, got {values!r:.60}") from None
    if array.ndim == 1 and array.shape[0] == length:
        array = np.broadcast_to(array, (walkers, length))
    if array.shape != (walkers, length):
        raise InputError(f"{option} must have {length} values (or {walkers} rows of them, one per "
                         f"walker), got shape {list(array.shape)}")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{option} contains NaN or infinite values")
    return np.array(array, dtype=tf.as_dtype(dtype).as_numpy_dtype)
