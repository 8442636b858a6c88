"""A diagonal mass for the Langevin samplers with momenta (GLA1, GLA2, BAOAB, CCAdL), adapted during burn-in.

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

The draws are pooled over the walkers (one s for all walkers, as HMC, NUTS and RWMH do): a
window then holds W times as many draws, which matters for Langevin dynamics, whose draws are
correlated over many steps; walkers started apart also show a wide direction's spread before
a single walker has crossed it; and all walkers sample with the same dynamics, so their
averages (and the cross-walker diagnostics) compare like with like. If the walkers sit in
different modes, s includes the spread between them.

The state (the scales `metric_scale` and each variable's running count, mean and squared
deviations `metric_draws`) lives in optimizer variables, so a checkpoint carries it and a run
cut inside burn-in continues bitwise. Without adaptation (adapt_mass false or "auto", fewer
than 20 burn-in steps, or the ensemble preconditioner, which already scales the moves) there
are neither variables nor operations: the steps are exactly the unit-mass ones.
"""

import numpy as np
import tensorflow as tf

from tati.config import options as option_table
from tati.adaptation import metric as moments
from tati.adaptation import windows


class AdaptedMass:
    """Mixin (before SamplerBase) giving a Langevin sampler an adapted diagonal mass.

    The sampler's update_step uses `_scaled_force(gradient, variable)` for its kicks,
    `_scaled_velocity(momentum, variable)` for its drifts and `_inertia_position(q, variable)`
    for its report."""

    # Options the Simulation passes by name besides `parameters` (with adaptation_steps).
    adaptation_options = ("adapt_mass",)

    def _init_mass(self, adapt_mass, adaptation_steps):
        """adapt_mass: true, false or "auto" (off here: the dynamics is what these samplers'
        users read, so it changes only on request)."""
        self.adaptation_steps = option_table.check("burn_in_steps", adaptation_steps)
        self._mass_requested = option_table.check("adapt_mass", adapt_mass)
        self.metric_start, self.metric_ends = (windows.metric_windows(self.adaptation_steps)
                                               if self._mass_requested is True else (0, []))
        self.adapt_mass = bool(self.metric_ends)
        self._scales = None

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        if self.preconditioner is not None or self.moving is not None:
            self.adapt_mass = False  # the ensemble's preconditioner already scales the moves
        if not self.adapt_mass:
            return
        self._scales = [self.add_variable(self._walker_shape(v), dtype=v.dtype, name="metric_scale",
                                          initializer="ones") for v in variables]
        self._metric_draws = [self.add_variable((1 + 2 * int(np.prod(self._walker_shape(v))),), dtype="float64",
                                                name="metric_draws", initializer="zeros") for v in variables]

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
        if self.adapt_mass:
            self._adapt_metric()
        return result

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
        """How many metric windows have closed so far (each updated the scales)."""
        if not self.adapt_mass:
            return 0
        return sum(1 for end in self.metric_ends if end <= int(self.iterations.numpy()))

    def get_config(self):
        config = super().get_config()
        config.update(adapt_mass=self._mass_requested, adaptation_steps=self.adaptation_steps)
        return config
