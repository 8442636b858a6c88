"""A diagonal mass for the Langevin samplers (SGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT), adapted during burn-in.

SGLD has no momenta: its metric scales its steps, q <- q - h s^2 grad U + sqrt(2 h / beta) s G
(samplers/sgld.py), with the same adaptation below. pSGLD's metric is RMSprop's own, s = sqrt(G):
it takes the noise mass's schedule of measurements (V started from the first one's gradients) and
the width measured in it (`_set_noise_metric`, `_metric_vector`; samplers/psgld.py).

The formulation is HMC's metric (samplers/hmc.py): the momentum is kept in whitened
coordinates p' ~ N(0, I / beta), and each parameter has a scale s, the mass matrix being
M = diag(1 / s^2). The split steps of `splitting.py` become

    B (kick):  p' <- p' - h s grad U(q)
    A (drift): q  <- q + h s p'
    O:         unchanged on p' (alpha p' + sqrt((1 - alpha^2) / beta) G)

which is the unit-mass dynamics of z = q / s, or the dynamics of q with the momentum
p = M dq/dt = p' / s: then p^T M^-1 p / 2 = |p'|^2 / 2, so the kinetic energy columns (and
CCAdL's thermostat, and the momentum diagnostics) read |p'|^2 / 2 unchanged and still average
d / (2 beta). The inertia column is q . p = (q / s) . p'. The target of q is unchanged,
exp(-beta U(q)); a step width h now acts on the parameters' own scales: BAOAB is stable on a
Gaussian when h s_i / sigma_i < 2 for every parameter, so once s is the posterior's standard
deviation the width no longer has to fit the narrowest direction.

Adaptation (`adapt_mass`, during the first `adaptation_steps` steps, the Simulation's
burn_in_steps): Stan's windows of `tati.adaptation.windows` (an initial buffer of 75 steps,
windows of 25, 50, 100, ... steps, the last stretched to end 50 steps before burn-in does;
shorter burn-ins scaled to 15% / 75% / 10%). The draw of step k is the position after it,
one per walker, collected for first < k <= last window's end, as NUTS's and RWMH's draws; at
each window's end s becomes the draws' standard deviation, shrunk towards 1e-3 of the last
window's scale (`tati.adaptation.metric`), and the collection starts again. The new s moves
from the next step on; p' keeps its value (in whitened coordinates it is already a draw of
N(0, I / beta)). After the last window s is frozen. The step width is the user's throughout:
these samplers have no acceptance to adapt it to.

adapt_mass "noise" (`estimate_noise`): M_i = max(V_i B / N, mass_floor) from V_i, the variance of
the gradients of batches that cover the data (at least NOISE_BATCHES) at the walkers' positions,
at step 0, at the first epoch start after it (the start is often a mode fitted closely, whose
noise is the least the walkers meet: on standardised digits, a 64-50-10 network, the friction
measured there was 1, one epoch later 13.9; measured only at the windows, the walkers blew up
within the first one, doc/benchmarks.md), and at the first epoch start after
each window's end, then frozen. With
measure_step_width (the Simulation sets `follows_width`) each measurement also measures the step
width again in the new metric (tati/adaptation/measured_width.py graph_width: the largest
curvature of s H_b s over one epoch's batches, by power iteration, and the noise heat of s^2 V),
so that the width is never the old metric's: as the walkers leave a sharp start the mass falls
and the width grows (bostonHousing split 0: 0.0014 to 0.0050).

The draws are pooled over the walkers (one s for all walkers, as HMC, NUTS and RWMH do): a
window then holds W times as many draws, which matters for Langevin dynamics, whose draws are
correlated over many steps; walkers started apart also show a wide direction's spread before
a single walker has crossed it; and all walkers sample with the same dynamics, so their
averages (and the cross-walker diagnostics) compare like with like. If the walkers sit in
different modes, s includes the spread between them.

The state (the scales `metric_scale` and, for the windows' draws, each variable's running count,
mean and squared deviations `metric_draws`; the noise mass has no draws) lives in optimizer
variables, so a checkpoint carries it and a run cut inside burn-in continues bitwise. Without
adaptation (adapt_mass false or "auto", fewer than 20 burn-in steps, or the ensemble
preconditioner, which already scales the moves) there are neither variables nor operations: the
steps are exactly the unit-mass ones.
"""

import numpy as np
import tensorflow as tf

from tati.config import options as option_table
from tati.adaptation import measured_width
from tati.adaptation import metric as moments
from tati.adaptation import windows

NOISE = "noise"
NOISE_BATCHES = measured_width.NOISE_BATCHES  # V_i's relative error sqrt(2 / 15) = 0.37 per walker at 16


class AdaptedMass:
    """Mixin (before SamplerBase) giving a Langevin sampler an adapted diagonal mass.

    The sampler's update_step uses `_scaled_force(gradient, variable)` for its kicks,
    `_scaled_velocity(momentum, variable)` for its drifts and `_inertia_position(q, variable)`
    for its report."""

    # Options the Simulation passes by name besides `parameters` (with adaptation_steps).
    adaptation_options = ("adapt_mass",)
    noise_covers = True  # the engine's noise batches cover the data (measured_width.noise_batch_count)
    # The summary's words for the noise mass ({count} its measurements, {times} "3 times"; pSGLD's: RMSprop's 1 / G).
    noise_mass_words = "mass from the gradient noise, measured {times}"
    # Whether the Simulation measured the width at the walkers' start (measured_width.measure) in the
    # first mass's metric: the compiled loop then does not measure it again at the first measurement.
    measured_at_start = False
    # Whether the mass (and width, and friction) is measured again at the first epoch start after step 0,
    # besides after each window: the start is often a mode fitted closely, whose noise is the least the
    # walkers meet, and they leave it within the first window (module docstring).
    measures_an_epoch_in = True

    def _init_mass(self, adapt_mass, adaptation_steps, noise_mass_sizes=(1.0, 1.0)):
        """adapt_mass: true, false, "auto" (off here: the dynamics is what these samplers'
        users read, so it changes only on request) or "noise", with noise_mass_sizes
        (noise_precision B / N, mass_floor): M_i = max(V_i B / N, mass_floor)."""
        noise_precision, mass_floor = noise_mass_sizes
        self.adaptation_steps = option_table.check("burn_in_steps", adaptation_steps)
        self._mass_requested = option_table.check("adapt_mass", adapt_mass)
        self.noise_mass = self._mass_requested == NOISE
        self.noise_precision, self.mass_floor = float(noise_precision), float(mass_floor)
        self.metric_start, self.metric_ends = (windows.metric_windows(self.adaptation_steps)
                                               if self._mass_requested in (True, NOISE) else (0, []))
        self.adapt_mass = bool(self.metric_ends)
        self.noise_mass = self.noise_mass and self.adapt_mass
        self._scales = None

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        if self.preconditioner is not None or self.moving is not None:
            self.adapt_mass = False  # the ensemble's preconditioner already scales the moves
        if not self.adapt_mass:
            self.noise_mass = False
            return
        if self.noise_mass:  # measurements so far, and the gradient evaluations they took (per walker)
            self._noise_measurements = self.add_variable((), dtype="int64", name="noise_mass_measurements",
                                                         initializer="zeros")
            self._noise_evaluations = self.add_variable((), dtype="float64", name="noise_evaluations",
                                                        initializer="zeros")
            # the step width each of the mass's measurements left (measured again with follows_width), in its
            # slot (the start's, an epoch in, then by the windows closed by then); 0 where none was made
            self._followed_widths = self.add_variable((2 + len(self.metric_ends),), dtype="float64",
                                                      name="measured_step_widths", initializer="zeros")
            # and the friction measured with it (follows_friction; else zeros)
            self._followed_frictions = self.add_variable((2 + len(self.metric_ends),), dtype="float64",
                                                         name="measured_frictions", initializer="zeros")
        self._scales = [self.add_variable(self._walker_shape(v), dtype=v.dtype, name="metric_scale",
                                          initializer="ones") for v in variables]
        # the windows' draws (the noise mass measures, it collects none: 2 d + 1 float64 that would idle)
        self._metric_draws = [] if self.noise_mass else [
            self.add_variable((1 + 2 * int(np.prod(self._walker_shape(v))),), dtype="float64", name="metric_draws",
                              initializer="zeros") for v in variables]

    def _walker_shape(self, variable):
        """The shape of one walker's part of the variable."""
        shape = tuple(variable.shape)
        return shape[1:] if self._walkers is not None else shape

    # -- the steps -----------------------------------------------------------------------------
    def _scale(self, variable):
        return None if self._scales is None else tf.convert_to_tensor(
            self._scales[self._get_variable_index(variable)])

    def _scaled_force(self, gradient, variable):
        """s B^T grad U: the force of a kick (B the ensemble's preconditioner, s the scale)."""
        force = self._force(gradient)
        scale = self._scale(variable)
        return force if scale is None else scale * force

    def _scaled_velocity(self, momentum, variable):
        """s B p': the velocity of a drift."""
        velocity = self._velocity(momentum)
        scale = self._scale(variable)
        return velocity if scale is None else scale * velocity

    def _inertia_position(self, position, variable):
        """q / s, whose product with p' is the inertia q . p of the momentum p = p' / s."""
        scale = self._scale(variable)
        return position if scale is None else position / scale

    # -- adaptation ----------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None):
        result = super().apply(grads, trainable_variables)
        if self.adapt_mass and not self.noise_mass:
            self._adapt_metric()
        return result

    # -- the mass from the gradient noise (adapt_mass="noise") -----------------------------------
    @property
    def noise_batches(self):
        """The least of the batches of its own `estimate_noise` wants (the engine gives it
        measured_width.noise_batch_count, at least one epoch's, covering the data; it calls it at
        each epoch's start, without mini-batches every noise_estimation_steps = 1 steps), else 0."""
        return NOISE_BATCHES if self.noise_mass else 0

    noise_estimation_steps = 1

    @property
    def noise_evaluations(self):
        """The gradient evaluations of the mass's measurements so far, per walker (float64)."""
        return tf.convert_to_tensor(self._noise_evaluations)

    def estimate_noise(self, gradients_of, count=NOISE_BATCHES, hessian_vector_on=None, curvature_batches=1):
        """If a measurement is due (none yet, one epoch in, or a window closed since the last), the scales
        s_i = M_i^-1/2 from V_i, the sample variance of gradients_of(k), k < count (the engine's
        batches covering the data), at the current parameters, averaged over the walkers; else
        nothing. The whitened momenta p' keep their values, so the momenta p = p' / s stay
        N(0, M / beta) with the new M. With follows_width
        and hessian_vector_on ((b, flat [W, d]) -> the Hessian of U on curvature batch b <
        curvature_batches times it, per walker) the step width is measured again in the new
        metric (`_follow_width`)."""
        step = tf.cast(self.iterations, tf.int64)
        closed = tf.reduce_sum(tf.cast(tf.constant(self.metric_ends, tf.int64) <= step, tf.int64))
        # one more at the first epoch start after step 0 (measures_an_epoch_in)
        early = tf.cast(step > 0, tf.int64) if self.measures_an_epoch_in else 0
        done = closed + early  # the measurements due after the start's
        due = self._noise_measurements < done + 1

        def measure():
            means, variances = self._gradient_moments(gradients_of, count)
            self._set_noise_metric(means, variances, count)
            if self.follows_width and hessian_vector_on is not None:
                def follow():
                    self._follow_width(hessian_vector_on, curvature_batches, variances, done)
                    return tf.constant(True)
                if self.measured_at_start:  # the first at the same point, in the same metric, before the run
                    tf.cond(done > 0, follow, lambda: tf.constant(False))
                else:
                    follow()
            # the width (and friction) each measurement leaves, in its slot: where two or more windows close
            # within an epoch (one measurement at its start), the slots between stay 0
            self._followed_widths.assign(tf.tensor_scatter_nd_update(
                self._followed_widths, [[done]], [tf.cast(self.learning_rate, tf.float64)]))
            if self.follows_friction:
                self._followed_frictions.assign(tf.tensor_scatter_nd_update(
                    self._followed_frictions, [[done]],
                    [tf.cast(tf.convert_to_tensor(self._parameter_variables["friction_constant"]), tf.float64)]))
            self._noise_measurements.assign(done + 1)
            self._noise_evaluations.assign_add(tf.cast(count, tf.float64))
            return tf.constant(True)

        tf.cond(due, measure, lambda: tf.constant(False))

    def _set_noise_metric(self, means, variances, count):
        """The scales s_i = M_i^-1/2, M_i = max(V_i B / N, mass_floor), from the walkers' mean variance
        of the `count` gradients (their means unused: the mass is the noise's alone)."""
        del means, count
        for scale, variance in zip(self._scales, variances):
            mean = tf.reduce_mean(variance, axis=0) if self._walkers is not None else variance
            mass = tf.maximum(mean * self.noise_precision, self.mass_floor)
            scale.assign(tf.cast(tf.reshape(tf.math.rsqrt(mass), scale.shape), scale.dtype))

    def _metric_vector(self, rows):
        """The metric's scales s, flat float64: [d] (one for all walkers) or [rows, d] (each walker's)."""
        del rows
        return tf.concat([tf.reshape(tf.cast(scale, tf.float64), [-1]) for scale in self._scales], 0)

    def _follow_width(self, hessian_vector_on, batches, variances, measurement):
        """The step width measured in the metric just set (measured_width.graph_width): the
        largest curvature of the batches' s H_b s by power iteration from a fixed start (keyed by
        the measurement), the walkers' mean of s^2 V. With follows_friction (friction_constant
        auto) the friction is measured again with it, and kept if it was higher (the width then is the
        kept friction's): the start's, often a mode fitted closely, has little noise, and the typical
        set's would heat the walkers at that friction or, the width following the noise alone,
        shrink the width; a later, lower measurement (the mass having grown with the noise) left
        the noise that grows on after the last one too little friction (digits, SGHMC: friction
        5.2, then 1.8 at the last, kinetic temperature 1.14 against 1.08 kept at 5.2;
        doc/benchmarks.md). A non-finite measurement keeps both (the run's finite check then names
        the step)."""
        rows = 1 if self._walkers is None else self._walkers
        s = self._metric_vector(rows)
        noise = tf.concat([tf.reshape(v, [rows, -1]) for v in variances], 1)
        noise_variance = tf.reduce_mean(tf.square(s) * noise, axis=1)
        start = tf.random.stateless_normal([rows, tf.shape(s)[-1]],
                                           seed=tf.stack([tf.constant(5, tf.int64), measurement]), dtype=tf.float64)
        temperature = 1.0 / self._parameter_variables["inverse_temperature"]
        if self.overdamped:  # SGLD: no friction to measure or keep
            width = measured_width.graph_overdamped_width(lambda b, v: s * hessian_vector_on(b, s * v), batches,
                                                          noise_variance, start, temperature)
            width = tf.where(tf.math.is_finite(width), width, tf.cast(self._learning_rate, tf.float64))
            self._learning_rate.assign(tf.cast(width, self._learning_rate.dtype))
            return
        # the friction rate and temperature the sampler steps with (a measured friction, a restored
        # one), and its scalar mass (SGHMC's, SGNHT's; 1 for the others)
        mass = self._parameter_variables.get("mass", tf.constant(1.0, tf.float64))
        unit = self.friction_unit(mass)
        friction_variable = self._parameter_variables["friction_constant"]
        # with follows_friction never below an earlier one's (the noise grows on after the last)
        rule = measured_width.Friction(friction_variable / unit, self.follows_friction, self.euler_friction)
        width, friction = measured_width.graph_width(lambda b, v: s * hessian_vector_on(b, s * v), batches,
                                                     noise_variance, start, rule, temperature, mass)
        held = tf.math.is_finite(width)
        width = tf.where(held, width, tf.cast(self._learning_rate, tf.float64))
        friction = tf.where(held, friction * unit, friction_variable)
        self._learning_rate.assign(tf.cast(width, self._learning_rate.dtype))
        friction_variable.assign(friction)

    def _measured(self):
        """numpy bool: which of the windows' slots a noise-mass measurement filled (a width is never 0)."""
        return self._followed_widths.numpy() != 0

    def followed_widths(self):
        """numpy: the step widths measured with the mass's measurements so far (follows_width), else empty."""
        if not self.noise_mass or not self.follows_width:
            return np.zeros(0)
        return self._followed_widths.numpy()[self._measured()]

    def followed_frictions(self):
        """numpy: the friction_constant measured with each of them (follows_friction), else empty."""
        if not self.noise_mass or not self.follows_friction:
            return np.zeros(0)
        return self._followed_frictions.numpy()[self._measured()]

    def noise_scales(self, gradients):
        """numpy: the scales s = M^-1/2 of K batch gradients [K, W, d] (or [K, d]) at one point, as
        estimate_noise sets them from their per-walker variances: [d]."""
        variances = np.var(gradients, axis=0, ddof=1)
        variance = np.mean(np.reshape(variances, (-1, np.shape(variances)[-1])), axis=0)
        return 1.0 / np.sqrt(np.maximum(variance * self.noise_precision, self.mass_floor))

    def _gradient_moments(self, gradients_of, count):
        """Per variable, in its shape (walkers first): the mean and the sample variance (divisor K - 1)
        of the K gradients (Welford's sums: no cancellation under a large mean)."""
        def add(k, means, squares):
            gradients = [tf.cast(g, tf.float64) for g in gradients_of(k)]
            new = [m + (g - m) / tf.cast(k + 1, tf.float64) for g, m in zip(gradients, means)]
            return k + 1, new, [s + (g - m) * (g - n) for s, g, m, n in zip(squares, gradients, means, new)]

        zeros = [tf.zeros(v.shape, tf.float64) for v in self._trainable_variables]
        _, means, squares = tf.while_loop(lambda k, *_: k < count, add, (tf.constant(0), zeros, zeros))
        return means, [s / (tf.cast(count, tf.float64) - 1.0) for s in squares]

    def _adapt_metric(self):
        """After step k (= iterations): collect the positions if first < k <= the last window's
        end; at a window's end the scales become the draws' shrunk standard deviations. Skipped
        by a tf.cond outside the windows, so after burn-in a step costs what it did."""
        step = tf.cast(self.iterations, tf.int64)
        ends = tf.constant(self.metric_ends, tf.int64)
        collecting = windows.collecting(step, self.metric_start, self.metric_ends)
        rows = 1 if self._walkers is None else self._walkers

        def collect():
            window_end = windows.window_end(step, ends)
            for variable, scale, state in zip(self._trainable_variables, self._scales, self._metric_draws):
                draws = tf.reshape(tf.convert_to_tensor(variable), [rows, -1])
                new = moments.update(moments.unpack(state), draws)
                previous = tf.reshape(tf.cast(tf.convert_to_tensor(scale), tf.float64), [-1])
                shrunk = tf.where(window_end, moments.variance_scale(new, previous), previous)
                scale.assign(tf.cast(tf.reshape(shrunk, scale.shape), scale.dtype))
                new = moments.pack(new)
                state.assign(tf.where(window_end, tf.zeros_like(new), new))
            return tf.constant(True)

        tf.cond(collecting, collect, lambda: tf.constant(False))

    def metric_scales(self):
        """The scale s of every parameter (numpy, flat, one walker's; ones without adaptation);
        the mass is diag(1 / s^2)."""
        if self._scales is None:
            return np.ones(sum(int(np.prod(self._walker_shape(v))) for v in self._trainable_variables))
        return np.concatenate([np.ravel(s.numpy()) for s in self._scales])

    def metric_windows(self):
        """How many metric windows have closed so far (each updated the scales); with
        adapt_mass "noise", the mass's measurements so far (at step 0, one epoch later, after the windows)."""
        if not self.adapt_mass:
            return 0
        if self.noise_mass:
            return int(np.count_nonzero(self._measured()))
        return sum(1 for end in self.metric_ends if end <= int(self.iterations.numpy()))

    def get_config(self):
        config = super().get_config()
        config.update(adapt_mass=self._mass_requested, adaptation_steps=self.adaptation_steps,
                      noise_mass_sizes=(self.noise_precision, self.mass_floor))
        return config
