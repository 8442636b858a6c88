"""Priors, fixed parameters and starting from a stored trajectory row (issue #6).

Statistical budget: each test below that draws samples fails falsely with probability at most
1e-4 (Bonferroni over its comparisons); the wall bound is an event of exact probability below
1e-10 per run (see the numbers at the test).
"""

import math

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy import stats

import tati
from stats import for_sampler, read_csv
from tati.errors import InputError
from tati.models.priors import Prior
from tati.engine.registry import samplers_where

# -- walls ------------------------------------------------------------------------------------
# U(q) = -F q0 + F q1 pushes q0 into the upper wall and q1 into the lower one. Walls at
# [-50, 50] are tau = 1 wide; with a = 40 and n = 1 the wall force a (1 - d/tau) balances F = 30
# at a distance d* = tau/4 inside the boundary, and the curvature a / tau = 40 lets every
# sampler run at h = 0.02. The exact density ratio between d = -tau (a wall width beyond the
# boundary) and d* is exp(-31.25) = 2.7e-14 per coordinate: a draw beyond it is practically
# impossible, while about 6% of the draws lie beyond the boundary itself (the walls are soft).
FORCE, BOUND, FACTOR = 30.0, 50.0, 40.0
TAU = 0.01 * 2 * BOUND


def pushed(q):
    return -FORCE * q[0] + FORCE * q[1]


@pytest.mark.parametrize("sampler", ["GLA1", "GLA2", "BAOAB", "SGLD", "HMC2"])
def test_walls_hold_parameters_within_a_wall_width(sampler):
    sim = tati.Simulation(**for_sampler(
        sampler, potential=pushed, initial_parameters=[BOUND - 1.0, -BOUND + 1.0], sampler=sampler,
        step_width=0.02, friction_constant=1.0, hamiltonian_dynamics_time=0.3,
        prior_lower_boundary=-BOUND, prior_upper_boundary=BOUND, prior_factor=FACTOR,
        prior_power=1.0, number_walkers=4, max_steps=3000, every_nth=5, seed=11))
    q = sim.sample().trajectory[["param0", "param1"]].to_numpy()
    assert q[:, 0].max() <= BOUND + TAU and q[:, 1].min() >= -BOUND - TAU
    # The walls bind: the parameters press into them and are held there, not elsewhere.
    settled = q[len(q) // 2:]
    assert (settled[:, 0] > BOUND - 4 * TAU).mean() > 0.9 and (settled[:, 1] < -BOUND + 4 * TAU).mean() > 0.9
    assert (settled[:, 0] > BOUND).mean() > 0.005  # soft: some draws lie beyond the boundary


def test_without_walls_the_same_run_leaves_the_interval():
    sim = tati.Simulation(potential=pushed, initial_parameters=[BOUND - 1.0, -BOUND + 1.0], sampler="BAOAB",
                          step_width=0.02, max_steps=1000, every_nth=50, seed=11)
    q = sim.sample().trajectory[["param0", "param1"]].to_numpy()
    assert q[-1, 0] > BOUND + TAU and q[-1, 1] < -BOUND - TAU


def test_wall_energy_and_force_follow_the_documented_formula():
    """U_wall(d) = a tau/(n+1) max(0, 1 - d/tau)^(n+1): force a (1 - d/tau)^n inside the wall."""
    a, n, lower, upper = 3.0, 2.0, -1.0, 3.0
    tau = 0.01 * (upper - lower)
    prior = Prior(lower, upper, a, n, None, [True, True])
    theta = tf.Variable([[upper - 0.3 * tau, lower - 0.5 * tau], [0.0, 1.0]], dtype=tf.float64)
    with tf.GradientTape() as tape:
        energy = prior.energy(theta)
        total = tf.reduce_sum(energy)
    force = -tape.gradient(total, theta).numpy()
    wall = lambda d: a * tau / (n + 1) * max(0.0, 1 - d / tau) ** (n + 1)
    np.testing.assert_allclose(energy.numpy(), [wall(0.3 * tau) + wall(-0.5 * tau), 0.0], rtol=1e-12)
    np.testing.assert_allclose(force[0], [-a * 0.7 ** n, a * 1.5 ** n], rtol=1e-12)
    np.testing.assert_array_equal(force[1], [0.0, 0.0])


# -- tethering and the Gaussian prior: exact variances -------------------------------------------
def final_positions(**options):
    """Positions of 256 independent walkers after 400 BAOAB steps (relaxed for e^-20 of their
    start), iid draws of the target; BAOAB's positions are exact on a Gaussian."""
    sim = tati.Simulation(potential=lambda q: 0.0 * tf.reduce_sum(q), initial_parameters=[0.0, 0.0],
                          sampler="BAOAB", step_width=0.1, friction_constant=1.0, number_walkers=256,
                          max_steps=400, every_nth=400, seed=3, **options)
    sim.sample()
    return sim.parameters.ravel()


def assert_gaussian(samples, mean, variance, comparisons):
    """Mean z-test and variance chi-square test at false-failure 1e-4 over all comparisons."""
    alpha = 1e-4 / comparisons
    n = len(samples)
    z = (samples.mean() - mean) / math.sqrt(variance / n)
    assert abs(z) < stats.norm.isf(alpha / 4)
    ratio = ((samples - mean) ** 2).sum() / variance
    assert stats.chi2.ppf(alpha / 4, n) < ratio < stats.chi2.isf(alpha / 4, n)


def test_tethering_gives_the_implied_gaussian():
    """l == u = c, n = 1: U = a/2 |q - c|^2, so q ~ N(c, 1/(beta a))."""
    centre, a, beta = 0.5, 4.0, 2.0
    samples = final_positions(prior_lower_boundary=centre, prior_upper_boundary=centre, prior_factor=a,
                              prior_power=1.0, inverse_temperature=beta)
    assert_gaussian(samples, centre, 1.0 / (beta * a), comparisons=2)


def test_gaussian_prior_gives_its_variance():
    s, beta = 0.7, 1.0
    samples = final_positions(prior_standard_deviation=s, inverse_temperature=beta)
    assert_gaussian(samples, 0.0, s ** 2 / beta, comparisons=2)


def test_gaussian_prior_of_a_network_covers_weights_only_and_enters_the_loss():
    options = dict(hidden_dimension=[3], seed=1)
    plain = tati.Simulation(**options)
    prior = tati.Simulation(prior_standard_deviation=0.5, **options)
    theta = plain.parameters
    weights = np.array([name.startswith("weight") for name in plain.model.parameter_names])
    assert 0 < weights.sum() < len(theta)
    np.testing.assert_allclose(prior.loss() - plain.loss(), (theta[weights] ** 2).sum() / (2 * 0.25), rtol=1e-6)


def test_prior_options_are_checked():
    with pytest.raises(InputError, match="prior_lower_boundary"):
        tati.Simulation(potential=pushed, initial_parameters=[0.0, 0.0], prior_lower_boundary=1.0,
                        prior_upper_boundary=0.0)
    with pytest.raises(InputError, match="prior_factor"):
        tati.Simulation(potential=pushed, initial_parameters=[0.0, 0.0], prior_factor=0.0)


# -- fixed parameters ---------------------------------------------------------------------------
FIX = "layer1/weights=0.1;output/biases=-0.2;weight7=0.3"


@pytest.mark.parametrize("sampler", samplers_where(evaluates_target=False) + ["fit"])
def test_fixed_parameters_never_change(sampler):
    options = dict(hidden_dimension=[3], number_walkers=2, max_steps=30, every_nth=10, step_width=0.1,
                   learning_rate=0.5, seed=4, fix_parameters=FIX)
    sim = tati.Simulation(**options, **({} if sampler == "fit" else {"sampler": sampler}))
    free = tati.Simulation(**dict(options, fix_parameters=None))
    names = free.model.parameter_names
    # hidden_dimension 3 on 2 inputs: weight0..5 are layer1, weight6..8 the output, bias3 the output
    fixed = {f"weight{i}": 0.1 for i in range(6)} | {"weight7": 0.3, "bias3": -0.2}
    assert sim.num_parameters == free.num_parameters - len(fixed)
    assert sim.model.parameter_names == [n for n in names if n not in fixed]
    before = sim.parameters.copy()
    result = sim.fit() if sampler == "fit" else sim.sample()
    assert not set(fixed) & set(result.trajectory.columns)
    assert not np.allclose(sim.parameters, before)  # the free ones moved
    full = sim.model.full_parameters().numpy()
    for name, value in fixed.items():
        np.testing.assert_array_equal(full[:, names.index(name)], np.float32(value))
    # The network is evaluated with them: the same as the unfixed network at the full vector.
    free.parameters = full
    np.testing.assert_allclose(sim.loss(), free.loss(), rtol=1e-6)


@pytest.mark.statistical
def test_equipartition_counts_only_the_free_parameters():
    """U = |q|^2/2 in 5-D with 2 fixed: the mean kinetic energy is 3/(2 beta), not 5/(2 beta).
    The run's mean over 16 walkers and 4000 steps has a standard error below 0.01 (readings
    decorrelate within a few steps at friction 1, h = 0.2), against a difference of 1/beta = 1."""
    beta = 1.0
    sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q ** 2), initial_parameters=[0.0] * 5,
                          fix_parameters="param1=0.3;param3=-0.2", sampler="BAOAB", step_width=0.2,
                          friction_constant=1.0, number_walkers=16, max_steps=4000, every_nth=20,
                          burn_in_steps=200, seed=8, inverse_temperature=beta)
    averages = sim.sample().averages
    kinetic = averages[averages.step == averages.step.max()]["average_kinetic_energy"].to_numpy()
    standard_error = kinetic.std(ddof=1) / math.sqrt(len(kinetic))
    assert abs(kinetic.mean() - 3 / (2 * beta)) < stats.norm.isf(1e-4 / 2) * max(standard_error, 0.01)
    assert sim.num_parameters == 3


@pytest.mark.parametrize("spec, message", [
    ("layer9/weights=1", "layer9/weights"), ("weight0", "NAME=VALUE"), ("weight0=x", "not a number"),
    ("output/weights=1,2", "values"), ("weight0=nan", "not finite"),
    ("weight7=1;weight7=2", "weight7 is given two values (1 and 2)"),
])
def test_bad_fix_parameters_name_the_fault(spec, message):
    with pytest.raises(InputError, match="fix_parameters") as error:
        tati.Simulation(hidden_dimension=[3], fix_parameters=spec)
    assert message in str(error.value)


def test_fixing_every_parameter_is_refused():
    with pytest.raises(InputError, match="nothing is left"):
        tati.Simulation(potential=pushed, initial_parameters=[0.0, 0.0], fix_parameters="param0=1;param1=2")


# -- start from a trajectory row ----------------------------------------------------------------
def test_start_from_a_stored_row_for_each_walker(tmp_path):
    path = str(tmp_path / "trajectory.csv")
    options = dict(potential=lambda q: 0.5 * tf.reduce_sum(q ** 2), initial_parameters=[1.0, -1.0],
                   number_walkers=3, seed=2)
    tati.Simulation(max_steps=10, trajectory_file=path, **options).sample()
    rows = read_csv(path).set_index(["step", "id"])
    started = tati.Simulation(parse_parameters_file=path, parse_steps=[4, 7, 10], **options)
    expected = np.stack([rows.loc[(step, walker), ["param0", "param1"]].to_numpy()
                         for walker, step in enumerate([4, 7, 10])])
    np.testing.assert_array_equal(started.parameters, expected)
    last = tati.Simulation(parse_parameters_file=path, **options)  # no step: the file's last
    np.testing.assert_array_equal(last.parameters, rows.loc[10].loc[[0, 1, 2], ["param0", "param1"]].to_numpy())


def test_start_from_a_one_walker_row_for_all_walkers(tmp_path):
    path = tmp_path / "one.csv"
    pd.DataFrame({"id": [0, 0], "step": [1, 2], "param0": [0.5, 0.25], "param1": [1.5, 1.25]}).to_csv(path, index=False)
    sim = tati.Simulation(potential=pushed, initial_parameters=[0.0, 0.0], number_walkers=2,
                          parse_parameters_file=str(path), parse_steps=[1])
    np.testing.assert_array_equal(sim.parameters, [[0.5, 1.5], [0.5, 1.5]])


@pytest.mark.parametrize("content, steps, message", [
    ("id,step,param0\n0,1,0.5\n", None, "param1"),
    ("id,step,param0,param1\n0,1,0.5,0.5\n", [3], "no row at step 3"),
    ("id,step,param0,param1\n", None, "no rows"),
    ("id,step,param0,param1\n0,1,nan,0.5\n", None, "non-finite"),
    ("", None, "not a readable CSV"),
    ("id,step,loss,param0,param1,param2\n0,1,0.1,0.5,0.5,0.5\n", None,
     "has the column 'param2', which is not a parameter of this model (it has 3 parameter columns, this model 2)"),
])
def test_bad_parameters_file_names_the_fault(tmp_path, content, steps, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(InputError, match="parse_parameters_file") as error:
        tati.Simulation(potential=pushed, initial_parameters=[0.0, 0.0], parse_parameters_file=str(path),
                        parse_steps=steps)
    assert message in str(error.value)
    with pytest.raises(InputError, match="parse_steps needs parse_parameters_file"):
        tati.Simulation(potential=pushed, initial_parameters=[0.0, 0.0], parse_steps=[1])
