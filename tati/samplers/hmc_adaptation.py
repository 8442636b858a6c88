"""HMC's warm-up (samplers/hmc.py): the step width, the metric and the leg length adapt at
every evaluation during the first `adaptation_steps` calls, one value for all walkers. The
algorithms are tati/adaptation/'s; here is what HMC feeds them and when:

- the initial width's search (`_search_width`): legs of one step of exactly the probed width
  from the chain's state, h doubled or halved until the walkers' mean one-step acceptance
  min(1, exp(-beta dH)) crosses 0.5;
- dual averaging of log h (`_adapt`) on the mean acceptance probability of the walkers that
  decide, towards `target_acceptance_rate`; afterwards the smaller of the average of the
  iterates and the last one (dual_averaging.cautious_width);
- the metric (`_adapt_metric`), in windows of the legs' starts counted in legs: a scale s per
  parameter, s^4 = var(q) / var(beta grad U) (adaptation.metric.fisher_scale; kicks s grad U, drifts
  s p); or with metric="dense" the Cholesky factor L of the starts' covariance, regularised
  as Stan's dense_e (adaptation.metric.dense_factor; kicks L^T grad U, drifts L p), taken from at
  least d + 1 draws (fewer give a singular covariance, all regularisation). The width then
  restarts at h / (smallest growth) and T at T / (largest growth), a growth being, for the
  diagonal metric, new s / old s of a parameter, for the dense one a singular value of
  L_old^-1 L_new (the stretch of a direction of the new z in the old z; the same for diagonal
  factors; its extremes by power iteration, adaptation.metric.extreme_growths);
- the leg length T (`_adapt_time`): ChEES (adaptation.chees), gradient ascent on log T, with
  z = (q - m) / s or L^-1 (q - m);
- the metric's windows, counted in legs (adaptation.windows.LegWindow).

A leg uses the h, metric and T of its start throughout, so each leg stays an exact proposal.
The state is in optimizer variables (their names are the checkpoint's), so a checkpoint
continues it: for the dense metric L ("metric_cholesky") and the window's count, mean and d x d
sum of outer products of deviations ("metric_draws").
"""

import numpy as np
import tensorflow as tf

from tati.adaptation import chees, width_search, windows
from tati.adaptation import dual_averaging as averaging
from tati.adaptation import metric as moments
from tati.errors import InputError
from tati.dynamics.metropolis import acceptance_probability
from tati.samplers.proposal import check_dense_size


class LegAdaptation:
    """The warm-up part of HamiltonianMonteCarlo: its variables and one update of each
    adapted quantity per evaluation."""

    def _build_adaptation(self, variables):
        """The adaptation's variables (after the leg state's, in this order: the checkpoint
        names repeated ones by their order)."""
        if self.adapt_step_width:
            start = averaging.pack(averaging.init(float(tf.convert_to_tensor(self.learning_rate).numpy())))
            self._dual_averaging = self.add_variable(
                (len(averaging.State._fields),), dtype="float64", name="dual_averaging",
                initializer=lambda shape, dtype: tf.cast(start, dtype))
        dense = self.metric == "dense"
        d = self._dense_dimension(variables) if dense else None
        if self.preconditioner is not None:  # B already scales the moves; legs are cut to phases
            self.adapt_mass = self.adapt_trajectory_length = False
        # The initial width's search, where the width adapts (not with the ensemble's phases,
        # whose legs are cut to them).
        self.find_initial_width = self.adapt_step_width and self.preconditioner is None
        if self.find_initial_width:
            start = width_search.pack(width_search.init(float(tf.convert_to_tensor(self.learning_rate).numpy())))
            self._initial_width = self.add_variable(
                (len(width_search.State._fields),), dtype="float64", name="initial_width",
                initializer=lambda shape, dtype: tf.cast(start, dtype))
        self._scales = self._cholesky = None
        if dense:
            # q = c + L z, shared by the walkers: kicks L^T g, drifts L p. Legs move q itself, so
            # the centre c never enters them and is not kept (ChEES keeps its own).
            self._cholesky = self.add_variable((d, d), dtype=variables[0].dtype, name="metric_cholesky",
                                               initializer=lambda shape, dtype: tf.eye(shape[0], dtype=dtype))
        elif self.adapt_mass or self.adapt_trajectory_length:
            # The metric's scale s per parameter, shared by the walkers: kicks s g, drifts s p.
            self._scales = [self.add_variable(self._walker_shape(v), dtype=v.dtype, name="metric_scale",
                                              initializer="ones") for v in variables]
        if self.adapt_mass:
            # Window number k, legs in the window, draws n, 1 once the last window closed.
            self._metric_window = self.add_variable((len(windows.LegWindow._fields),), dtype="float64",
                                                    name="metric_window", initializer="zeros")
        if self.adapt_mass and dense:
            # The window's draws: count, mean [d] and sum of outer products of deviations [d, d].
            self._metric_draws = self.add_variable((1 + d + d * d,), dtype="float64", name="metric_draws",
                                                   initializer="zeros")
            self._metric_sums = [self._metric_draws]
            self.min_metric_draws = max(windows.MIN_METRIC_DRAWS, d + 1)
        elif self.adapt_mass:
            # The draws' mean and squared deviations, and those of their gradients (times beta).
            self._metric_means = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                    name="metric_mean", initializer="zeros") for v in variables]
            self._metric_squares = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                      name="metric_squares", initializer="zeros")
                                    for v in variables]
            self._metric_gradient_means = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                             name="metric_gradient_mean", initializer="zeros")
                                           for v in variables]
            self._metric_gradient_squares = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                               name="metric_gradient_squares", initializer="zeros")
                                             for v in variables]
            self._metric_sums = (self._metric_means + self._metric_squares + self._metric_gradient_means
                                 + self._metric_gradient_squares)
            self.min_metric_draws = windows.MIN_METRIC_DRAWS
        if self.adapt_trajectory_length:
            start = chees.pack(chees.init(self._parameter_values["hamiltonian_dynamics_time"]))
            self._chees = self.add_variable((len(chees.State._fields),), dtype="float64", name="chees",
                                            initializer=lambda shape, dtype: tf.cast(start, dtype))
            # The centre of the ChEES criterion, a moving average of leg starts (_adapt_time).
            self._chees_centres = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                     name="chees_centre", initializer="zeros")
                                   for v in variables]

    def _dense_dimension(self, variables):
        """d of metric="dense": its one flat variable's per-walker size; InputError where the
        dense metric does not apply."""
        if self.preconditioner is not None:
            raise InputError("metric=dense is not available with covariance_blending (the ensemble preconditioner "
                             "scales the moves itself): use metric=diagonal or drop covariance_blending")
        shapes = [tuple(self._walker_shape(v)) for v in variables]
        if len(shapes) != 1 or len(shapes[0]) != 1:
            raise InputError(f"metric=dense needs the parameters as one flat variable ([walkers, d] with walker_axis, "
                             f"or [d]); {type(self).__name__} was given {len(shapes)} of shapes "
                             f"{', '.join(map(str, shapes))}: use metric=diagonal")
        check_dense_size(shapes[0][0])
        return shapes[0][0]

    def _metric_values(self):
        """The metric of the legs, one tensor per variable: the diagonal metric's scale s (None
        each without one), or the dense metric's Cholesky factor L (one variable)."""
        if self._cholesky is not None:
            return [tf.convert_to_tensor(self._cholesky)]
        if self._scales is None:
            return [None] * len(self._trainable_variables)
        return [tf.convert_to_tensor(s) for s in self._scales]

    def _metric_coordinates(self, displacement, metric):
        """z - z_c of a float64 displacement q - c per walker: (q - c) / s, or L^-1 (q - c)."""
        metric = tf.cast(metric, tf.float64)
        if self.metric == "dense":
            return tf.linalg.triangular_solve(metric, displacement[..., None], lower=True)[..., 0]
        return displacement / metric

    def _adapted_leg(self, width, steps, probing, probe_width):
        """The new legs' (width, steps) as the warm-up changes them: while T adapts, burn-in's
        legs are at most MAX_LEG_STEPS (as TFP's ChEES); a probe is one step of exactly the
        probed width."""
        if self.adapt_trajectory_length:
            adapting = tf.cast(self.iterations, tf.float64) < float(self.adaptation_steps)
            steps = tf.where(adapting, tf.minimum(steps, float(chees.MAX_LEG_STEPS)), steps)
        if self.find_initial_width:
            width = tf.where(probing, probe_width, width)
            steps = tf.where(probing, tf.ones_like(steps), steps)
        return width, steps

    def _search_width(self, energy_error, evaluate, probed, first):
        """The initial width's search (Hoffman & Gelman 2014, Algorithm 4; adaptation/width_search.py)
        at this evaluation: after the first call, probes of one step from the chain's state with
        fresh momenta, the width doubled or halved until the mean one-step acceptance
        min(1, exp(-beta dH)) crosses 0.5, pooled over the walkers as dual averaging is (one
        width for all; the mean of W walkers' acceptances is less noisy than one chain's, which
        Algorithm 4 takes). Once found, dual averaging starts from it. Returns ([W] bool: the
        new leg is a probe, the probe's width)."""
        f64 = tf.float64
        state = width_search.unpack(self._initial_width)
        weight = tf.cast(evaluate & probed, f64)
        probes = tf.reduce_sum(weight)
        acceptance = tf.reduce_sum(acceptance_probability(energy_error) * weight) / tf.maximum(probes, 1.0)
        # A probe started now ends at the next call: only if that is still in burn-in.
        go_on = tf.cast(self.iterations, f64) + 1.0 < float(self.adaptation_steps)
        state = width_search.select(probes > 0, width_search.update(state, acceptance, go_on), state)
        probing = evaluate & (first | probed) & width_search.searching(state) & go_on
        # Found where nothing is left to probe (a burn-in too short to start: the user's width).
        done = tf.reduce_any(evaluate) & tf.logical_not(tf.reduce_any(probing))
        state = state._replace(found=tf.where(done, tf.ones_like(state.found), state.found))
        just_found = done & (probes > 0)
        width = width_search.width(state)
        self._dual_averaging.assign(tf.where(just_found, averaging.pack(averaging.init(width)),
                                             self._dual_averaging))
        self._initial_width.assign(width_search.pack(state))
        return probing, width

    def found_step_width(self):
        """The initial width's search's result (float), or None before it ends or without it."""
        if not getattr(self, "find_initial_width", False):
            return None
        state = width_search.State(*self._initial_width.numpy())
        return float(np.exp(state.log_width)) if state.found and state.probes > 0 else None

    def _adapt(self, energy_error, deciding):
        """Dual averaging of the step width with this evaluation's decisions (during the first
        adaptation_steps calls); sets and returns the width of the new legs."""
        weight = tf.cast(deciding, tf.float64)
        decisions = tf.reduce_sum(weight)
        acceptance = tf.reduce_sum(acceptance_probability(energy_error) * weight) / tf.maximum(decisions, 1.0)
        adapting = tf.cast(self.iterations, tf.float64) < float(self.adaptation_steps)
        state = averaging.unpack(self._dual_averaging)
        updated = averaging.update(state, acceptance, self.target_acceptance_rate)
        state = averaging.select(adapting & (decisions > 0), updated, state)
        self._dual_averaging.assign(averaging.pack(state))
        h = averaging.cautious_width(state, tf.logical_not(adapting))
        self._learning_rate.assign(tf.cast(h, self._learning_rate.dtype))
        return tf.cast(tf.cast(h, self._learning_rate.dtype), tf.float64)

    def _adapt_time(self, deciding, energy_error, s, variables, end_momenta, metrics, h):
        """One ChEES step on the leg length T with the legs decided here (during the first
        adaptation_steps calls; adaptation/chees.py); sets and returns T of the new legs.

        The centre m is a moving average of the walkers' mean leg start over the last
        CENTRE_LEGS legs or so, updated after the step: a centre that contained the leg's own start (the walkers'
        mean does, by 1/W) would correlate with it and push T towards anti-correlated legs,
        and a centre from few draws (another walker's state) adds their jump distance."""
        f64 = tf.float64
        weight = tf.where(deciding, acceptance_probability(energy_error), 0.0)
        total = tf.reduce_sum(weight)
        leg_time = s["leg_steps"] * s["leg_width"]
        state = chees.unpack(self._chees)
        spread_change, heading, starts = [], [], []
        for v, q0, p, metric, centre in zip(variables, self._start_positions, end_momenta, metrics,
                                            self._chees_centres):
            start = tf.cast(tf.convert_to_tensor(q0), f64)
            starts.append(tf.reduce_mean(start, axis=0) if self._walkers is not None else start)
            centre = tf.convert_to_tensor(centre)
            start = self._metric_coordinates(start - centre, metric)
            proposal = self._metric_coordinates(tf.cast(tf.convert_to_tensor(v), f64) - centre, metric)
            spread_change.append(self._walker_sum(tf.square(proposal)) - self._walker_sum(tf.square(start)))
            heading.append(self._walker_sum(proposal * tf.cast(p, f64)))
        gradient = chees.gradient(weight, total, leg_time, tf.add_n(spread_change), tf.add_n(heading))
        adapting = tf.cast(self.iterations, f64) < float(self.adaptation_steps)
        decided = adapting & tf.reduce_any(deciding)
        centre_count = state.centre_count + 1.0
        centre_weight = chees.centre_weight(centre_count)
        for centre, start in zip(self._chees_centres, starts):
            centre.assign(tf.where(decided, centre + centre_weight * (start - centre), centre))
        updated = chees.update(state, gradient, chees.MAX_LEG_STEPS * h)
        state = chees.select(decided & (total > 0), updated, state)
        state = state._replace(centre_count=tf.where(decided, centre_count, state.centre_count))
        self._chees.assign(chees.pack(state))
        time = chees.time(state, tf.logical_not(adapting))
        self._parameter_variables["hamiltonian_dynamics_time"].assign(time)
        return time

    def _adapt_metric(self, deciding, steps, metrics):
        """Collect the starts of the legs decided here, chain states q_0 (the chain's states one
        leg late, whose gradients g_0 are at hand) into the metric's window (`_collect`), and
        close the window once it holds its legs (25, 50, 100, ...; the last one stretched to
        the end of the collection; the first closed by windows.FIRST_WINDOW_END of burn-in
        if it has its least draws; adaptation/windows.py): the metric becomes the window's
        (`_window_metric`), and the step width's and leg length's averages restart. Returns
        the metric of the new legs, one tensor per variable."""
        f64 = tf.float64
        now = tf.cast(self.iterations, f64)
        n = self.adaptation_steps
        window = windows.unpack(self._metric_window)
        decided = tf.reduce_any(deciding)
        legs_left = (float(n) - now) / tf.reduce_max(steps)  # of the burn-in, at the current length
        window_open = windows.leg_window_open(window, now, n, legs_left)
        collecting = windows.leg_collecting(window_open, decided, now, n)
        count, sums = self._collect(collecting, window.count)
        window = window._replace(legs=window.legs + tf.cast(collecting, f64), count=count)
        enough = count >= self.min_metric_draws
        close, last = windows.leg_window_closes(window, collecting, window_open, decided, now, n, legs_left, enough)
        candidates, smallest, largest, valid = self._window_metric(close & enough, sums, metrics)
        # The legs left after the window at the width h / smallest and time T / largest as
        # restarted below (where they adapt); too few, and the width would be frozen at its
        # restart, untried.
        shorter = ((smallest if self.adapt_step_width else 1.0)
                   / (largest if self.adapt_trajectory_length else 1.0))
        legs_after = (float(n) - now) / tf.maximum(tf.reduce_max(steps) * shorter, 1.0)
        update = close & enough & valid & (legs_after >= windows.MIN_LEGS_AFTER_WINDOW)
        new_metrics = [tf.where(update, new, metric) for new, metric in zip(candidates, metrics)]
        for variable, value in zip(self._scales or [self._cholesky], new_metrics):
            variable.assign(value)
        for variable, value in zip(self._metric_sums, sums):
            variable.assign(tf.where(close, tf.zeros_like(value), value))
        self._metric_window.assign(windows.pack(windows.leg_window_next(window, close, last, update)))
        if self.adapt_step_width:
            self._dual_averaging.assign(averaging.pack(averaging.restart(
                averaging.unpack(self._dual_averaging), update, smallest)))
        if self.adapt_trajectory_length:
            self._chees.assign(chees.pack(chees.restart(chees.unpack(self._chees), update, largest,
                                                        self._parameter_values["hamiltonian_dynamics_time"])))
        return new_metrics

    def _collect(self, collecting, count):
        """(draws n, the window's sums as in self._metric_sums) with the chain states q_0 of
        the legs decided here added where `collecting`: for the dense metric the count, mean
        and sum of outer products of deviations of q_0 (adaptation.metric.update_dense); for
        the diagonal one the means and squared deviations of q_0 and of beta g_0 per parameter."""
        f64 = tf.float64
        if self._cholesky is not None:
            starts = tf.convert_to_tensor(self._start_positions[0])
            state = tf.convert_to_tensor(self._metric_draws)
            added = moments.update_dense(moments.unpack_dense(state, self._cholesky.shape[0]),
                                         starts if self._walkers is not None else starts[None])
            state = tf.where(collecting, moments.pack_dense(added), state)
            return state[0], [state]
        beta = tf.cast(self._parameter_variables["inverse_temperature"], f64)

        def collect(values, means, squares):
            """The window's running (count, means, squared deviations) with `values` added."""
            combined = [moments.update(moments.Welford(count, tf.convert_to_tensor(mean), tf.convert_to_tensor(m2)),
                                       tf.cast(v if self._walkers is not None else v[None], f64))
                        for v, mean, m2 in zip(values, means, squares)]
            return (tf.where(collecting, combined[0].count, count),
                    [tf.where(collecting, new.mean, old) for new, old in zip(combined, means)],
                    [tf.where(collecting, new.m2, old) for new, old in zip(combined, squares)])
        new_count, means, squares = collect([tf.convert_to_tensor(q) for q in self._start_positions],
                                            self._metric_means, self._metric_squares)
        _, gradient_means, gradient_squares = collect(
            [beta * tf.cast(tf.convert_to_tensor(g), f64) for g in self._start_gradients],
            self._metric_gradient_means, self._metric_gradient_squares)
        return new_count, means + squares + gradient_means + gradient_squares

    def _window_metric(self, closing, sums, metrics):
        """(the window's metric per variable, smallest and largest growth, whether it is
        valid) from its sums, where `closing` (else anything; the growths then 1):

            diagonal: s = (var q / var beta g)^(1/4) (moments.fisher_scale); growths new s / old s
            dense:    L = chol of the starts' regularised covariance (moments.dense_factor, its
                      shrinkage relative to diag(L_old L_old^T)); growths the extreme singular
                      values of L_old^-1 L_new (moments.extreme_growths), computed only
                      where a window closes; not valid if not finite (a failed factorisation).
        """
        f64 = tf.float64
        if self._cholesky is not None:
            old = metrics[0]

            def factor():
                previous = tf.cast(old, f64)
                _, new = moments.dense_factor(moments.unpack_dense(sums[0], old.shape[0]), previous)
                growths = tf.stack(moments.extreme_growths(previous, new))
                valid = tf.reduce_all(tf.math.is_finite(new)) & tf.reduce_all(tf.math.is_finite(growths))
                new = tf.where(valid, new, previous)
                growths = tf.maximum(tf.where(valid, growths, tf.ones_like(growths)), 1e-300)
                return tf.cast(new, old.dtype), growths[0], growths[1], valid

            one = tf.constant(1.0, f64)
            new, smallest, largest, valid = tf.cond(closing, factor, lambda: (old, one, one, tf.constant(False)))
            return [new], smallest, largest, valid
        quarter = len(sums) // 4
        squares, gradient_squares = sums[quarter:2 * quarter], sums[3 * quarter:]
        candidates = [tf.cast(moments.fisher_scale(m2, g_m2, tf.cast(scale, f64)), scale.dtype)
                      for m2, g_m2, scale in zip(squares, gradient_squares, metrics)]
        growths = tf.concat([tf.reshape(tf.cast(new / old, f64), [-1]) for new, old in zip(candidates, metrics)], 0)
        smallest, largest = (tf.maximum(tf.reduce_min(growths), 1e-300), tf.maximum(tf.reduce_max(growths), 1e-300))
        return candidates, smallest, largest, tf.constant(True)

    def metric_scales(self):
        """The metric's scale s of every parameter (numpy, flat, one walker's), ones without;
        for the dense metric the square roots of diag(L L^T)."""
        if self._cholesky is not None:
            return np.sqrt(np.sum(np.square(self._cholesky.numpy().astype(np.float64)), axis=1))
        if self._scales is None:
            return np.ones(sum(int(np.prod(self._walker_shape(v))) for v in self._trainable_variables))
        return np.concatenate([np.ravel(s.numpy()) for s in self._scales])

    def metric_cholesky(self):
        """The dense metric's Cholesky factor L (numpy [d, d]; q = c + L z), or None."""
        return None if self._cholesky is None else self._cholesky.numpy()

    def metric_windows(self):
        """How many metric windows have updated the scales so far."""
        return 0 if not self.adapt_mass else float(self._metric_window.numpy()[0])
