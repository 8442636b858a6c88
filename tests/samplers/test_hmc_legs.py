"""HMC's named parts, each against its rule: the legs' draws and the ensemble's phases
(tati/dynamics/hmc_legs.py), the packed per-walker state, the decision's energy error
(tati/dynamics/metropolis.py). All exact. And the graph-mode cost of a leg's bookkeeping, in
operations."""

import collections

import keras
import numpy as np
import tensorflow as tf

import tati
from tati.engine.running import Run
from tati.dynamics.hmc_legs import LEG, PAUSE, PackedState, ensemble_phases, first_kick, leg_steps, leg_width
from tati.dynamics.metropolis import energy_error, metropolis, reported_energy

F64 = tf.float64


def test_leg_draws_span_their_jitter():
    """u = 0 and u -> 1 give the ends of [0.7, 1.3] h and [0.9, 1.1] T / h; L is at least 1."""
    u = tf.constant([0.0, 0.5, 1.0 - 2 ** -53], F64)
    np.testing.assert_allclose(leg_width(0.2, u).numpy(), [0.14, 0.2, 0.26], rtol=1e-15)
    np.testing.assert_array_equal(leg_steps(0.1, 1.0, u).numpy(), [9.0, 10.0, 11.0])
    assert leg_steps(1.0, 0.01, u).numpy().tolist() == [1.0, 1.0, 1.0]
    kicks = first_kick((1.0, 0.0), tf.constant([0.0, 0.49, 0.5, 1.0 - 2 ** -53], F64)).numpy()
    assert kicks.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert first_kick((0.5,), u).numpy().tolist() == [0.5] * 3


def test_ensemble_phases_cut_legs_to_the_phase_and_pause_until_the_next():
    """Phases of 5 calls, walker 0 moving in even phases, walker 1 in odd ones; legs of 3 and
    of 10 steps started at every call of the first 30: a moving walker's leg ends at
    now + L or at its phase's last call, whichever is first; otherwise (standing, or at that
    last call) a pause of width 0 ends exactly where the walker's next moving phase starts."""
    every = 5.0
    for steps in (3.0, 10.0):
        for now in range(30):
            end, kind, width = (x.numpy() for x in ensemble_phases(
                tf.constant([now, now], F64), tf.constant([steps, steps], F64), tf.constant([0.3, 0.3], F64),
                every, tf.constant([0.0, 1.0], F64)))
            phase, last = now // 5, (now // 5 + 1) * 5 - 1
            for walker in (0, 1):
                if phase % 2 == walker and now < last:
                    assert (kind[walker], width[walker]) == (LEG, 0.3)
                    assert end[walker] == min(now + steps, last)
                else:
                    assert (kind[walker], width[walker]) == (PAUSE, 0.0)
                    assert end[walker] > now and end[walker] % 5 == 0 and (end[walker] // 5) % 2 == walker
                    assert end[walker] - now <= 10  # the next one, not a later one


def test_packed_state_reads_writes_and_selects_per_walker():
    optimizer = keras.optimizers.SGD()
    optimizer.build([])
    state = PackedState(optimizer, 3)
    assert [v.path.split("/")[-1] for v in optimizer.variables[-3:]] == ["hmc_state_0", "hmc_state_1", "hmc_state_2"]
    rows = {name: tf.constant([i, i + 0.5, i + 0.25], F64) for i, name in enumerate(PackedState.NAMES)}
    state.write(rows)
    assert state.read().keys() == rows.keys()
    np.testing.assert_array_equal(state.row("legs").numpy(), rows["legs"].numpy())
    other = {name: -value for name, value in rows.items()}
    state.write_where(tf.constant([True, False, True]), rows, other)
    for name, value in state.read().items():
        np.testing.assert_array_equal(value.numpy(), rows[name].numpy() * [1, -1, 1])


def test_decision_reads_the_energy_error():
    error = energy_error(tf.constant([1.0, 3.0, np.nan], F64), tf.constant([2.0, 1.0, 0.0], F64), tf.constant(2.0, F64))
    np.testing.assert_array_equal(error.numpy()[:2], [-2.0, 4.0])
    accepted, divergent = metropolis(error, tf.constant([0.99, np.exp(-4.0) * 0.999, 0.0], F64))
    assert accepted.numpy().tolist() == [True, True, False] and divergent.numpy().tolist() == [False, False, True]
    shown = reported_energy(tf.constant([1.0, 3.0, np.nan], F64), error).numpy()
    assert shown[:2].tolist() == [1.0, 3.0] and shown[2] == np.inf


def loop_bodies(graph_def):
    """{name: Counter of operation types} of every while loop's body in a graph's library, and
    the name of the body that holds another loop (HMC's leg: evaluation, then kick-and-drift)."""
    library = {f.signature.name: f for f in graph_def.library.function}
    bodies = {name: collections.Counter(node.op for node in f.node_def) for name, f in library.items()
              if "body" in name}
    outer = [name for name, ops in bodies.items() if ops["StatelessWhile"] + ops["While"] > 0]
    return bodies, outer


def test_a_leg_in_graph_mode_costs_few_operations_besides_its_gradients():
    """In graph mode each operation costs microseconds of executor time on a small target, as
    much as the arithmetic (doc/benchmarks.md, issue #42). A leg's loop body (evaluation and
    row, then the kick-and-drift loop) holds the evaluation's gradient, one XLA program and one
    row write: at most 20 operations more than a kick-and-drift step (before the row was packed
    and the step counts and widths came out of the program: 55 more, 15 TensorArray writes)."""
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x, axis=-1), potential_batched=True,
                          dtype="float64", initial_parameters=np.zeros((1, 5)), sampler="HMC2", step_width=0.05,
                          hamiltonian_dynamics_time=0.5, burn_in_steps=0, jit_compile=False, seed=1)
    run = Run("sample", sim.sampler, sim)
    graph = run.chunk.get_concrete_function(tf.TensorSpec([], tf.int32)).graph.as_graph_def()
    bodies, outer = loop_bodies(graph)
    assert len(outer) == 1
    leg = bodies[outer[0]]
    step = next(ops for name, ops in bodies.items() if name.startswith(outer[0].split("_body")[0] + "_while_body"))
    assert step["StatefulPartitionedCall"] == 0 and leg["StatefulPartitionedCall"] == 1  # the evaluation program
    assert leg["TensorListSetItem"] == 2  # the row and its step number
    assert sum(leg.values()) - sum(step.values()) <= 20
