"""A user's potential U(theta): any callable from a 1-D parameter tensor to a scalar energy.

This is how distributions that are not networks are sampled, and how the samplers are tested
against exact answers. Trajectory columns are param0..param{d-1}. The callable must use
TensorFlow operations (tf.where rather than a Python `if` on a tensor), as for tfp.mcmc.

With several walkers the potential is vectorised over them (tf.vectorized_map; under XLA, which fails on
that map, called once per walker: `vectorize` false, as a Keras model's); a potential that declares
`potential_batched=True` instead takes the [W, d] batch and returns [W] energies.
"""

import re

import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.models.flat import FlatModel, check_walkers


_C_TYPES = {"double": "float64", "float": "float32", "half": "float16"}


def _other_float_type(error, dtype):
    """The float type other than the parameters' `dtype` where TensorFlow refused to mix two (the
    potential computes in it), else None."""
    text = str(error)
    found = re.search(r"requested dtype (float\d+) for Tensor with dtype (float\d+)", text)
    pair = found.groups() if found else None
    found = re.search(r"expected to be a (double|float|half) tensor but is a (double|float|half) tensor", text)
    pair = pair or (tuple(_C_TYPES[name] for name in found.groups()) if found else ())
    others = [name for name in pair if name != tf.as_dtype(dtype).name]
    return others[0] if len(others) == 1 else None


class Potential(FlatModel):
    uses_data = False

    def __init__(self, potential, initial_parameters, dtype="float32", walkers=1, batched=False, vectorize=True):
        if not callable(potential) and hasattr(potential, "log_prob"):  # a TFP distribution, say
            raise InputError(f"potential is U = -log p: give lambda theta: -d.log_prob(theta) for the "
                             f"distribution d, not d itself ({type(potential).__name__})")
        if not callable(potential):
            raise InputError(f"potential must be a callable theta -> U(theta), got {potential!r:.60}")
        if initial_parameters is None:
            raise InputError("initial_parameters must be given with potential (it fixes the dimension d)")
        try:
            shape = np.shape(initial_parameters)
        except ValueError:  # ragged nesting
            shape = ()
        if len(shape) not in (1, 2) or shape[-1] == 0:
            raise InputError("initial_parameters must be a list of numbers (or one list per walker), "
                             f"got {initial_parameters!r:.60}")
        length = shape[-1]
        values = check_walkers("initial_parameters", initial_parameters, walkers, length, dtype)
        super().__init__(values, [f"param{i}" for i in range(length)], dtype)
        self.batched, self.vectorize = batched, vectorize
        # Written with TensorFlow ops, as for tfp.mcmc: autograph would only add noise (it
        # cannot parse lambdas) and Python control flow on tensors is not supported.
        self.potential = tf.autograph.experimental.do_not_convert(potential)
        self._check_energy()

    def _check_energy(self):
        theta = self.flat_parameters()
        try:
            energy = tf.convert_to_tensor(self.potential(theta if self.batched else theta[0]))
        except Exception as error:  # the user's code: say where it failed, in one line
            other = _other_float_type(error, self.dtype)
            if other:  # e.g. a float64 distribution's log_prob on float32 parameters (the default dtype)
                ours = tf.as_dtype(self.dtype).name
                raise InputError(f"potential computes in {other}, the parameters are {ours} (option dtype): "
                                 f"give dtype '{other}', or build the potential in {ours}") from None
            raise InputError(f"potential failed on initial_parameters of length "
                             f"{self.num_parameters}: {type(error).__name__}: {error}") from None
        expected = [self.num_walkers] if self.batched else []
        if energy.shape.as_list() != expected:
            what = (f"{self.num_walkers} energies (one per walker) with potential_batched" if self.batched
                    else "a scalar energy")
            raise InputError(f"potential must return {what}, got shape {energy.shape.as_list()}")
        if not energy.dtype.is_floating:
            raise InputError(f"potential must return a floating-point energy, got {energy.dtype.name}")

    def loss(self, features=None, labels=None, theta=None):
        """[W] energies."""
        given, theta = theta, self.full_parameters(theta)
        if self.batched:
            energies = self.potential(theta)
        elif theta.shape[0] == 1:  # one row (theta may hold more rows than walkers: tati.landscape)
            energies = self.potential(theta[0])[None]
        elif not self.vectorize and theta.shape[0] == self.num_walkers:  # (tati.landscape may give many rows)
            energies = tf.stack([self.potential(theta[walker]) for walker in range(self.num_walkers)])
        else:
            energies = tf.vectorized_map(self.potential, theta)
        return self.with_prior(tf.cast(energies, self.dtype), given)
