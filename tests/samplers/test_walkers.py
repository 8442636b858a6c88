"""Walkers: W walkers in one vectorised step keep each sampler's exact stationary distribution,
walkers are exchangeable, and seeds reproduce tables for any W."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy import stats

import tati
from tati.engine.contract import LEGS
from tati.engine.registry import samplers_where
from langevin_harness import LINEAR, exact_draws, linear_scheme, stationary
from stats import for_sampler, seed, t_critical
from targets import A, COVARIANCE

WALKERS, COPIES, H, STEPS, THIN = 8, 16, 0.2, 6000, 3
# Driven on the model's variables, with an exact stationary law: a linear scheme's or HMC's.
ALL = tuple(name for name in samplers_where(evaluates_target=False)
            if name in LINEAR or name in samplers_where(kind=LEGS))
# samplers x (3 covariance entries + kinetic energy + 8 per-walker variances)
TESTS = len(ALL) * (3 + 1 + WALKERS)
ALPHA = 1e-3


def copies_potential(theta):
    """COPIES independent copies of the 2-D Gaussian per walker: [W, 2 COPIES] -> [W]."""
    x = tf.reshape(theta, [tf.shape(theta)[0], COPIES, 2])
    return 0.5 * tf.einsum("wki,ij,wkj->w", x, tf.constant(A, theta.dtype), x)


@pytest.mark.statistical
@pytest.mark.parametrize("name", ALL)
def test_walkers_keep_the_exact_stationary_distribution(name):
    """8 walkers x 16 copies = 128 independent chains of the correlated 2-D Gaussian, started at
    exact draws of the discrete scheme's stationary distribution (CCAdL: of GLA2's, which it
    equals for exact gradients at its equilibrium friction). Positions' covariance and the
    kinetic energy per walker against the Lyapunov solution; each walker's variances on its
    own. HMC (legs of time 1) is exact: the target's covariance, and the kinetic energy of
    the momenta drawn at each evaluation, d / 2 per walker. Student-t across chains;
    false-failure budget 1e-3 over all assertions of the file."""
    hmc = name.startswith("HMC")
    scheme = "GLA2" if name == "CCAdL" else name
    if hmc:
        sigma = np.zeros((4, 4))
        sigma[:2, :2], sigma[2:, 2:] = COVARIANCE, np.eye(2)
    else:
        step, report = linear_scheme(scheme, A, H, 1.0, 1.0)
        sigma = stationary(step)
    rng = np.random.default_rng(seed(700))
    state = exact_draws(sigma, WALKERS * COPIES, rng)
    positions = state[:, :2].reshape(WALKERS, 2 * COPIES)
    sampler_options = for_sampler(name, hamiltonian_dynamics_time=1.0, friction_constant=1.0)
    sim = tati.Simulation(potential=copies_potential, potential_batched=True, initial_parameters=positions,
                          number_walkers=WALKERS, dtype="float64", sampler=name, step_width=H,
                          max_steps=STEPS, every_nth=1 if hmc else THIN, seed=seed(701), **sampler_options)
    if name != "SGLD" and not hmc:
        sim.momenta = state[:, 2:].reshape(WALKERS, 2 * COPIES)
    result = sim.sample()
    trajectory = result.trajectory.sort_values(["id", "step"])
    x = trajectory[[f"param{i}" for i in range(2 * COPIES)]].to_numpy().reshape(-1, COPIES, 2)
    walker = trajectory.id.to_numpy()                             # HMC: each walker its own rows
    moments = np.stack([np.einsum("tki,tkj->kij", x[walker == w], x[walker == w]) / np.sum(walker == w)
                        for w in range(WALKERS)])                 # per walker and copy
    critical = t_critical(ALPHA, WALKERS * COPIES - 1, TESTS)
    for i, j in ((0, 0), (0, 1), (1, 1)):
        values = moments[..., i, j].ravel()
        error = values.std(ddof=1) / np.sqrt(values.size)
        assert abs(values.mean() - sigma[i, j]) < critical * error, (i, j, values.mean(), sigma[i, j])
    walker_critical = t_critical(ALPHA, COPIES - 1, TESTS)
    for walker in range(WALKERS):
        for i in range(2):
            values = moments[walker, :, i, i]
            error = values.std(ddof=1) / np.sqrt(COPIES)
            assert abs(values.mean() - sigma[i, i]) < walker_critical * error, (walker, i)
    if name != "SGLD":
        if hmc:
            exact = COPIES * 1.0
        else:
            p_cov = report[0] @ sigma @ report[0].T + report[1]
            exact = 0.5 * np.trace(p_cov[2:, 2:]) * COPIES
        per_walker = result.run_info.groupby("id").kinetic_energy.mean().to_numpy()
        error = per_walker.std(ddof=1) / np.sqrt(WALKERS)
        assert abs(per_walker.mean() - exact) < t_critical(ALPHA, WALKERS - 1, TESTS) * error, (per_walker, exact)


def test_swapping_walkers_swaps_losses_and_gradients_exactly():
    sim = tati.Simulation(dataset="two_clusters", hidden_dimension=[4], number_walkers=3, seed=seed(710))
    theta = sim.parameters
    losses, gradients = sim.loss(), sim.gradients()
    sim.parameters = theta[[2, 1, 0]]
    np.testing.assert_array_equal(sim.loss(), losses[[2, 1, 0]])
    np.testing.assert_array_equal(sim.gradients(), gradients[[2, 1, 0]])
    assert not np.array_equal(losses[0], losses[2])  # walkers start apart


def test_walkers_start_apart_and_share_a_given_start():
    sim = tati.Simulation(dataset="two_clusters", number_walkers=4, seed=1)
    assert len({tuple(row) for row in sim.parameters}) == 4
    one = tati.Simulation(dataset="two_clusters", seed=3).parameters
    walker3 = tati.Simulation(dataset="two_clusters", number_walkers=4, seed=0).parameters[3]
    np.testing.assert_array_equal(one, walker3)  # walker i draws with seed + i
    shared = tati.Simulation(potential=lambda x: tf.reduce_sum(x ** 2), initial_parameters=[1.0, 2.0],
                             number_walkers=3).parameters
    np.testing.assert_array_equal(shared, [[1.0, 2.0]] * 3)


@pytest.mark.parametrize("walkers", [1, 3])
def test_same_seed_same_tables_for_any_number_of_walkers(walkers):
    def run():
        result = tati.Simulation(dataset="two_clusters", hidden_dimension=[4], number_walkers=walkers,
                                 batch_size=100, max_steps=20, every_nth=5, burn_in_steps=5, seed=4).sample()
        return [frame.drop(columns="time_per_nth_step", errors="ignore")
                for frame in (result.run_info, result.trajectory, result.averages)]

    for first, again in zip(run(), run()):
        pd.testing.assert_frame_equal(first, again)
        assert sorted(set(first.id)) == list(range(walkers))


@pytest.mark.statistical
def test_keras_model_with_walkers_samples_a_conjugate_regression():
    """A Keras model y = w . x + b (one Dense layer) with 4 walkers through BAOAB (exact
    positions on a Gaussian): the mean squared loss and a Gaussian prior of standard deviation
    s on w make exp(-beta U) Gaussian (see test_proposal.py). Means and covariances within
    the MCSE bound (normal, budget 1e-3 over 3 + 6), and convergence() compares the 4 walkers."""
    import keras
    from stats import first_and_second_moments, mcse_deviations
    rng = np.random.default_rng(seed(740))
    n, beta, s = 50, 5.0, 0.5
    features = rng.normal(size=(n, 2)) * [1.0, 3.0]
    labels = features @ [0.7, -0.2] + 0.4 + rng.normal(size=n)
    design = np.hstack([features, np.ones((n, 1))])
    covariance = np.linalg.inv(beta * (2.0 / n * design.T @ design + np.diag([1 / s ** 2, 1 / s ** 2, 0.0])))
    mean = covariance @ (beta * 2.0 / n * design.T @ labels)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    burn_in = 2000
    sim = tati.Simulation(model=model, dataset=(features, labels[:, None]), loss="mean_squared",
                          prior_standard_deviation=s, inverse_temperature=beta, number_walkers=4,
                          step_width=0.05, friction_constant=1.0, burn_in_steps=burn_in, max_steps=22000,
                          every_nth=10, dtype="float64", seed=seed(741))
    result = sim.sample()
    columns = ["weight0", "weight1", "bias0"]
    moments, (i, j) = first_and_second_moments(result.trajectory, columns, burn_in)
    x = moments[..., :3]
    centred = np.concatenate([x, (x - mean)[..., i] * (x - mean)[..., j]], axis=-1)
    exact = np.concatenate([mean, covariance[i, j]])
    deviations = mcse_deviations(centred, exact)
    assert np.all(deviations < stats.norm.ppf(1 - 1e-3 / (2 * len(exact)))), deviations
    table = result.convergence(burn_in=burn_in)
    assert list(table.index) == columns and np.all(table["ess"] > 1000), table
    assert np.all(table["r_hat"] < 1.05), table  # 4 walkers of 2000 rows each agree
    # walker 0's parameters end in the model (float32 there)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), sim.parameters[0, 2:], rtol=1e-6)


def assert_mean_and_covariance(trajectory, columns, mean, covariance, max_steps, batches=20):
    """All walkers' rows against the exact mean and covariance. The preconditioner couples
    walkers, so the standard errors come from batch means over time of the walker-pooled
    statistics (`batches` equal ranges of steps). Student-t, false-failure budget 1e-3 split
    over the d means and d (d + 1) / 2 second moments."""
    d = len(columns)
    x = trajectory[columns].to_numpy() - mean
    batch = np.minimum((trajectory.step.to_numpy() - 1) * batches // max_steps, batches - 1)
    i, j = np.triu_indices(d)
    statistics = np.array([np.concatenate([x[batch == b].mean(axis=0),
                                           np.einsum("ti,tj->ij", x[batch == b], x[batch == b])[i, j]
                                           / np.sum(batch == b)]) for b in range(batches)])
    exact = np.concatenate([np.zeros(d), covariance[i, j]])
    error = statistics.std(axis=0, ddof=1) / np.sqrt(batches)
    deviation = np.abs(statistics.mean(axis=0) - exact)
    critical = t_critical(1e-3, batches - 1, len(exact))
    assert np.all(deviation < critical * error), np.max(deviation / error)


def ill_conditioned_gaussian(rng, d=10):
    """A rotated d-D Gaussian with variances 0.01 ... 100 (condition number 10^4): its
    covariance and potential."""
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    covariance = rotation @ np.diag(np.logspace(-2, 2, d)) @ rotation.T
    precision = tf.constant(np.linalg.inv(covariance))
    return covariance, lambda x: 0.5 * tf.tensordot(x, tf.linalg.matvec(precision, x), 1)


@pytest.mark.statistical
def test_preconditioned_baoab_samples_an_ill_conditioned_gaussian():
    """eta = 1, 16 walkers on the 10-D Gaussian with condition number 10^4, walkers started at
    exact draws; rows every 10 steps, batches of 1000 steps."""
    d, walkers, steps = 10, 16, 20000
    rng = np.random.default_rng(seed(720))
    covariance, potential = ill_conditioned_gaussian(rng, d)
    start = rng.multivariate_normal(np.zeros(d), covariance, size=walkers)
    sim = tati.Simulation(potential=potential, initial_parameters=start, number_walkers=walkers,
                          dtype="float64", covariance_blending=1.0, covariance_after_steps=50,
                          step_width=0.1, friction_constant=1.0, max_steps=steps, every_nth=10,
                          seed=seed(721))
    trajectory = sim.sample().trajectory
    assert_mean_and_covariance(trajectory, [f"param{i}" for i in range(d)], np.zeros(d), covariance, steps)
    assert float(sim.ensemble.eta.numpy()) == 1.0  # no factorisation failed


@pytest.mark.statistical
@pytest.mark.parametrize("b_from", ["standing half", "moving half"])
def test_preconditioned_hmc2_samples_an_ill_conditioned_gaussian(b_from, monkeypatch):
    """HMC2 with eta = 1 on the same target, 4 walkers: each half moves by whole legs within
    its phase of 100 calls, with B from the standing half's chain states (walkers.md). Rows at
    every evaluation, batches of 800 steps. Negative control: B from the half that moves, so
    that a walker's B depends on its own position, must fail; it runs 8 walkers, since with 4
    it failed at only 5 of 6 seeds (7.5-13 standard errors) even over 32,000 steps, and with 8
    over 16,000 steps it fails by 6.6-8.4 standard errors at seeds 0-3 (critical value 5.7).
    The right scheme passed at 5 of 5 seeds. With 16 walkers the smallest ESS of the
    eigen-directions in 20,000 steps was 3000 against 115 for eta = 0."""
    from tati.samplers import ensemble
    if b_from == "moving half":
        right = ensemble.preconditioner
        monkeypatch.setattr(ensemble, "preconditioner", lambda theta, eta, standing:
                            right(theta, eta, tf.logical_not(standing)))
    d, walkers, steps = 10, 8 if b_from == "moving half" else 4, 16000
    rng = np.random.default_rng(seed(740))
    covariance, potential = ill_conditioned_gaussian(rng, d)
    start = rng.multivariate_normal(np.zeros(d), covariance, size=walkers)
    sim = tati.Simulation(potential=potential, initial_parameters=start, number_walkers=walkers,
                          dtype="float64", sampler="HMC2", covariance_blending=1.0,
                          covariance_after_steps=100, step_width=0.1, hamiltonian_dynamics_time=1.5,
                          max_steps=steps, every_nth=1, seed=seed(741))
    result = sim.sample()
    trajectory = result.trajectory
    columns = [f"param{i}" for i in range(d)]
    if b_from == "moving half":
        with pytest.raises(AssertionError):
            assert_mean_and_covariance(trajectory, columns, np.zeros(d), covariance, steps)
        return
    assert_mean_and_covariance(trajectory, columns, np.zeros(d), covariance, steps)
    assert float(sim.ensemble.eta.numpy()) == 1.0
    later = trajectory[trajectory.step > 1]                     # after the first call's rows
    phase = (later.step - 1) // 100                             # of the call that wrote the row
    assert (phase % 2 == later.id % 2).all()                    # rows only where the walker's half moves
    rates = result.run_info.groupby("id").average_rejection_rate.last()
    assert (rates > 0).all() and (rates < 0.3).all(), rates    # the Metropolis test is at work


def test_preconditioner_is_the_cholesky_factor_of_the_standing_walkers_covariance():
    from tati.samplers.ensemble import preconditioner
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(7, 3))
    standing = np.arange(7) % 2 == 1
    factor, finite = preconditioner(tf.constant(theta), 0.5, tf.constant(standing))
    assert bool(finite)
    expected = np.eye(3) + 0.5 * np.cov(theta[standing].T)
    np.testing.assert_allclose(factor @ tf.transpose(factor), expected, rtol=1e-12)
    np.testing.assert_array_equal(np.triu(factor.numpy(), 1), 0.0)          # lower triangular


def test_collapse_resets_walkers_to_the_first():
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=np.eye(3),
                          number_walkers=3, collapse_walkers=True, covariance_after_steps=10,
                          max_steps=10, every_nth=1, seed=1)
    trajectory = sim.sample().trajectory
    first = trajectory[trajectory.step == 1]  # the state the first step started from: collapsed
    assert (first[["param0", "param1", "param2"]].to_numpy() == [1.0, 0.0, 0.0]).all()


def test_blending_needs_four_walkers():
    with pytest.raises(tati.InputError, match="number_walkers >= 4"):
        tati.Simulation(potential=lambda x: tf.reduce_sum(x * x), initial_parameters=[0.0],
                        number_walkers=3, covariance_blending=1.0)


def test_halves_take_turns_and_use_the_standing_half():
    """With covariance_after_steps = 5: steps 1-5 move the even walkers with B from the odd
    ones' positions, steps 6-10 the odd ones; a standing walker keeps its parameters."""
    rng = np.random.default_rng(1)
    start = rng.normal(size=(4, 2))
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=start,
                          number_walkers=4, covariance_blending=0.7, covariance_after_steps=5,
                          max_steps=6, every_nth=1, dtype="float64", seed=2)
    trajectory = sim.sample().trajectory.sort_values(["step", "id"])
    x = trajectory[["param0", "param1"]].to_numpy().reshape(6, 4, 2)  # rows: state before each step
    assert np.array_equal(x[:, 1::2], np.broadcast_to(start[1::2], (6, 2, 2)))  # odd stood still
    assert np.all(x[1, 0::2] != start[0::2])                                 # even moved
    factor = sim.ensemble.matrices[0].numpy()                                   # refreshed at step 5
    expected = np.eye(2) + 0.7 * np.cov(x[5, 0::2].T)
    np.testing.assert_allclose(factor @ factor.T, expected, rtol=1e-10)
    np.testing.assert_array_equal(sim.ensemble.moving.numpy(), [False, True, False, True])



@pytest.mark.statistical
def test_layer_blocks_precondition_a_linear_network_with_its_exact_gaussian_posterior():
    """covariance_blocks=layers on a linear network (3 weights, 1 bias, mean squared loss on
    centred data) whose posterior exp(-beta U) is Gaussian with covariance (2 beta S)^-1 for the
    weights (S = X^T X / N, eigenvalues 0.01 ... 100: condition number 10^4) and 1/(2 beta) for
    the bias, at the least-squares mean. Two blocks (output/weights 3x3, output/biases 1x1);
    statistics and budget as in the 10-D test above (batch means, Student-t, 1e-3 over 4 + 10)."""
    d, walkers, n, beta = 3, 16, 200, 0.5
    rng = np.random.default_rng(seed(730))
    rotation, _ = np.linalg.qr(rng.normal(size=(d, d)))
    scatter = rotation @ np.diag([1e-2, 1.0, 1e2]) @ rotation.T
    z = rng.normal(size=(n, d))
    z -= z.mean(axis=0)
    z = z @ np.linalg.inv(np.linalg.cholesky(z.T @ z / n)).T                # exactly centred and white
    features = z @ np.linalg.cholesky(scatter).T                             # X^T X / N = scatter
    labels = features @ rng.normal(size=d) + 0.3 + rng.normal(size=n)
    design = np.hstack([features, np.ones((n, 1))])
    mean = np.linalg.lstsq(design, labels, rcond=None)[0]
    covariance = np.linalg.inv(beta * 2.0 / n * design.T @ design)
    assert np.allclose(covariance[:d, d], 0.0, atol=1e-8)                     # the blocks are exact
    start = rng.multivariate_normal(mean, covariance, size=walkers)
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], output_activation="linear",
                          loss="mean_squared", dtype="float64", initial_parameters=start,
                          number_walkers=walkers, inverse_temperature=beta, covariance_blending=1.0,
                          covariance_blocks="layers", covariance_after_steps=50, step_width=0.1,
                          friction_constant=1.0, max_steps=20000, every_nth=10, seed=seed(731))
    assert [int(m.shape[1]) for m in sim.ensemble.matrices] == [3, 1]
    trajectory = sim.sample().trajectory
    columns = [f"weight{i}" for i in range(d)] + ["bias0"]
    assert_mean_and_covariance(trajectory, columns, mean, covariance, 20000)
    assert float(sim.ensemble.eta.numpy()) == 1.0


def test_layer_blocks_are_the_factors_of_each_tensors_covariance():
    """B is block-diagonal: each tensor's block is the Cholesky factor of I + eta C of that
    tensor's coordinates over the standing walkers; fixed parameters leave their block."""
    sim = tati.Simulation(hidden_dimension=[2], number_walkers=4, covariance_blending=0.5,
                          covariance_blocks="layers", covariance_after_steps=3, max_steps=4, every_nth=1,
                          dtype="float64", fix_parameters="bias0=0.1", seed=5)
    names = sim.model.parameter_names
    groups = {g: [names.index(m) for m in members if m in names] for g, members in sim.model.parameter_groups().items()}
    assert [int(m.shape[1]) for m in sim.ensemble.matrices] == [len(b) for b in groups.values()] == [4, 1, 2, 1]
    sim.sample()
    np.testing.assert_array_equal(sim.ensemble.moving.numpy(), [False, True, False, True])
    theta = sim.model.get_parameters()  # the even half has stood still since the refresh at step 3
    standing = theta[0::2]
    for matrix, block in zip(sim.ensemble.matrices, groups.values()):
        factor = matrix.numpy()
        expected = np.eye(len(block)) + 0.5 * np.atleast_2d(np.cov(standing[:, block].T))
        np.testing.assert_allclose(factor @ factor.T, expected, rtol=1e-10)
    g = np.random.default_rng(0).normal(size=(4, len(names)))
    dense = np.zeros((4, len(names), len(names)))
    for matrix, block in zip(sim.ensemble.matrices, groups.values()):
        for walker in range(4):
            dense[walker][np.ix_(block, block)] = matrix.numpy()
    np.testing.assert_allclose(sim.ensemble.force(tf.constant(g)).numpy(), np.einsum("wji,wj->wi", dense, g), rtol=1e-12)
    np.testing.assert_allclose(sim.ensemble.velocity(tf.constant(g)).numpy(), np.einsum("wij,wj->wi", dense, g), rtol=1e-12)


def test_covariance_blocks_errors_name_the_option():
    with pytest.raises(tati.InputError, match="covariance_blocks=layers needs the built-in network"):
        tati.Simulation(potential=lambda x: tf.reduce_sum(x * x), initial_parameters=np.zeros((4, 2)),
                        number_walkers=4, covariance_blending=1.0, covariance_blocks="layers")
    with pytest.raises(tati.InputError, match="covariance_blocks=layers"):
        tati.Simulation(hidden_dimension=[70, 70], number_walkers=4, covariance_blending=1.0)
    with pytest.raises(tati.InputError, match="layer2/weights"):
        tati.Simulation(hidden_dimension=[70, 70], number_walkers=4, covariance_blending=1.0,
                        covariance_blocks="layers")
