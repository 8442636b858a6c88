"""The compiled chunk of a proposal kernel (samplers/proposal.py: NUTS, RWMH).

Each step: (before the first transition of burn-in, the initial width's search) one transition
of the kernel on z = theta / s from the stored state (z, log p(z),
its gradient), where log p(z) = -beta U(s z) on the whole dataset; then, during burn-in, the
step width's dual averaging and the metric's windows (tati/adaptation/); the running
averages; and a row at every multiple of every_nth and at the chunk's last step. The driver
(tati/engine/driver.py) steps the kernel `ProposalSteps`; its loops carry the chain's whole
state as tensors (`ChainState`: z, log p(z) and its gradient, the step, the width, the metric
and its adaptation, the counters, the running averages); the variables are read at a chunk's
start and written at its end, where the model's parameters are set to theta = s z.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import dual_averaging as averaging
from tati.adaptation import metric as moments
from tati.adaptation import width_search, windows
from tati.engine import rows as row_block
from tati.engine.driver import Kernel, compile_driver
from tati.models.flat import value_and_gradient
from tati.recording import averages as running
from tati.samplers.proposal import COUNTERS


class ChainState(NamedTuple):
    """The chain's state as the driver's loops carry it: tensors, not variables, so that the
    steps' bookkeeping is dataflow the next transition need not wait for (in graph mode a
    variable's write orders the operations around it); the variables are written at the
    chunk's end. `metric`: (s,) for the diagonal metric, (c, L) for the dense one."""
    step: tf.Tensor
    z: tf.Tensor
    log_prob: tf.Tensor
    gradient: tf.Tensor
    metric: tuple
    width: tf.Tensor
    dual_averaging: tf.Tensor
    welford: tf.Tensor
    counters: tf.Tensor
    averages: tf.Tensor


class TransitionInfo(NamedTuple):
    """A transition's report: theta and, at a row's step, the row's values as one float64
    vector (the fields before the accuracy, in their order: `bookkeeping`)."""
    theta: tf.Tensor
    values: object


class Pieces(NamedTuple):
    """The functions of make_proposal_chunk that ProposalSteps calls."""
    start: object
    search_first_width: object
    metric_now: object
    to_theta: object
    log_prob_at: object
    bookkeeping: object


class ProposalSteps(Kernel):
    """One transition per driver step, with its bookkeeping; the row's fields packed in one
    vector (Rows(packed=True))."""

    def __init__(self, loop, pieces, rows, features, labels):
        self.loop, self.pieces, self.rows, self.features, self.labels = loop, pieces, rows, features, labels

    def start(self, n):
        loop, kernel, pieces = self.loop, self.loop.kernel, self.pieces
        z, log_prob, gradient = pieces.start()
        if kernel.adapt_step_width:
            pieces.search_first_width(z, log_prob, gradient)
        state = ChainState(step=tf.convert_to_tensor(loop.step), z=z, log_prob=log_prob, gradient=gradient,
                           metric=pieces.metric_now(), width=tf.convert_to_tensor(kernel.step_width),
                           dual_averaging=tf.convert_to_tensor(kernel.dual_averaging),
                           welford=tf.convert_to_tensor(kernel.welford),
                           counters=tf.convert_to_tensor(kernel.counters),
                           averages=tf.convert_to_tensor(loop.averages.state))
        return state, tf.constant(0, tf.int64)

    def stride(self, state, i, n):
        every_nth = self.loop.every_nth
        if every_nth == 1:
            return None
        return tf.minimum(every_nth - tf.math.floormod(state.step, every_nth), n - i)

    def step(self, state, record, left):
        """One transition and its bookkeeping."""
        kernel, width = self.loop.kernel, state.width
        seed = tf.cast(tf.stack([tf.constant(kernel.seed % 2 ** 31, tf.int64),
                                 tf.math.floormod(state.step, 2 ** 31)]), tf.int32)
        z, log_prob, gradient, results = kernel.transition(self.pieces.log_prob_at(state.metric), state.z,
                                                           state.log_prob, state.gradient,
                                                           tf.cast(width, self.loop.model.dtype), seed)
        state = state._replace(z=z, log_prob=log_prob, gradient=gradient)
        state, theta, values = self.pieces.bookkeeping(state._asdict(), results, record)
        return ChainState(**state), TransitionInfo(theta, values)

    def trace(self, state, info):
        row = {"fields": info.values}
        if self.loop.has_accuracy:
            row["accuracy"] = self.loop.model.loss_and_accuracy(self.features, self.labels, theta=info.theta)[1]
        return row, state.step

    def finish(self, state):
        loop, kernel = self.loop, self.loop.kernel
        loop.step.assign(state.step)
        kernel.position.assign(state.z)
        kernel.log_prob.assign(state.log_prob)
        kernel.gradient.assign(state.gradient)
        if kernel.metric == "dense":
            kernel.centre.assign(state.metric[0])
            kernel.cholesky.assign(state.metric[1])
        else:
            kernel.scale.assign(state.metric[0])
        kernel.step_width.assign(state.width)
        kernel.dual_averaging.assign(state.dual_averaging)
        kernel.welford.assign(state.welford)
        kernel.counters.assign(state.counters)
        loop.averages.state.assign(state.averages)
        loop.model.assign_flat(self.pieces.to_theta(state.z, state.metric))
        return {}


def make_proposal_chunk(loop):
    """The compiled chunk of the proposal kernel of `loop` (tati/engine/loop.py Loop, passed whole)."""
    model, data, kernel, step, burn_in_steps = loop.model, loop.data, loop.kernel, loop.step, loop.burn_in_steps
    walkers, d = model.num_walkers, model.num_parameters
    dtype = model.dtype
    beta = tf.constant(kernel.inverse_temperature, tf.float64)
    features, labels = data.all() if model.uses_data else (None, None)
    metric_start = kernel.metric_start
    metric_ends = tf.constant(kernel.metric_ends or [-1], tf.int64)
    adapting_metric = bool(kernel.metric_ends)
    adapting_width = kernel.adapt_step_width
    target_acceptance = tf.constant(kernel.target_acceptance_rate, tf.float64)

    dense = kernel.metric == "dense"
    # The row's fields, in the order of the row's vector: the loss, parameters and running
    # averages, the kernel's columns, and the accuracy (the model's, from theta).
    fields = row_block.row_fields(walkers, d, kernel.info.run_info, loop.has_accuracy)
    row_fields = [name for name in fields if name != "accuracy"]

    # The metric: (s,) for the diagonal one, theta = s z; (c, L) for the dense one, theta = c + L z.
    def metric_now():
        if dense:
            return tf.convert_to_tensor(kernel.centre), tf.convert_to_tensor(kernel.cholesky)
        return (tf.convert_to_tensor(kernel.scale),)

    def to_theta(z, metric):
        if dense:
            return tf.cast(metric[0], dtype) + tf.linalg.matvec(tf.cast(metric[1], dtype), z)
        return z * tf.cast(metric[0], dtype)

    def to_z(theta, metric):
        if dense:
            centred = tf.transpose(theta - tf.cast(metric[0], dtype))
            return tf.transpose(tf.linalg.triangular_solve(tf.cast(metric[1], dtype), centred, lower=True))
        return theta / tf.cast(metric[0], dtype)

    def theta_gradient(gradient, metric):
        """grad_theta log p from grad_z log p = L^T grad_theta log p (diagonal: s grad_theta)."""
        if dense:
            solved = tf.linalg.triangular_solve(tf.cast(metric[1], dtype), tf.transpose(gradient), lower=True,
                                                adjoint=True)
            return tf.transpose(solved)
        return gradient / tf.cast(metric[0], dtype)

    def z_gradient(gradient, metric):
        if dense:
            return tf.linalg.matvec(tf.cast(metric[1], dtype), gradient, transpose_a=True)
        return gradient * tf.cast(metric[0], dtype)

    def log_prob_at(metric):
        metric = tuple(tf.cast(part, dtype) for part in metric)  # once per transition, not per gradient
        minus_beta = tf.constant(-kernel.inverse_temperature, dtype)

        def target(z):
            return minus_beta * model.loss(features, labels, theta=to_theta(z, metric))
        return target

    def evaluate(z, metric):
        """log p(z) and its gradient (zeros for kernels that take none)."""
        target = log_prob_at(metric)
        if not kernel.uses_gradient:
            return target(z), tf.zeros_like(z)
        return value_and_gradient(target, z)

    def start():
        """The chain's state from the model's parameters, where the kernel is fresh."""
        def from_model():
            metric = metric_now()
            z = to_z(model.flat_parameters(), metric)
            log_prob, gradient = evaluate(z, metric)
            return z, log_prob, gradient
        z, log_prob, gradient = tf.cond(kernel.fresh, from_model,
                                        lambda: (tf.identity(kernel.position), tf.identity(kernel.log_prob),
                                                 tf.identity(kernel.gradient)))
        kernel.fresh.assign(False)
        return z, log_prob, gradient

    def probe(z, log_prob, gradient, width, seed, target):
        """The mean over the walkers of one step's acceptance min(1, exp(log p' - log p)) at
        `width`: a leapfrog step with fresh momenta (NUTS) or a random-walk proposal (RWMH)."""
        noise = tf.random.stateless_normal(tf.shape(z), seed=seed, dtype=dtype)
        width = tf.cast(width, dtype)
        if kernel.uses_gradient:
            half = noise + 0.5 * width * gradient
            moved = z + width * half
            moved_log_prob, moved_gradient = value_and_gradient(target, moved)
            momentum = half + 0.5 * width * moved_gradient
            ratio = (moved_log_prob - 0.5 * tf.reduce_sum(tf.square(momentum), axis=1)
                     - log_prob + 0.5 * tf.reduce_sum(tf.square(noise), axis=1))
        else:
            ratio = target(z + width * noise) - log_prob
        ratio = tf.cast(ratio, tf.float64)
        return tf.reduce_mean(tf.where(tf.math.is_finite(ratio), tf.exp(tf.minimum(ratio, 0.0)), 0.0))

    def search_width(z, log_prob, gradient, metric):
        """The initial width's search (Hoffman & Gelman 2014, Algorithm 4; adaptation/width_search.py)
        from the chain's state before the first transition of burn-in: probes from kernel.step_width,
        doubled or halved until the walkers' mean one-step acceptance crosses 0.5 (pooled: one
        width for all walkers, as dual averaging's). Probe k draws its numbers from the key
        (seed, -1 - k), for all walkers at once: the search pools them anyway (a distributed
        run does its adapting burn-in on one device, tati/engine/distribute.py). Returns (width, probes)."""
        target = log_prob_at(metric)

        def one_probe(state):
            seed = tf.cast(tf.stack([tf.constant(kernel.seed % 2 ** 31, tf.int64),
                                     -1 - tf.cast(state.probes, tf.int64)]), tf.int32)
            acceptance = probe(z, log_prob, gradient, width_search.width(state), seed, target)
            return (width_search.update(state, acceptance),)

        state, = tf.while_loop(width_search.searching, one_probe, (width_search.init(kernel.step_width),))
        return width_search.width(state), state.probes

    def bookkeeping(state, results, record):
        """A transition's bookkeeping on the chain's `state` (see `chunk`) after the transition:
        the adaptation, the counters and the running averages. Returns the state (z and
        grad log p(z) in new coordinates where a metric window ends), theta and the row's values
        as one float64 vector (None unless `record`)."""
        info = kernel.step_info(results)
        state = dict(state, step=state["step"] + 1)
        step, z, gradient, metric, width = state["step"], state["z"], state["gradient"], state["metric"], state["width"]
        in_burn_in = step <= burn_in_steps
        ends_burn_in = tf.equal(step, burn_in_steps)
        theta = to_theta(z, metric)

        def adapt(z, gradient, metric, width, dual_averaging, welford):
            """Burn-in's step of the width's dual averaging and of the metric's windows: returns them
            updated, z and grad log p(z) in new coordinates where a metric window ends."""
            if adapting_width:
                averaged = averaging.update(averaging.unpack(dual_averaging), tf.reduce_mean(info["acceptance"]),
                                            target_acceptance)
                dual_averaging, width = averaging.pack(averaged), averaging.width(averaged, ends_burn_in)
            if not adapting_metric:
                return z, gradient, metric, width, dual_averaging, welford
            collecting = windows.collecting(step, metric_start, metric_ends)
            if dense:
                draws = moments.pack_dense(moments.update_dense(moments.unpack_dense(welford, d), theta))
            else:
                draws = moments.pack(moments.update(moments.unpack(welford), theta))
            draws = tf.where(collecting, draws, welford)
            window_end = windows.window_end(step, metric_ends)
            if dense:
                new_metric = tf.cond(window_end,  # a Cholesky factorisation only where a window ends
                                     lambda: moments.dense_factor(moments.unpack_dense(draws, d), metric[1]),
                                     lambda: metric)
                # theta stays; z and grad log p(z) change with the coordinates (only where a window ends)
                z, gradient = (tf.where(window_end, to_z(theta, new_metric), z),
                               tf.where(window_end, z_gradient(theta_gradient(gradient, metric), new_metric),
                                        gradient))
            else:
                scale = moments.variance_scale(moments.unpack(draws), metric[0])
                new_metric = (tf.where(window_end, scale, metric[0]),)
                ratio = tf.cast(metric[0] / new_metric[0], dtype)
                z, gradient = z * ratio, gradient / ratio
            welford = tf.where(window_end, tf.zeros_like(draws), draws)
            if adapting_width:  # dual averaging starts again from the current width
                dual_averaging = tf.where(window_end, averaging.pack(averaging.init(width)), dual_averaging)
            return z, gradient, tuple(new_metric), width, dual_averaging, welford

        if adapting_width or adapting_metric:
            # After burn-in none of it runs: in graph mode every operation of a step costs.
            names = ("z", "gradient", "metric", "width", "dual_averaging", "welford")
            adapted = tf.cond(in_burn_in, lambda: adapt(*(state[name] for name in names)),
                              lambda: tuple(state[name] for name in names))
            state.update(zip(names, adapted))
            z, gradient, metric = state["z"], state["gradient"], state["metric"]
        counters = dict(zip(COUNTERS, tf.unstack(state["counters"])))
        counters["acceptance"] += info["acceptance"]
        counters["transitions"] += 1.0
        counters["divergences"] += info["divergent"]
        counters["gradient_evaluations"] += info["gradient_evaluations"]
        # The rates and divergences of burn-in are not those of the chain that is kept.
        kept = 1.0 - tf.cast(ends_burn_in, tf.float64)
        state["counters"] = tf.stack([counters["acceptance"] * kept, counters["transitions"] * kept,
                                      counters["divergences"] * kept, counters["gradient_evaluations"]])
        loss = -tf.cast(state["log_prob"], tf.float64) / beta
        if kernel.uses_gradient:
            # grad_theta U = -grad_theta log p / beta (= -grad_z log p / (beta s), diagonal)
            if dense:
                force = -tf.cast(theta_gradient(gradient, metric), tf.float64) / beta
            else:
                force = -tf.cast(gradient, tf.float64) / (beta * metric[0])
            virial = 0.5 * tf.reduce_sum(tf.cast(theta, tf.float64) * force, axis=1)
        else:
            virial = tf.zeros_like(loss)
        kinetic = info["kinetic"] / beta if "kinetic" in info else tf.zeros_like(loss)
        state["averages"] = running.folded(state["averages"], loss, virial, kinetic, beta, tf.logical_not(in_burn_in))
        if not record:
            return state, theta, None
        rejection = 1.0 - tf.math.divide_no_nan(counters["acceptance"], counters["transitions"])
        row = {"loss": loss, "parameters": tf.cast(theta, tf.float64), "virial": virial,
               "averages": tf.stack(running.values_of(state["averages"])), "kinetic_energy": kinetic,
               "total_energy": loss + kinetic, "step_width": tf.fill([walkers], width),
               "average_rejection_rate": rejection, "divergences": counters["divergences"],
               "gradient_evaluations": counters["gradient_evaluations"]}
        for name in ("tree_depth", "leapfrog_steps"):
            if name in info:
                row[name] = info[name]
        # One vector, written to one TensorArray: in graph mode each write is an operation.
        values = tf.concat([tf.reshape(tf.cast(row[name], tf.float64), [-1]) for name in row_fields], 0)
        return state, theta, values

    def search_first_width(z, log_prob, gradient):
        """Before the first transition of burn-in (step 0 starts a chunk): the initial width's
        search, whose probes count as gradient evaluations of the first transition. Once per
        chunk, not per transition: in graph mode every operation of a step costs."""
        def search():
            found, probes = search_width(z, log_prob, gradient, metric_now())
            kernel.step_width.assign(found)
            kernel.dual_averaging.assign(averaging.pack(averaging.init(found)))
            if kernel.uses_gradient:
                evaluations = tf.one_hot(COUNTERS.index("gradient_evaluations"), len(COUNTERS), dtype=tf.float64)
                kernel.counters.assign(kernel.counters + evaluations[:, None] * probes)
            return tf.constant(True)
        return tf.cond(tf.equal(step, 0), search, lambda: tf.constant(False))

    pieces = Pieces(start, search_first_width, metric_now, to_theta, log_prob_at, bookkeeping)
    rows = row_block.Rows(fields, walkers, d, loop.jit_compile, packed=True)
    return compile_driver(ProposalSteps(loop, pieces, rows, features, labels))
