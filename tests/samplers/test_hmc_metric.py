"""HMC's metric windows (tati/adaptation/, samplers/hmc_adaptation.py): the scale that
minimises the Fisher divergence, s^4 = var(q) / var(beta grad U), from the legs' starts and
their gradients; the first window closed by FIRST_WINDOW_END of a burn-in whose legs are long.
All assertions of these are exact (no statistical tolerance); the pure functions' own tests
are in tests/adaptation/.

metric="dense" (q = c + L z, kicks L^T grad U, drifts L p): HMC2 on the 10-D Gaussian of
condition number 1e4 with only burn_in_steps and max_steps given (moments within the MCSE
bound, false-failure budget 1e-3 split (Bonferroni) over them, as test_proposal.py), and
its burn-in resumed from a checkpoint continues bitwise; HMC1 with a fixed L is HMC1 on the
standard Gaussian in z = L^-1 q (exact up to rounding); the refusals."""


import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy import stats as sps

import tati
from stats import first_and_second_moments, mcse_deviations, seed
from tati.adaptation import windows
from tati.errors import InputError
from test_proposal import ALPHA, acceptance_after, badly_scaled


def run(burn_in, **options):
    """HMC2, 4 walkers from uniform(-2, 2) draws, on N(0, diag(1e-3, 1)^2); only burn_in_steps
    and max_steps set otherwise (and no warm start: the windows from draws far off are tested)."""
    sds = np.array([1e-3, 1.0])
    start = np.random.default_rng(seed(4600)).uniform(-2.0, 2.0, size=(4, 2))
    sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum((q / sds) ** 2, axis=-1), potential_batched=True,
                          initial_parameters=start, number_walkers=4, sampler="HMC2", burn_in_steps=burn_in,
                          max_steps=burn_in, dtype="float64", seed=seed(48), warm_start=False, **options)
    result = sim.sample()
    return sim.sampler, sds, result.run_info.groupby("id").size().min()


def test_first_window_closes_by_30_percent_of_a_burn_in_of_long_legs(monkeypatch):
    """Before the metric, the width must fit the sd 1e-3 and legs of T = 1 take 1000 steps (the
    burn-in's cap): 10,000 steps hold about 18 legs, never the first window's 25. It closes at
    30% of burn-in with its 8 draws; the scales are the sds (the estimate is exact on a Gaussian
    of diagonal covariance, from draws still far from it), and the rest of the burn-in runs in
    them: thousands of legs (4508 measured). The control, the first window waiting for its 25
    legs (FIRST_WINDOW_END = 1): 18 legs, the one window at the end of the collection."""
    sampler, sds, legs = run(10000)
    assert sampler.metric_windows() >= 3 and legs > 1000, (sampler.metric_windows(), legs)
    np.testing.assert_allclose(sampler.metric_scales(), sds, rtol=1e-9)
    monkeypatch.setattr(windows, "FIRST_WINDOW_END", 1.0)
    sampler, _, legs = run(10000)
    assert sampler.metric_windows() <= 1 and legs < 100, (sampler.metric_windows(), legs)


def whitened_eigenvalues(cholesky, covariance):
    """The eigenvalues of Sigma^-1/2 L L^T Sigma^-1/2: all 1 where the metric is the target's
    covariance; their ratio is the target's condition number in the metric's coordinates."""
    root = np.linalg.cholesky(covariance)
    whitened = np.linalg.solve(root, cholesky)
    return np.linalg.eigvalsh(whitened @ whitened.T)


@pytest.mark.statistical
def test_hmc2_dense_metric_needs_no_tuning_on_a_correlated_gaussian_and_resumes_bitwise(tmp_path):
    """HMC2, metric="dense", only burn_in_steps and max_steps given (4 walkers started at 1), on
    the 10-D Gaussian of condition number 1e4: every mean and covariance within the MCSE bound,
    the acceptance after burn-in within 0.05 of the target 0.8 and no divergence after it
    (measured, seeds 43-49: max deviation 1.7-3.3 MCSE against the bound 4.3, acceptance
    0.786-0.799); the adapted L L^T is the covariance to within a factor 2 in every direction
    (the whitened eigenvalues 0.76 ... 1.26 over those seeds: the condition number 1e4 became
    below 1.6). Minimum ESS 4291 from 6092 draws at seed 43 (2200-4300 over the seeds); the
    diagonal metric on the same steps: 24 from 256 (test_proposal.py gives it 40,000 + 160,000).

    The run is cut at step 1200, after the first metric window and inside a later one (at seed
    43 the third, holding 320 draws), and a new Simulation restored from the checkpoint gives
    the rows the first one gives when it goes on (as a whole run would: tests/engine/test_checkpoint.py):
    L, the window's draws, the width and the leg length continue bitwise."""
    covariance, potential = badly_scaled("correlated 10-D")
    d, burn_in, cut = len(covariance), 3000, 1200
    checkpoint = str(tmp_path / "dense.npz")

    def simulation(**more):
        return tati.Simulation(potential=potential, potential_batched=True, initial_parameters=np.ones(d),
                               number_walkers=4, sampler="HMC2", burn_in_steps=burn_in, metric="dense",
                               dtype="float64", jit_compile=True, seed=seed(43), **more)

    sim = simulation(max_steps=cut, save_model=checkpoint)
    sim.sample()
    windows_at_cut = sim.sampler.metric_windows()
    sim.options.update(max_steps=2 * burn_in - cut, save_model=None)
    result = sim.sample()
    restored = simulation(max_steps=2 * burn_in - cut, restore_model=checkpoint).sample()
    for table in ("run_info", "trajectory", "averages"):
        pd.testing.assert_frame_equal(getattr(restored, table).drop(columns="time_per_nth_step", errors="ignore"),
                                      getattr(result, table).drop(columns="time_per_nth_step", errors="ignore"),
                                      check_exact=True)
    moments, (i, j) = first_and_second_moments(result.trajectory, [f"param{k}" for k in range(d)], burn_in)
    exact = np.concatenate([np.zeros(d), covariance[i, j]])
    deviations = mcse_deviations(moments, exact)
    assert np.all(deviations < sps.norm.ppf(1 - ALPHA / (2 * len(exact)))), deviations.max()
    acceptance = acceptance_after(result.run_info)
    assert abs(acceptance - 0.8) < 0.05, acceptance
    assert result.run_info.groupby("id").tail(1)["divergences"].sum() == 0
    assert 1 <= windows_at_cut < sim.sampler.metric_windows()  # L adapted before the cut and after it
    eigenvalues = whitened_eigenvalues(sim.sampler.metric_cholesky(), covariance)
    assert 0.5 < eigenvalues.min() and eigenvalues.max() < 2.0, eigenvalues


def test_hmc1_with_a_dense_metric_is_hmc1_on_the_standard_gaussian_in_its_coordinates(tmp_path):
    """HMC1 with L fixed to the Cholesky factor of the covariance of a 2-D Gaussian (correlation
    0.99, condition number 5e3; adapt_mass off, so L stays) and the standard Gaussian with the
    diagonal metric, started at q_0 = L z_0 and z_0: in z = L^-1 q every leg, the width's search
    and dual averaging, ChEES (which measures in z) and every decision are the same but for
    rounding: L^-1 q_n = z_n. A kick by L g instead of L^T g, or a drift by L^T p, would not
    be. A checkpoint of the diagonal run does not restore into the dense one (its state names
    differ)."""
    covariance = np.array([[1.0, 9.9], [9.9, 100.0]])
    cholesky, precision = np.linalg.cholesky(covariance), tf.constant(np.linalg.inv(covariance))
    start = np.random.default_rng(seed(4700)).normal(size=(2, 2))
    common = dict(potential_batched=True, number_walkers=2, sampler="HMC1", burn_in_steps=300, max_steps=400,
                  adapt_mass=False, dtype="float64", seed=seed(49), warm_start=False)
    dense = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q * tf.linalg.matmul(q, precision), axis=-1),
                            initial_parameters=start @ cholesky.T, metric="dense", **common)
    dense.sampler._cholesky.assign(cholesky)
    checkpoint = str(tmp_path / "diagonal.npz")
    standard = tati.Simulation(potential=lambda z: 0.5 * tf.reduce_sum(z * z, axis=-1), initial_parameters=start,
                               save_model=checkpoint, **common)
    q, z = dense.sample().trajectory, standard.sample().trajectory
    assert len(q) == len(z) > 200 and (q[["step", "id"]].to_numpy() == z[["step", "id"]].to_numpy()).all()
    np.testing.assert_allclose(np.linalg.solve(cholesky, q[["param0", "param1"]].to_numpy().T).T,
                               z[["param0", "param1"]].to_numpy(), rtol=0, atol=1e-9)
    assert float(dense.sampler.learning_rate.numpy()) == pytest.approx(float(standard.sampler.learning_rate.numpy()),
                                                                       rel=1e-6)
    np.testing.assert_array_equal(dense.sampler.metric_cholesky(), cholesky)  # adapt_mass off: L stays
    with pytest.raises(InputError, match="optimizer state differs: lacks metric_cholesky; holds metric_scale"), \
            pytest.warns(UserWarning, match="continuing with changed options: metric diagonal -> dense"):
        tati.Simulation(potential=lambda q: tf.reduce_sum(q * q, axis=-1), initial_parameters=start,
                        restore_model=checkpoint, metric="dense", **common).sample()


def test_dense_metric_is_refused_where_it_cannot_apply():
    """One line each, naming metric: several variables in a user's optimizer call, the ensemble
    preconditioner, more parameters than proposal.MAX_DENSE_PARAMETERS."""
    sampler = tati.samplers.HMC2(step_width=0.1, metric="dense")
    variables = [tf.Variable([1.0, 2.0]), tf.Variable([3.0])]
    with pytest.raises(InputError, match=r"^metric=dense needs the parameters as one flat variable .*was given 2 "
                                         r"of shapes \(2,\), \(1,\): use metric=diagonal$"):
        sampler.apply([tf.ones(2), tf.ones(1)], variables, loss=tf.constant(1.0))
    square = dict(potential=lambda q: tf.reduce_sum(q * q, axis=-1), potential_batched=True, metric="dense")
    with pytest.raises(InputError, match="^metric=dense is not available with covariance_blending"):
        tati.Simulation(initial_parameters=[1.0, 2.0], number_walkers=4, sampler="HMC1", covariance_blending=1.0,
                        **square).sampler
    with pytest.raises(InputError, match="^metric=dense is for at most 1000 parameters, this model has 1001"):
        tati.Simulation(initial_parameters=np.zeros(1001), sampler="HMC2", **square).sampler
