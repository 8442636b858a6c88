"""L-BFGS for fit() (optimizer="L-BFGS"): tfp.optimizer.lbfgs_minimize on the whole dataset.

One step is one L-BFGS iteration (a quasi-Newton direction from the last `CORRECTION_PAIRS`
position and gradient differences, then a Hager-Zhang line search, which may evaluate the
loss several times: `objective_evaluations` counts them). Each walker is minimised on its own,
as one batch. The search stops early, for all walkers, when every walker has converged (the
gradient's largest component below `TOLERANCE`) or its line search failed; fit() then ends
before max_steps. There is no learning_rate: L-BFGS chooses its steps. The state between two
calls (TFP's results: position, loss, gradient and the correction pairs) is kept in variables,
so a checkpoint continues it.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.engine.driver import Kernel
from tati.engine.rows import Rows, row_fields
from tati.recording.columns import OPTIMIZER_INFO

CORRECTION_PAIRS = 10
TOLERANCE = 1e-8


class LBFGS:
    """The state of tfp's L-BFGS between compiled calls; `variables` are checkpointed."""

    info = OPTIMIZER_INFO  # its rows' columns (tati/engine/kernels.py info_of)

    def __init__(self, model):
        walkers, d, dtype = model.num_walkers, model.num_parameters, model.dtype
        zeros = lambda *shape: tf.Variable(tf.zeros(shape, dtype), trainable=False)  # noqa: E731
        self.model = model
        self.started = tf.Variable(False, trainable=False)
        self.stopped = tf.Variable(tf.zeros([walkers], tf.bool), trainable=False)  # converged or failed
        self.counts = tf.Variable(tf.zeros([2], tf.int32), trainable=False)  # iterations, evaluations
        self.position, self.value, self.gradient = zeros(walkers, d), zeros(walkers), zeros(walkers, d)
        self.position_deltas = zeros(CORRECTION_PAIRS, walkers, d)
        self.gradient_deltas = zeros(CORRECTION_PAIRS, walkers, d)
        self.converged = tf.Variable(tf.zeros([walkers], tf.bool), trainable=False)

    @property
    def variables(self):
        return [self.started, self.stopped, self.counts, self.position, self.value, self.gradient,
                self.position_deltas, self.gradient_deltas, self.converged]

    def restart(self):
        """The next call starts afresh from the model's parameters (the user set them)."""
        self.started.assign(False)


class State(NamedTuple):
    """What the driver's loops carry: TFP's results and whether every walker is done."""
    results: object
    finished: tf.Tensor


class Info(NamedTuple):
    """A stretch's report: the iterations it made (0 where every walker was done) and its row."""
    iterations: tf.Tensor
    row: dict


class LBFGSKernel(Kernel):
    """L-BFGS on `loop` (tati/engine/loop.py Loop, passed whole) for the driver (tati/engine/driver.py):
    one driver step is the iterations up to the next multiple of every_nth (or the chunk's
    end), one call of TFP's minimiser, with its row; the chunk stops early when every walker
    is done. TFP's results are read from the variables at a chunk's start and written at its end."""

    def __init__(self, loop):
        self.loop, self.lbfgs, model = loop, loop.kernel, loop.model
        self.features, self.labels = loop.data.all() if model.uses_data else (None, None)
        self.rows = Rows(row_fields(model.num_walkers, model.num_parameters, ("scaled_gradient", "virial"),
                                    loop.has_accuracy), model.num_walkers, model.num_parameters, False)

    def value_and_gradients(self, theta):
        losses, gradient, _ = self.loop.model.loss_and_gradient(self.features, self.labels, theta=theta)
        return losses, gradient

    def from_model(self):
        """The first call's results, or after the user set the parameters."""
        from tensorflow_probability.python.optimizer.lbfgs import LBfgsOptimizerResults as Results  # as in step
        start = self.loop.model.flat_parameters()
        value, gradient = self.value_and_gradients(start)
        no = tf.zeros([self.loop.model.num_walkers], tf.bool)
        return Results(converged=no, failed=no, num_iterations=tf.constant(0), num_objective_evaluations=tf.constant(1),
                       position=start, objective_value=value, objective_gradient=gradient,
                       position_deltas=tf.zeros_like(self.lbfgs.position_deltas),
                       gradient_deltas=tf.zeros_like(self.lbfgs.gradient_deltas))

    def stored(self):
        from tensorflow_probability.python.optimizer.lbfgs import LBfgsOptimizerResults as Results  # as in step
        lbfgs = self.lbfgs
        return Results(converged=tf.identity(lbfgs.converged),
                       failed=tf.logical_and(lbfgs.stopped, tf.logical_not(lbfgs.converged)),
                       num_iterations=lbfgs.counts[0], num_objective_evaluations=lbfgs.counts[1],
                       position=tf.identity(lbfgs.position), objective_value=tf.identity(lbfgs.value),
                       objective_gradient=tf.identity(lbfgs.gradient),
                       position_deltas=tf.identity(lbfgs.position_deltas),
                       gradient_deltas=tf.identity(lbfgs.gradient_deltas))

    def start(self, n):
        results = tf.cond(self.lbfgs.started, self.stored, self.from_model)
        return State(results, tf.reduce_all(results.converged | results.failed)), tf.constant(0, tf.int64)

    def row_of(self, done):
        theta, grad = tf.cast(done.position, tf.float64), tf.cast(done.objective_gradient, tf.float64)
        virial = 0.5 * tf.reduce_sum(theta * grad, axis=1)
        losses = tf.cast(done.objective_value, tf.float64)
        row = {"loss": losses, "parameters": theta, "scaled_gradient": tf.norm(grad, axis=1), "virial": virial}
        if self.loop.has_accuracy:
            row["accuracy"] = tf.cast(self.loop.model.loss_and_accuracy(self.features, self.labels,
                                                                        theta=done.position)[1], tf.float64)
        return row, losses, virial

    def step(self, state, record, left):
        """L-BFGS iterations up to the next multiple of every_nth (or the chunk's end)."""
        import tensorflow_probability as tfp  # its import costs seconds: only where L-BFGS runs
        loop, results = self.loop, state.results
        k = tf.minimum(loop.every_nth - tf.math.floormod(loop.step, loop.every_nth), left)
        done = tfp.optimizer.lbfgs_minimize(
            self.value_and_gradients, None, previous_optimizer_results=results,
            max_iterations=results.num_iterations + tf.cast(k, tf.int32),
            num_correction_pairs=CORRECTION_PAIRS, tolerance=TOLERANCE)
        iterations = tf.cast(done.num_iterations - results.num_iterations, tf.int64)
        finished = tf.reduce_all(done.converged | done.failed) | tf.equal(iterations, 0)
        loop.step.assign_add(iterations)
        row, losses, virial = self.row_of(done)
        zero = tf.zeros([loop.model.num_walkers], tf.float64)
        loop.averages.update(losses, virial, zero, None, tf.constant(1.0, tf.float64), iterations > 0)
        row["averages"] = tf.stack(loop.averages.values())
        return State(done, finished), Info(iterations, row)

    def trace(self, state, info):
        return info.row, self.loop.step.read_value()

    def taken(self, info):
        return tf.maximum(info.iterations, 1)

    def kept(self, info):
        return info.iterations > 0

    def going(self, state):
        return tf.logical_not(state.finished)

    def finish(self, state):
        lbfgs, results = self.lbfgs, state.results
        lbfgs.started.assign(True)
        lbfgs.stopped.assign(results.converged | results.failed)
        lbfgs.converged.assign(results.converged)
        lbfgs.counts.assign(tf.stack([results.num_iterations, results.num_objective_evaluations]))
        for variable, value in ((lbfgs.position, results.position), (lbfgs.value, results.objective_value),
                                (lbfgs.gradient, results.objective_gradient),
                                (lbfgs.position_deltas, results.position_deltas),
                                (lbfgs.gradient_deltas, results.gradient_deltas)):
            variable.assign(value)
        self.loop.model.assign_flat(results.position)
        return {}
