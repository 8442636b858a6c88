"""Models: the built-in network, a user's Keras model, or a bare potential, all with a flat
parameter view (see `flat.py`)."""

from tati.models.keras_model import KerasModel, KerasNetwork
from tati.models.mlp import MLP
from tati.models.potential import Potential

__all__ = ["KerasModel", "KerasNetwork", "MLP", "Potential"]
