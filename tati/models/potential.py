"""A user's potential U(theta): any callable from a 1-D parameter tensor to a scalar energy.

This is how distributions that are not networks are sampled, and how the samplers are tested
against exact answers. Trajectory columns are param0..param{d-1}. The callable must use
TensorFlow operations (tf.where rather than a Python `if` on a tensor), as for tfp.mcmc.
"""

import tensorflow as tf

from tati.errors import InputError
from tati.models.flat import FlatModel, check_flat


class Potential(FlatModel):
    uses_data = False

    def __init__(self, potential, initial_parameters, dtype="float32"):
        if not callable(potential):
            raise InputError(f"potential must be a callable theta -> U(theta), got {potential!r:.60}")
        if initial_parameters is None:
            raise InputError("initial_parameters must be given with potential (it fixes the dimension d)")
        try:
            length = len(initial_parameters)
        except TypeError:
            raise InputError("initial_parameters must be a list of numbers, got "
                             f"{initial_parameters!r:.60}") from None
        values = check_flat("initial_parameters", initial_parameters, length, dtype)
        super().__init__(values, [f"param{i}" for i in range(length)], dtype)
        # Written with TensorFlow ops, as for tfp.mcmc: autograph would only add noise (it
        # cannot parse lambdas) and Python control flow on tensors is not supported.
        self.potential = tf.autograph.experimental.do_not_convert(potential)
        self._check_energy()

    def _check_energy(self):
        try:
            energy = tf.convert_to_tensor(self.potential(self.flat_parameters()))
        except Exception as error:  # the user's code: say where it failed, in one line
            raise InputError(f"potential failed on initial_parameters of length "
                             f"{self.num_parameters}: {type(error).__name__}: {error}") from None
        if energy.shape.rank != 0:
            raise InputError(f"potential must return a scalar energy, got shape {energy.shape.as_list()}")
        if not energy.dtype.is_floating:
            raise InputError(f"potential must return a floating-point energy, got {energy.dtype.name}")

    def loss(self, features=None, labels=None):
        return tf.cast(self.potential(self.flat_parameters()), self.dtype)
