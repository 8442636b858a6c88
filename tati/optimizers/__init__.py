"""Optimizers for `fit`: tati's GradientDescent or any Keras optimizer by name."""

import keras

from tati.errors import InputError
from tati.optimizers.gradient_descent import GradientDescent


def make_optimizer(name, learning_rate):
    """GradientDescent for 'GradientDescent' (or 'gd'), else the Keras optimizer of that name."""
    if str(name).lower() in ("gradientdescent", "gd"):
        return GradientDescent(learning_rate=learning_rate)
    try:
        optimizer = keras.optimizers.get(str(name).lower())
    except ValueError:
        raise InputError(f"optimizer '{name}' is unknown; use GradientDescent or a Keras "
                         "optimizer name such as adam, sgd, rmsprop") from None
    optimizer.learning_rate = learning_rate
    return optimizer


__all__ = ["GradientDescent", "make_optimizer"]
