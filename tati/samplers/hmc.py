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

Randomised legs (seeded, per leg and per walker, independent of the state): h uniform in
[0.7, 1.3] times `step_width`, L = max(1, round(u T / step_width)) with u uniform in
[0.9, 1.1] and T = `hamiltonian_dynamics_time`. This avoids the resonances that make
fixed-length HMC non-ergodic.

Gradient economy: one optimizer call = one gradient. A leg of L steps takes L calls: every
kick between two drifts merges the halves (or the whole) of two neighbouring steps, and the
call that receives grad U(q_L) first completes the leg's last kick, decides, redraws p and
starts the next leg with the same gradient (or the cached grad U(q_0) after a rejection):

    evaluation call, given U(q), grad U(q):
        complete the last kick: p_L = p - (1 - c) h_prev grad U(q)
        decide between q (= q_L) and q_0 with the energies; (q_a, U_a, grad_a) := the winner
        p ~ N(0, I / beta);  H_old = U_a + |p|^2 / 2;  draw h, L, c for the new leg
        p <- p - c h grad_a;  q <- q_a + h p
    integration call, given grad U(q):
        p <- p - h grad U(q);  q <- q + h p
    with the first-kick fraction c = 1/2 for leapfrog, 1 for BA and 0 for AB.

A non-finite loss or gradient during a leg freezes the walker and dooms the leg: the
evaluation rejects it. The reverse leg passes through the same positions, so this rule is
symmetric and keeps detailed balance; no NaN ever reaches the chain's state.

Each walker (leading axis of the variables, with `walker_axis`) has its own legs, draws and
decisions. The loss must be given before each call: `sampler.set_loss(loss)` (the Simulation
does so); `model.fit` cannot, so HMC is for the Simulation or a user's own loop.

The chain's state and its report (`chain_report`) change only at evaluations: loss, accuracy,
positions q_a and gradient grad_a of the current state, kinetic energy of the redrawn momenta,
the energies of the last decision, and counts of accepted, rejected and divergent legs. The
very first call has no proposal to decide on: it takes the initial state as the chain's first
state and is not counted in the rejection rate.
"""

import keras
import tensorflow as tf

from tati.errors import InputError
from tati.options import default
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.metropolis import metropolis

STEP_WIDTH_JITTER = (0.7, 1.3)
LEG_LENGTH_JITTER = (0.9, 1.1)

# Per-walker state: chain state, leg state, the last decision's energies and counters.
_STATE = ("legs_left", "leg_width", "first_kick", "doomed", "evaluated", "legs",
          "loss", "accuracy", "observed_loss", "observed_accuracy",
          "old_total_energy", "decided_old_total_energy", "total_energy",
          "kinetic_energy", "momentum_sq", "accepted", "rejected", "divergences")


class HamiltonianMonteCarlo(SamplerBase):
    """HMC with in-graph accept/reject; subclasses choose the integrator by `first_kicks`."""

    parameters = ("inverse_temperature", "hamiltonian_dynamics_time")
    metropolis = True
    # The first kick's fraction c of the step width, one drawn at random per leg.
    first_kicks = (0.5,)
    hamiltonian_dynamics_time = parameter_property(
        "hamiltonian_dynamics_time", "T: the length in time of one leg (randomised).")

    def __init__(self, step_width=default("step_width"),
                 hamiltonian_dynamics_time=default("hamiltonian_dynamics_time"),
                 inverse_temperature=default("inverse_temperature"), seed=default("seed"),
                 name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, hamiltonian_dynamics_time=hamiltonian_dynamics_time,
            inverse_temperature=inverse_temperature))
        self._loss_given = False

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        size = 1 if self._walkers is None else self._walkers
        self._state = {name: self.add_variable((size,), dtype="float64", name=name) for name in _STATE}
        self._started = self.add_variable((), dtype="bool", name="started")
        self._start_positions = [self.add_variable_from_reference(v, name="start_position") for v in variables]
        self._start_gradients = [self.add_variable_from_reference(v, name="start_gradient") for v in variables]

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
            self._started.assign(False)
            self._state["legs_left"].assign(tf.zeros_like(self._state["legs_left"]))
            self._state["doomed"].assign(tf.zeros_like(self._state["doomed"]))

    # -- one call ------------------------------------------------------------------------------
    def apply(self, grads, trainable_variables=None):
        variables = self._trainable_variables if trainable_variables is None else list(trainable_variables)
        if not self.built:
            self.build(variables)
            self.built = True
        if not self._loss_given:
            raise InputError(f"{type(self).__name__} needs the loss of each step: call "
                             "sampler.set_loss(loss) before apply_gradients")
        self._loss_given = False
        loss, accuracy = self._given
        shape = tf.shape(self._state["observed_loss"])
        self._state["observed_loss"].assign(tf.reshape(tf.cast(loss, tf.float64), shape))
        if accuracy is not None:
            self._state["observed_accuracy"].assign(tf.reshape(tf.cast(accuracy, tf.float64), shape))
        self._decide([tf.convert_to_tensor(g) for g in grads], variables)
        return super().apply(grads, trainable_variables)

    def _uniform(self, stream, dtype=tf.float64):
        key = tf.random.experimental.stateless_fold_in(
            tf.constant([self.seed, 1], tf.int64), tf.cast(self.iterations, tf.int64), alg="philox")
        key = tf.random.experimental.stateless_fold_in(key, stream, alg="philox")
        return tf.random.stateless_uniform(tf.shape(self._state["legs"]), seed=key, dtype=dtype, alg="philox")

    def _walker_sum(self, values):
        return tf.reshape(tf.cast(self._sum(values), tf.float64), [-1])

    def _decide(self, grads, variables):
        """Per walker: evaluate or integrate, accept or reject, and draw the next leg."""
        s = self._state
        beta = tf.cast(self._parameter_variables["inverse_temperature"], tf.float64)
        h = tf.cast(self.learning_rate, tf.float64)
        started = tf.convert_to_tensor(self._started)
        evaluate = tf.equal(s["legs_left"], 0.0) | tf.logical_not(started)
        loss = s["observed_loss"]
        finite = tf.math.is_finite(loss)
        for g in grads:
            finite &= tf.equal(self._walker_sum(tf.cast(tf.logical_not(tf.math.is_finite(g)), g.dtype)), 0.0)
        doomed = (s["doomed"] > 0) | tf.logical_not(finite)

        # Energy of the proposal, after the leg's last kick with this gradient.
        last_kick = (1.0 - s["first_kick"]) * s["leg_width"]
        kinetic = tf.zeros_like(loss)
        for g, v in zip(grads, variables):
            p = self._momentum(v)
            kick = tf.cast(self._broadcast(last_kick, v), v.dtype)
            p_last = p - kick * self._force(g)
            kinetic += 0.5 * self._walker_sum(tf.square(p_last))
        total_energy = loss + kinetic
        energy_error = beta * (total_energy - s["old_total_energy"])
        energy_error = tf.where(doomed, tf.constant(float("nan"), tf.float64), energy_error)
        accepted, divergent = metropolis(energy_error, self._uniform(0))
        decided = evaluate & started
        accept = tf.where(started, accepted, tf.ones_like(accepted))
        self._accept = evaluate & accept  # read by update_step in this same call

        count = lambda mask: tf.cast(mask, tf.float64)
        s["accepted"].assign_add(count(decided & accepted))
        s["rejected"].assign_add(count(decided & tf.logical_not(accepted)))
        s["divergences"].assign_add(count(decided & divergent))
        # A proposal with a non-finite energy is reported as +inf (it was rejected).
        reported = tf.where(tf.math.is_finite(energy_error), total_energy, float("inf"))
        s["total_energy"].assign(tf.where(decided, reported, s["total_energy"]))
        s["decided_old_total_energy"].assign(tf.where(decided, s["old_total_energy"],
                                                      s["decided_old_total_energy"]))
        s["loss"].assign(tf.where(self._accept, loss, s["loss"]))
        s["accuracy"].assign(tf.where(self._accept, s["observed_accuracy"], s["accuracy"]))
        s["legs"].assign_add(count(evaluate))
        s["evaluated"].assign(count(evaluate))

        # The next leg: step width, number of steps and first-kick fraction.
        low, high = STEP_WIDTH_JITTER
        width = h * (low + (high - low) * self._uniform(1))
        low, high = LEG_LENGTH_JITTER
        time = tf.cast(self._parameter_variables["hamiltonian_dynamics_time"], tf.float64)
        steps = tf.maximum(tf.constant(1.0, tf.float64), tf.round((low + (high - low) * self._uniform(2)) * time / h))
        kicks = tf.constant(self.first_kicks, tf.float64)
        choice = tf.cast(tf.floor(self._uniform(3) * len(self.first_kicks)), tf.int32)
        first_kick = tf.gather(kicks, tf.minimum(choice, len(self.first_kicks) - 1))
        s["leg_width"].assign(tf.where(evaluate, width, s["leg_width"]))
        s["first_kick"].assign(tf.where(evaluate, first_kick, s["first_kick"]))
        s["legs_left"].assign(tf.where(evaluate, steps - 1.0, s["legs_left"] - 1.0))
        s["doomed"].assign(count(doomed & tf.logical_not(evaluate)))
        self._frozen = doomed & tf.logical_not(evaluate)
        # H_old of the new leg: the accepted state's loss plus the redrawn momenta's kinetic
        # energy, which update_step adds to old_total_energy, kinetic_energy and momentum_sq.
        s["old_total_energy"].assign(tf.where(evaluate, s["loss"], s["old_total_energy"]))
        for name in ("kinetic_energy", "momentum_sq"):
            s[name].assign(tf.where(evaluate, tf.zeros_like(loss), s[name]))
        self._started.assign(True)
        self._evaluate = evaluate

    def _broadcast(self, value, variable):
        """A [W] (or [1]) per-walker value shaped to broadcast against the variable."""
        if self._walkers is None:
            return tf.reshape(value, [])
        return self._per_walker(value, variable)

    def update_step(self, gradient, variable, learning_rate):
        s = self._state
        index = self._get_variable_index(variable)
        dtype = variable.dtype
        evaluate = self._broadcast(self._evaluate, variable)
        accept = self._broadcast(self._accept, variable)
        frozen = self._broadcast(self._frozen, variable)
        width = tf.cast(self._broadcast(s["leg_width"], variable), dtype)
        first_kick = tf.cast(self._broadcast(s["first_kick"], variable), dtype)
        beta = self._parameter("inverse_temperature", dtype)
        q = tf.convert_to_tensor(variable)
        p = tf.convert_to_tensor(self._momentum(variable))
        start_q, start_g = self._start_positions[index], self._start_gradients[index]

        # Evaluation: the chain's state, fresh momenta, the new leg's first kick and drift.
        chain_q = tf.where(accept, q, start_q)
        chain_g = tf.where(accept, gradient, start_g)
        fresh = self._normal(variable, stream=1) / tf.sqrt(beta)
        p_evaluate = fresh - first_kick * width * self._force(chain_g)
        # Integration: a whole kick (two halves for leapfrog) and a drift.
        p_integrate = p - width * self._force(gradient)
        p_new = tf.where(evaluate, p_evaluate, p_integrate)
        q_new = tf.where(evaluate, chain_q, q) + width * self._velocity(p_new)
        self._momentum(variable).assign(tf.where(frozen, p, p_new))
        variable.assign(tf.where(frozen, q, q_new))
        start_q.assign(tf.where(evaluate, chain_q, start_q))
        start_g.assign(tf.where(evaluate, chain_g, start_g))

        fresh_sq = self._walker_sum(tf.square(fresh))
        mask = tf.cast(self._evaluate, tf.float64)
        s["momentum_sq"].assign_add(mask * fresh_sq)
        s["kinetic_energy"].assign_add(mask * 0.5 * fresh_sq)
        s["old_total_energy"].assign_add(mask * 0.5 * fresh_sq)

    # -- what the tables read ------------------------------------------------------------------
    def chain_report(self):
        """The chain's current state per walker ([W] float64 each): loss, accuracy, kinetic
        energy and |p|^2 of the redrawn momenta, virial 1/2 q_a . grad_a and |grad_a|^2, the
        energies of the last decision, counts, and `evaluated` (1 where this call evaluated)."""
        s = self._state
        report = {name: tf.convert_to_tensor(s[name]) for name in (
            "loss", "accuracy", "kinetic_energy", "momentum_sq", "total_energy", "evaluated",
            "accepted", "rejected", "divergences", "legs")}
        report["old_total_energy"] = tf.convert_to_tensor(s["decided_old_total_energy"])
        report["virial"] = 0.5 * tf.add_n([self._walker_sum(q * g) for q, g in
                                           zip(self._start_positions, self._start_gradients)])
        report["gradient_sq"] = tf.add_n([self._walker_sum(tf.square(g)) for g in self._start_gradients])
        decisions = report["accepted"] + report["rejected"]
        report["rejection_rate"] = tf.math.divide_no_nan(report["rejected"], decisions)
        return report

    def chain_positions(self):
        """The chain's current positions, one tensor per variable (the last accepted state)."""
        return [tf.convert_to_tensor(q) for q in self._start_positions]


@keras.saving.register_keras_serializable(package="tati")
class HMC1(HamiltonianMonteCarlo):
    """HMC with symplectic Euler legs, BA or AB at random per leg (first-order energy error)."""
    first_kicks = (1.0, 0.0)


@keras.saving.register_keras_serializable(package="tati")
class HMC2(HamiltonianMonteCarlo):
    """HMC with leapfrog legs (second-order energy error)."""
    first_kicks = (0.5,)
