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
`Metric` is the change of coordinates (diagonal or dense) and `BurnIn` the adaptation;
`ProposalSteps` calls them, and searches the initial width, around TFP's transition.
"""

from typing import NamedTuple

import tensorflow as tf

from tati.adaptation import dual_averaging as averaging
from tati.adaptation import metric as moments
from tati.adaptation import width_search, windows
from tati.engine import rows as row_block
from tati.engine.driver import Kernel
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


class Metric:
    """The metric and the kernel's coordinates z: theta = s z for the diagonal metric, carried as
    (s,), theta = c + L z for the dense one, carried as (c, L) (L lower triangular). The kernel
    steps in z, where the metric's adaptation makes the target rounder."""

    def __init__(self, kernel, dtype):
        self.kernel, self.dtype, self.dense = kernel, dtype, kernel.metric == "dense"

    def now(self):
        """The metric as the kernel's variables hold it."""
        kernel = self.kernel
        if self.dense:
            return tf.convert_to_tensor(kernel.centre), tf.convert_to_tensor(kernel.cholesky)
        return (tf.convert_to_tensor(kernel.scale),)

    def assign(self, metric):
        """The metric to the kernel's variables."""
        kernel = self.kernel
        if self.dense:
            kernel.centre.assign(metric[0])
            kernel.cholesky.assign(metric[1])
        else:
            kernel.scale.assign(metric[0])

    def to_theta(self, z, metric):
        if self.dense:
            return tf.cast(metric[0], self.dtype) + tf.linalg.matvec(tf.cast(metric[1], self.dtype), z)
        return z * tf.cast(metric[0], self.dtype)

    def to_z(self, theta, metric):
        if self.dense:
            centred = tf.transpose(theta - tf.cast(metric[0], self.dtype))
            return tf.transpose(tf.linalg.triangular_solve(tf.cast(metric[1], self.dtype), centred, lower=True))
        return theta / tf.cast(metric[0], self.dtype)

    def theta_gradient(self, gradient, metric):
        """grad_theta log p from grad_z log p = L^T grad_theta log p (diagonal: s grad_theta)."""
        if self.dense:
            solved = tf.linalg.triangular_solve(tf.cast(metric[1], self.dtype), tf.transpose(gradient), lower=True,
                                                adjoint=True)
            return tf.transpose(solved)
        return gradient / tf.cast(metric[0], self.dtype)

    def z_gradient(self, gradient, metric):
        if self.dense:
            return tf.linalg.matvec(tf.cast(metric[1], self.dtype), gradient, transpose_a=True)
        return gradient * tf.cast(metric[0], self.dtype)

    def collected(self, welford, theta, d):
        """The Welford state of the metric's window with theta added (tati/adaptation/metric.py)."""
        if self.dense:
            return moments.pack_dense(moments.update_dense(moments.unpack_dense(welford, d), theta))
        return moments.pack(moments.update(moments.unpack(welford), theta))

    def at_window_end(self, window_end, draws, d, state, theta):
        """Where a window ends, the metric from its draws, and z and grad log p(z) in the new
        coordinates (theta stays); elsewhere the metric, z and the gradient as they are.
        Returns (z, gradient, metric)."""
        z, gradient, metric = state["z"], state["gradient"], state["metric"]
        if self.dense:
            new_metric = tf.cond(window_end,  # a Cholesky factorisation only where a window ends
                                 lambda: moments.dense_factor(moments.unpack_dense(draws, d), metric[1]),
                                 lambda: metric)
            return (tf.where(window_end, self.to_z(theta, new_metric), z),
                    tf.where(window_end, self.z_gradient(self.theta_gradient(gradient, metric), new_metric), gradient),
                    new_metric)
        scale = moments.variance_scale(moments.unpack(draws), metric[0])
        new_metric = (tf.where(window_end, scale, metric[0]),)
        ratio = tf.cast(metric[0] / new_metric[0], self.dtype)
        return z * ratio, gradient / ratio, new_metric


class BurnIn:
    """Burn-in's adaptation (tati/adaptation/): the width's dual averaging towards the target
    acceptance and the metric's windows (Stan's), on the chain's state as a dict of ChainState's
    fields. After burn-in none of it runs."""

    ADAPTED = ("z", "gradient", "metric", "width", "dual_averaging", "welford")

    def __init__(self, kernel, metric, d):
        self.metric, self.d = metric, d
        self.metric_start = kernel.metric_start
        self.metric_ends = tf.constant(kernel.metric_ends or [-1], tf.int64)
        self.adapting_metric = bool(kernel.metric_ends)
        self.adapting_width = kernel.adapt_step_width
        self.target_acceptance = tf.constant(kernel.target_acceptance_rate, tf.float64)

    @property
    def adapting(self):
        return self.adapting_width or self.adapting_metric

    def __call__(self, state, info, theta, in_burn_in, ends_burn_in):
        """The state after burn-in's adaptation of this step, in burn-in (a tf.cond: in graph
        mode every operation of a step costs, so none runs after burn-in)."""
        def adapt():
            adapted = self.adapt(dict(state), info, theta, ends_burn_in)
            return tuple(adapted[name] for name in self.ADAPTED)

        adapted = tf.cond(in_burn_in, adapt, lambda: tuple(state[name] for name in self.ADAPTED))
        return dict(state, **dict(zip(self.ADAPTED, adapted)))

    def adapt(self, state, info, theta, ends_burn_in):
        """Burn-in's step of the width's dual averaging and of the metric's windows: the state
        with them updated, z and grad log p(z) in new coordinates where a metric window ends."""
        if self.adapting_width:
            averaged = averaging.update(averaging.unpack(state["dual_averaging"]), tf.reduce_mean(info["acceptance"]),
                                        self.target_acceptance)
            state.update(dual_averaging=averaging.pack(averaged), width=averaging.width(averaged, ends_burn_in))
        if not self.adapting_metric:
            state["metric"] = tuple(state["metric"])
            return state
        step, welford = state["step"], state["welford"]
        collecting = windows.collecting(step, self.metric_start, self.metric_ends)
        draws = tf.where(collecting, self.metric.collected(welford, theta, self.d), welford)
        window_end = windows.window_end(step, self.metric_ends)
        z, gradient, metric = self.metric.at_window_end(window_end, draws, self.d, state, theta)
        state.update(z=z, gradient=gradient, metric=tuple(metric),
                     welford=tf.where(window_end, tf.zeros_like(draws), draws))
        if self.adapting_width:  # dual averaging starts again from the current width
            state["dual_averaging"] = tf.where(window_end, averaging.pack(averaging.init(state["width"])),
                                               state["dual_averaging"])
        return state


class ProposalSteps(Kernel):
    """One transition per driver step of `loop` (tati/engine/loop.py Loop, passed whole), with its
    bookkeeping; the row's fields packed in one vector (Rows(packed=True))."""

    def __init__(self, loop):
        model, kernel = loop.model, loop.kernel
        self.loop, self.kernel, self.model = loop, kernel, model
        self.beta = tf.constant(kernel.inverse_temperature, tf.float64)
        self.features, self.labels = loop.data.all() if model.uses_data else (None, None)
        self.metric = Metric(kernel, model.dtype)
        self.burn_in = BurnIn(kernel, self.metric, model.num_parameters)
        # The row's fields, in the order of the row's vector: the loss, parameters and running
        # averages, the kernel's columns, and the accuracy (the model's, from theta).
        fields = row_block.row_fields(model.num_walkers, model.num_parameters, kernel.info.run_info,
                                      loop.has_accuracy)
        self.row_fields = [name for name in fields if name != "accuracy"]
        self.rows = row_block.Rows(fields, model.num_walkers, model.num_parameters, loop.jit_compile, packed=True)

    # -- the target -----------------------------------------------------------------------------
    def log_prob_at(self, metric):
        """log p(z) = -beta U(theta(z)) on the whole dataset, in the coordinates of `metric`."""
        metric = tuple(tf.cast(part, self.model.dtype) for part in metric)  # once per transition, not per gradient
        minus_beta = tf.constant(-self.kernel.inverse_temperature, self.model.dtype)

        def target(z):
            return minus_beta * self.model.loss(self.features, self.labels, theta=self.metric.to_theta(z, metric))
        return target

    def evaluate(self, z, metric):
        """log p(z) and its gradient (zeros for kernels that take none)."""
        target = self.log_prob_at(metric)
        if not self.kernel.uses_gradient:
            return target(z), tf.zeros_like(z)
        return value_and_gradient(target, z)

    def chain_start(self):
        """The chain's state (z, log p(z), its gradient): from the model's parameters where the
        kernel is fresh, else as the kernel's variables hold it."""
        kernel = self.kernel

        def from_model():
            metric = self.metric.now()
            z = self.metric.to_z(self.model.flat_parameters(), metric)
            log_prob, gradient = self.evaluate(z, metric)
            return z, log_prob, gradient
        z, log_prob, gradient = tf.cond(kernel.fresh, from_model,
                                        lambda: (tf.identity(kernel.position), tf.identity(kernel.log_prob),
                                                 tf.identity(kernel.gradient)))
        kernel.fresh.assign(False)
        return z, log_prob, gradient

    # -- the initial width's search ---------------------------------------------------------------
    def probe(self, z, log_prob, gradient, width, seed, target):
        """The mean over the walkers of one step's acceptance min(1, exp(log p' - log p)) at
        `width`: a leapfrog step with fresh momenta (NUTS) or a random-walk proposal (RWMH)."""
        dtype = self.model.dtype
        noise = tf.random.stateless_normal(tf.shape(z), seed=seed, dtype=dtype)
        width = tf.cast(width, dtype)
        if self.kernel.uses_gradient:
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

    def search_width(self, z, log_prob, gradient, metric):
        """The initial width's search (Hoffman & Gelman 2014, Algorithm 4; adaptation/width_search.py)
        from the chain's state before the first transition of burn-in: probes from kernel.step_width,
        doubled or halved until the walkers' mean one-step acceptance crosses 0.5 (pooled: one
        width for all walkers, as dual averaging's). Probe k draws its numbers from the key
        (seed, -1 - k), for all walkers at once: the search pools them anyway (a distributed
        run does its adapting burn-in on one device, tati/engine/distribute.py). Returns (width, probes)."""
        kernel, target = self.kernel, self.log_prob_at(metric)

        def one_probe(state):
            seed = tf.cast(tf.stack([tf.convert_to_tensor(kernel.seed_key),
                                     -1 - tf.cast(state.probes, tf.int64)]), tf.int32)
            acceptance = self.probe(z, log_prob, gradient, width_search.width(state), seed, target)
            return (width_search.update(state, acceptance),)

        state, = tf.while_loop(width_search.searching, one_probe, (width_search.init(kernel.step_width),))
        return width_search.width(state), state.probes

    def search_first_width(self, z, log_prob, gradient):
        """Before the first transition of burn-in (step 0 starts a chunk): the initial width's
        search, whose probes count as gradient evaluations of the first transition. Once per
        chunk, not per transition: in graph mode every operation of a step costs."""
        kernel = self.kernel

        def search():
            found, probes = self.search_width(z, log_prob, gradient, self.metric.now())
            kernel.step_width.assign(found)
            kernel.dual_averaging.assign(averaging.pack(averaging.init(found)))
            if kernel.uses_gradient:
                evaluations = tf.one_hot(COUNTERS.index("gradient_evaluations"), len(COUNTERS), dtype=tf.float64)
                kernel.counters.assign(kernel.counters + evaluations[:, None] * probes)
            return tf.constant(True)
        return tf.cond(tf.equal(self.loop.step, 0), search, lambda: tf.constant(False))

    # -- the driver's hooks -----------------------------------------------------------------------
    def start(self, n):
        loop, kernel = self.loop, self.kernel
        z, log_prob, gradient = self.chain_start()
        if kernel.adapt_step_width:
            self.search_first_width(z, log_prob, gradient)
        state = ChainState(step=tf.convert_to_tensor(loop.step), z=z, log_prob=log_prob, gradient=gradient,
                           metric=self.metric.now(), width=tf.convert_to_tensor(kernel.step_width),
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
        kernel, width = self.kernel, state.width
        seed = tf.cast(tf.stack([tf.convert_to_tensor(kernel.seed_key),
                                 tf.math.floormod(state.step, 2 ** 31)]), tf.int32)
        z, log_prob, gradient, results = kernel.transition(self.log_prob_at(state.metric), state.z,
                                                           state.log_prob, state.gradient,
                                                           tf.cast(width, self.model.dtype), seed)
        state = state._replace(z=z, log_prob=log_prob, gradient=gradient)
        state, theta, values = self.bookkeeping(state._asdict(), results, record)
        return ChainState(**state), TransitionInfo(theta, values)

    def trace(self, state, info):
        row = {"fields": info.values}
        if self.loop.has_accuracy:
            row["accuracy"] = self.model.loss_and_accuracy(self.features, self.labels, theta=info.theta)[1]
        return row, state.step

    def finish(self, state):
        loop, kernel = self.loop, self.kernel
        loop.step.assign(state.step)
        kernel.position.assign(state.z)
        kernel.log_prob.assign(state.log_prob)
        kernel.gradient.assign(state.gradient)
        self.metric.assign(state.metric)
        kernel.step_width.assign(state.width)
        kernel.dual_averaging.assign(state.dual_averaging)
        kernel.welford.assign(state.welford)
        kernel.counters.assign(state.counters)
        loop.averages.state.assign(state.averages)
        self.model.assign_flat(self.metric.to_theta(state.z, state.metric))
        return {}

    # -- a transition's bookkeeping ---------------------------------------------------------------
    def bookkeeping(self, state, results, record):
        """A transition's bookkeeping on the chain's `state` (ChainState's fields as a dict) after
        the transition: the adaptation, the counters and the running averages. Returns the state
        (z and grad log p(z) in new coordinates where a metric window ends), theta and the row's
        values as one float64 vector (None unless `record`)."""
        info = self.kernel.step_info(results)
        state = dict(state, step=state["step"] + 1)
        burn_in_steps = self.loop.burn_in_steps
        in_burn_in = state["step"] <= burn_in_steps
        ends_burn_in = tf.equal(state["step"], burn_in_steps)
        theta = self.metric.to_theta(state["z"], state["metric"])
        width = state["width"]  # the transition's: the row shows it, not the adapted one
        if self.burn_in.adapting:
            state = self.burn_in(state, info, theta, in_burn_in, ends_burn_in)
        counters = self.count(state, info, ends_burn_in)
        loss, virial, kinetic = self.energies(state, theta, info)
        state["averages"] = running.folded(state["averages"], loss, virial, kinetic, self.beta,
                                           tf.logical_not(in_burn_in))
        if not record:
            return state, theta, None
        return state, theta, self.row_values(state, theta, info, counters, (loss, virial, kinetic), width)

    def count(self, state, info, ends_burn_in):
        """The counters after this transition (those of burn-in's last step zeroed, but the
        gradient evaluations: the rates and divergences of burn-in are not those of the chain
        that is kept) to state["counters"]; returns them before that zeroing, by name."""
        counters = dict(zip(COUNTERS, tf.unstack(state["counters"])))
        counters["acceptance"] += info["acceptance"]
        counters["transitions"] += 1.0
        counters["divergences"] += info["divergent"]
        counters["gradient_evaluations"] += info["gradient_evaluations"]
        kept = 1.0 - tf.cast(ends_burn_in, tf.float64)
        state["counters"] = tf.stack([counters["acceptance"] * kept, counters["transitions"] * kept,
                                      counters["divergences"] * kept, counters["gradient_evaluations"]])
        return counters

    def energies(self, state, theta, info):
        """The walkers' loss U(theta), virial 1/2 theta . grad U (zero for kernels without a
        gradient) and the transition's kinetic energy (zero where it reports none)."""
        beta, gradient, metric = self.beta, state["gradient"], state["metric"]
        loss = -tf.cast(state["log_prob"], tf.float64) / beta
        if self.kernel.uses_gradient:
            # grad_theta U = -grad_theta log p / beta (= -grad_z log p / (beta s), diagonal)
            if self.metric.dense:
                force = -tf.cast(self.metric.theta_gradient(gradient, metric), tf.float64) / beta
            else:
                force = -tf.cast(gradient, tf.float64) / (beta * metric[0])
            virial = 0.5 * tf.reduce_sum(tf.cast(theta, tf.float64) * force, axis=1)
        else:
            virial = tf.zeros_like(loss)
        kinetic = info["kinetic"] / beta if "kinetic" in info else tf.zeros_like(loss)
        return loss, virial, kinetic

    def row_values(self, state, theta, info, counters, energies, width):
        """The row's values as one float64 vector, in the order of `row_fields`: one vector,
        written to one TensorArray (in graph mode each write is an operation)."""
        loss, virial, kinetic = energies
        rejection = 1.0 - tf.math.divide_no_nan(counters["acceptance"], counters["transitions"])
        row = {"loss": loss, "parameters": tf.cast(theta, tf.float64), "virial": virial,
               "averages": tf.stack(running.values_of(state["averages"])), "kinetic_energy": kinetic,
               "total_energy": loss + kinetic, "step_width": tf.fill([self.model.num_walkers], width),
               "average_rejection_rate": rejection, "divergences": counters["divergences"],
               "gradient_evaluations": counters["gradient_evaluations"]}
        for name in ("tree_depth", "leapfrog_steps"):
            if name in info:
                row[name] = info[name]
        return tf.concat([tf.reshape(tf.cast(row[name], tf.float64), [-1]) for name in self.row_fields], 0)
