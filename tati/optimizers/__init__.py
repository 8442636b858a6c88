"""Optimizers for `fit`: tati's GradientDescent, BarzilaiBorweinGradientDescent, L-BFGS or any
Keras optimizer by name."""

import keras
import tensorflow as tf

from tati.engine.contract import FULL_BATCH, load_kernel
from tati.engine.registry import optimizer_names, optimizer_spec
from tati.errors import InputError
from tati.optimizers.barzilai_borwein import BarzilaiBorweinGradientDescent
from tati.optimizers.gradient_descent import GradientDescent


def make_optimizer(name, learning_rate):
    """tati's optimizer of that name (any spelling, tati/engine/registry.py), None for a full-batch
    one (L-BFGS, made on the model: optimizers/lbfgs.py), else the Keras optimizer of that name."""
    spec = optimizer_spec(name)
    if spec is not None:
        return None if spec.kind == FULL_BATCH else load_kernel(spec)(learning_rate=learning_rate)
    try:
        optimizer = keras.optimizers.get(str(name).lower())
    except (ValueError, TypeError, KeyError):  # Keras' base and wrapper classes raise the latter
        raise InputError(f"optimizer '{name}' is unknown; use {', '.join(optimizer_names())} or a Keras "
                         "optimizer name such as adam, sgd, rmsprop") from None
    try:  # on a copy: some Keras optimizers (muon) need Keras variables, tati's are tf.Variables
        type(optimizer).from_config(optimizer.get_config()).build([tf.Variable(tf.zeros([1, 2]))])
    except Exception as error:
        raise InputError(f"optimizer '{name}' cannot train tati's parameters: {type(error).__name__}: "
                         f"{error}") from None
    optimizer.learning_rate = learning_rate
    return optimizer


__all__ = ["BarzilaiBorweinGradientDescent", "GradientDescent", "make_optimizer"]
