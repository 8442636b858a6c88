"""The kernel of one gradient per step, which the driver steps (tati/engine/driver.py).

Each step: next batch, every walker's loss and gradient at its current parameters q_n (one
gradient of the summed loss: walkers do not interact through it), the virial
1/2 q_n . grad U(q_n) per walker, the optimizer's update, and the running averages. A row
step also returns what its table row needs, per walker: loss, accuracy and parameters at q_n
(the state before the update), the step's gradient norm times the step width, and the
sampler's report. The optimizer is any Keras 3 optimizer: tati's samplers (samplers/base.py)
and optimizers, or Keras' own; None gives the bare loop (batch, loss, gradient, averages, no
update), the benchmark's reference for the cost of one step.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import measured_width
from tati.engine.driver import Kernel
from tati.engine.rows import Rows, row_fields
from tati.engine.kernels import has_walker_steps, info_of, is_sampler


class Finite(NamedTuple):
    """With check_finite: the first step with a non-finite walker (-1: none yet), its walkers."""
    step: tf.Tensor
    walkers: tf.Tensor


class Info(NamedTuple):
    """One step's report: whether each walker's loss and gradient are finite (None unless
    checked) and, at a row's step, the row's columns besides the running averages."""
    finite: object
    row: object = None


class GradientKernel(Kernel):
    """One gradient per step of `loop` (tati/engine/loop.py Loop, passed whole). `ensemble`
    (samplers/ensemble.py) refreshes the walkers' preconditioner before the steps it is due.
    `check_finite` stops the chunk after the first step whose loss or gradient is not finite
    for some walker; the block then carries that step and the walkers (`nonfinite_step`,
    `nonfinite_walkers`), else nonfinite_step is -1. `record_momenta` (a sampler with momenta)
    adds to each row the momenta the step reports, times M^-1/2, and the gradients
    (`momenta`, `gradients`: [walkers, parameters] each)."""

    def __init__(self, loop):
        self.loop, model, optimizer = loop, loop.model, loop.kernel
        self.sampling = is_sampler(optimizer)
        self.columns = info_of(optimizer).run_info
        # A sampler's own estimator of the gradient noise (SGHMC's): K gradients of batches of its own
        self.noise_batches = optimizer.noise_batches if self.sampling else 0
        self.own_step_widths = has_walker_steps(optimizer)  # Barzilai-Borwein: a step width per walker
        walkers, d = model.num_walkers, model.num_parameters
        extra = dict(momenta=[walkers, d], gradients=[walkers, d]) if loop.record_momenta else None
        fields = row_fields(walkers, d, self.columns, loop.has_accuracy, extra)
        self.rows = Rows(fields, walkers, d * (3 if loop.record_momenta else 1), loop.jit_compile)

    def per_walker(self, products):
        """Sum of each variable's elementwise products: over all but the walker axis, as [W]."""
        if self.loop.model.walker_axis:
            return tf.add_n([tf.cast(tf.reduce_sum(tf.reshape(x, [tf.shape(x)[0], -1]), axis=1), tf.float64)
                             for x in products])
        return tf.reshape(tf.add_n([tf.cast(tf.reduce_sum(x), tf.float64) for x in products]), [1])

    def as_walkers(self, value):
        return tf.reshape(tf.cast(value, tf.float64), [-1]) if self.loop.model.walker_axis else tf.reshape(
            tf.cast(value, tf.float64), [1])

    def estimate_noise(self):
        """At the start of each epoch (without mini-batches, every noise_estimation_steps steps
        from the first), the sampler's V-hat from the gradients of K batches of their own
        (data.extra_batch, keyed by the step; the noise mass's cover the data: covering_batch) at
        the current parameters: evaluations only, the chain, its noise stream and the training
        batches do not move. Where the width follows the noise mass (follows_width), the curvature
        batches' Hessian-vector products too (tati/adaptation/measured_width.py)."""
        loop, optimizer = self.loop, self.loop.kernel

        def gradients_of(k):
            batch = loop.data.covering_batch if optimizer.noise_covers else loop.data.extra_batch
            return [loop.model.loss_and_gradient(*batch(loop.step, k))[1]]

        follows = optimizer.follows_width  # the width follows a noise mass
        if getattr(loop.data, "full", True):
            due = tf.equal(tf.math.floormod(loop.step, optimizer.noise_estimation_steps), 0)
        else:
            due = loop.data.starts_epoch()

        def estimate():
            if not optimizer.noise_covers:
                optimizer.estimate_noise(gradients_of)
            elif not follows:
                optimizer.estimate_noise(gradients_of, measured_width.noise_batch_count(loop.data))
            else:  # the width measured again in the new mass's metric, on this step's curvature batches
                optimizer.estimate_noise(gradients_of, measured_width.noise_batch_count(loop.data),
                                         measured_width.hessian_vector_on(loop.model, loop.data,
                                                                          loop.model.flat_parameters, loop.step),
                                         measured_width.curvature_batches(loop.data))
            return tf.constant(True)

        tf.cond(due, estimate, lambda: tf.constant(False))

    def stride(self, state, i, n):
        every_nth = self.loop.every_nth
        if every_nth == 1:
            return None
        return tf.minimum(every_nth - tf.math.floormod(self.loop.step, every_nth), n - i)

    def going(self, state):
        return state.step < 0 if self.loop.check_finite else None

    def start(self, n):
        if not self.loop.check_finite:
            return (), tf.constant(0, tf.int64)
        return Finite(tf.constant(-1, tf.int64), tf.zeros([self.loop.model.num_walkers], tf.bool)), tf.constant(
            0, tf.int64)

    def finish(self, state):
        if not self.loop.check_finite:
            return {}
        return dict(nonfinite_step=state.step, nonfinite_walkers=state.walkers)

    def note_finite(self, state, finite):
        """The first step with a non-finite walker, and its walkers, once found."""
        walkers = tf.where(state.step < 0, tf.logical_not(finite), state.walkers)
        return Finite(tf.where(tf.logical_or(state.step >= 0, tf.reduce_all(finite)), state.step, self.loop.step),
                      walkers)

    def step(self, state, record, left):
        info = self.one_step(record)
        if self.loop.check_finite:
            state = self.note_finite(state, info.finite)
        return state, info

    def update(self, grads, record):
        """The optimizer's update; at a row's step with record_momenta, the momenta it reports."""
        loop, optimizer = self.loop, self.loop.kernel
        if self.sampling:
            optimizer.report_details = record  # read while tracing: rows only need it at records
            momenta = None
            if record and loop.record_momenta:
                momenta = optimizer.apply_reading_momenta(grads, loop.model.variables)
            else:
                optimizer.apply(grads, loop.model.variables)
            optimizer.report_details = True
            return momenta
        if optimizer is not None:
            optimizer.apply(grads, loop.model.variables)
        return None

    def one_step(self, record):
        loop, model, optimizer = self.loop, self.loop.model, self.loop.kernel
        if loop.ensemble is not None:
            loop.ensemble.maybe_refresh(model.theta, loop.step)
        if self.noise_batches:
            self.estimate_noise()
        losses, gradient, accuracy = model.loss_and_gradient(*loop.data.next(),
                                                             with_accuracy=record and loop.has_accuracy)
        grads = [gradient]
        virial = 0.5 * self.per_walker([v * g for v, g in zip(model.variables, grads)])
        finite = None  # only computed when checked: a loop variable costs its operations every step
        if loop.check_finite:
            finite = tf.math.is_finite(self.as_walkers(losses)) & tf.equal(
                self.per_walker([tf.cast(tf.logical_not(tf.math.is_finite(g)), tf.float64) for g in grads]), 0.0)
        if record:
            parameters = model.flat_parameters()
            gradient_norm = tf.sqrt(self.per_walker([tf.square(g) for g in grads]))
            rate = 1.0 if optimizer is None else optimizer.learning_rate
            scaled_gradient = tf.cast(rate, tf.float64) * gradient_norm
        momenta = self.update(grads, record)
        if record and self.own_step_widths:  # the optimizer's own step widths times the gradients
            scaled_gradient = tf.sqrt(self.per_walker([tf.square(x) for x in optimizer.scaled_gradients(grads)]))
        loop.step.assign_add(1)
        self.average(losses, virial)
        if not record:
            return Info(finite)
        row = {"loss": losses, "parameters": parameters, "scaled_gradient": scaled_gradient, "virial": virial,
               "accuracy": accuracy}
        if self.sampling:  # the sampler's report of this step
            row.update({k: self.as_walkers(v) for k, v in optimizer.row_info(losses, self.per_walker).items()})
        if loop.record_momenta:
            row.update(momenta=momenta, gradients=tf.concat(
                [tf.reshape(tf.cast(g, tf.float64), [model.num_walkers, -1]) for g in grads], axis=1))
        return Info(finite, row)

    def average(self, losses, virial):
        """The running averages of this step (those of burn-in are not kept)."""
        loop, optimizer = self.loop, self.loop.kernel
        if self.sampling:
            info = {k: self.as_walkers(v) for k, v in optimizer.step_info.items()}
            kinetic, inertia, beta = info["kinetic_energy"], info["inertia"], optimizer.inverse_temperature
        else:
            kinetic = inertia = tf.zeros_like(virial)
            beta = tf.constant(1.0, tf.float64)
        loop.averages.update(losses, virial, kinetic, inertia, beta, loop.step > loop.burn_in_steps)

    def trace(self, state, info):
        """The row of a row's step: the step's columns, the running averages and the gradients
        so far (one per step, and the noise estimator's)."""
        loop, row = self.loop, dict(info.row)
        evaluations = tf.cast(loop.step, tf.float64)
        if self.noise_batches:  # the estimator's gradients besides one per step
            evaluations += loop.kernel.noise_evaluations
        row.setdefault("gradient_evaluations", tf.fill([loop.model.num_walkers], evaluations))
        row["averages"] = tf.stack(loop.averages.values())
        return {name: row[name] for name in self.rows.fields}, loop.step
