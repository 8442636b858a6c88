"""HMC's legs as a kernel of the driver (tati/engine/driver.py): one step is an evaluation
(where some walker's leg ends: `sampler.apply`, its report, the running averages and the row)
followed by the leg's inner steps up to the next evaluation, bare kicks and drifts
(`sampler.integrate`).

Rows and averages see the chain's states at evaluations only (the accepted or the restored
state, rejected ones repeated), as the samplers reference explains for HMC. A row is written at
every evaluation and kept where some walker completes a leg whose count is a multiple of
every_nth (`due` walkers). With the ensemble preconditioner, every phase of `ensemble.every`
calls starts with an evaluation (the sampler's legs end there, see samplers/hmc.py), where B
is refreshed from the chain states of the half that now stands. So a step is an apply exactly
when some walker's leg ends there, however the run is cut into chunks (a restored run
continues bitwise).
"""

from typing import NamedTuple

import tensorflow as tf

from tati.engine.driver import Kernel
from tati.engine.rows import Rows, flat, row_fields


class LegInfo(NamedTuple):
    """An evaluation's report: the walkers whose row is due, the inner steps that followed it,
    the evaluation's step number and its row."""
    due: tf.Tensor
    free: tf.Tensor
    step: tf.Tensor
    row: dict


def leg_row(sampler, report, averages, due, step, fields):
    """The row of an evaluation step, float64 per walker (`fields`): the chain's state from
    `report` (sampler.chain_report(): loss, accuracy, virial 1/2 q_a . g_a, the energies of
    the redrawn momenta and of the last decision, the rejection rate and divergences), its
    positions q_a, scaled_gradient h |g_a|, the step width h, the gradients so far (one per
    step), the running averages, and `due` (1 where the walker's row is kept)."""
    walkers = fields["loss"][0]
    positions = tf.concat([tf.reshape(q, [walkers, -1]) for q in sampler.chain_positions()], axis=1)
    rate = tf.cast(sampler.learning_rate, tf.float64)
    row = {"loss": report["loss"], "parameters": positions,
           "scaled_gradient": rate * tf.sqrt(report["gradient_sq"]), "virial": report["virial"],
           "averages": tf.stack(averages.values()), "kinetic_energy": report["kinetic_energy"],
           "scaled_momentum": tf.sqrt(report["momentum_sq"]), "total_energy": report["total_energy"],
           "old_total_energy": report["old_total_energy"],
           "average_rejection_rate": report["rejection_rate"], "divergences": report["divergences"],
           "step_width": tf.fill([walkers], rate), "gradient_evaluations": tf.fill([walkers], tf.cast(step, tf.float64)),
           "due": tf.cast(due, tf.float64)}
    if "accuracy" in fields:
        row["accuracy"] = report["accuracy"]
    return {name: tf.cast(row[name], tf.float64) for name in fields}


class LegsKernel(Kernel):
    """HMC1/HMC2 (samplers/hmc.py) on `loop` (tati/engine/loop.py Loop, passed whole). Its state is
    the sampler's variables; the chunk's step count is int32 (a loop counter beside the legs'
    step counts)."""

    steps_dtype = tf.int32

    def __init__(self, loop):
        self.loop, model, sampler = loop, loop.model, loop.kernel
        sampler.build(model.variables)  # free_steps reads its state while the chunk is traced
        walkers = model.num_walkers
        self.fields = row_fields(walkers, model.num_parameters, sampler.info.run_info, loop.has_accuracy,
                                 extra={"due": [walkers]})
        # Packed: the evaluation joins the row into one vector, so that in graph mode a leg writes
        # one TensorArray, not one per field (each write an operation and a loop variable).
        self.rows = Rows(self.fields, walkers, model.num_parameters, loop.jit_compile, packed=True)
        self.evaluation = tf.function(self.evaluate, jit_compile=True, autograph=False)
        # A chunk that starts inside a leg integrates its rest with the widths from a program of their own, as
        # the evaluation hands them to the leg's first stretch: in graph mode, widths read in the chunk's graph
        # let Grappler's arithmetic optimizer regroup the kicks' products there and not in the loop, so that
        # a leg cut by a chunk's end (where depends on the clock, running.CALL_SECONDS) took other rounding,
        # and a 50-unit network's HMC2 run (boston, 20,000 steps) gave other numbers in each process.
        self.widths = tf.function(lambda: sampler.leg_widths(model.variables), jit_compile=True, autograph=False)

    def gradients_at(self, positions):
        """The gradient of the walkers' summed loss at the given positions ([theta], a loop tensor)."""
        return [self.loop.model.loss_and_gradient(*self.loop.data.next(), theta=positions[0])[1]]

    def count_free(self, free):
        """Advance the sampler's and the loop's step counts by the `free` integration steps that
        follow an evaluation, inside its program (graph mode would spend six operations on it
        per leg)."""
        self.loop.kernel.iterations.assign_add(tf.cast(free, self.loop.kernel.iterations.dtype))
        self.loop.step.assign_add(tf.cast(free, tf.int64))

    def start(self, n):
        """The inner steps up to the first evaluation (or the chunk's end)."""
        i = tf.minimum(self.loop.kernel.free_steps(), n)
        self.loop.kernel.integrate(i, self.gradients_at, self.loop.model.variables, widths=self.widths())
        self.loop.step.assign_add(tf.cast(i, tf.int64))
        return (), i

    def evaluate(self, losses, grads, accuracy, left):
        """An evaluation step's bookkeeping (the sampler's call, its report, the running
        averages, the row) as one XLA program, in graph mode too: there, each of its about 170
        small operations would cost a microsecond or more of executor time. Returns the walkers
        whose row is due, how many kick-and-drift steps follow (up to the next evaluation, at
        most `left`), the evaluation's step number, the new legs' step widths per variable
        (sampler.leg_widths) and the row's values, joined in one vector (Rows(packed=True)).
        The step counts already include the kick-and-drift steps (`count_free`)."""
        loop, sampler = self.loop, self.loop.kernel
        sampler.apply(grads, loop.model.variables, loss=losses, accuracy=accuracy)
        loop.step.assign_add(1)
        report = sampler.chain_report()
        evaluated = report["evaluated"] > 0
        loop.averages.update(report["loss"], report["virial"], report["kinetic_energy"],
                             None, sampler.inverse_temperature,
                             evaluated & (loop.step > loop.burn_in_steps))
        due = evaluated & tf.equal(tf.math.floormod(report["legs"], float(loop.every_nth)), 0.0)
        row = leg_row(sampler, report, loop.averages, due, loop.step, self.fields)
        packed = tf.concat([flat(row[name]) for name in self.fields], 0)
        free, at = tf.minimum(sampler.free_steps(), left), tf.convert_to_tensor(loop.step)
        widths = sampler.leg_widths(loop.model.variables)
        self.count_free(free)
        return tf.reduce_any(due), free, at, widths, {"packed": packed}

    def step(self, state, record, left):
        loop = self.loop
        if loop.ensemble is not None:
            loop.ensemble.maybe_refresh(loop.kernel.chain_positions()[0], loop.kernel.iterations)
        losses, gradient, accuracy = loop.model.loss_and_gradient(*loop.data.next(), with_accuracy=loop.has_accuracy)
        due, free, at, widths, row = self.evaluation(losses, [gradient], accuracy, left - 1)
        loop.kernel.integrate(free, self.gradients_at, loop.model.variables, widths=widths, counted=True)
        return state, LegInfo(due, free, at, row)

    def trace(self, state, info):
        return info.row, info.step

    def taken(self, info):
        return info.free + 1

    def kept(self, info):
        return info.due
