"""HMC's warm-up (samplers/hmc.py): the step width, the metric and the leg length adapt at
every evaluation during the first `adaptation_steps` calls, one value for all walkers. The
equations are in samplers/adaptation.py; here is what HMC feeds them and when:

- the initial width's search (`_search_width`): legs of one step of exactly the probed width
  from the chain's state, h doubled or halved until the walkers' mean one-step acceptance
  min(1, exp(-beta dH)) crosses 0.5;
- dual averaging of log h (`_adapt`) on the mean acceptance probability of the walkers that
  decide, towards `target_acceptance_rate`; afterwards the average of the iterates;
- the metric (`_adapt_metric`): a scale s per parameter, s^4 = var(q) / var(beta grad U) over
  the legs' starts in windows counted in legs (adaptation.fisher_scale); kicks s grad U,
  drifts s p;
- the leg length T (`_adapt_time`): ChEES, gradient ascent on log T.

A leg uses the h, s and T of its start throughout, so each leg stays an exact proposal. The
state is in optimizer variables (their names are the checkpoint's), so a checkpoint continues it.
"""

import numpy as np
import tensorflow as tf

from tati.samplers import adaptation
from tati.samplers.metropolis import acceptance_probability


class LegAdaptation:
    """The warm-up part of HamiltonianMonteCarlo: its variables and one update of each
    adapted quantity per evaluation."""

    def _build_adaptation(self, variables):
        """The adaptation's variables (after the leg state's, in this order: the checkpoint
        names repeated ones by their order)."""
        if self.adapt_step_width:
            start = adaptation.dual_averaging_start(float(tf.convert_to_tensor(self.learning_rate).numpy()))
            self._dual_averaging = self.add_variable(
                (len(adaptation.DUAL_AVERAGING),), dtype="float64", name="dual_averaging",
                initializer=lambda shape, dtype: tf.cast(start, dtype))
        if self.preconditioner is not None:  # B already scales the moves; legs are cut to phases
            self.adapt_mass = self.adapt_trajectory_length = False
        # The initial width's search, where the width adapts (not with the ensemble's phases,
        # whose legs are cut to them).
        self.find_initial_width = self.adapt_step_width and self.preconditioner is None
        if self.find_initial_width:
            start = adaptation.initial_width_start(float(tf.convert_to_tensor(self.learning_rate).numpy()))
            self._initial_width = self.add_variable(
                (len(adaptation.INITIAL_WIDTH),), dtype="float64", name="initial_width",
                initializer=lambda shape, dtype: tf.cast(start, dtype))
        self._scales = None
        if self.adapt_mass or self.adapt_trajectory_length:
            # The metric's scale s per parameter, shared by the walkers: kicks s g, drifts s p.
            self._scales = [self.add_variable(self._walker_shape(v), dtype=v.dtype, name="metric_scale",
                                              initializer="ones") for v in variables]
        if self.adapt_mass:
            # Window number k, legs in the window, draws n, 1 once the last window closed; the
            # draws' mean and squared deviations, and those of their gradients (times beta).
            self._metric_window = self.add_variable((4,), dtype="float64", name="metric_window",
                                                    initializer="zeros")
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
        if self.adapt_trajectory_length:
            start = adaptation.chees_start(self._parameter_values["hamiltonian_dynamics_time"])
            self._chees = self.add_variable((len(adaptation.CHEES),), dtype="float64", name="chees",
                                            initializer=lambda shape, dtype: tf.cast(start, dtype))
            # The centre of the ChEES criterion, a moving average of leg starts (_adapt_time).
            self._chees_centres = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                     name="chees_centre", initializer="zeros")
                                   for v in variables]

    def _scale_values(self):
        """The metric's scales, one tensor per variable (None each without a metric)."""
        if self._scales is None:
            return [None] * len(self._trainable_variables)
        return [tf.convert_to_tensor(s) for s in self._scales]

    def _adapted_leg(self, width, steps, probing, probe_width):
        """The new legs' (width, steps) as the warm-up changes them: while T adapts, burn-in's
        legs are at most MAX_LEG_STEPS (as TFP's ChEES); a probe is one step of exactly the
        probed width."""
        if self.adapt_trajectory_length:
            adapting = tf.cast(self.iterations, tf.float64) < float(self.adaptation_steps)
            steps = tf.where(adapting, tf.minimum(steps, float(adaptation.MAX_LEG_STEPS)), steps)
        if self.find_initial_width:
            width = tf.where(probing, probe_width, width)
            steps = tf.where(probing, tf.ones_like(steps), steps)
        return width, steps

    def _search_width(self, energy_error, evaluate, probed, first):
        """The initial width's search (Hoffman & Gelman 2014, Algorithm 4; samplers/adaptation.py)
        at this evaluation: after the first call, probes of one step from the chain's state with
        fresh momenta, the width doubled or halved until the mean one-step acceptance
        min(1, exp(-beta dH)) crosses 0.5, pooled over the walkers as dual averaging is (one
        width for all; the mean of W walkers' acceptances is less noisy than one chain's, which
        Algorithm 4 takes). Once found, dual averaging starts from it. Returns ([W] bool: the
        new leg is a probe, the probe's width)."""
        f64 = tf.float64
        state = tf.convert_to_tensor(self._initial_width)
        weight = tf.cast(evaluate & probed, f64)
        probes = tf.reduce_sum(weight)
        acceptance = tf.reduce_sum(acceptance_probability(energy_error) * weight) / tf.maximum(probes, 1.0)
        # A probe started now ends at the next call: only if that is still in burn-in.
        go_on = tf.cast(self.iterations, f64) + 1.0 < float(self.adaptation_steps)
        updated = adaptation.initial_width_update(state, acceptance, go_on)
        state = tf.where(probes > 0, updated, state)
        probing = evaluate & (first | probed) & tf.equal(state[3], 0.0) & go_on
        # Found where nothing is left to probe (a burn-in too short to start: the user's width).
        done = tf.reduce_any(evaluate) & tf.logical_not(tf.reduce_any(probing))
        state = tf.where(done, tf.tensor_scatter_nd_update(state, [[3]], [1.0]), state)
        just_found = done & (probes > 0)
        width = tf.exp(state[2])
        self._dual_averaging.assign(tf.where(just_found, adaptation.dual_averaging_start(width),
                                             self._dual_averaging))
        self._initial_width.assign(state)
        return probing, width

    def found_step_width(self):
        """The initial width's search's result (float), or None before it ends or without it."""
        if not getattr(self, "find_initial_width", False):
            return None
        probes, _, log_width, found = self._initial_width.numpy()
        return float(np.exp(log_width)) if found and probes > 0 else None

    def _adapt(self, energy_error, deciding):
        """Dual averaging of the step width with this evaluation's decisions (during the first
        adaptation_steps calls); sets and returns the width of the new legs."""
        weight = tf.cast(deciding, tf.float64)
        decisions = tf.reduce_sum(weight)
        acceptance = tf.reduce_sum(acceptance_probability(energy_error) * weight) / tf.maximum(decisions, 1.0)
        adapting = tf.cast(self.iterations, tf.float64) < float(self.adaptation_steps)
        state = tf.convert_to_tensor(self._dual_averaging)
        updated = adaptation.dual_averaging_update(state, acceptance, self.target_acceptance_rate)
        state = tf.where(adapting & (decisions > 0), updated, state)
        self._dual_averaging.assign(state)
        h = adaptation.adapted_width(state, tf.logical_not(adapting))
        self._learning_rate.assign(tf.cast(h, self._learning_rate.dtype))
        return tf.cast(tf.cast(h, self._learning_rate.dtype), tf.float64)

    def _adapt_time(self, deciding, energy_error, s, variables, end_momenta, scales, h):
        """One ChEES step on the leg length T with the legs decided here (during the first
        adaptation_steps calls; samplers/adaptation.py); sets and returns T of the new legs.

        The centre m is a moving average of the walkers' mean leg start over the last
        CENTRE_LEGS legs or so, updated after the step: a centre that contained the leg's own start (the walkers'
        mean does, by 1/W) would correlate with it and push T towards anti-correlated legs,
        and a centre from few draws (another walker's state) adds their jump distance."""
        f64 = tf.float64
        weight = tf.where(deciding, acceptance_probability(energy_error), 0.0)
        total = tf.reduce_sum(weight)
        leg_time = s["leg_steps"] * s["leg_width"]
        state = tf.convert_to_tensor(self._chees)
        spread_change, heading, starts = [], [], []
        for v, q0, p, scale, centre in zip(variables, self._start_positions, end_momenta, scales, self._chees_centres):
            scale = tf.cast(scale, f64)
            start = tf.cast(tf.convert_to_tensor(q0), f64)
            starts.append(tf.reduce_mean(start, axis=0) if self._walkers is not None else start)
            centre = tf.convert_to_tensor(centre)
            start = (start - centre) / scale
            proposal = (tf.cast(tf.convert_to_tensor(v), f64) - centre) / scale
            spread_change.append(self._walker_sum(tf.square(proposal)) - self._walker_sum(tf.square(start)))
            heading.append(self._walker_sum(proposal * tf.cast(p, f64)))
        gradients = leg_time * tf.add_n(spread_change) * tf.add_n(heading)
        gradients = tf.where(tf.math.is_finite(gradients) & (weight > 0), gradients, 0.0)
        gradient = tf.reduce_sum(weight * gradients) / tf.maximum(total, 1e-300)
        adapting = tf.cast(self.iterations, f64) < float(self.adaptation_steps)
        decided = adapting & tf.reduce_any(deciding)
        centre_count = state[4] + 1.0
        centre_weight = 1.0 / tf.minimum(centre_count, adaptation.CENTRE_LEGS)  # 1 replaces the zeros
        for centre, start in zip(self._chees_centres, starts):
            centre.assign(tf.where(decided, centre + centre_weight * (start - centre), centre))
        updated = adaptation.chees_update(state, gradient, adaptation.MAX_LEG_STEPS * h)
        state = tf.where(decided & (total > 0), updated, state)
        state = tf.where(decided, tf.tensor_scatter_nd_update(state, [[4]], [centre_count]), state)
        self._chees.assign(state)
        time = tf.exp(tf.where(adapting, state[1], state[2]))
        self._parameter_variables["hamiltonian_dynamics_time"].assign(time)
        return time

    def _adapt_metric(self, deciding, chain_qs, steps, scales):
        """Collect the starts of the legs decided here, chain states q_0 with their gradients
        g_0 (the chain's states one leg late; `chain_qs`, the states after the decision, have
        no gradient here), into the metric's window, and close the window once it holds its
        legs (25, 50, 100, ...; the last one stretched to the end of the collection; the first
        closed by adaptation.FIRST_WINDOW_END of burn-in if it has MIN_METRIC_DRAWS draws;
        adaptation.LEG_METRIC_*): the scales become (var q / var beta g)^(1/4)
        (adaptation.fisher_scale), and the step width's and leg length's averages restart.
        Returns the scales of the new legs."""
        f64 = tf.float64
        now = tf.cast(self.iterations, f64)
        n = self.adaptation_steps
        index, legs, count, done = tf.unstack(tf.convert_to_tensor(self._metric_window))
        decided = tf.reduce_any(deciding)
        legs_left = (float(n) - now) / tf.reduce_max(steps)  # of the burn-in, at the current length
        # Before the first window closes, legs are as long as the unscaled target needs: their
        # count says little about the legs left.
        window_open = ((now < float(int(adaptation.LEG_METRIC_END * n))) & tf.equal(done, 0.0)
                       & ((legs_left > adaptation.TERMINAL_LEGS) | tf.equal(index, 0.0)))
        collecting = decided & window_open & (now >= float(int(adaptation.LEG_METRIC_START * n)))
        beta = tf.cast(self._parameter_variables["inverse_temperature"], f64)

        def collect(values, means, squares):
            """The window's running (count, means, squared deviations) with `values` added."""
            combined = [adaptation.welford_combine(count, tf.convert_to_tensor(mean), tf.convert_to_tensor(m2),
                                                   tf.cast(v if self._walkers is not None else v[None], f64))
                        for v, mean, m2 in zip(values, means, squares)]
            return (tf.where(collecting, combined[0][0], count),
                    [tf.where(collecting, new, old) for (_, new, _), old in zip(combined, means)],
                    [tf.where(collecting, new, old) for (_, _, new), old in zip(combined, squares)])
        new_count, means, squares = collect([tf.convert_to_tensor(q) for q in self._start_positions],
                                            self._metric_means, self._metric_squares)
        _, gradient_means, gradient_squares = collect(
            [beta * tf.cast(tf.convert_to_tensor(g), f64) for g in self._start_gradients],
            self._metric_gradient_means, self._metric_gradient_squares)
        count = new_count
        legs = legs + tf.cast(collecting, f64)
        target = adaptation.window_legs(index)
        last = decided & tf.logical_not(window_open) & (legs > 0)  # the collection ends
        # A burn-in of long legs (an unscaled target) may never hold the first window's 25: it
        # closes by FIRST_WINDOW_END of burn-in, for the rest to run in the new metric.
        first_due = (tf.equal(index, 0.0) & (now >= float(int(adaptation.FIRST_WINDOW_END * n)))
                     & (count >= adaptation.MIN_METRIC_DRAWS))
        close = (collecting & (((legs >= target)
                                & ((legs_left - adaptation.TERMINAL_LEGS >= 2.0 * target) | tf.equal(index, 0.0)))
                               | first_due)) | last
        candidates = [tf.cast(adaptation.fisher_scale(m2, g_m2, tf.cast(scale, f64)), scale.dtype)
                      for m2, g_m2, scale in zip(squares, gradient_squares, scales)]
        growths = tf.concat([tf.reshape(tf.cast(new / old, f64), [-1]) for new, old in zip(candidates, scales)], 0)
        smallest, largest = (tf.maximum(tf.reduce_min(growths), 1e-300), tf.maximum(tf.reduce_max(growths), 1e-300))
        # The legs left after the window at the width h / smallest and time T / largest as
        # restarted below (where they adapt); too few, and the width would be frozen at its
        # restart, untried.
        shorter = ((smallest if self.adapt_step_width else 1.0)
                   / (largest if self.adapt_trajectory_length else 1.0))
        legs_after = (float(n) - now) / tf.maximum(tf.reduce_max(steps) * shorter, 1.0)
        update = close & (count >= adaptation.MIN_METRIC_DRAWS) & (legs_after >= adaptation.MIN_LEGS_AFTER_WINDOW)
        new_scales = [tf.where(update, new, scale) for new, scale in zip(candidates, scales)]
        for variable, value in zip(self._scales, new_scales):
            variable.assign(value)
        for variable, value in zip(self._metric_means + self._metric_squares + self._metric_gradient_means
                                   + self._metric_gradient_squares,
                                   means + squares + gradient_means + gradient_squares):
            variable.assign(tf.where(close, tf.zeros_like(value), value))
        done = tf.where(last, tf.ones_like(done), done)
        self._metric_window.assign(tf.where(close, tf.stack([index + tf.cast(update, f64), 0.0, 0.0, done]),
                                            tf.stack([index, legs, count, done])))
        if self.adapt_step_width:
            self._dual_averaging.assign(adaptation.dual_averaging_restart(self._dual_averaging, update, smallest))
        if self.adapt_trajectory_length:
            self._chees.assign(adaptation.chees_restart(self._chees, update, largest,
                                                        self._parameter_values["hamiltonian_dynamics_time"]))
        return new_scales

    def metric_scales(self):
        """The metric's scale s of every parameter (numpy, flat, one walker's), ones without."""
        if self._scales is None:
            return np.ones(sum(int(np.prod(self._walker_shape(v))) for v in self._trainable_variables))
        return np.concatenate([np.ravel(s.numpy()) for s in self._scales])

    def metric_windows(self):
        """How many metric windows have updated the scales so far."""
        return 0 if not self.adapt_mass else float(self._metric_window.numpy()[0])
