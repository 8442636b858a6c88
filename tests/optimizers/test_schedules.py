"""Learning-rate schedules of fit() (tati/optimizers/schedules.py): the rate after k steps is
the schedule's at k, each step is taken at the rate of its start, and a restored fit continues
the schedule bitwise (its step is the optimizer's iteration counter, which save_model keeps)."""

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from tati.errors import InputError

FLOAT32 = 2.0 ** -23  # relative rounding of the float32 rates Keras computes


def bowl(q):
    return 0.5 * tf.reduce_sum(q * q)


def quartic(q):
    return 0.5 * tf.reduce_sum(q * q) + 0.1 * tf.reduce_sum(q ** 4)


def test_exponential_decay_after_k_steps():
    """U = q^2 / 2, so gradient descent's step k multiplies q by 1 - rate(k - 1): the rate read
    from the optimizer after k steps is lr0 * r^(k / s), and the step k it took used
    lr0 * r^((k - 1) / s), both within float32 rounding (Keras keeps rates in float32)."""
    lr0, r, s = 0.1, 0.5, 4
    sim = tati.Simulation(potential=bowl, initial_parameters=[1.0], dtype="float64", max_steps=3,
                          learning_rate=lr0, learning_rate_decay_rate=r, learning_rate_decay_steps=s)
    q = []  # a row holds the parameters its step starts from
    for call in range(1, 6):
        trajectory = sim.fit().trajectory
        q += list(trajectory["param0"])
        k = 3 * call
        assert int(sim.optimizer.iterations.numpy()) == k
        assert float(sim.optimizer.learning_rate) == pytest.approx(lr0 * r ** (k / s), rel=4 * FLOAT32)
    q = np.array(q + [sim.parameters[0]])
    used = 1.0 - q[1:] / q[:-1]
    np.testing.assert_allclose(used, lr0 * r ** (np.arange(15) / s), rtol=8 * FLOAT32)


def test_cyclic_rate_falls_within_each_cycle_and_a_keras_schedule_is_taken():
    """Cycles of c = 4 steps from 0.1 to 0.02: the rate after k steps is (1 - t) 0.1 + t 0.02,
    t = (k mod 4 + 1) / 4. In Python a Keras schedule given as learning_rate drives any
    optimizer (here Adam) by its step count."""
    sim = tati.Simulation(potential=bowl, initial_parameters=[1.0], max_steps=1, learning_rate=0.1,
                          learning_rate_cycle_steps=4, learning_rate_cycle_minimum=0.02)
    for k in range(1, 10):
        sim.fit()
        t = (k % 4 + 1) / 4
        assert float(sim.optimizer.learning_rate) == pytest.approx((1 - t) * 0.1 + t * 0.02, rel=4 * FLOAT32)
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay([3], [0.1, 0.01])
    sim = tati.Simulation(potential=bowl, initial_parameters=[1.0], max_steps=3, optimizer="adam",
                          learning_rate=schedule)
    sim.fit()
    assert float(sim.optimizer.learning_rate) == pytest.approx(0.1)
    sim.fit()
    assert float(sim.optimizer.learning_rate) == pytest.approx(0.01)


@pytest.mark.parametrize("optimizer, schedule", [
    ("GradientDescent", dict(learning_rate_decay_rate=0.1, learning_rate_decay_steps=20)),
    ("adam", dict(learning_rate_cycle_steps=7))])
def test_a_restored_fit_continues_the_schedule_bitwise(tmp_path, optimizer, schedule):
    """40 steps equal 17 steps, save_model, restore_model in a new Simulation, 23 steps, row for
    row; the schedules change the rate within both halves and across the split."""
    options = dict(potential=quartic, initial_parameters=[[1.0, -0.5], [0.3, 2.0]], number_walkers=2,
                   optimizer=optimizer, learning_rate=0.05, **schedule)
    unbroken = tati.Simulation(max_steps=40, **options)
    full = unbroken.fit().trajectory
    checkpoint = str(tmp_path / "state.npz")
    first = tati.Simulation(max_steps=17, save_model=checkpoint, **options).fit().trajectory
    resumed = tati.Simulation(max_steps=23, restore_model=checkpoint, **options)
    second = resumed.fit().trajectory
    pd.testing.assert_frame_equal(full, pd.concat([first, second], ignore_index=True), check_exact=True)
    assert int(resumed.optimizer.iterations.numpy()) == 40
    assert float(resumed.optimizer.learning_rate) == float(unbroken.optimizer.learning_rate)


@pytest.mark.parametrize("options, message", [
    (dict(optimizer="L-BFGS", learning_rate_decay_rate=0.5), "learning_rate_decay_rate: optimizer L-BFGS"),
    (dict(learning_rate_decay_rate=0.5, learning_rate_cycle_steps=10), "either learning_rate_decay_rate"),
    (dict(learning_rate=keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5), learning_rate_cycle_steps=10),
     "already a schedule"),
    (dict(learning_rate=0.01, learning_rate_cycle_steps=10, learning_rate_cycle_minimum=0.1),
     "learning_rate_cycle_minimum 0.1 must not exceed learning_rate 0.01"),
    (dict(learning_rate="fast"), "learning_rate must be a number"),
    (dict(learning_rate_decay_rate=-1), "learning_rate_decay_rate must be > 0"),
])
def test_bad_schedules_are_one_line(options, message):
    with pytest.raises(tati.InputError, match=message):
        tati.Simulation(potential=bowl, initial_parameters=[1.0], **options)


@pytest.mark.parametrize("arguments, message", [
    ((0.01, 0.001, 0), "cycle_steps must be a whole number >= 1, got 0"),
    ((0.01, -0.02, 5), "needs 0 < minimum <= maximum"),
    ((0.01, 0.02, 5), "needs 0 < minimum <= maximum"),
])
def test_a_bad_cyclic_rate_is_refused_where_it_is_made(arguments, message):
    from tati.optimizers.schedules import CyclicLearningRate
    with pytest.raises(InputError, match=message):
        CyclicLearningRate(*arguments)
