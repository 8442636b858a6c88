"""BarzilaiBorweinGradientDescent: gradient descent whose step width comes from the last two steps.

Step k, at the position x_k with the gradient g_k = grad U(x_k):

    x_{k+1} = x_k - alpha_k g_k,    alpha_k = (s^T s) / (s^T y)   ("BB1", Barzilai & Borwein 1988)
    s = x_k - x_{k-1},              y = g_k - g_{k-1}

alpha_k is the inverse of the Rayleigh quotient s^T y / s^T s, the curvature of U along the last
step (for a quadratic U = 1/2 x^T A x, s^T y / s^T s = s^T A s / s^T s lies between A's smallest
and largest eigenvalues). So the step adapts to the curvature without a line search; the method
is not monotone, but on a strictly convex quadratic it converges, and far faster than gradient
descent with any fixed rate when A is ill-conditioned.

The first step (and the first after the parameters are set by hand, `restart`) uses
alpha = learning_rate, as there is no previous point. Where s^T y <= 0 (negative curvature
along s: a non-convex region, or s = 0) or alpha would not be finite, the step falls back to
learning_rate too. The original TATi used the other Barzilai-Borwein step |s^T y| / (y^T y)
("BB2") with a reset below 1e-10 and a cap at 1.

Mini-batches would make y a difference of two different functions' gradients, which is no
curvature at all: tati refuses batch_size with this optimizer (full batch only, as in the
original). With `walker_axis` (set by tati's Simulation: the variables' leading axis is the
walker) every walker has its own alpha from its own s and y; otherwise each variable (tensor)
has one, as the original's per-tensor step. The previous position and gradient are optimizer
variables, so a checkpoint resumes the run bitwise.
"""

import keras
import tensorflow as tf

from tati.config.options import check, default
from tati.recording.columns import OPTIMIZER_INFO


@keras.saving.register_keras_serializable(package="tati")
class BarzilaiBorweinGradientDescent(keras.optimizers.Optimizer):
    """Gradient descent with the Barzilai-Borwein step alpha_k = s^T s / s^T y (module docstring);
    learning_rate is the first step's and the fallback's width."""

    walker_axis = False
    info = OPTIMIZER_INFO  # its rows' columns (tati/engine/kernels.py info_of)

    def __init__(self, learning_rate=default("learning_rate"), name=None, **kwargs):
        if not callable(learning_rate):
            learning_rate = check("learning_rate", learning_rate)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._previous_positions, self._previous_gradients, self._step_widths, self._ready = [], [], [], []
        for variable in variables:
            self._previous_positions.append(self.add_variable_from_reference(variable, "previous_position"))
            self._previous_gradients.append(self.add_variable_from_reference(variable, "previous_gradient"))
            shape = (int(variable.shape[0]),) if self.walker_axis else ()
            # alpha of the last step, per walker: the run-info's scaled_gradient reports it
            self._step_widths.append(self.add_variable(shape, dtype=variable.dtype, name="step_width"))
            # 1 once a previous position and gradient are stored, 0 before the first step
            self._ready.append(self.add_variable((), dtype=variable.dtype, name="ready"))

    def restart(self):
        """The next step uses learning_rate: the parameters were set by hand, and the stored
        point no longer precedes the current one."""
        for ready in self._ready if self.built else []:
            ready.assign(0.0)

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        dtype = variable.dtype
        gradient = tf.cast(gradient, dtype)
        position = tf.convert_to_tensor(variable)
        s = position - self._previous_positions[index]
        y = gradient - self._previous_gradients[index]
        axes = list(range(1, len(variable.shape))) if self.walker_axis else None
        ss, sy = tf.reduce_sum(s * s, axis=axes), tf.reduce_sum(s * y, axis=axes)
        rate = tf.cast(learning_rate, dtype)
        usable = (tf.convert_to_tensor(self._ready[index]) > 0) & (sy > 0)
        alpha = ss / tf.where(usable, sy, tf.ones_like(sy))
        alpha = tf.where(usable & tf.math.is_finite(alpha), alpha, rate)
        self._previous_positions[index].assign(position)
        self._previous_gradients[index].assign(gradient)
        self._step_widths[index].assign(alpha)
        self._ready[index].assign(1.0)
        variable.assign_sub(self._broadcast(alpha, variable) * gradient)

    def _broadcast(self, alpha, variable):
        """alpha ([W] with walker_axis, else a scalar) shaped to multiply the variable."""
        if not self.walker_axis:
            return alpha
        return tf.reshape(alpha, [-1] + [1] * (len(variable.shape) - 1))

    def scaled_gradients(self, gradients):
        """alpha_k g_k of the last step, per variable: the step taken (run-info's scaled_gradient)."""
        alphas = [tf.convert_to_tensor(alpha) for alpha in self._step_widths]
        return [self._broadcast(alpha, g) * tf.cast(g, alpha.dtype) for alpha, g in zip(alphas, gradients)]
