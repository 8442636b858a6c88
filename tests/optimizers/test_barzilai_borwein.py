"""optimizer="BarzilaiBorweinGradientDescent": gradient descent with the step s.s / s.y."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from stats import seed
from tati.errors import InputError

# An ill-conditioned quadratic U = 1/2 sum_i c_i x_i^2, curvatures from 1 to 1000.
CURVATURES = np.logspace(0, 3, 10)


def quadratic(x):
    return 0.5 * tf.reduce_sum(tf.constant(CURVATURES, x.dtype) * x ** 2)


def steps_to_minimum(optimizer, learning_rate, max_steps, tolerance=1e-6):
    """(first step whose position is within tolerance of the minimum 0, distance at the end)."""
    sim = tati.Simulation(potential=quadratic, initial_parameters=np.ones(len(CURVATURES)), optimizer=optimizer,
                          learning_rate=learning_rate, max_steps=max_steps, dtype="float64")
    trajectory = sim.fit().trajectory  # the position before each step's update
    distance = np.linalg.norm(trajectory.filter(like="param").to_numpy(), axis=1)
    reached = trajectory["step"].to_numpy()[distance < tolerance]
    return (int(reached[0]) if len(reached) else None), float(np.linalg.norm(sim.parameters))


def test_far_fewer_steps_than_gradient_descent_on_an_ill_conditioned_quadratic():
    """Condition number 1000. Gradient descent's best fixed rate 2 / (c_min + c_max) (rates up to
    2 / c_max are stable, all slower) contracts the extreme components by 999/1001 a step, so it
    needs log(1e-6 / sqrt 2) / log(999/1001) = 7081 steps; Barzilai-Borwein a few hundred."""
    bb, bb_end = steps_to_minimum("BarzilaiBorweinGradientDescent", 1e-3, 400)
    gd, gd_end = steps_to_minimum("GradientDescent", 2.0 / (CURVATURES[0] + CURVATURES[-1]), 7200)
    assert bb is not None and bb <= 400 and bb_end < 1e-6
    assert 7081 <= gd <= 7200  # within the theory's count (the faster components add little)
    assert gd > 20 * bb


def test_the_second_step_lands_on_the_minimum_of_a_one_dimensional_quadratic():
    """For U = c x^2 / 2 every secant gives s.y / s.s = c exactly, so step 2 jumps to x = 0."""
    sim = tati.Simulation(potential=lambda x: 2.5 * tf.reduce_sum(x ** 2), initial_parameters=[1.0], max_steps=2,
                          optimizer="BarzilaiBorwein", learning_rate=0.1, dtype="float64")
    sim.fit()
    assert abs(sim.parameters[0]) < 1e-15


def test_negative_curvature_falls_back_to_the_learning_rate():
    """In the concave middle of the double well U = x^4/4 - x^2/2, s.y < 0: each step is plain
    gradient descent with learning_rate, and the run-info's scaled_gradient is that step's length."""
    rate, x = 0.125, 0.01  # a learning rate exact in float32, the type of Keras' learning_rate
    sim = tati.Simulation(potential=lambda q: tf.reduce_sum(q ** 4 / 4 - q ** 2 / 2), initial_parameters=[x],
                          optimizer="BarzilaiBorweinGradientDescent", learning_rate=rate, max_steps=3, dtype="float64")
    result = sim.fit()
    expected, lengths = [], []
    for _ in range(3):
        expected.append(x)
        gradient = x ** 3 - x
        lengths.append(abs(rate * gradient))
        x -= rate * gradient
    np.testing.assert_allclose(result.trajectory["param0"], expected, rtol=1e-14)
    np.testing.assert_allclose(result.run_info["scaled_gradient"], lengths, rtol=1e-14)


def regression(seed_value=4600, **options):
    """A linear regression whose predictors have scales 1, 10 and 1000 (a Hessian of condition
    number about 1e6): (Simulation, the least-squares weights and bias)."""
    rng = np.random.default_rng(seed(seed_value))
    features = rng.normal(size=(200, 3)) * [1.0, 10.0, 1000.0]
    labels = features @ [0.5, -0.03, 0.001] + 0.2 + 0.1 * rng.normal(size=200)
    exact = np.linalg.lstsq(np.hstack([features, np.ones((200, 1))]), labels, rcond=None)[0]
    settings = dict(dataset=(features, labels[:, None]), hidden_dimension=[], output_activation="linear",
                    loss="mean_squared", optimizer="BarzilaiBorweinGradientDescent", dtype="float64")
    settings.update(options)
    return tati.Simulation(**settings), exact


def test_reaches_the_least_squares_solution():
    """Every walker, each from its own start, at the closed-form solution within 1e-9 after 600
    steps (each needs fewer than 200 on these data)."""
    sim, exact = regression(max_steps=600, number_walkers=3)
    sim.fit()
    np.testing.assert_allclose(sim.parameters, np.broadcast_to(exact, (3, 4)), rtol=0, atol=1e-9)


def test_each_walker_takes_its_own_steps():
    """Walkers do not share a step width: walker 2 of three moves exactly as it does alone."""
    sim, _ = regression(max_steps=40, number_walkers=3, every_nth=1)
    starts = sim.parameters.copy()
    together = sim.fit().trajectory
    alone = regression(max_steps=40, initial_parameters=starts[2], every_nth=1)[0].fit().trajectory
    columns = [c for c in alone.columns if c.startswith(("weight", "bias"))]
    mine = together[together["id"] == 2][columns].to_numpy()
    np.testing.assert_allclose(mine, alone[columns].to_numpy(), rtol=1e-12, atol=1e-15)
    widths = together.groupby("step")["weight0"].nunique()
    assert (widths.iloc[2:] == 3).all()  # and the walkers' paths differ


def test_a_resumed_minimisation_continues_bitwise(tmp_path):
    """5 steps, a checkpoint, 6 more in a new Simulation: the rows of 11 in one go (the stored
    previous position and gradient carry the secant across)."""
    whole = regression(max_steps=11, number_walkers=2)[0].fit()
    checkpoint = str(tmp_path / "c.npz")
    first = regression(max_steps=5, number_walkers=2, save_model=checkpoint)[0].fit()
    rest = regression(max_steps=6, number_walkers=2, restore_model=checkpoint)[0].fit()
    for table in ("run_info", "trajectory"):
        joined = pd.concat([getattr(first, table), getattr(rest, table)], ignore_index=True)
        drop = [c for c in ("time_per_nth_step",) if c in joined]
        pd.testing.assert_frame_equal(joined.drop(columns=drop), getattr(whole, table).drop(columns=drop))


def test_setting_the_parameters_restarts_with_the_learning_rate():
    """After sim.parameters = ..., the next step is a plain gradient step (no secant across the jump)."""
    sim = tati.Simulation(potential=lambda x: 2.5 * tf.reduce_sum(x ** 2), initial_parameters=[1.0], max_steps=3,
                          optimizer="BarzilaiBorweinGradientDescent", learning_rate=0.125, dtype="float64")
    sim.fit()
    sim.parameters = [2.0]
    # 2 - 0.125 * 5 * 2 = 0.75, then the secant step 1/5 lands on 0 (without the restart the
    # first step's secant from the stored point would already land there)
    np.testing.assert_allclose(sim.fit().trajectory["param0"], [2.0, 0.75, 0.0], rtol=0, atol=1e-15)


def test_mini_batches_are_refused():
    with pytest.raises(InputError, match="batch_size: optimizer BarzilaiBorweinGradientDescent needs the whole"):
        regression(batch_size=10)
