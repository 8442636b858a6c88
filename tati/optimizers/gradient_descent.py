"""GradientDescent: q <- q - learning_rate * grad U(q), the default optimizer of `fit`."""

import keras

from tati.config.options import check, default
from tati.recording.columns import OPTIMIZER_INFO


@keras.saving.register_keras_serializable(package="tati")
class GradientDescent(keras.optimizers.Optimizer):
    """Plain (stochastic) gradient descent with no momentum. `learning_rate`: a positive number
    or a Keras LearningRateSchedule of the iteration count (tati/optimizers/schedules.py)."""

    info = OPTIMIZER_INFO  # its rows' columns (tati/engine/kernels.py info_of)

    def __init__(self, learning_rate=default("learning_rate"), name=None, **kwargs):
        if not callable(learning_rate):
            learning_rate = check("learning_rate", learning_rate)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        variable.assign_sub(keras.ops.cast(learning_rate, variable.dtype) * gradient)
