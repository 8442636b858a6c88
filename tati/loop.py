"""The compiled chunk: n steps of one optimizer or sampler inside one tf.function.

`compile_chunk(Loop(...))` builds the chunk of a kernel's kind (tati/kernels.py): make_chunk
for one gradient per step (below), make_metropolis_chunk for HMC's legs, loop_proposal.py for
NUTS and RWMH, optimizers/lbfgs.py for L-BFGS.

Each step: next batch, every walker's loss and gradient at its current parameters q_n (one
gradient of the summed loss: walkers do not interact through it), the virial
1/2 q_n . grad U(q_n) per walker, the optimizer's update, and the running averages. The last
step of a chunk also returns what its table rows need, per walker: loss, accuracy and
parameters at q_n (the state before the update), the step's gradient norm times the step
width, and the sampler's report.
"""

import functools
from dataclasses import dataclass

import tensorflow as tf

from tati.kernels import FULL_BATCH, LEGS, PROPOSAL, info_of, is_sampler, kind_of
from tati.samplers.turns import chunk_compiled

# Numbers one block of rows may hold (16 MiB of float64), and at most this many rows: a compiled
# call hands its rows to Python at once, in constant memory however long the run.
BLOCK_NUMBERS = 2 ** 21
MAX_BLOCK_ROWS = 4096


def block_rows(walkers, parameters):
    """Rows of one block: every row holds the parameters and about 16 numbers per walker."""
    return int(max(1, min(MAX_BLOCK_ROWS, BLOCK_NUMBERS // (walkers * (parameters + 16)))))


def compiled_chunk(jit_compile):
    """tf.function(autograph=False, jit_compile=jit_compile) of a chunk(n), whose body is traced
    knowing whether the chunk is compiled by XLA as a whole (samplers/turns.py)."""
    def compile(body):
        @functools.wraps(body)
        def chunk(n):
            with chunk_compiled(jit_compile):
                return body(n)
        return tf.function(chunk, autograph=False, jit_compile=jit_compile)
    return compile


def written_rows(array, written, jit_compile):
    """A block's TensorArray as one tensor: its first `written` elements. Under XLA, and in a
    replica of tf.distribute (tati/distribute.py packs the replicas' blocks by their static
    shapes), all of them: the caller reads the first `written`. Elsewhere stacking the whole
    array would fill every unwritten row with zeros, a copy of the block's full size at every
    call however few rows it holds."""
    if jit_compile or tf.distribute.has_strategy():
        return array.stack()
    return array.gather(tf.range(written))


@dataclass(frozen=True)
class Loop:
    """What a compiled chunk runs: the model and its data, the kernel, the run's step counter
    and running averages, and how the run goes (see make_chunk for each field's meaning)."""
    model: object
    data: object
    kernel: object
    step: object
    averages: object
    burn_in_steps: int = 0
    has_accuracy: bool = False
    ensemble: object = None
    every_nth: int = 1
    jit_compile: bool = False
    check_finite: bool = False
    record_momenta: bool = False


def steps_dtype(kernel):
    """The dtype of a chunk's step count n: int32 for HMC's legs (a loop counter beside the
    legs' step counts), int64 for the other kinds."""
    return tf.int32 if kind_of(kernel) == LEGS else tf.int64


def compile_chunk(loop):
    """The compiled chunk of the loop's kernel, by its kind (tati/kernels.py): chunk(n) runs up
    to n steps and returns their rows as a block."""
    kind = kind_of(loop.kernel)
    if kind == FULL_BATCH:
        from tati.optimizers.lbfgs import make_lbfgs_chunk
        return make_lbfgs_chunk(loop.model, loop.data, loop.kernel, loop.step, loop.averages, loop.has_accuracy,
                                loop.every_nth)
    if kind == PROPOSAL:
        from tati.loop_proposal import make_proposal_chunk
        return make_proposal_chunk(loop.model, loop.data, loop.kernel, loop.step, loop.averages, loop.burn_in_steps,
                                   loop.has_accuracy, loop.every_nth, loop.jit_compile)
    if kind == LEGS:
        return make_metropolis_chunk(loop.model, loop.data, loop.kernel, loop.step, loop.averages,
                                     loop.burn_in_steps, loop.has_accuracy, loop.every_nth, loop.jit_compile,
                                     loop.ensemble)
    return make_chunk(loop.model, loop.data, loop.kernel, loop.step, loop.averages, loop.burn_in_steps,
                      loop.has_accuracy, loop.ensemble, loop.every_nth, loop.jit_compile, loop.check_finite,
                      loop.record_momenta)


def make_chunk(model, data, optimizer, step, averages, burn_in_steps, has_accuracy, ensemble=None,
               every_nth=1, jit_compile=False, check_finite=False, record_momenta=False):
    """A tf.function chunk(n) running n >= 1 steps and returning the last step's row values.

    optimizer None gives the bare loop (batch, loss, gradient, averages, no update): the
    benchmark's reference for the cost of one step. `ensemble` (samplers/ensemble.py) refreshes
    the walkers' preconditioner before the steps it is due (HMC's legs have a chunk of their own,
    `make_metropolis_chunk`; compile_chunk picks by kind). `jit_compile` compiles the chunk with XLA.
    `check_finite` stops the chunk after the first step whose loss or gradient is not finite
    for some walker; the row then carries that step and the walkers (`nonfinite_step`,
    `nonfinite_walkers`), else nonfinite_step is -1. `record_momenta` (a sampler with momenta)
    adds to each row the momenta the step reports, times M^-1/2, and the gradients
    (`momenta`, `gradients`: [walkers, parameters] each).
    """
    variables = model.variables
    sampling = is_sampler(optimizer)
    info_columns = info_of(optimizer).run_info
    noise_batches = getattr(optimizer, "noise_batches", 0)  # SGHMC's batch estimator: K gradients
    walkers = model.num_walkers

    def per_walker(products):
        """Sum of each variable's elementwise products: over all but the walker axis, as [W]."""
        if model.walker_axis:
            return tf.add_n([tf.cast(tf.reduce_sum(tf.reshape(x, [tf.shape(x)[0], -1]), axis=1), tf.float64)
                             for x in products])
        return tf.reshape(tf.add_n([tf.cast(tf.reduce_sum(x), tf.float64) for x in products]), [1])

    def as_walkers(value):
        return tf.reshape(tf.cast(value, tf.float64), [-1]) if model.walker_axis else tf.reshape(
            tf.cast(value, tf.float64), [1])

    def estimate_noise():
        """At the start of each epoch (without mini-batches, every noise_estimation_steps steps
        from the first), the sampler's V-hat from the gradients of K batches of their own
        (data.extra_batch, keyed by the step) at the current parameters: evaluations only, the
        chain, its noise stream and the training batches do not move."""
        def gradients_of(k):
            return [model.loss_and_gradient(*data.extra_batch(step, k))[1]]

        if getattr(data, "full", True):
            due = tf.equal(tf.math.floormod(step, optimizer.noise_estimation_steps), 0)
        else:
            due = data.starts_epoch()

        def estimate():
            optimizer.estimate_noise(gradients_of)
            return tf.constant(True)

        tf.cond(due, estimate, lambda: tf.constant(False))

    def one_step(record):
        if ensemble is not None:
            ensemble.maybe_refresh(model.theta, step)
        if noise_batches:
            estimate_noise()
        losses, gradient, accuracy = model.loss_and_gradient(*data.next(), with_accuracy=record and has_accuracy)
        grads = [gradient]
        virial = 0.5 * per_walker([v * g for v, g in zip(variables, grads)])
        finite = None  # only computed when checked: a loop variable costs its operations every step
        if check_finite:
            finite = tf.math.is_finite(as_walkers(losses)) & tf.equal(
                per_walker([tf.cast(tf.logical_not(tf.math.is_finite(g)), tf.float64) for g in grads]), 0.0)
        if record:
            parameters = model.flat_parameters()
            gradient_norm = tf.sqrt(per_walker([tf.square(g) for g in grads]))
            rate = 1.0 if optimizer is None else optimizer.learning_rate
            scaled_gradient = tf.cast(rate, tf.float64) * gradient_norm
        if sampling:
            optimizer.report_details = record  # read while tracing: rows only need it at records
            if record and record_momenta:
                momenta = optimizer.apply_reading_momenta(grads, variables)
                gradients = tf.concat([tf.reshape(tf.cast(g, tf.float64), [walkers, -1]) for g in grads], axis=1)
            else:
                optimizer.apply(grads, variables)
            optimizer.report_details = True
        elif optimizer is not None:
            optimizer.apply(grads, variables)
            if record and hasattr(optimizer, "scaled_gradients"):  # Barzilai-Borwein: its own step width
                scaled_gradient = tf.sqrt(per_walker([tf.square(x) for x in optimizer.scaled_gradients(grads)]))
        step.assign_add(1)
        zeros = tf.zeros_like(virial)
        if sampling:
            info = {k: as_walkers(v) for k, v in optimizer.step_info.items()}
            kinetic, inertia, beta = info["kinetic_energy"], info["inertia"], optimizer.inverse_temperature
        else:
            kinetic = inertia = zeros
            beta = tf.constant(1.0, tf.float64)
        averages.update(losses, virial, kinetic, inertia, beta, step > burn_in_steps)
        if not record:
            return finite
        evaluations = tf.cast(step, tf.float64)
        if noise_batches:  # the estimator's gradients besides one per step
            evaluations += optimizer.noise_evaluations
        columns = {"scaled_gradient": scaled_gradient, "virial": virial,
                   "gradient_evaluations": tf.fill([walkers], evaluations)}
        if sampling:  # the sampler's report of this step
            columns.update({k: as_walkers(v) for k, v in optimizer.row_info(losses, per_walker).items()})
        row = {"loss": losses, "parameters": parameters, "averages": tf.stack(averages.values())}
        row.update({name: columns[name] for name in info_columns})
        if has_accuracy:
            row["accuracy"] = accuracy
        if check_finite:
            row["finite"] = finite
        if record_momenta:
            row.update(momenta=momenta, gradients=gradients)
        return row

    # The row: loss, parameters and running averages, the kernel's columns (tati/kernels.py).
    fields = {"loss": [walkers], "parameters": [walkers, model.num_parameters], "averages": [4, walkers]}
    fields.update({name: [walkers] for name in info_columns})
    if has_accuracy:
        fields["accuracy"] = [walkers]
    if record_momenta:
        fields.update(momenta=[walkers, model.num_parameters], gradients=[walkers, model.num_parameters])
    rows = block_rows(walkers, model.num_parameters * (3 if record_momenta else 1))

    @compiled_chunk(jit_compile)
    def chunk(n):
        """Up to n steps, n ending at a multiple of every_nth or where the caller wants a row;
        a row at every multiple of every_nth and at the n-th step. Returns the rows as a block
        (`rows` of them, each with its `step`); stops early when the block is full or, with
        check_finite, after the first row that has a step whose loss or gradient is not finite
        for some walker (`nonfinite_step`, `nonfinite_walkers`; that row is not valid)."""
        # Loops written out as tf.while_loop, not converted by AutoGraph: its conversion was a
        # good part of a new process's first call (doc/benchmarks.md). While loops, not ranges:
        # XLA would compile one program per n.
        def note_finite(finite, bad_step, bad_walkers):
            """The first step with a non-finite walker, and its walkers, once found."""
            bad_walkers = tf.where(bad_step < 0, tf.logical_not(finite), bad_walkers)
            bad_step = tf.where(tf.logical_or(bad_step >= 0, tf.reduce_all(finite)), bad_step, step)
            return bad_step, bad_walkers

        def free_steps(k, bad_step, bad_walkers):
            """Steps 2..k of a row's stretch, without a row (until a non-finite one, if checked);
            returns the next step's number in the stretch."""
            if not check_finite:
                def step_on(j):
                    one_step(record=False)
                    return j + 1

                j, = tf.while_loop(lambda j: j < k, step_on, [tf.constant(1, tf.int64)])
                return j, bad_step, bad_walkers

            def body(j, bad_step, bad_walkers):
                return (j + 1,) + note_finite(one_step(record=False), bad_step, bad_walkers)

            return tf.while_loop(lambda j, bad_step, _: tf.logical_and(j < k, bad_step < 0), body,
                                 [tf.constant(1, tf.int64), bad_step, bad_walkers])

        def row_stretch(i, written, bad_step, bad_walkers, steps, arrays):
            """The steps up to the next row and the row."""
            k = tf.minimum(every_nth - tf.math.floormod(step, every_nth), n - i)
            j, bad_step, bad_walkers = free_steps(k, bad_step, bad_walkers)
            row = one_step(record=True)
            if check_finite:
                bad_step, bad_walkers = note_finite(row.pop("finite"), bad_step, bad_walkers)
            arrays = tuple(array.write(written, tf.cast(row[name], tf.float64))
                           for array, name in zip(arrays, fields))
            return i + j, written + 1, bad_step, bad_walkers, steps.write(written, step), arrays

        def more(i, written, bad_step, *_):
            return tf.logical_and(tf.logical_and(i < n, written < rows), bad_step < 0)

        arrays = tuple(tf.TensorArray(tf.float64, size=rows, element_shape=shape) for shape in fields.values())
        steps = tf.TensorArray(tf.int64, size=rows, element_shape=[])
        _, written, bad_step, bad_walkers, steps, arrays = tf.while_loop(
            more, row_stretch, [tf.constant(0, tf.int64), tf.constant(0), tf.constant(-1, tf.int64),
                                tf.zeros([walkers], tf.bool), steps, arrays])
        result = {name: written_rows(array, written, jit_compile) for name, array in zip(fields, arrays)}
        result.update(step=written_rows(steps, written, jit_compile), rows=written, nonfinite_step=bad_step,
                      nonfinite_walkers=bad_walkers)
        return result

    return chunk


def leg_row_fields(sampler, walkers, parameters, has_accuracy):
    """{field: shape} of a row of a Metropolis sampler's chunk (make_metropolis_chunk): the
    sampler's columns (its info) and `due`."""
    fields = {"loss": [walkers], "parameters": [walkers, parameters], "averages": [4, walkers], "due": [walkers]}
    fields.update({name: [walkers] for name in sampler.info.run_info})
    if has_accuracy:
        fields["accuracy"] = [walkers]
    return fields


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


def make_metropolis_chunk(model, data, sampler, step, averages, burn_in_steps, has_accuracy, every_nth,
                          jit_compile=False, ensemble=None):
    """A tf.function chunk(n) for HMC: up to n steps; a row at every evaluation step at which
    some walker completes a leg whose count is a multiple of every_nth (`due` walkers), as a
    block like make_chunk's.

    Rows and averages see the chain's states at evaluations only (the accepted or the
    restored state, rejected ones repeated), as the samplers reference explains for HMC.
    The steps at which no walker's leg ends (`sampler.free_steps()`) are only a kick and a
    drift each (`sampler.integrate`); the others are `sampler.apply` calls followed by the
    report and the running averages, as one XLA program (`evaluation`). With the ensemble
    preconditioner, every phase of `ensemble.every` calls starts with such a step (the
    sampler's legs end there, see samplers/hmc.py), where B is refreshed from the chain
    states of the half that now stands.
    """
    variables = model.variables
    sampler.build(variables)  # free_steps reads its state while the chunk is traced

    def gradients_at(positions):
        """The gradient of the walkers' summed loss at the given positions ([theta], a loop tensor)."""
        return [model.loss_and_gradient(*data.next(), theta=positions[0])[1]]

    def integrate(steps):
        sampler.integrate(steps, gradients_at, variables)
        step.assign_add(tf.cast(steps, tf.int64))

    walkers = model.num_walkers
    fields = leg_row_fields(sampler, walkers, model.num_parameters, has_accuracy)
    rows = block_rows(walkers, model.num_parameters)

    def one_step(left):
        if ensemble is not None:
            ensemble.maybe_refresh(sampler.chain_positions()[0], sampler.iterations)
        losses, gradient, accuracy = model.loss_and_gradient(*data.next(), with_accuracy=has_accuracy)
        return evaluation(losses, [gradient], accuracy, left)

    @tf.function(jit_compile=True, autograph=False)
    def evaluation(losses, grads, accuracy, left):
        """An evaluation step's bookkeeping (the sampler's call, its report, the running
        averages, the row) as one XLA program, in graph mode too: there, each of its about 170
        small operations would cost a microsecond or more of executor time. Returns the walkers
        whose row is due, how many kick-and-drift steps follow (up to the next evaluation, at
        most `left`) and the row's values."""
        sampler.apply(grads, variables, loss=losses, accuracy=accuracy)
        step.assign_add(1)
        report = sampler.chain_report()
        evaluated = report["evaluated"] > 0
        averages.update(report["loss"], report["virial"], report["kinetic_energy"],
                        None, sampler.inverse_temperature,
                        evaluated & (step > burn_in_steps))
        due = evaluated & tf.equal(tf.math.floormod(report["legs"], float(every_nth)), 0.0)
        row = leg_row(sampler, report, averages, due, step, fields)
        return tf.reduce_any(due), tf.minimum(sampler.free_steps(), left), row

    @compiled_chunk(jit_compile)
    def chunk(n):
        """Up to n steps, the rows of the evaluations where some walker's row is due as a block
        (`rows` of them, each with its `step` and `due` walkers); stops early when the block is
        full. Kick-and-drift steps up to the first evaluation (or the chunk's end), then
        evaluation steps, each followed by the kick-and-drift steps up to the next one: so a
        step is an apply exactly when some walker's leg ends there, however the run is cut
        into chunks (a restored run continues bitwise)."""
        def evaluation_and_free_steps(i, written, steps, arrays):
            due, free, row = one_step(n - i - 1)
            # Written at every evaluation, kept (the next index taken) only where a row is due.
            arrays = tuple(array.write(written, row[name]) for array, name in zip(arrays, fields))
            steps = steps.write(written, step)
            integrate(free)
            return i + free + 1, written + tf.cast(due, tf.int32), steps, arrays

        arrays = tuple(tf.TensorArray(tf.float64, size=rows, element_shape=shape) for shape in fields.values())
        steps = tf.TensorArray(tf.int64, size=rows, element_shape=[])
        i = tf.minimum(sampler.free_steps(), n)
        integrate(i)
        # A while loop, not a range: XLA would compile one program per n (as in make_chunk).
        _, written, steps, arrays = tf.while_loop(
            lambda i, written, *_: tf.logical_and(i < n, written < rows), evaluation_and_free_steps,
            [i, tf.constant(0), steps, arrays])
        result = {name: written_rows(array, written, jit_compile) for name, array in zip(fields, arrays)}
        result.update(step=written_rows(steps, written, jit_compile), rows=written,
                      nonfinite_step=tf.constant(-1, tf.int64),
                      nonfinite_walkers=tf.zeros([walkers], tf.bool))
        return result

    return chunk
