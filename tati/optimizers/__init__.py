"""Optimizers for `fit`: tati's GradientDescent, BarzilaiBorweinGradientDescent, L-BFGS or any
Keras optimizer by name."""

import keras
import tensorflow as tf

from tati.errors import InputError
from tati.names import BARZILAI_BORWEIN_NAMES
from tati.optimizers.barzilai_borwein import BarzilaiBorweinGradientDescent
from tati.optimizers.gradient_descent import GradientDescent
from tati.optimizers.lbfgs import NAMES as LBFGS_NAMES


def make_optimizer(name, learning_rate):
    """GradientDescent for 'GradientDescent' (or 'gd'), BarzilaiBorweinGradientDescent for its
    names (tati/names.py), None for L-BFGS (optimizers/lbfgs.py, made on the model), else the
    Keras optimizer of that name."""
    if str(name).lower() in LBFGS_NAMES:
        return None
    if str(name).lower() in BARZILAI_BORWEIN_NAMES:
        return BarzilaiBorweinGradientDescent(learning_rate=learning_rate)
    if str(name).lower() in ("gradientdescent", "gd"):
        return GradientDescent(learning_rate=learning_rate)
    try:
        optimizer = keras.optimizers.get(str(name).lower())
    except (ValueError, TypeError, KeyError):  # Keras' base and wrapper classes raise the latter
        raise InputError(f"optimizer '{name}' is unknown; use GradientDescent, "
                         "BarzilaiBorweinGradientDescent, L-BFGS or a Keras "
                         "optimizer name such as adam, sgd, rmsprop") from None
    try:  # on a copy: some Keras optimizers (muon) need Keras variables, tati's are tf.Variables
        type(optimizer).from_config(optimizer.get_config()).build([tf.Variable(tf.zeros([1, 2]))])
    except Exception as error:
        raise InputError(f"optimizer '{name}' cannot train tati's parameters: {type(error).__name__}: "
                         f"{error}") from None
    optimizer.learning_rate = learning_rate
    return optimizer



__all__ = ["BarzilaiBorweinGradientDescent", "GradientDescent", "make_optimizer"]
