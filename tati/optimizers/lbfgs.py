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

import tensorflow as tf

from tati.loop import block_rows, written_rows

CORRECTION_PAIRS = 10
TOLERANCE = 1e-8


class LBFGS:
    """The state of tfp's L-BFGS between compiled calls; `variables` are checkpointed."""

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


def make_lbfgs_chunk(model, data, lbfgs, step, averages, has_accuracy, every_nth=1):
    """A tf.function chunk(n): up to n more L-BFGS iterations, a row at every multiple of
    every_nth and at the last, as a block like loop.make_chunk's; stops early when every walker
    is done."""
    import tensorflow_probability as tfp
    from tensorflow_probability.python.optimizer.lbfgs import LBfgsOptimizerResults as Results
    features, labels = data.all() if model.uses_data else (None, None)
    walkers, d = model.num_walkers, model.num_parameters
    fields = {"loss": [walkers], "parameters": [walkers, d], "scaled_gradient": [walkers], "virial": [walkers],
              "averages": [4, walkers]}
    if has_accuracy:
        fields["accuracy"] = [walkers]
    rows = block_rows(walkers, d)

    def value_and_gradients(theta):
        losses, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
        return losses, gradient

    def from_model():  # the first call, or after the user set the parameters
        start = model.flat_parameters()
        value, gradient = value_and_gradients(start)
        no = tf.zeros([walkers], tf.bool)
        return Results(converged=no, failed=no, num_iterations=tf.constant(0), num_objective_evaluations=tf.constant(1),
                       position=start, objective_value=value, objective_gradient=gradient,
                       position_deltas=tf.zeros_like(lbfgs.position_deltas),
                       gradient_deltas=tf.zeros_like(lbfgs.gradient_deltas))

    def stored():
        return Results(converged=tf.identity(lbfgs.converged),
                       failed=tf.logical_and(lbfgs.stopped, tf.logical_not(lbfgs.converged)),
                       num_iterations=lbfgs.counts[0], num_objective_evaluations=lbfgs.counts[1],
                       position=tf.identity(lbfgs.position), objective_value=tf.identity(lbfgs.value),
                       objective_gradient=tf.identity(lbfgs.gradient),
                       position_deltas=tf.identity(lbfgs.position_deltas),
                       gradient_deltas=tf.identity(lbfgs.gradient_deltas))

    def row_of(done):
        theta, grad = tf.cast(done.position, tf.float64), tf.cast(done.objective_gradient, tf.float64)
        virial = 0.5 * tf.reduce_sum(theta * grad, axis=1)
        losses = tf.cast(done.objective_value, tf.float64)
        row = {"loss": losses, "parameters": theta, "scaled_gradient": tf.norm(grad, axis=1), "virial": virial,
               "averages": tf.stack(averages.values())}
        if has_accuracy:
            row["accuracy"] = tf.cast(model.loss_and_accuracy(features, labels, theta=done.position)[1], tf.float64)
        return row, losses, virial

    @tf.function(autograph=False)
    def chunk(n):
        def stretch(i, written, finished, results, steps, arrays):
            """L-BFGS iterations up to the next multiple of every_nth (or n), and their row."""
            k = tf.minimum(every_nth - tf.math.floormod(step, every_nth), n - i)
            done = tfp.optimizer.lbfgs_minimize(
                value_and_gradients, None, previous_optimizer_results=results,
                max_iterations=results.num_iterations + tf.cast(k, tf.int32),
                num_correction_pairs=CORRECTION_PAIRS, tolerance=TOLERANCE)
            iterations = tf.cast(done.num_iterations - results.num_iterations, tf.int64)
            finished = tf.reduce_all(done.converged | done.failed) | tf.equal(iterations, 0)
            step.assign_add(iterations)
            row, losses, virial = row_of(done)
            zero = tf.zeros([walkers], tf.float64)
            averages.update(losses, virial, zero, None, tf.constant(1.0, tf.float64), iterations > 0)
            row["averages"] = tf.stack(averages.values())
            arrays = tuple(array.write(written, tf.cast(row[name], tf.float64)) for array, name in zip(arrays, fields))
            steps = steps.write(written, step.read_value())
            return (i + tf.maximum(iterations, 1), written + tf.cast(iterations > 0, tf.int32), finished, done,
                    steps, arrays)

        def more(i, written, finished, *_):
            return tf.logical_and(tf.logical_and(i < n, written < rows), tf.logical_not(finished))

        results = tf.cond(lbfgs.started, stored, from_model)
        arrays = tuple(tf.TensorArray(tf.float64, size=rows, element_shape=shape) for shape in fields.values())
        _, written, _, results, steps, arrays = tf.while_loop(
            more, stretch, [tf.constant(0, tf.int64), tf.constant(0), tf.reduce_all(results.converged | results.failed),
                            results, tf.TensorArray(tf.int64, size=rows, element_shape=[]), arrays])
        lbfgs.started.assign(True)
        lbfgs.stopped.assign(results.converged | results.failed)
        lbfgs.converged.assign(results.converged)
        lbfgs.counts.assign(tf.stack([results.num_iterations, results.num_objective_evaluations]))
        for variable, value in ((lbfgs.position, results.position), (lbfgs.value, results.objective_value),
                                (lbfgs.gradient, results.objective_gradient),
                                (lbfgs.position_deltas, results.position_deltas),
                                (lbfgs.gradient_deltas, results.gradient_deltas)):
            variable.assign(value)
        model.assign_flat(results.position)
        block = {name: written_rows(array, written, False) for name, array in zip(fields, arrays)}
        block.update(step=written_rows(steps, written, False), rows=written, nonfinite_step=tf.constant(-1, tf.int64),
                     nonfinite_walkers=tf.zeros([walkers], tf.bool))
        return block

    return chunk
