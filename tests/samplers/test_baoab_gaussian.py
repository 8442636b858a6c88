"""BAOAB on U(x) = |x|^2 / 2 against exact answers (friction 1, step width 0.5).

The potential is separable and the noise independent per coordinate, so each of the D = 64
coordinates is an independent chain of the 1-D problem U(x) = x^2 / 2.

BAOAB samples positions exactly on Gaussians at any stable step width: E[x^2] = 1 / beta.
The kinetic_energy column reports the full-step momentum p^n (the momentum after the B that
completes step n, paired with position q^n): on this oscillator its exact stationary variance
is (1 - h^2 / 4) / beta, so E[kinetic_energy] = D (1 - h^2 / 4) / (2 beta).

Standard errors: for positions, the spread of the 64 per-coordinate estimates; for the kinetic
energy, batch means of the run-info column over 20 batches of 400 steps (200 time units, far
beyond the momentum's correlation time 1 / gamma). Critical values are Student-t for a
false-failure budget of 1e-4 for this file, split by Bonferroni over its 3 assertions.
"""

import pytest
import tensorflow as tf

import tati
from stats import chain_mean_and_error, seed, t_critical

D = 64
H = 0.5
ALPHA = 1e-4
TESTS = 3
SKIP = 400  # steps of start-up transient left out (relaxation time 1 / gamma = 2 steps)


def run(beta, chain_seed):
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=[0.0] * D,
                          dtype="float64", sampler="BAOAB", step_width=H, friction_constant=1.0,
                          inverse_temperature=beta, max_steps=8000 + SKIP, every_nth=4, seed=chain_seed)
    result = sim.sample()
    trajectory = result.trajectory[result.trajectory.step > SKIP]
    second_moments = (trajectory[[f"param{i}" for i in range(D)]] ** 2).mean(axis=0)
    kinetic = result.run_info.kinetic_energy[result.run_info.step > SKIP].to_numpy() / D
    return chain_mean_and_error(second_moments), chain_mean_and_error(kinetic.reshape(20, -1).mean(axis=1))


@pytest.fixture(scope="module")
def beta_one():
    return run(1.0, seed(11))


@pytest.mark.statistical
def test_position_variance_is_exact(beta_one):
    (mean, error, dof), _ = beta_one
    assert abs(mean - 1.0) < t_critical(ALPHA, dof, TESTS) * error, (mean, error)


@pytest.mark.statistical
def test_full_step_kinetic_energy_matches_theory(beta_one):
    _, (mean, error, dof) = beta_one
    exact = (1.0 - H * H / 4.0) / 2.0
    bound = t_critical(ALPHA, dof, TESTS) * error
    # the test must be able to tell the discrete answer from the continuous one, 1/2
    assert bound < (0.5 - exact) / 2.0, bound
    assert abs(mean - exact) < bound, (mean, exact, error)


@pytest.mark.statistical
def test_inverse_temperature_scales_variance():
    (mean, error, dof), _ = run(4.0, seed(12))
    assert abs(mean - 0.25) < t_critical(ALPHA, dof, TESTS) * error, (mean, error)
