"""NUTS and RWMH (TFP's kernels run by tati) against exact answers: invariance of one
transition from exact draws (DKWM) with a negative control, moments of badly scaled and
correlated Gaussians with nothing but burn_in_steps and max_steps given (the adaptation),
a conjugate Bayesian linear regression through a Keras model, bitwise resume in burn-in.

False-failure budget: 1e-6 per DKWM test, 1e-3 split (Bonferroni) over each moment test's
assertions, as test_hmc.py.
"""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy import stats as sps

import tati
from stats import first_and_second_moments, mcse_deviations, seed
from tati.errors import InputError
from stats import dkwm_bound, dkwm_distance
from targets import logistic_potential

ALPHA = 1e-3


def one_transition(name, step_width, inverse_temperature=1.0, walkers=20000):
    """Positions of `walkers` chains started at exact draws of the logistic target (beta = 1),
    after one transition of a kernel targeting exp(-inverse_temperature U)."""
    rng = np.random.default_rng(seed(4200))
    start = np.arctanh(2.0 * rng.uniform(size=(walkers, 1)) - 1.0)
    sim = tati.Simulation(potential=logistic_potential, potential_batched=True, initial_parameters=start,
                          number_walkers=walkers, sampler=name, step_width=step_width,
                          inverse_temperature=inverse_temperature, dtype="float64", max_steps=1,
                          seed=seed(42))
    trajectory = sim.sample().trajectory
    assert len(trajectory) == walkers
    return start[trajectory["id"].to_numpy(), 0], trajectory["param0"].to_numpy()


@pytest.mark.statistical
@pytest.mark.parametrize("name, step_width", [("NUTS", 1.5), ("RWMH", 2.5)])
def test_one_transition_keeps_the_target_invariant(name, step_width):
    """20,000 chains at exact draws, one transition: the DKWM bound at false-failure rate 1e-6
    holds and the chains moved (RWMH: many were rejected too)."""
    start, end = one_transition(name, step_width)
    assert dkwm_distance(end) < dkwm_bound(len(end))
    moved = np.mean(start != end)
    assert moved > (0.3 if name == "RWMH" else 0.5), moved  # most chains moved
    if name == "RWMH":
        assert moved < 0.8, moved


@pytest.mark.statistical
@pytest.mark.parametrize("name, step_width", [("NUTS", 1.5), ("RWMH", 2.5)])
def test_one_transition_towards_another_target_is_detected(name, step_width):
    """Negative control: the same draws moved by a kernel of the wrong temperature (beta = 0.5)
    fail the same test."""
    _, end = one_transition(name, step_width, inverse_temperature=0.5)
    assert dkwm_distance(end) > dkwm_bound(len(end))


def badly_scaled(case):
    """(covariance, batched potential) of the two Gaussians of the acceptance: 100-D with
    standard deviations log-spaced from 0.1 to 10, or 10-D rotated with condition number 1e4."""
    if case == "log-spaced 100-D":
        covariance = np.diag(np.logspace(-1, 1, 100) ** 2)
    else:
        rotation, _ = np.linalg.qr(np.random.default_rng(seed(4300)).normal(size=(10, 10)))
        covariance = rotation @ np.diag(np.logspace(0, 4, 10)) @ rotation.T
    precision = tf.constant(np.linalg.inv(covariance))
    return covariance, lambda theta: 0.5 * tf.reduce_sum(theta * tf.linalg.matmul(theta, precision), axis=-1)


def acceptance_after(run_info):
    """Mean acceptance after burn-in: NUTS and HMC count their rejections anew from there, so
    the walkers' last rows hold it."""
    return 1.0 - run_info.groupby("id").tail(1)["average_rejection_rate"].mean()


# (burn_in_steps, max_steps) per sampler and case: NUTS counts transitions, HMC2 gradient
# evaluations (the legs of HMC2 before its metric adapts are long on the correlated case).
BUDGETS = {("NUTS", "log-spaced 100-D"): (1000, 2000), ("NUTS", "correlated 10-D"): (1000, 2000),
           ("HMC2", "log-spaced 100-D"): (10000, 30000), ("HMC2", "correlated 10-D"): (40000, 200000)}


@pytest.mark.statistical
@pytest.mark.parametrize("sampler, case", list(BUDGETS))
def test_adapted_samplers_need_no_tuning_on_badly_scaled_gaussians(sampler, case):
    """Only burn_in_steps and max_steps given (4 walkers started at 1): after the adaptation
    every mean, variance (and for the 10-D case every covariance) lies within the MCSE bound
    (normal, false-failure budget 1e-3 split over all of them), and the mean acceptance
    statistic after burn-in lies in [0.75, 0.92] about the target 0.8: dual averaging freezes its
    averaged width, smaller than the last iterate, so the acceptance reads at or above the target
    (NUTS, correlated case: 0.81-0.87 over the targets of TATI_TEST_SEED 0-7, mean 0.83, sd 0.02; the
    bound of 0.85 before failed the target of seed 1); no divergence after burn-in."""
    covariance, potential = badly_scaled(case)
    d, (burn_in, steps) = len(covariance), BUDGETS[sampler, case]
    sim = tati.Simulation(potential=potential, potential_batched=True, initial_parameters=np.ones(d),
                          number_walkers=4, sampler=sampler, burn_in_steps=burn_in, max_steps=steps,
                          dtype="float64", jit_compile=True, seed=seed(43))
    result = sim.sample()
    columns = [f"param{i}" for i in range(d)]
    moments, (i, j) = first_and_second_moments(result.trajectory, columns, burn_in)
    if case == "log-spaced 100-D":  # means and variances
        keep = np.concatenate([np.arange(d), d + np.flatnonzero(i == j)])
    else:  # means and the whole covariance
        keep = np.arange(moments.shape[-1])
    exact = np.concatenate([np.zeros(d), covariance[i, j]])[keep]
    deviations = mcse_deviations(moments[..., keep], exact)
    assert np.all(deviations < sps.norm.ppf(1 - ALPHA / (2 * len(keep)))), deviations.max()
    acceptance = acceptance_after(result.run_info)
    assert 0.75 < acceptance < 0.92, acceptance
    if sampler == "NUTS":  # counted after burn-in
        assert result.run_info.groupby("id").tail(1)["divergences"].sum() == 0


@pytest.mark.statistical
def test_nuts_samples_a_conjugate_bayesian_regression_through_a_keras_model():
    """A Keras model y = w . x + b (one Dense layer) with the mean squared loss and a Gaussian
    prior of standard deviation s on w: exp(-beta U) is Gaussian, precision
    beta (2 X^T X / n + diag(1/s^2, 1/s^2, 0)), mean its inverse times beta 2 X^T y / n. NUTS with
    adaptation: means and covariances within the MCSE bound (budget 1e-3 over 3 + 6)."""
    import keras
    rng = np.random.default_rng(seed(4400))
    n, beta, s = 50, 5.0, 0.5
    features = rng.normal(size=(n, 2)) * [1.0, 3.0]
    labels = features @ [0.7, -0.2] + 0.4 + rng.normal(size=n)
    design = np.hstack([features, np.ones((n, 1))])
    precision = beta * (2.0 / n * design.T @ design + np.diag([1 / s ** 2, 1 / s ** 2, 0.0]))
    covariance = np.linalg.inv(precision)
    mean = covariance @ (beta * 2.0 / n * design.T @ labels)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, dtype="float64")])
    burn_in = 300
    sim = tati.Simulation(model=model, dataset=(features, labels[:, None]), loss="mean_squared",
                          prior_standard_deviation=s, inverse_temperature=beta, sampler="NUTS",
                          burn_in_steps=burn_in, max_steps=burn_in + 2000, dtype="float64", seed=seed(44))
    trajectory = sim.sample().trajectory
    columns = ["weight0", "weight1", "bias0"]
    moments, (i, j) = first_and_second_moments(trajectory, columns, burn_in)
    centred = np.concatenate([moments[..., :3], (moments[..., :3] - mean)[..., i] * (moments[..., :3] - mean)[..., j]],
                             axis=-1)
    exact = np.concatenate([mean, covariance[i, j]])
    deviations = mcse_deviations(centred, exact)
    assert np.all(deviations < sps.norm.ppf(1 - ALPHA / (2 * len(exact)))), deviations


@pytest.mark.parametrize("name, burn_in, first_steps, steps, metric", [
    ("NUTS", 60, 30, 80, {}), ("RWMH", 60, 30, 80, {}), ("NUTS", 60, 30, 80, {"metric": "dense"}),
    ("HMC2", 1200, 300, 1600, {}), ("HMC1", 1200, 2, 1600, {})], ids=["NUTS", "RWMH", "NUTS-dense", "HMC2", "HMC1"])
def test_resumed_burn_in_continues_bitwise(name, burn_in, first_steps, steps, metric, tmp_path):
    """A run cut inside burn-in by a checkpoint and continued in a new Simulation gives the rows
    of one whole run: NUTS (diagonal and dense metric), RWMH 30 + 50 steps of burn-in 60 (the
    metric's window ends at step 54 and the width freezes at 60); HMC2 300 + 1300 of 1200,
    inside its metric windows, leg length and width adapting across the cut; HMC1 2 + 1598, the
    cut inside the initial width's search (its probes of 0.1, 0.2, 0.4, ... end at steps 1, 2,
    3, ...)."""
    def run(steps, **more):
        sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q * q * [1.0, 4.0, 9.0], axis=-1),
                              potential_batched=True, initial_parameters=[1.0, -1.0, 0.5], number_walkers=2,
                              sampler=name, burn_in_steps=burn_in, max_steps=steps, dtype="float64",
                              seed=seed(45), **metric, **more)
        return sim, sim.sample()

    sim, whole = run(steps)
    _, first = run(first_steps, save_model=str(tmp_path / "c.npz"))
    _, rest = run(steps - first_steps, restore_model=str(tmp_path / "c.npz"))
    for table in ("run_info", "trajectory", "averages"):
        joined = pd.concat([getattr(first, table), getattr(rest, table)], ignore_index=True)
        expected = getattr(whole, table).reset_index(drop=True)
        pd.testing.assert_frame_equal(joined.drop(columns="time_per_nth_step", errors="ignore"),
                                      expected.drop(columns="time_per_nth_step", errors="ignore"))
    widths = whole.run_info.groupby("step")["step_width"].first()
    assert widths.loc[burn_in + 1:].nunique() == 1 and widths.loc[:burn_in].nunique() > 10  # adapted, then frozen
    if metric:  # the dense metric's window straddled the cut: a full Cholesky factor came of it
        assert np.all(np.tril(sim.sampler.cholesky.numpy(), -1)[np.tril_indices(3, -1)] != 0.0)
    if name == "HMC1":  # the search was still probing at the cut
        assert sim.sampler.found_step_width() >= 0.4
    if name.startswith("HMC"):  # the metric and the leg length adapted too, the metric's windows across the cut;
        # HMC's scale (var q / var grad U)^(1/4) is exact on a Gaussian of diagonal covariance
        assert sim.sampler.metric_windows() >= 2
        np.testing.assert_allclose(sim.sampler.metric_scales(), [1.0, 1.0 / 2.0, 1.0 / 3.0], rtol=1e-9)
        assert float(sim.sampler.hamiltonian_dynamics_time) != 1.0


def test_options_that_do_not_apply_are_refused_in_one_line():
    common = dict(potential=lambda q: tf.reduce_sum(q * q), initial_parameters=[1.0])
    with pytest.raises(InputError, match="batch_size"):
        tati.Simulation(hidden_dimension=[2], sampler="NUTS", batch_size=10)
    with pytest.raises(InputError, match="covariance_blending"):
        tati.Simulation(sampler="RWMH", number_walkers=4, covariance_blending=1.0, **common)
    with pytest.raises(InputError, match="target_acceptance_rate"):
        tati.Simulation(sampler="NUTS", target_acceptance_rate=1.0, **common)
    with pytest.raises(InputError, match="momenta"):
        tati.Simulation(sampler="NUTS", **common).momenta
    for kernel in (tati.samplers.NUTS, tati.samplers.RWMH):  # as model.compile(optimizer=...) would take it
        with pytest.raises(InputError, match=f"{kernel.__name__} is not a Keras optimizer for model.fit"):
            kernel(step_width=0.1)


DENSE_BURN_IN = 1000


def dense_run(metric, steps):
    """NUTS on the 10-D Gaussian of condition number 1e4, only burn_in_steps, max_steps and the
    metric given: its result and its mean leapfrog steps per transition after burn-in."""
    covariance, potential = badly_scaled("correlated 10-D")
    sim = tati.Simulation(potential=potential, potential_batched=True, initial_parameters=np.ones(len(covariance)),
                          number_walkers=4, sampler="NUTS", burn_in_steps=DENSE_BURN_IN, max_steps=steps,
                          metric=metric, dtype="float64", jit_compile=True, seed=seed(43))
    result = sim.sample()
    run_info = result.run_info
    return result, run_info.loc[run_info.step > DENSE_BURN_IN, "leapfrog_steps"].mean()


@pytest.mark.statistical
def test_dense_metric_samples_a_correlated_gaussian():
    """NUTS with metric="dense" (dense_run): every mean and covariance lies within the MCSE
    bound (as above, budget 1e-3) and the acceptance after burn-in within 0.05 of 0.8."""
    covariance, _ = badly_scaled("correlated 10-D")
    d = len(covariance)
    dense, _ = dense_run("dense", 2000)
    columns = [f"param{i}" for i in range(d)]
    moments, (i, j) = first_and_second_moments(dense.trajectory, columns, DENSE_BURN_IN)
    exact = np.concatenate([np.zeros(d), covariance[i, j]])
    deviations = mcse_deviations(moments, exact)
    assert np.all(deviations < sps.norm.ppf(1 - ALPHA / (2 * len(exact)))), deviations.max()
    assert abs(acceptance_after(dense.run_info) - 0.8) < 0.05


@pytest.mark.statistical
@pytest.mark.slow  # for the suite's time: the diagonal metric's 108 leapfrog steps per transition
def test_dense_metric_takes_fewer_leapfrog_steps_on_a_correlated_gaussian():
    """A transition after burn-in takes on average fewer than a fifth of the leapfrog steps of
    the diagonal metric's (measured over 1000 kept transitions each, seed 43: 6.1 against 108,
    acceptance 0.79 and 0.81; the diagonal metric cannot undo the rotation; the diagonal run
    here keeps 200)."""
    _, dense_steps = dense_run("dense", DENSE_BURN_IN + 200)
    _, diagonal_steps = dense_run("diagonal", DENSE_BURN_IN + 200)
    assert dense_steps < diagonal_steps / 5, (dense_steps, diagonal_steps)


def test_dense_metric_is_refused_where_it_does_not_apply():
    """One line each: a sampler without it, and more parameters than MAX_DENSE_PARAMETERS."""
    with pytest.raises(InputError, match="metric applies to HMC1, HMC2, NUTS, RWMH, not to sampler BAOAB"):
        tati.Simulation(potential=lambda q: tf.reduce_sum(q * q), initial_parameters=[1.0], sampler="BAOAB",
                        metric="dense")
    with pytest.raises(InputError, match="metric=dense is for at most 1000 parameters, this model has 1001"):
        tati.Simulation(potential=lambda q: tf.reduce_sum(q * q), initial_parameters=np.zeros(1001), sampler="NUTS",
                        metric="dense").sampler
