"""Hamiltonian Monte Carlo (Duane et al. 1987; Neal 2011): HMC1 (symplectic Euler) and HMC2
(leapfrog), with the accept/reject step inside the compiled graph.

Target exp(-beta H), H(q, p) = U(q) + |p|^2 / 2. One *leg* from the chain's state q_0:

    p_0 ~ N(0, I / beta)                                        (momenta redrawn)
    L steps of width h of a volume-preserving integrator:
        HMC2 (leapfrog, BAB):  p <- p - h/2 grad U(q);  q <- q + h p;  p <- p - h/2 grad U(q)
        HMC1 (symplectic Euler): BA  (p <- p - h grad U(q); q <- q + h p)  or  AB, each with
                                 probability 1/2 per leg
    accept (q_L, p_L) with probability min(1, exp(-beta (H(q_L, p_L) - H(q_0, p_0)))),
    otherwise the chain stays at q_0.

HMC1: symplectic Euler is not time-reversible, but BA and AB are each other's time reverse,
so choosing one of them at random per leg makes the proposal reversible and the chain exact
(the original TATi always used BA).

Randomised legs (seeded, per leg, independent of the state): h uniform in [0.7, 1.3] times
`step_width`, drawn per walker, and L = max(1, round(u T / step_width)) with u uniform in
[0.9, 1.1] and T = `hamiltonian_dynamics_time`, drawn per leg and shared by the walkers. This
avoids the resonances that make fixed-length HMC non-ergodic. With L shared, all walkers end
their legs at the same steps: the steps between are bare kicks and drifts for every walker
(with lengths per walker nearly every step would end some walker's leg), and a walker's steps
are made by the same code path whatever the number of walkers, so its results do not depend
on it. A sequence of L independent of the states keeps every chain exact, and given it the
walkers' chains are independent.

Gradient economy: one optimizer call = one gradient. A leg of L steps takes L calls: every
kick between two drifts merges the halves (or the whole) of two neighbouring steps, and the
call that receives grad U(q_L) first completes the leg's last kick, decides, redraws p and
starts the next leg with the same gradient (or the cached grad U(q_0) after a rejection):

    evaluation call, given U(q), grad U(q):
        complete the last kick: p_L = p - (1 - c) h_prev grad U(q)
        decide between q (= q_L) and q_0 with the energies; (q_a, U_a, grad_a) := the winner
        p ~ N(0, I / beta);  H_old = U_a + |p|^2 / 2;  h, L, c of the new leg
        p <- p - c h grad_a;  q <- q_a + h p
    integration call, given U(q), grad U(q):
        p <- p - h grad U(q);  q <- q + h p      (U(q) itself is not needed, see below)
    with the first-kick fraction c = 1/2 for leapfrog, 1 for BA and 0 for AB.

`apply` is one call for every walker, each evaluating or integrating. Where no walker's leg
ends (`free_steps`), the calls are integration calls only: the compiled loop runs them with
`integrate`, a bare kick-and-drift loop like TFP's leapfrog, and all bookkeeping happens at
the evaluations.

Only the gradient moves a leg: whatever U is along the way, the leg is a reversible,
volume-preserving map of (q, p), so the decision needs U at the leg's ends only (`integrate`
takes the gradients alone, and the graph drops the unused forward value). A leg may
cross a region where U is not finite but its gradient is (a tf.where guard): the proposal is
still exact, and rejected if it ends there. A non-finite gradient makes p non-finite for the
rest of the leg (p <- p - h grad U stays NaN or infinite), so the proposal's energy is not
finite and the evaluation rejects it. No NaN ever reaches the chain's state.

Each walker (leading axis of the variables, with `walker_axis`) has its own legs, draws and
decisions. With the ensemble preconditioner (`preconditioner`, samplers/ensemble.py) the kicks
use B^T grad U and the drifts B p, and the halves take turns in phases of `every` calls: a
moving walker's legs are cut to end by its phase's last call (lengths depend on the iteration
only), and that evaluation pauses it (step width 0) until its next phase, which starts from the
stored chain state without a decision. So B, refreshed at each phase's first call from the
standing half's chain states, is fixed during every leg and independent of the moving walkers.
The loss must be given before each call: `sampler.set_loss(loss)` (the Simulation does so);
`model.fit` cannot, so HMC is for the Simulation or a user's own loop.

Adaptation during the first `adaptation_steps` calls (the Simulation gives burn_in_steps;
samplers/adaptation.py has the equations), at every evaluation, one value for all walkers:
- the step width h (adapt_step_width): first a search from `step_width` (`_search_width`:
  legs of one step of exactly the probed width, not decisions, always returned from and
  without rows, the width doubled or halved until the walkers' mean one-step acceptance
  crosses 0.5); then the mean acceptance probability min(1, exp(-beta (H_new - H_old))) of
  the walkers that decide there drives log h by dual averaging towards
  `target_acceptance_rate` (0.8), as NUTS and RWMH; afterwards the average of the iterates;
- the metric (adapt_mass): a scale s per parameter, the standard deviation of the chain states
  in Stan-like windows counted in legs. Kicks and drifts become p <- p - h s grad U and
  q <- q + h s p, i.e. the leapfrog of z = q / s with unit mass, or of q with the mass matrix
  diag(1 / s^2); kinetic energies stay |p|^2 / 2 in the tables;
- the leg length T (adapt_trajectory_length, `hamiltonian_dynamics_time` its start): gradient
  ascent on log T along the ChEES criterion of the legs' starts and proposals in z.
A leg uses the h, s and T of its start throughout, so each leg is still an exact proposal; only
the choices between legs depend on the past, as in every warm-up, and they are frozen after
it. Neither s nor T adapts with the ensemble preconditioner, which already scales the moves.
The state is in optimizer variables, so a checkpoint continues it.

The chain's state and its report (`chain_report`) change only at evaluations: loss, accuracy,
positions q_a and gradient grad_a of the current state, kinetic energy of the redrawn momenta,
the energies of the last decision, and counts of accepted, rejected and divergent legs (with a
burn-in, `adaptation_steps`, counted anew from the first leg decided after it). The very
first call has no proposal to decide on: it takes the initial state as the chain's first
state and is not counted in the rejection rate.
"""

import keras
import numpy as np
import tensorflow as tf

from tati.errors import InputError
from tati.names import target_acceptance
from tati import options as option_table
from tati.options import default
from tati.samplers import adaptation
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.metropolis import acceptance_probability, metropolis

STEP_WIDTH_JITTER = (0.7, 1.3)
# What the evaluation at a leg's end does: the first call (or the first after restart()) takes the
# variables' values as the chain's state; a leg is decided; a pause (a standing walker of the
# ensemble's halves) keeps the stored chain state. None of them but LEG is a decision.
FIRST, LEG, PAUSE = 0.0, 1.0, 2.0
# A probe of the initial width's search: one step of the probed width from the chain's state,
# always returned from (not a decision, no row).
PROBE = 3.0
LEG_LENGTH_JITTER = (0.9, 1.1)

# Per-walker state, read and written once per apply (not by integrate): the leg (the iteration
# of its evaluation, width, first-kick fraction, kind), the chain's state and report, the last
# decision's energies and the counters. Each group is the rows of one [rows, W] variable: no
# group has more than 8 rows, because XLA on the CPU stacks more than 8 pieces of more than 64
# numbers in all through a slow path (about 135 us instead of 1, from 4 walkers on).
_STATE_GROUPS = (("leg_end", "leg_width", "first_kick", "leg_kind", "leg_steps"),
                 ("evaluated", "legs", "loss", "accuracy", "old_total_energy", "decided_old_total_energy",
                  "total_energy", "kinetic_energy"),
                 ("momentum_sq", "virial", "gradient_sq", "accepted", "rejected", "divergences", "counting_after"))
_STATE = sum(_STATE_GROUPS, ())


class HamiltonianMonteCarlo(SamplerBase):
    """HMC with in-graph accept/reject; subclasses choose the integrator by `first_kicks`."""

    parameters = ("inverse_temperature", "hamiltonian_dynamics_time")
    metropolis = True
    find_initial_width = False  # set by build()
    # The first kick's fraction c of the step width, one drawn at random per leg.
    first_kicks = (0.5,)
    hamiltonian_dynamics_time = parameter_property(
        "hamiltonian_dynamics_time", "T: the length in time of one leg (randomised).")

    def __init__(self, step_width=default("step_width"),
                 hamiltonian_dynamics_time=default("hamiltonian_dynamics_time"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 adaptation_steps=0, target_acceptance_rate=None, adapt_step_width=True, adapt_mass=False,
                 adapt_trajectory_length=False, name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, hamiltonian_dynamics_time=hamiltonian_dynamics_time,
            inverse_temperature=inverse_temperature))
        self._loss_given = False
        self.adaptation_steps = option_table.check("burn_in_steps", adaptation_steps)
        self.target_acceptance_rate = target_acceptance(
            type(self).__name__, option_table.check("target_acceptance_rate", target_acceptance_rate))
        # All three only during an adaptation; mass and leg length not with the ensemble
        # preconditioner (build()).
        self.adapt_step_width = bool(adapt_step_width) and self.adaptation_steps > 0
        self.adapt_mass = bool(adapt_mass) and self.adaptation_steps >= adaptation.MIN_LEG_METRIC_BURN_IN
        self.adapt_trajectory_length = bool(adapt_trajectory_length) and self.adaptation_steps > 0

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        size = 1 if self._walkers is None else self._walkers
        self._state = [self.add_variable((len(group), size), dtype="float64", name=f"hmc_state_{k}")
                       for k, group in enumerate(_STATE_GROUPS)]
        self._start_positions = [self.add_variable_from_reference(v, name="start_position") for v in variables]
        self._start_gradients = [self.add_variable_from_reference(v, name="start_gradient") for v in variables]
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
            # draws' mean and squared deviations.
            self._metric_window = self.add_variable((4,), dtype="float64", name="metric_window",
                                                    initializer="zeros")
            self._metric_means = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                    name="metric_mean", initializer="zeros") for v in variables]
            self._metric_squares = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                      name="metric_squares", initializer="zeros")
                                    for v in variables]
        if self.adapt_trajectory_length:
            start = adaptation.chees_start(self._parameter_values["hamiltonian_dynamics_time"])
            self._chees = self.add_variable((len(adaptation.CHEES),), dtype="float64", name="chees",
                                            initializer=lambda shape, dtype: tf.cast(start, dtype))
            # The centre of the ChEES criterion, a moving average of leg starts (_adapt_time).
            self._chees_centres = [self.add_variable(self._walker_shape(v), dtype="float64",
                                                     name="chees_centre", initializer="zeros")
                                   for v in variables]

    def _walker_shape(self, variable):
        """The shape of one walker's part of the variable."""
        shape = tuple(variable.shape)
        return shape[1:] if self._walkers is not None else shape

    def _rows(self):
        """The per-walker state as a dict of [W] tensors."""
        return dict(zip(_STATE, sum((tf.unstack(v) for v in self._state), [])))

    def _row(self, name):
        """One row of the per-walker state, [W]."""
        group = next(i for i, g in enumerate(_STATE_GROUPS) if name in g)
        return self._state[group][_STATE_GROUPS[group].index(name)]

    def _write(self, rows):
        """Assign the per-walker state from a dict of [W] tensors."""
        for variable, group in zip(self._state, _STATE_GROUPS):
            variable.assign(tf.stack([rows[name] for name in group]))

    # -- the loss ------------------------------------------------------------------------------
    def set_loss(self, loss, accuracy=None):
        """U at the variables' current values (shape [W] with walker_axis, else a scalar), to be
        given before every apply; `accuracy` optionally, reported with the chain's state."""
        self._given = (loss, accuracy)
        self._loss_given = True

    def restart(self):
        """Make the next call take the variables' values as the chain's state (after the user
        set new parameters)."""
        if self.built:
            now = tf.cast(self.iterations, tf.float64)
            rows = self._rows()
            rows.update(leg_end=tf.fill(tf.shape(rows["leg_end"]), now),
                        leg_kind=tf.fill(tf.shape(rows["leg_kind"]), tf.constant(FIRST, tf.float64)))
            self._write(rows)

    # -- calls ---------------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None):
        """One call for every walker: it evaluates where its leg ends, else integrates."""
        variables = self._trainable_variables if trainable_variables is None else list(trainable_variables)
        if not self.built:
            self.build(variables)
            self.built = True
        if not self._loss_given:
            raise InputError(f"{type(self).__name__} needs the loss of each step: call "
                             "sampler.set_loss(loss) before apply_gradients")
        self._loss_given = False
        loss, accuracy = self._given
        self._call(loss, accuracy, [tf.convert_to_tensor(g) for g in grads], variables)
        self.iterations.assign_add(1)
        return self.iterations

    def free_steps(self):
        """How many of the coming calls are integration calls for every walker."""
        leg_end = tf.reduce_min(self._row("leg_end"))
        return tf.cast(leg_end - tf.cast(self.iterations, tf.float64), tf.int32)

    def integrate(self, steps, gradients, variables):
        """`steps` (at most free_steps()) calls as apply would do them, at a fraction of the
        cost: p <- p - h grad U(q); q <- q + h p for every walker, h its leg's step width.
        `gradients(positions)` gives grad U at the positions (tensors, one per variable; no
        set_loss needed). Positions and momenta are loop tensors, written back to the
        variables once, after the loop."""
        width = self._row("leg_width")
        widths = [tf.cast(self._broadcast(width, v), v.dtype) for v in variables]
        scales = self._scale_values()

        def kick_and_drift(i, positions, momenta):
            grads = gradients(positions)
            moved_q, moved_p = [], []
            for g, q, p, h, s in zip(grads, positions, momenta, widths, scales):
                p = p - h * self._kick(g, s)
                moved_p.append(p)
                moved_q.append(q + h * self._drift(p, s))
            return i + 1, moved_q, moved_p

        _, positions, momenta = tf.while_loop(
            lambda i, positions, momenta: i < steps, kick_and_drift,
            (tf.constant(0), [tf.convert_to_tensor(v) for v in variables],
             [tf.convert_to_tensor(self._momentum(v)) for v in variables]))
        for v, q, p in zip(variables, positions, momenta):
            v.assign(q)
            self._momentum(v).assign(p)
        self.iterations.assign_add(tf.cast(steps, self.iterations.dtype))

    # -- helpers -------------------------------------------------------------------------------
    def _scale_values(self):
        """The metric's scales, one tensor per variable (None each without a metric)."""
        if self._scales is None:
            return [None] * len(self._trainable_variables)
        return [tf.convert_to_tensor(s) for s in self._scales]

    def _kick(self, gradient, scale):
        """The force of a kick: s B^T grad U (s the metric's scale, B the preconditioner)."""
        force = self._force(gradient)
        return force if scale is None else scale * force

    def _drift(self, momentum, scale):
        """The velocity of a drift: s B p."""
        velocity = self._velocity(momentum)
        return velocity if scale is None else scale * velocity

    def _walker_values(self, value):
        """A scalar or [W] value as [W] (or [1]) float64."""
        value = tf.cast(value, tf.float64)
        return value if value.shape.rank == 1 else tf.reshape(value, [-1])

    def _walker_sum(self, values):
        return self._walker_values(self._sum(values))

    def _broadcast(self, value, variable):
        """A [W] (or [1]) per-walker value shaped to broadcast against the variable."""
        if self._walkers is None:
            return tf.reshape(value, [])
        return self._per_walker(value, variable)

    def _schedule(self, now, steps, width):
        """(leg_end, leg_kind, leg_width) [W] of the legs that start at iteration `now`: `steps`
        long; with the ensemble's halves (see walkers.md) cut at the end of the walker's phase,
        or, where the walker stands (or its phase ends now), a pause of width 0 until its half
        moves again. Lengths depend on the iteration only, never on the state."""
        if self.preconditioner is None:
            return now + steps, tf.fill(tf.shape(now), tf.constant(LEG, tf.float64)), width
        every = float(self.preconditioner.every)
        parity = tf.cast(self.preconditioner.parity, tf.float64)
        phase = tf.floor(now / every)
        last = (phase + 1.0) * every - 1.0  # the phase's last call
        moving = tf.equal(tf.math.floormod(phase, 2.0), parity)
        pause = tf.logical_not(moving) | (now >= last)
        resume = tf.where(tf.equal(tf.math.floormod(phase + 1.0, 2.0), parity),
                          (phase + 1.0) * every, (phase + 2.0) * every)
        return (tf.where(pause, resume, now + tf.minimum(steps, last - now)),
                tf.where(pause, tf.constant(PAUSE, tf.float64), LEG), tf.where(pause, tf.zeros_like(width), width))

    # -- one call for every walker -------------------------------------------------------------
    def _call(self, loss, accuracy, grads, variables):
        """apply's work: per walker the energies, the decision and the new leg where it evaluates,
        then per variable the moves; the state is written once, as one where over its rows."""
        s = self._rows()
        beta = tf.cast(self._parameter_variables["inverse_temperature"], tf.float64)
        h = tf.cast(self.learning_rate, tf.float64)
        loss = self._walker_values(loss)
        decides = tf.equal(s["leg_kind"], LEG)
        first = tf.equal(s["leg_kind"], FIRST)
        paused = tf.equal(s["leg_kind"], PAUSE)
        evaluate = tf.equal(s["leg_end"], tf.cast(self.iterations, tf.float64))
        momenta = [tf.convert_to_tensor(self._momentum(v)) for v in variables]
        scales = self._scale_values()  # the metric of the legs that end here

        # Energy of the proposal, after the leg's last kick with this gradient.
        last_kick = (1.0 - s["first_kick"]) * s["leg_width"]
        kicks = [tf.cast(self._broadcast(last_kick, v), v.dtype) for v in variables]
        end_momenta = [p - kick * self._kick(g, scale) for g, p, kick, scale in zip(grads, momenta, kicks, scales)]
        kinetic = 0.5 * tf.add_n([self._walker_sum(tf.square(p)) for p in end_momenta])
        total_energy = loss + kinetic
        energy_error = beta * (total_energy - s["old_total_energy"])
        # The evaluation's uniforms are stream 0 of index 0, the momenta stream 1 of each variable.
        # Walker-major ([W, 4]), so that walker w's numbers do not depend on how many walkers there are.
        uniforms = self._philox(tf.raw_ops.StatelessRandomUniformV2, tuple(self._state[0].shape[1:]) + (4,),
                                tf.float64, 0, 0, walker_numbers=4)
        u_accept, u_width, u_length, u_kick = tf.unstack(uniforms, axis=1)  # this decision's and the new leg's
        if self.first_walker:  # the run's first walker's (its row, no skip): one leg length for all
            u_length = self._philox(tf.raw_ops.StatelessRandomUniformV2, (1, 4), tf.float64, 0, 0)[:, 2]
        u_length = tf.broadcast_to(u_length[0], tf.shape(u_accept))  # one leg length for all walkers
        accepted, divergent = metropolis(energy_error, u_accept)
        accept = (accepted & decides) | first  # where the chain's state becomes q
        probed = tf.equal(s["leg_kind"], PROBE)
        probing = tf.zeros_like(decides)  # where the new leg is a probe of the initial width's search
        if self.find_initial_width:  # before dual averaging, which starts at the width found
            probing, probe_width = self._search_width(energy_error, evaluate, probed, first)
        if self.adapt_step_width:  # the new legs take the adapted width
            h = self._adapt(energy_error, decides & evaluate)
        # The chain's state after the decision, for the walkers that evaluate.
        at_acceptances = [self._broadcast(evaluate & accept, v) for v in variables]
        chain_qs = [tf.where(a, tf.convert_to_tensor(v), q0) for a, v, q0 in
                    zip(at_acceptances, variables, self._start_positions)]
        time = tf.cast(self._parameter_variables["hamiltonian_dynamics_time"], tf.float64)
        if self.adapt_trajectory_length:
            time = self._adapt_time(decides & evaluate, energy_error, s, variables, end_momenta, scales, h)

        # The state of a walker that evaluates: the decision (only after a leg), the chain's
        # state and the new leg. The end of a pause repeats a state: no row, no average.
        decided = tf.cast(decides, tf.float64)
        shown = 1.0 - tf.cast(paused | probed, tf.float64)
        evaluating = dict(s, evaluated=shown, legs=s["legs"] + shown)
        # The counts start again with the first leg decided after burn-in (as NUTS's).
        after_burn_in = tf.cast(self.iterations, tf.float64) >= float(self.adaptation_steps)
        anew = decides & after_burn_in & tf.equal(s["counting_after"], 0.0) & (self.adaptation_steps > 0)
        counts = {name: tf.where(anew, tf.zeros_like(s[name]), s[name]) for name in ("accepted", "rejected", "divergences")}
        evaluating["counting_after"] = tf.where(decides & after_burn_in, tf.ones_like(loss), s["counting_after"])
        evaluating["accepted"] = counts["accepted"] + decided * tf.cast(accepted, tf.float64)
        evaluating["rejected"] = counts["rejected"] + decided * tf.cast(tf.logical_not(accepted), tf.float64)
        evaluating["divergences"] = counts["divergences"] + decided * tf.cast(divergent, tf.float64)
        # A proposal with a non-finite energy is reported as +inf (it was rejected).
        reported = tf.where(tf.math.is_finite(energy_error), total_energy, float("inf"))
        evaluating["total_energy"] = tf.where(decides, reported, s["total_energy"])
        evaluating["decided_old_total_energy"] = tf.where(decides, s["old_total_energy"],
                                                          s["decided_old_total_energy"])
        evaluating["loss"] = tf.where(accept, loss, s["loss"])
        if accuracy is not None:
            evaluating["accuracy"] = tf.where(accept, self._walker_values(accuracy), s["accuracy"])
        low, high = STEP_WIDTH_JITTER
        evaluating["leg_width"] = h * (low + (high - low) * u_width)
        low, high = LEG_LENGTH_JITTER
        steps = tf.maximum(tf.round((low + (high - low) * u_length) * time / h), 1.0)
        if self.adapt_trajectory_length:  # burn-in's legs at most MAX_LEG_STEPS, as TFP's ChEES
            adapting = tf.cast(self.iterations, tf.float64) < float(self.adaptation_steps)
            steps = tf.where(adapting, tf.minimum(steps, float(adaptation.MAX_LEG_STEPS)), steps)
        if self.find_initial_width:  # a probe is one step of exactly the probed width
            evaluating["leg_width"] = tf.where(probing, probe_width, evaluating["leg_width"])
            steps = tf.where(probing, tf.ones_like(steps), steps)
        evaluating["leg_steps"] = steps
        new_scales = scales
        if self.adapt_mass:
            new_scales = self._adapt_metric(decides & evaluate, chain_qs, steps, scales)
        evaluating["leg_end"], evaluating["leg_kind"], evaluating["leg_width"] = self._schedule(
            s["leg_end"], steps, evaluating["leg_width"])
        evaluating["leg_kind"] = tf.where(probing, tf.fill(tf.shape(probing), tf.constant(PROBE, tf.float64)),
                                          evaluating["leg_kind"])
        if len(self.first_kicks) == 1:  # no choice to draw (leapfrog)
            evaluating["first_kick"] = tf.fill(tf.shape(u_kick), tf.constant(self.first_kicks[0], tf.float64))
        else:
            choice = tf.minimum(tf.cast(u_kick * len(self.first_kicks), tf.int32), len(self.first_kicks) - 1)
            evaluating["first_kick"] = tf.gather(tf.constant(self.first_kicks, tf.float64), choice)

        # Per variable: evaluation (chain state, fresh momenta, the new leg's first kick and
        # drift) or integration (a whole kick, two halves for leapfrog, and a drift).
        width = tf.where(evaluate, evaluating["leg_width"], s["leg_width"])
        first_kick = evaluating["first_kick"] * evaluating["leg_width"]
        fresh_sq, virial, gradient_sq = [], [], []  # per variable, [W] each
        for index, (g, v, momentum) in enumerate(zip(grads, variables, momenta)):
            dtype = v.dtype
            at_evaluation = self._broadcast(evaluate, v)
            q, chain_q = tf.convert_to_tensor(v), chain_qs[index]
            chain_g = tf.where(at_acceptances[index], g, self._start_gradients[index])
            fresh = self._normal(v, stream=1) / tf.sqrt(tf.cast(beta, dtype))
            h_v = tf.cast(self._broadcast(width, v), dtype)
            new_scale, scale = new_scales[index], scales[index]
            p = tf.where(at_evaluation,
                         fresh - tf.cast(self._broadcast(first_kick, v), dtype) * self._kick(chain_g, new_scale),
                         momentum - h_v * self._kick(g, scale))
            self._momentum(v).assign(p)
            if new_scale is scale:
                v.assign(tf.where(at_evaluation, chain_q, q) + h_v * self._drift(p, scale))
            else:  # a metric window may close here
                v.assign(tf.where(at_evaluation, chain_q + h_v * self._drift(p, new_scale),
                                  q + h_v * self._drift(p, scale)))
            self._start_positions[index].assign(chain_q)
            self._start_gradients[index].assign(chain_g)
            fresh_sq.append(self._walker_sum(tf.square(fresh)))
            virial.append(self._walker_sum(chain_q * chain_g))
            gradient_sq.append(self._walker_sum(tf.square(chain_g)))
        fresh_sq, virial, gradient_sq = tf.add_n(fresh_sq), 0.5 * tf.add_n(virial), tf.add_n(gradient_sq)

        # H_old of the new leg: the chain state's loss plus the fresh momenta's kinetic energy.
        evaluating.update(kinetic_energy=0.5 * fresh_sq, momentum_sq=fresh_sq,
                          old_total_energy=evaluating["loss"] + 0.5 * fresh_sq)
        # The chain's state changes only at evaluations, so its virial and |grad|^2 serve both.
        evaluating.update(virial=virial, gradient_sq=gradient_sq)
        integrating = dict(s, evaluated=tf.zeros_like(loss), virial=virial, gradient_sq=gradient_sq)
        for variable, group in zip(self._state, _STATE_GROUPS):
            variable.assign(tf.where(evaluate, tf.stack([evaluating[name] for name in group]),
                                     tf.stack([integrating[name] for name in group])))

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
        """Collect the chain states decided here into the metric's window and close the window
        once it holds its legs (25, 50, 100, ...; the last one stretched to the end of the
        collection, adaptation.LEG_METRIC_*): the scales become the draws' (shrunk) standard
        deviations, and the step width's and leg length's averages restart. Returns the scales
        of the new legs."""
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
        new_count, means, squares = count, [], []
        for q, mean, m2 in zip(chain_qs, self._metric_means, self._metric_squares):
            draws = tf.cast(q if self._walkers is not None else q[None], f64)
            new_count, new_mean, new_m2 = adaptation.welford_combine(count, tf.convert_to_tensor(mean),
                                                                     tf.convert_to_tensor(m2), draws)
            means.append(tf.where(collecting, new_mean, mean))
            squares.append(tf.where(collecting, new_m2, m2))
        count = tf.where(collecting, new_count, count)
        legs = legs + tf.cast(collecting, f64)
        target = adaptation.window_legs(index)
        last = decided & tf.logical_not(window_open) & (legs > 0)  # the collection ends
        close = (collecting & (legs >= target)
                 & ((legs_left - adaptation.TERMINAL_LEGS >= 2.0 * target) | tf.equal(index, 0.0))) | last
        candidates = [tf.cast(adaptation.shrunk_scale(count, m2, tf.cast(scale, f64)), scale.dtype)
                      for m2, scale in zip(squares, scales)]
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
        for variable, value in zip(self._metric_means + self._metric_squares, means + squares):
            variable.assign(tf.where(close, tf.zeros_like(value), value))
        done = tf.where(last, tf.ones_like(done), done)
        self._metric_window.assign(tf.where(close, tf.stack([index + tf.cast(update, f64), 0.0, 0.0, done]),
                                            tf.stack([index, legs, count, done])))
        if self.adapt_step_width:
            self._dual_averaging.assign(adaptation.dual_averaging_restart(self._dual_averaging, update, smallest))
        if self.adapt_trajectory_length:
            self._chees.assign(adaptation.chees_restart(self._chees, update, largest))
        return new_scales

    def get_config(self):
        config = super().get_config()
        config.update(adaptation_steps=self.adaptation_steps, target_acceptance_rate=self.target_acceptance_rate,
                      adapt_step_width=self.adapt_step_width, adapt_mass=self.adapt_mass,
                      adapt_trajectory_length=self.adapt_trajectory_length)
        return config

    # -- what the tables read ------------------------------------------------------------------
    def chain_report(self):
        """The chain's current state per walker ([W] float64 each): loss, accuracy, kinetic
        energy and |p|^2 of the redrawn momenta, virial 1/2 q_a . grad_a and |grad_a|^2, the
        energies of the last decision, counts, and `evaluated` (1 where the last apply evaluated)."""
        s = self._rows()
        report = {name: s[name] for name in (
            "loss", "accuracy", "kinetic_energy", "momentum_sq", "total_energy", "evaluated",
            "virial", "gradient_sq", "accepted", "rejected", "divergences", "legs")}
        report["old_total_energy"] = s["decided_old_total_energy"]
        decisions = report["accepted"] + report["rejected"]
        report["rejection_rate"] = tf.math.divide_no_nan(report["rejected"], decisions)
        return report

    def metric_scales(self):
        """The metric's scale s of every parameter (numpy, flat, one walker's), ones without."""
        if self._scales is None:
            return np.ones(sum(int(np.prod(self._walker_shape(v))) for v in self._trainable_variables))
        return np.concatenate([np.ravel(s.numpy()) for s in self._scales])

    def metric_windows(self):
        """How many metric windows have updated the scales so far."""
        return 0 if not self.adapt_mass else float(self._metric_window.numpy()[0])

    def chain_positions(self):
        """The chain's current positions, one tensor per variable: the last accepted state, or
        the variables' values before the first evaluation (after build or restart())."""
        first = tf.equal(self._row("leg_kind"), FIRST)
        return [tf.where(self._broadcast(first, v), v, q) for v, q in zip(self._trainable_variables,
                                                                        self._start_positions)]


@keras.saving.register_keras_serializable(package="tati")
class HMC1(HamiltonianMonteCarlo):
    """HMC with symplectic Euler legs, BA or AB at random per leg (first-order energy error)."""
    first_kicks = (1.0, 0.0)


@keras.saving.register_keras_serializable(package="tati")
class HMC2(HamiltonianMonteCarlo):
    """HMC with leapfrog legs (second-order energy error)."""
    first_kicks = (0.5,)
