"""Proposal kernels from TensorFlow Probability: NUTS and random-walk Metropolis (RWMH).

Both sample exp(-beta U(theta)) on the flat parameters [W, d] of any model (the built-in
network, a Keras model, a potential), the W walkers as independent chains of one batch. Unlike
the Langevin samplers (Keras optimizers given one gradient per step), a proposal kernel
evaluates the model itself, as often as it needs, through `model.loss(features, labels,
theta=...)` on the whole dataset (no mini-batches: the target must not change within a step).

    NUTS (Hoffman & Gelman 2014, tfp.mcmc.NoUTurnSampler, multinomial sampling):
        p ~ N(0, I); leapfrog steps of width eps doubled forwards or backwards at random until
        the trajectory makes a U-turn or reaches 2^max_tree_depth - 1 steps; the next state is
        drawn from the trajectory with weights exp(-H).
    RWMH (tfp.mcmc.RandomWalkMetropolis):
        theta' = theta + eps xi, xi ~ N(0, I); accepted with probability
        min(1, exp(-beta (U(theta') - U(theta)))).

Both move z = theta / s, s the metric's scale per coordinate (1 unless adapted), which gives
NUTS's momenta the mass matrix diag(1 / s^2) and RWMH the proposal covariance eps^2 diag(s^2);
with metric="dense", z = L^-1 (theta - c), c the mean and L L^T the (regularised) covariance
of the metric window's draws: the mass matrix (L L^T)^-1, RWMH's covariance eps^2 L L^T.
One step is one transition; NUTS's cost varies per step (`leapfrog_steps`, and the cumulative
`gradient_evaluations`). With burn_in_steps > 0 the step width eps and the scale s adapt
during burn-in (tati/adaptation/), one eps and one s for all walkers; eps starts from a
search (doubling or halving `step_width` until the walkers' mean one-step acceptance crosses
0.5) before the first transition, whose probes NUTS counts in `gradient_evaluations`.

State (checkpointed): z, log p(z) and its gradient (NUTS) per walker, eps, s, the adaptation
state and the counters. The random numbers of step n are drawn from the key (seed, n): a
resumed run continues bitwise. TFP draws the numbers of all walkers at once; tati makes it draw
each walker's from counters of its own (random/walker_draws.py), so that walker w's numbers
depend on (seed, step, w) only, and computes the kernel's step of several walkers on them
padded to whole SIMD registers of the CPU (`transition`): walker w's step is then the same
bits whatever the number of walkers and wherever they run (tati/engine/distribute.py), as the
Langevin samplers' are.
"""

import math

import numpy as np
import tensorflow as tf

from tati.adaptation import dual_averaging as averaging
from tati.adaptation import windows
from tati.errors import InputError
from tati.engine.registry import target_acceptance
from tati.config.options import check, default
from tati.recording.columns import NUTS_INFO, RWMH_INFO
from tati.random.seed import seed_variable
from tati.random.streams import values_per_register
from tati.random.walker_draws import keyed_per_walker

# The per-walker counters: sum of acceptance statistics and of transitions since the end of
# burn-in (during burn-in: since the start), divergent transitions in the same span, and the
# cumulative gradient evaluations.
COUNTERS = ("acceptance", "transitions", "divergences", "gradient_evaluations")
# metric="dense" keeps a d x d Cholesky factor and costs d^2 per gradient: beyond this many
# parameters the diagonal metric is the one that scales.
MAX_DENSE_PARAMETERS = 1000
# The padding walkers' target is a Gaussian of width step_width / PADDING_NARROWNESS in z: their
# first leapfrog step raises the energy by ~ PADDING_NARROWNESS^4 / 8 |p|^2, beyond NUTS's
# divergence threshold (1000), so their trees stop at once and never lengthen a step's loop.
PADDING_NARROWNESS = 1000.0


def check_dense_size(d):
    """InputError where metric="dense" would not scale: more than MAX_DENSE_PARAMETERS
    parameters (NUTS, RWMH and HMC refuse them alike)."""
    if d > MAX_DENSE_PARAMETERS:
        raise InputError(f"metric=dense is for at most {MAX_DENSE_PARAMETERS} parameters, this model has {d}: "
                         "use metric=diagonal")


class ProposalKernel:
    """A TFP kernel run by the Simulation's proposal loop (tati/samplers/proposal_kernel.py)."""

    has_momentum = False
    uses_gradient = True
    parameters = ("inverse_temperature", "adapt_step_width", "target_acceptance_rate", "adapt_mass", "metric")
    name = None  # the short name
    info = None  # its columns (tati/engine/kernels.py): samplers/proposal_kernel.py delivers them
    # This kernel's walkers as part of a larger run (a replica's share, tati/engine/distribute.py): its
    # first walker's index there, which keys its walkers' random numbers, and the run's walker
    # count (None: its own).
    first_walker = 0
    total_walkers = None

    def __init__(self, model=None, step_width=default("step_width"), seed=default("seed"), burn_in_steps=0,
                 inverse_temperature=default("inverse_temperature"),
                 adapt_step_width=default("adapt_step_width"),
                 target_acceptance_rate=default("target_acceptance_rate"),
                 adapt_mass=default("adapt_mass"), metric=default("metric"), first_walker=0, total_walkers=None):
        if not hasattr(model, "flat_parameters"):  # e.g. model.compile(optimizer=NUTS(...))
            raise InputError(f"{type(self).__name__} is not a Keras optimizer for model.fit: it evaluates the "
                             f"model itself; use tati.Simulation(model=..., sampler=\"{type(self).__name__}\")")
        self.model = model
        self.first_walker, self.total_walkers = first_walker, total_walkers
        self.initial_step_width = float(step_width)
        self.seed = int(seed)
        self.seed_key = seed_variable(self.seed % 2 ** 31)  # TensorFlow Probability's seeds are int32 pairs
        self.burn_in_steps = int(burn_in_steps)
        self.inverse_temperature = float(inverse_temperature)
        self.target_acceptance_rate = target_acceptance(self.name, target_acceptance_rate)
        self.adapt_step_width = bool(adapt_step_width) and self.burn_in_steps > 0
        self.metric_start, self.metric_ends = (windows.metric_windows(self.burn_in_steps)
                                               if adapt_mass else (0, []))
        walkers, d, dtype = model.num_walkers, model.num_parameters, model.dtype
        self.metric = check("metric", metric)
        if self.metric == "dense":
            check_dense_size(d)
        self.dtype = dtype
        f64 = tf.float64
        # Created in this order and saved in it (checkpoint.py keeps the list's order).
        self.position = tf.Variable(tf.zeros([walkers, d], dtype), trainable=False, name="position")
        self.log_prob = tf.Variable(tf.zeros([walkers], dtype), trainable=False, name="log_prob")
        self.gradient = tf.Variable(tf.zeros([walkers, d], dtype), trainable=False, name="log_prob_gradient")
        self.scale = tf.Variable(tf.ones([d], f64), trainable=False, name="metric_scale")
        self.step_width = tf.Variable(tf.constant(self.initial_step_width, f64), trainable=False, name="step_width")
        self.dual_averaging = tf.Variable(averaging.pack(averaging.init(self.initial_step_width)),
                                          trainable=False, name="dual_averaging")
        draws = 1 + d + d * d if self.metric == "dense" else 1 + 2 * d
        self.welford = tf.Variable(tf.zeros([draws], f64), trainable=False, name="metric_draws")
        self.counters = tf.Variable(tf.zeros([len(COUNTERS), walkers], f64), trainable=False, name="counters")
        # 1 until the chain's state has been taken from the model's parameters (first step, or
        # after the user set them): the next chunk starts by evaluating there.
        self.fresh = tf.Variable(tf.constant(True), trainable=False, name="fresh")
        # The dense metric: theta = centre + L z (`scale` stays 1).
        self.centre = self.cholesky = None
        if self.metric == "dense":
            self.centre = tf.Variable(tf.zeros([d], f64), trainable=False, name="metric_centre")
            self.cholesky = tf.Variable(tf.eye(d, dtype=f64), trainable=False, name="metric_cholesky")

    @property
    def variables(self):
        dense = [self.centre, self.cholesky] if self.metric == "dense" else []
        return [self.position, self.log_prob, self.gradient, self.scale, self.step_width,
                self.dual_averaging, self.welford, self.counters, self.fresh] + dense

    def restart(self):
        """The next step starts from the model's current parameters (the user set them)."""
        self.fresh.assign(True)

    def transition(self, target, z, log_prob, gradient, width, seed):
        """One step of the TFP kernel from z [W, d] with log p(z) [W] and its gradient: returns
        (z, log p, gradient, results), results a dict of [W] tensors as TFP gives them, which
        `step_info` turns into the step's columns (the loop does so in its bookkeeping).

        Each walker's numbers are keyed by its index in the run (`keyed_per_walker`). TFP's
        arithmetic on [W] vectors (exp, log1p of energies and weights) computes a vector's last
        elements short of a SIMD register by a scalar path that may differ in the last bit, so
        the step runs on the walkers padded to whole registers of this CPU (4 float64 or 8
        float32 with AVX, twice that with AVX-512): the padding walkers sit at z = 0 in a
        narrow Gaussian of their own (no evaluation of the model) and are dropped afterwards.
        TFP's arithmetic runs on every padded walker, so padding no wider than the register
        keeps its cost down. Not in a run of one walker, which has no other layout."""
        walkers = int(z.shape[0])
        extra = -walkers % values_per_register(z.dtype) if (self.total_walkers or walkers) > 1 else 0

        def padded(value):
            return tf.pad(value, [[0, extra]] + [[0, 0]] * (value.shape.rank - 1))

        def padded_target(z):
            padding = tf.square(z[walkers:] * (PADDING_NARROWNESS / width))
            return tf.concat([target(z[:walkers]), -0.5 * tf.reduce_sum(padding, axis=1)], 0)

        with keyed_per_walker(self.first_walker, walkers + extra):
            if not extra:
                return self._kernel_step(target, z, log_prob, gradient, width, seed)
            z, log_prob, gradient, results = self._kernel_step(padded_target, padded(z), padded(log_prob),
                                                               padded(gradient), width, seed)
        return (z[:walkers], log_prob[:walkers], gradient[:walkers],
                {name: value[:walkers] for name, value in results.items()})

    def _kernel_step(self, target, z, log_prob, gradient, width, seed):
        """`transition` on the padded walkers: the TFP kernel's one_step and its results."""
        raise NotImplementedError

    def step_info(self, results):
        """A transition's columns from its `results`: a dict of [W] float64 with at least
        `acceptance` (the step's acceptance statistic), `divergent` and `gradient_evaluations`."""
        raise NotImplementedError


class NUTS(ProposalKernel):
    """The No-U-Turn sampler, tfp.mcmc.NoUTurnSampler."""

    name = "NUTS"
    info = NUTS_INFO
    parameters = ProposalKernel.parameters + ("max_tree_depth",)

    def __init__(self, model=None, max_tree_depth=default("max_tree_depth"), **options):
        super().__init__(model, **options)
        self.max_tree_depth = int(max_tree_depth)

    def _kernel_step(self, target, z, log_prob, gradient, width, seed):
        import tensorflow_probability as tfp
        nuts = tfp.mcmc.NoUTurnSampler(target, step_size=width, max_tree_depth=self.max_tree_depth)
        walkers = log_prob.shape  # static: zeros of a static shape are constants, not operations
        results = tfp.mcmc.nuts.NUTSKernelResults(
            target_log_prob=log_prob, grads_target_log_prob=[gradient], step_size=width,
            log_accept_ratio=tf.zeros(walkers, log_prob.dtype), leapfrogs_taken=tf.zeros(walkers, tf.int32),
            is_accepted=tf.zeros(walkers, tf.bool), reach_max_depth=tf.zeros(walkers, tf.bool),
            has_divergence=tf.zeros(walkers, tf.bool), energy=tf.zeros(walkers, log_prob.dtype),
            seed=tf.zeros([2], tf.int32))
        z, results = nuts.one_step(z, results, seed=seed)
        return z, results.target_log_prob, results.grads_target_log_prob[0], {
            "log_accept_ratio": results.log_accept_ratio, "has_divergence": results.has_divergence,
            "leapfrogs_taken": results.leapfrogs_taken, "target_log_prob": results.target_log_prob,
            "energy": results.energy}

    def step_info(self, results):
        f64 = lambda value: tf.cast(value, tf.float64)  # noqa: E731
        leapfrogs = f64(results["leapfrogs_taken"])
        return {"acceptance": tf.exp(tf.minimum(f64(results["log_accept_ratio"]), 0.0)),
                "divergent": f64(results["has_divergence"]),
                "gradient_evaluations": leapfrogs,
                "leapfrog_steps": leapfrogs,
                # Trees double: a tree of depth k has up to 2^k - 1 leapfrog steps.
                "tree_depth": tf.math.ceil(tf.math.log(leapfrogs + 1.0) / math.log(2.0) - 1e-9),
                # log p(z, p) = log p(z) - |p|^2 / 2 at the drawn state, in units of 1 / beta.
                "kinetic": f64(results["target_log_prob"]) - f64(results["energy"])}


class RWMH(ProposalKernel):
    """Random-walk Metropolis, tfp.mcmc.RandomWalkMetropolis with Gaussian proposals."""

    name = "RWMH"
    info = RWMH_INFO
    uses_gradient = False

    def _kernel_step(self, target, z, log_prob, gradient, width, seed):
        import tensorflow_probability as tfp
        from tensorflow_probability.python.mcmc.metropolis_hastings import MetropolisHastingsKernelResults
        from tensorflow_probability.python.mcmc.random_walk_metropolis import UncalibratedRandomWalkResults
        kernel = tfp.mcmc.RandomWalkMetropolis(target, new_state_fn=tfp.mcmc.random_walk_normal_fn(scale=width))
        zero_seed = tf.zeros([2], tf.int32)
        # The structure bootstrap_results gives (the accepted results carry no seed).
        inner = UncalibratedRandomWalkResults(log_acceptance_correction=tf.zeros_like(log_prob),
                                              target_log_prob=log_prob, seed=[])
        results = MetropolisHastingsKernelResults(
            accepted_results=inner, is_accepted=tf.zeros(tf.shape(log_prob), tf.bool),
            log_accept_ratio=tf.zeros_like(log_prob), proposed_state=z,
            proposed_results=inner._replace(seed=zero_seed), extra=[], seed=zero_seed)
        z, results = kernel.one_step(z, results, seed=seed)
        return z, results.accepted_results.target_log_prob, gradient, {"log_accept_ratio": results.log_accept_ratio}

    def step_info(self, results):
        ratio = tf.cast(results["log_accept_ratio"], tf.float64)
        ratio = tf.where(tf.math.is_finite(ratio), ratio, -np.inf)
        zeros = tf.zeros(ratio.shape, tf.float64)
        return {"acceptance": tf.exp(tf.minimum(ratio, 0.0)), "divergent": zeros, "gradient_evaluations": zeros}


KERNELS = {"NUTS": NUTS, "RWMH": RWMH}
