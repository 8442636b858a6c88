"""Hamiltonian Monte Carlo (Duane et al. 1987; Neal 2011): HMC1 (symplectic Euler) and HMC2
(leapfrog), with the accept/reject step inside the compiled graph.

Target exp(-beta H), H(q, p) = U(q) + |p|^2 / 2. One *leg* from the chain's state q_0, with
the split steps of dynamics/splitting.py (B: kick, A: drift):

    p_0 ~ N(0, I / beta)                                        (fresh_momentum)
    L steps of width h' of a volume-preserving integrator:
        HMC2 (leapfrog, BAB):    p <- p - h'/2 grad U(q);  q <- q + h' p;  p <- p - h'/2 grad U(q)
        HMC1 (symplectic Euler): BA (p <- p - h' grad U(q); q <- q + h' p) or AB, each with
                                 probability 1/2 per leg
    accept (q_L, p_L) with probability min(1, exp(-beta (H(q_L, p_L) - H(q_0, p_0))))
    (dynamics/metropolis.py), otherwise the chain stays at q_0.

HMC1: symplectic Euler is not time-reversible, but BA and AB are each other's time reverse,
so choosing one of them at random per leg makes the proposal reversible and the chain exact
(the original TATi always used BA).

Legs (dynamics/hmc_legs.py): h' uniform in [0.7, 1.3] h per walker and L = max(1, round(u T / h)),
u uniform in [0.9, 1.1], one per leg for all walkers (T = `hamiltonian_dynamics_time`): seeded,
independent of the state, so every chain stays exact, and randomised against the resonances
that make fixed-length HMC non-ergodic. With L shared, all walkers end their legs at the same
steps: the steps between are bare kicks and drifts for every walker, and a walker's steps are
made by the same code path whatever the number of walkers, so its results do not depend on it.

Gradient economy: one optimizer call = one gradient, L calls per leg. Kicks between two drifts
merge, and the call that receives grad U(q_L) completes the leg's last kick, decides, redraws
p and starts the next leg with the same gradient (or the cached grad U(q_0) after a rejection).
With F(g) = s B^T g and V(p) = s B p (the diagonal metric's scale s, the ensemble's
preconditioner B; both 1 without), or with metric="dense" F(g) = L^T g and V(p) = L p (L the
dense metric's Cholesky factor, identity until adapted; no B), and the first kick's fraction c
(1/2 for leapfrog, 1 for BA, 0 for AB):

    evaluation call (`evaluate`), given U(q), grad U(q):
        p_L = p - (1 - c) h'_prev F(grad U(q))                  complete the last kick (B)
        accepted = u < exp(-beta (U(q) + |p_L|^2/2 - H_old))    (metropolis.py)
        (q_a, U_a, g_a) := (q, U(q), grad U(q)) if accepted, else the stored (q_0, U_0, g_0)
        p ~ N(0, I / beta);  H_old = U_a + |p|^2 / 2;  h', L, c of the new leg
        p <- p - c h' F(g_a);  q <- q_a + h' V(p)               the new leg's first B and A
    integration call, given grad U(q):
        p <- p - h' F(grad U(q));  q <- q + h' V(p)             B and A (`integrate`)

`apply` is one call for every walker, each evaluating or integrating. Where no walker's leg
ends (`free_steps`) the compiled loop runs `integrate`, a bare kick-and-drift loop like TFP's
leapfrog, and all bookkeeping happens at the evaluations.

Only the gradient moves a leg: whatever U is along the way, the leg is a reversible,
volume-preserving map of (q, p), so the decision needs U at the leg's ends only (`integrate`
takes the gradients alone). A leg may cross a region where U is not finite but its gradient is
and stays exact; it is rejected if it ends there. A non-finite gradient makes p non-finite for
the rest of the leg, so the proposal's energy is not finite and the evaluation rejects it. No
NaN ever reaches the chain's state.

Each walker (leading axis of the variables, with `walker_axis`) has its own legs, draws and
decisions. With the ensemble preconditioner the halves take turns in phases of `every` calls
(hmc_legs.ensemble_phases): a moving walker's legs are cut to end by its phase's last call,
and that evaluation pauses it (step width 0) until its next phase, which starts from the
stored chain state without a decision. So B, refreshed at each phase's first call from the
standing half's chain states, is fixed during every leg and independent of the moving walkers.

Each call needs the loss with the gradients: `sampler.apply(grads, variables, loss=loss)` (the
Simulation's loop does so); `model.fit` cannot give it, so HMC is for the Simulation or a user's
own loop.

The metric: the legs move z with q = c + M z, M = diag(s) (metric="diagonal") or the lower
triangular L (metric="dense", Stan's dense_e): H = U(q) + |p|^2 / 2 in z's coordinates, so
p ~ N(0, I / beta) either way, dz/dt = p gives dq/dt = M p = V(p), and dp/dt = -M^T grad U(q)
= -F(grad U). Legs move q itself, so the centre c never enters them. This is HMC with the
mass matrix (M M^T)^-1 (diag(1 / s^2), or (L L^T)^-1). The dense metric needs
the parameters as one flat variable ([W, d] with `walker_axis`, or [d]), at most
proposal.MAX_DENSE_PARAMETERS of them, and no ensemble preconditioner; each kick and drift
costs d^2 per walker.

Warm-up during the first `adaptation_steps` calls (samplers/hmc_adaptation.py, equations in
tati/adaptation/), one value for all walkers at every evaluation: an initial width
search, then dual averaging of h towards `target_acceptance_rate`; the metric s or L
(adapt_mass); the leg time T by ChEES (adapt_trajectory_length). Neither the metric nor T
adapts with the ensemble preconditioner, which already scales the moves.

The chain's state and its report (`chain_report`) change only at evaluations
(`evaluation_report`): loss, accuracy, positions q_a and gradient g_a of the current state,
kinetic energy of the redrawn momenta, the energies of the last decision, and counts of
accepted, rejected and divergent legs (with a burn-in, `adaptation_steps`, counted anew from
the first leg decided after it). The very first call has no proposal to decide on: it takes
the initial state as the chain's first state and is not counted in the rejection rate.
"""

from typing import NamedTuple

import keras
import tensorflow as tf

from tati.adaptation import windows
from tati.errors import InputError
from tati.engine.registry import target_acceptance
from tati.config import options as option_table
from tati.config.options import default
from tati.recording.columns import HMC_INFO
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.hmc_adaptation import LegAdaptation
from tati.dynamics.hmc_legs import (FIRST, LEG_LENGTH_JITTER, PROBE, STEP_WIDTH_JITTER,  # noqa: F401 (the jitters: API)
                                    Kinds, PackedState, ensemble_phases, first_kick, leg_steps, leg_width, schedule)
# `metropolis` by this name: tests switch the decision off here (a negative control).
from tati.dynamics.metropolis import energy_error, metropolis, reported_energy


class Decision(NamedTuple):
    """The decision of one evaluation call, [W] each (dynamics/metropolis.py): `accepted` and
    `divergent` by the test, its energy `error` and the proposal's `total_energy` H_new, and
    `accept`, where the chain's state becomes the proposal (accepted where a leg is decided,
    and at the first evaluation)."""
    accepted: tf.Tensor
    divergent: tf.Tensor
    error: tf.Tensor
    total_energy: tf.Tensor
    accept: tf.Tensor


class Move(NamedTuple):
    """What one call's moves (`HamiltonianMonteCarlo._move`) take besides the variables, their
    gradients and momenta: `evaluate` [W], where a leg ends; per variable, `at_acceptances`
    (evaluating and accepting, broadcast to it) and `chain_qs` (q_a where evaluating); `beta`;
    the legs' `metrics` that end here and the `new_metrics` of the legs that start (the same
    list where the metric does not adapt); `width` h' [W] (the new leg's where evaluating) and
    `first_width` c h' [W] of the new legs' first kick."""
    evaluate: tf.Tensor
    at_acceptances: list
    chain_qs: list
    beta: tf.Tensor
    metrics: list
    new_metrics: list
    width: tf.Tensor
    first_width: tf.Tensor


def evaluation_report(s, kinds, loss, accuracy, decision, after_burn_in, counts_anew):
    """The chain's report rows ([W] each) of a walker that evaluates, from its rows `s` and the
    `decision` (a Decision):

        evaluated = 1, legs <- legs + 1         except where a pause or a probe ends (no row)
        accepted, rejected, divergences <- + the decision, where a leg is decided; counted anew
            from the first leg decided after burn-in (`after_burn_in`, if `counts_anew`)
        total_energy = H_new (+inf where not finite), decided_old_total_energy = H_old
        loss, accuracy: the proposal's where the chain's state becomes it (`accept`)

    The kinetic energy and H_old of the new leg, the virial and |g_a|^2 come with the moves."""
    accepted, divergent, error, total_energy, accept = decision
    decided = tf.cast(kinds.decides, tf.float64)
    shown = 1.0 - tf.cast(kinds.paused | kinds.probed, tf.float64)
    report = dict(evaluated=shown, legs=s["legs"] + shown)
    anew = kinds.decides & after_burn_in & tf.equal(s["counting_after"], 0.0) & counts_anew
    counts = {name: tf.where(anew, tf.zeros_like(s[name]), s[name]) for name in ("accepted", "rejected", "divergences")}
    report["counting_after"] = tf.where(kinds.decides & after_burn_in, tf.ones_like(loss), s["counting_after"])
    report["accepted"] = counts["accepted"] + decided * tf.cast(accepted, tf.float64)
    report["rejected"] = counts["rejected"] + decided * tf.cast(tf.logical_not(accepted), tf.float64)
    report["divergences"] = counts["divergences"] + decided * tf.cast(divergent, tf.float64)
    report["total_energy"] = tf.where(kinds.decides, reported_energy(total_energy, error), s["total_energy"])
    report["decided_old_total_energy"] = tf.where(kinds.decides, s["old_total_energy"], s["decided_old_total_energy"])
    report["loss"] = tf.where(accept, loss, s["loss"])
    if accuracy is not None:
        report["accuracy"] = tf.where(accept, accuracy, s["accuracy"])
    return report


class HamiltonianMonteCarlo(LegAdaptation, SamplerBase):
    """HMC with in-graph accept/reject; subclasses choose the integrator by `first_kicks`."""

    parameters = ("inverse_temperature", "hamiltonian_dynamics_time")
    info = HMC_INFO  # the chain's state at evaluations (hmc_kernel.leg_row delivers these columns)
    find_initial_width = False  # set by build()
    # The first kick's fraction c of the step width, one drawn at random per leg.
    first_kicks = (0.5,)
    hamiltonian_dynamics_time = parameter_property(
        "hamiltonian_dynamics_time", "T: the length in time of one leg (randomised).")

    def __init__(self, step_width=default("step_width"),
                 hamiltonian_dynamics_time=default("hamiltonian_dynamics_time"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 adaptation_steps=0, target_acceptance_rate=None, adapt_step_width=True, adapt_mass=False,
                 adapt_trajectory_length=False, metric=default("metric"), name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, hamiltonian_dynamics_time=hamiltonian_dynamics_time,
            inverse_temperature=inverse_temperature))
        self.adaptation_steps = option_table.check("burn_in_steps", adaptation_steps)
        self.target_acceptance_rate = target_acceptance(
            type(self).__name__, option_table.check("target_acceptance_rate", target_acceptance_rate))
        # All three only during an adaptation; mass and leg length not with the ensemble
        # preconditioner (build()).
        self.adapt_step_width = bool(adapt_step_width) and self.adaptation_steps > 0
        self.adapt_mass = bool(adapt_mass) and self.adaptation_steps >= windows.MIN_LEG_METRIC_BURN_IN
        self.adapt_trajectory_length = bool(adapt_trajectory_length) and self.adaptation_steps > 0
        # "dense": L L^T instead of diag(s^2), adapted where adapt_mass is, else L = I (as NUTS).
        self.metric = option_table.check("metric", metric)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self._legs = PackedState(self, 1 if self._walkers is None else self._walkers)
        # The chain's state q_0 and its gradient g_0, to return to after a rejection.
        self._start_positions = [self.add_variable_from_reference(v, name="start_position") for v in variables]
        self._start_gradients = [self.add_variable_from_reference(v, name="start_gradient") for v in variables]
        self._build_adaptation(variables)

    def _walker_shape(self, variable):
        """The shape of one walker's part of the variable."""
        shape = tuple(variable.shape)
        return shape[1:] if self._walkers is not None else shape

    def restart(self):
        """Make the next call take the variables' values as the chain's state (after the user
        set new parameters)."""
        if self.built:
            now = tf.cast(self.iterations, tf.float64)
            rows = self._legs.read()
            rows.update(leg_end=tf.fill(tf.shape(rows["leg_end"]), now),
                        leg_kind=tf.fill(tf.shape(rows["leg_kind"]), tf.constant(FIRST, tf.float64)))
            self._legs.write(rows)

    # -- calls ---------------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None, loss=None, accuracy=None):
        """One call for every walker: it evaluates where its leg ends, else integrates. `loss`:
        U at the variables' current values (shape [W] with walker_axis, else a scalar), needed
        by every call; `accuracy` optionally, reported with the chain's state."""
        if loss is None:
            raise InputError(f"{type(self).__name__} needs the loss of each step: call "
                             "sampler.apply(grads, variables, loss=loss), not apply_gradients")
        variables = self._trainable_variables if trainable_variables is None else list(trainable_variables)
        if not self.built:
            self.build(variables)
            self.built = True
        self._call(loss, accuracy, [tf.convert_to_tensor(g) for g in grads], variables)
        self.iterations.assign_add(1)
        return self.iterations

    def free_steps(self):
        """How many of the coming calls are integration calls for every walker."""
        leg_end = tf.reduce_min(self._legs.row("leg_end"))
        return tf.cast(leg_end - tf.cast(self.iterations, tf.float64), tf.int32)

    def integrate(self, steps, gradients, variables, widths=None, counted=False):
        """`steps` (at most free_steps()) integration calls as apply would make them, at a fraction
        of the cost: B then A, p <- p - h' F(grad U(q)); q <- q + h' V(p), for every walker, h'
        its leg's step width. `gradients(positions)` gives grad U at the positions (tensors,
        one per variable). Positions and momenta are loop tensors, written
        back to the variables once, after the loop.

        A caller that has them already (HMC's evaluation program, once per leg) passes
        `widths` (`leg_widths()`) and `counted` (iterations already advanced by `steps`): in
        graph mode each read and count here is an operation of its own."""
        if widths is None:
            widths = self.leg_widths(variables)
        metrics = self._metric_values()

        def kick_and_drift(i, positions, momenta):
            grads = gradients(positions)
            moved_q, moved_p = [], []
            for g, q, p, h, m in zip(grads, positions, momenta, widths, metrics):
                p = splitting.kick(p, self._metric_force(g, m), h)
                moved_p.append(p)
                moved_q.append(splitting.drift(q, self._metric_velocity(p, m), h))
            return i + 1, moved_q, moved_p

        _, positions, momenta = tf.while_loop(
            lambda i, positions, momenta: i < steps, kick_and_drift,
            (tf.constant(0), [tf.convert_to_tensor(v) for v in variables],
             [tf.convert_to_tensor(self._momentum(v)) for v in variables]))
        for v, q, p in zip(variables, positions, momenta):
            v.assign(q)
            self._momentum(v).assign(p)
        if not counted:
            self.iterations.assign_add(tf.cast(steps, self.iterations.dtype))

    def leg_widths(self, variables):
        """The current legs' step widths h', shaped and cast to each variable (`integrate`)."""
        width = self._legs.row("leg_width")
        return [tf.cast(self._broadcast(width, v), v.dtype) for v in variables]

    # -- helpers -------------------------------------------------------------------------------
    def _metric_force(self, gradient, metric):
        """F(g) = s B^T g (`metric` the diagonal metric's scale s, B the preconditioner) or L^T g
        (the dense metric's factor L, per walker): the gradient as a kick uses it."""
        force = self._force(gradient)
        if metric is None:
            return force
        if self.metric == "dense":
            # A batched product, one walker at a time, so that a walker's kick is the same bits
            # whatever the number of walkers (a [W, d] x [d, d] matmul blocks by W) -- on the
            # CPU without XLA, which may block it by W from d of some hundreds on.
            return tf.linalg.matvec(metric, force, transpose_a=True)
        return metric * force

    def _metric_velocity(self, momentum, metric):
        """V(p) = s B p, or L p (dense): the momentum as a drift uses it."""
        velocity = self._velocity(momentum)
        if metric is None:
            return velocity
        return tf.linalg.matvec(metric, velocity) if self.metric == "dense" else metric * velocity

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

    def _uniforms(self):
        """(u_accept, u_width, u_length, u_kick), [W] each: this evaluation's decision's uniform
        and the new leg's (hmc_legs). Stream 0 of index 0 (the fresh momenta are stream 1 of
        each variable), walker-major [W, 4], so that walker w's numbers do not depend on how
        many walkers there are; u_length is the run's first walker's, one length for all."""
        uniforms = self._philox(tf.raw_ops.StatelessRandomUniformV2, self._legs.walkers + (4,),
                                tf.float64, 0, 0, walker_numbers=4)
        u_accept, u_width, u_length, u_kick = tf.unstack(uniforms, axis=1)
        if self.first_walker:  # the run's first walker's (its row, no skip)
            u_length = self._philox(tf.raw_ops.StatelessRandomUniformV2, (1, 4), tf.float64, 0, 0)[:, 2]
        return u_accept, u_width, tf.broadcast_to(u_length[0], tf.shape(u_accept)), u_kick

    def _proposal(self, s, loss, grads, variables, momenta, metrics):
        """(p_L per variable, H(q_L, p_L) [W]): the leg's end after its last kick with this
        call's gradient, p_L = p - (1 - c) h' F(g), and its energy U(q_L) + |p_L|^2 / 2."""
        last_kick = (1.0 - s["first_kick"]) * s["leg_width"]
        kicks = [tf.cast(self._broadcast(last_kick, v), v.dtype) for v in variables]
        end_momenta = [splitting.kick(p, self._metric_force(g, metric), kick)
                       for g, p, kick, metric in zip(grads, momenta, kicks, metrics)]
        kinetic = 0.5 * tf.add_n([self._walker_sum(tf.square(p)) for p in end_momenta])
        return end_momenta, loss + kinetic

    def _new_legs(self, now, h, time, uniforms, probing, probe_width):
        """The legs that start at iteration `now` ([W] rows leg_end, leg_kind, leg_width,
        leg_steps, first_kick; hmc_legs): drawn, changed by the warm-up, cut to the ensemble's
        phases; a probe's kind is PROBE."""
        _, u_width, u_length, u_kick = uniforms
        width, steps = self._adapted_leg(leg_width(h, u_width), leg_steps(h, time, u_length), probing, probe_width)
        if self.preconditioner is None:
            end, kind, width = schedule(now, steps, width)
        else:
            end, kind, width = ensemble_phases(now, steps, width, float(self.preconditioner.every),
                                               tf.cast(self.preconditioner.parity, tf.float64))
        kind = tf.where(probing, tf.fill(tf.shape(probing), tf.constant(PROBE, tf.float64)), kind)
        return dict(leg_end=end, leg_kind=kind, leg_width=width, leg_steps=steps,
                    first_kick=first_kick(self.first_kicks, u_kick))

    # -- one call for every walker -------------------------------------------------------------
    def _call(self, loss, accuracy, grads, variables):
        """apply's work: per walker, where its leg ends (`evaluate`), the proposal's energy, the
        decision, the warm-up, the new leg and the report; then per variable the moves
        (`_move`). The state is written once, as one where over its rows."""
        s = self._legs.read()
        beta = tf.cast(self._parameter_variables["inverse_temperature"], tf.float64)
        h = tf.cast(self.learning_rate, tf.float64)
        loss = self._walker_values(loss)
        kinds = Kinds.of(s["leg_kind"])
        evaluate = tf.equal(s["leg_end"], tf.cast(self.iterations, tf.float64))
        momenta = [tf.convert_to_tensor(self._momentum(v)) for v in variables]
        metrics = self._metric_values()  # the metric of the legs that end here

        # The decision (metropolis.py) between the proposal and the chain's state.
        end_momenta, total_energy = self._proposal(s, loss, grads, variables, momenta, metrics)
        error = energy_error(total_energy, s["old_total_energy"], beta)
        uniforms = self._uniforms()
        accepted, divergent = metropolis(error, uniforms[0])
        accept = (accepted & kinds.decides) | kinds.first  # where the chain's state becomes q

        # The warm-up (hmc_adaptation.py): the width search, then h, T and the metric.
        probing, probe_width = tf.zeros_like(kinds.decides), None  # where the new leg is a probe
        if self.find_initial_width:  # before dual averaging, which starts at the width found
            probing, probe_width = self._search_width(error, evaluate, kinds.probed, kinds.first)
        if self.adapt_step_width:  # the new legs take the adapted width
            h = self._adapt(error, kinds.decides & evaluate)
        at_acceptances = [self._broadcast(evaluate & accept, v) for v in variables]
        chain_qs = [tf.where(a, tf.convert_to_tensor(v), q0) for a, v, q0 in
                    zip(at_acceptances, variables, self._start_positions)]  # q_a where evaluating
        time = tf.cast(self._parameter_variables["hamiltonian_dynamics_time"], tf.float64)
        if self.adapt_trajectory_length:
            time = self._adapt_time(kinds.decides & evaluate, error, s, variables, end_momenta, metrics, h)
        new_leg = self._new_legs(s["leg_end"], h, time, uniforms, probing, probe_width)
        new_metrics = metrics
        if self.adapt_mass:
            new_metrics = self._adapt_metric(kinds.decides & evaluate, new_leg["leg_steps"], metrics)

        # The rows of a walker that evaluates: its report, the new leg, and what the moves measure.
        after_burn_in = tf.cast(self.iterations, tf.float64) >= float(self.adaptation_steps)
        if accuracy is not None:
            accuracy = self._walker_values(accuracy)
        decision = Decision(accepted, divergent, error, total_energy, accept)
        evaluating = dict(s, **evaluation_report(s, kinds, loss, accuracy, decision, after_burn_in,
                                                 self.adaptation_steps > 0), **new_leg)
        fresh_sq, virial, gradient_sq = self._move(variables, grads, momenta, Move(
            evaluate, at_acceptances, chain_qs, beta, metrics, new_metrics,
            width=tf.where(evaluate, new_leg["leg_width"], s["leg_width"]),
            first_width=new_leg["first_kick"] * new_leg["leg_width"]))
        # H_old of the new leg: the chain state's loss plus the fresh momenta's kinetic energy.
        evaluating.update(kinetic_energy=0.5 * fresh_sq, momentum_sq=fresh_sq,
                          old_total_energy=evaluating["loss"] + 0.5 * fresh_sq)
        # The chain's state changes only at evaluations, so its virial and |g_a|^2 serve both.
        evaluating.update(virial=virial, gradient_sq=gradient_sq)
        integrating = dict(s, evaluated=tf.zeros_like(loss), virial=virial, gradient_sq=gradient_sq)
        self._legs.write_where(evaluate, evaluating, integrating)

    def _move(self, variables, grads, momenta, move):
        """Per variable, the evaluation call's or the integration call's move (module docstring):

            evaluating:   p <- fresh_momentum - c h' F(g_a);  q <- q_a + h' V(p)
                          (with the new leg's metric; q_0, g_0 <- q_a, g_a)
            integrating:  p <- p - h' F(g);                   q <- q + h' V(p)

        `move` (a Move) holds where each walker evaluates, h' and c h' and the metrics. Returns
        [W] sums over the variables of |fresh p|^2, the virial 1/2 q_a . g_a and |g_a|^2."""
        evaluate, beta, width, first_width = move.evaluate, move.beta, move.width, move.first_width
        fresh_sq, virial, gradient_sq = [], [], []  # per variable, [W] each
        for index, (g, v, momentum) in enumerate(zip(grads, variables, momenta)):
            dtype = v.dtype
            at_evaluation = self._broadcast(evaluate, v)
            q, chain_q = tf.convert_to_tensor(v), move.chain_qs[index]
            chain_g = tf.where(move.at_acceptances[index], g, self._start_gradients[index])
            fresh = splitting.fresh_momentum(self._normal(v, stream=1), tf.cast(beta, dtype))
            h_v = tf.cast(self._broadcast(width, v), dtype)
            new_metric, metric = move.new_metrics[index], move.metrics[index]
            p = tf.where(at_evaluation,
                         splitting.kick(fresh, self._metric_force(chain_g, new_metric),
                                        tf.cast(self._broadcast(first_width, v), dtype)),
                         splitting.kick(momentum, self._metric_force(g, metric), h_v))
            self._momentum(v).assign(p)
            if new_metric is metric:
                v.assign(splitting.drift(tf.where(at_evaluation, chain_q, q), self._metric_velocity(p, metric), h_v))
            else:  # a metric window may close here: the new legs take the new metric, others keep theirs
                v.assign(tf.where(at_evaluation, splitting.drift(chain_q, self._metric_velocity(p, new_metric), h_v),
                                  splitting.drift(q, self._metric_velocity(p, metric), h_v)))
            self._start_positions[index].assign(chain_q)
            self._start_gradients[index].assign(chain_g)
            fresh_sq.append(self._walker_sum(tf.square(fresh)))
            virial.append(self._walker_sum(chain_q * chain_g))
            gradient_sq.append(self._walker_sum(tf.square(chain_g)))
        return tf.add_n(fresh_sq), 0.5 * tf.add_n(virial), tf.add_n(gradient_sq)

    def get_config(self):
        config = super().get_config()
        config.update(adaptation_steps=self.adaptation_steps, target_acceptance_rate=self.target_acceptance_rate,
                      adapt_step_width=self.adapt_step_width, adapt_mass=self.adapt_mass,
                      adapt_trajectory_length=self.adapt_trajectory_length, metric=self.metric)
        return config

    # -- what the tables read ------------------------------------------------------------------
    def chain_report(self):
        """The chain's current state per walker ([W] float64 each): loss, accuracy, kinetic
        energy and |p|^2 of the redrawn momenta, virial 1/2 q_a . grad_a and |grad_a|^2, the
        energies of the last decision, counts, and `evaluated` (1 where the last apply evaluated)."""
        s = self._legs.read()
        report = {name: s[name] for name in (
            "loss", "accuracy", "kinetic_energy", "momentum_sq", "total_energy", "evaluated",
            "virial", "gradient_sq", "accepted", "rejected", "divergences", "legs")}
        report["old_total_energy"] = s["decided_old_total_energy"]
        decisions = report["accepted"] + report["rejected"]
        report["rejection_rate"] = tf.math.divide_no_nan(report["rejected"], decisions)
        return report

    def chain_positions(self):
        """The chain's current positions, one tensor per variable: the last accepted state, or
        the variables' values before the first evaluation (after build or restart())."""
        first = tf.equal(self._legs.row("leg_kind"), FIRST)
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
