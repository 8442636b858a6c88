"""The compiled chunk: n steps of one optimizer or sampler inside one tf.function.

Each step: next batch, loss and gradient at the current parameters q_n, the virial
1/2 q_n . grad U(q_n), the optimizer's update, and the running averages. The last step of a
chunk also returns what its table rows need: loss, accuracy and parameters at q_n (the state
before the update), the step's gradient norm times the step width, and the sampler's report.
"""

import tensorflow as tf

from tati.samplers import SamplerBase


def make_chunk(model, data, optimizer, step, averages, burn_in_steps, has_accuracy):
    """A tf.function chunk(n) running n >= 1 steps and returning the last step's row values.

    optimizer None gives the bare loop (batch, loss, gradient, averages, no update): the
    benchmark's reference for the cost of one step.
    """
    variables = model.variables
    is_sampler = isinstance(optimizer, SamplerBase)

    def one_step(record):
        features, labels = data.next()
        with tf.GradientTape() as tape:
            if record and has_accuracy:
                loss, accuracy = model.loss_and_accuracy(features, labels)
            else:
                loss = model.loss(features, labels)
        grads = tape.gradient(loss, variables, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        virial = 0.5 * tf.add_n([tf.cast(tf.reduce_sum(v * g), tf.float64) for v, g in zip(variables, grads)])
        if record:
            parameters = model.flat_parameters()
            gradient_norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(tf.cast(g, tf.float64)))
                                              for g in grads]))
            rate = 1.0 if optimizer is None else optimizer.learning_rate
            scaled_gradient = tf.cast(rate, tf.float64) * gradient_norm
        if is_sampler:
            optimizer.report_details = record  # read while tracing: rows only need it at records
            optimizer.apply(grads, variables)
            optimizer.report_details = True
        elif optimizer is not None:
            optimizer.apply(grads, variables)
        step.assign_add(1)
        if is_sampler:
            info = optimizer.step_info
            kinetic, inertia, beta = info["kinetic_energy"], info["inertia"], optimizer.inverse_temperature
        else:
            kinetic = inertia = tf.constant(0.0, tf.float64)
            beta = tf.constant(1.0, tf.float64)
        averages.update(loss, virial, kinetic, inertia, beta, step > burn_in_steps)
        if not record:
            return None
        row = {"loss": loss, "parameters": parameters, "scaled_gradient": scaled_gradient,
               "virial": virial, "averages": tf.stack(averages.values())}
        if has_accuracy:
            row["accuracy"] = accuracy
        if is_sampler:
            row["noise_sq"] = info["noise_sq"]
            if optimizer.has_momentum:
                row.update(kinetic_energy=kinetic, momentum_sq=info["momentum_sq"])
        return row

    @tf.function(autograph=True)
    def chunk(n):
        for _ in tf.range(n - 1):
            one_step(record=False)
        return one_step(record=True)

    return chunk
