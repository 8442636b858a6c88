"""pSGLD (samplers/psgld.py): RMSprop's preconditioner adapts the step to each parameter's scale.

Target: a diagonal Gaussian with standard deviations sigma = 8 values from 0.1 to 1 (geometric),
each repeated 8 times (d = 64), K = 32 walkers (rows of one variable, each with its own V), beta = 1,
exact gradients, h = 0.05: plain SGLD is unstable there on the narrowest parameters (it needs
h < 2 sigma^2 = 0.02), while pSGLD's G ~ sigma sqrt(beta) makes each parameter's step h G / sigma^2
about h / sigma. V starts at its stationary value 1 / (beta sigma^2) (as the exact tests start
chains at exact draws); 500 steps of burn-in, 4000 of draws.

Expected variance, parameter by parameter, given the mean G the sampler used: with G constant,
the Euler step's exact stationary variance sigma^2 / (1 - h G / (2 sigma^2)) (the O(h)
discretisation bias, 3-29% here, accounted for exactly). On top, dropping the Gamma term
(psgld.py) biases it by about (1 - alpha) tau / 2, tau = sigma^2 / (h G) the steps a parameter takes
to decorrelate (measured: 1.1% at sigma = 1 for alpha = 0.999, 9.5% for the default 0.99; at
h = 0.01 and alpha = 0.99, 33%); this test runs at alpha = 0.999 and allows twice that,
(1 - alpha) tau, plus the Monte Carlo error. Negative control: the same run is tested against the
target at beta = 1.25 (20% cooler) and fails.

False-failure budget 1e-3 for the file, Bonferroni over the 8 scales x (variance, mean) tests.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed, t_critical
# tests/engine/'s resume helpers, found whatever the order in which pytest imports the files
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine"))
from test_checkpoint import assert_same_tables  # noqa: E402
from test_resume import one_run_and_three  # noqa: E402
from tati.errors import InputError
from tati.samplers import PSGLD, SGLD

WALKERS, STEPS, BURN_IN, H, DECAY = 32, 4500, 500, 0.05, 0.999
SCALES = np.geomspace(0.1, 1.0, 8)
SIGMA = np.tile(SCALES, 8)
ALPHA, TESTS = 1e-3, 16


def run(run_seed):
    """Per walker and parameter the time averages of q, q^2 and G, each [K, d]."""
    rng = np.random.default_rng(run_seed)
    q = tf.Variable(rng.normal(size=(WALKERS, len(SIGMA))) * SIGMA)
    sampler = PSGLD(step_width=H, rmsprop_decay=DECAY, seed=run_seed, walker_axis=True)
    sampler.build([q])
    sampler._mean_squares[0].assign(np.broadcast_to(1.0 / SIGMA ** 2, q.shape))  # E[g^2] at beta = 1
    precision = tf.constant(1.0 / SIGMA ** 2)

    @tf.function(autograph=False)
    def loop():
        def body(i, q1, q2, scale):
            sampler.apply([precision * q], [q])
            keep = tf.cast(i >= BURN_IN, tf.float64)
            x = tf.convert_to_tensor(q)
            return i + 1, q1 + keep * x, q2 + keep * x * x, scale + keep * sampler.preconditioning

        zero = tf.zeros(q.shape, tf.float64)
        _, *sums = tf.while_loop(lambda i, *_: i < STEPS, body, (tf.constant(0), zero, zero, zero))
        return [s / (STEPS - BURN_IN) for s in sums]

    return [s.numpy() for s in loop()]


def failures(q1, q2, scale, beta):
    """The scales whose variance or mean is off beyond the MC error (and the allowed bias)."""
    critical = t_critical(ALPHA, WALKERS - 1, TESTS)
    wrong = []
    for j, sigma in enumerate(SCALES):
        part = slice(j, None, len(SCALES))
        g = scale[:, part].mean()
        exact = sigma ** 2 / beta / (1.0 - H * g / (2.0 * sigma ** 2))
        ratio = (q2[:, part] / exact).mean(axis=1)  # per walker
        allowed = (1.0 - DECAY) * sigma ** 2 / (H * g)  # twice the measured bias of the dropped Gamma
        error = ratio.std(ddof=1) / np.sqrt(WALKERS)
        if abs(ratio.mean() - 1.0) > critical * error + allowed:
            wrong.append(("variance", sigma, ratio.mean(), error, allowed))
        means = q1[:, part].mean(axis=1) / sigma
        if abs(means.mean()) > critical * means.std(ddof=1) / np.sqrt(WALKERS):
            wrong.append(("mean", sigma, means.mean()))
    return wrong


@pytest.mark.statistical
def test_variance_on_an_anisotropic_gaussian_where_sgld_is_unstable():
    q1, q2, scale = run(seed(60))
    # G adapts to each parameter's scale: sigma sqrt(beta), lowered a little by the O(h) excess of g^2
    assert np.allclose(scale.mean(axis=0).reshape(8, -1).mean(axis=0) / SCALES, 1.0, atol=0.15)
    assert not failures(q1, q2, scale, 1.0), failures(q1, q2, scale, 1.0)
    assert failures(q1, q2, scale, 1.25)  # negative control: a 20% cooler target is rejected


def test_sgld_diverges_at_that_step_width():
    """The reason for the preconditioner: SGLD's narrowest parameters grow by |1 - h / sigma^2| = 4 per step."""
    q = tf.Variable(np.tile(SIGMA, (2, 1)))
    sampler = SGLD(step_width=H, seed=seed(61))
    for _ in range(30):
        sampler.apply([q / SIGMA ** 2], [q])
    assert np.max(np.abs(q.numpy())) > 1e10


def test_first_step_and_options():
    """V starts at 0 (Li et al.'s Algorithm 1): the first step has V = (1 - alpha) g^2, and
    without noise (beta huge) moves by h g / (lambda + sqrt(1 - alpha) |g|)."""
    q = tf.Variable(np.array([1.0, -2.0, 0.5]))
    gradient = np.array([0.3, -4.0, 2.0])
    sampler = PSGLD(step_width=0.1, rmsprop_decay=0.96, rmsprop_epsilon=1e-3, inverse_temperature=1e30, seed=1)
    sampler.apply([tf.constant(gradient)], [q])
    expected = np.array([1.0, -2.0, 0.5]) - 0.1 * gradient / (1e-3 + np.sqrt(0.04) * np.abs(gradient))
    np.testing.assert_allclose(q.numpy(), expected, rtol=1e-6, atol=1e-7)  # h: a float32 variable
    np.testing.assert_allclose(sampler.preconditioning.numpy(), 1.0 / (1e-3 + 0.2 * np.abs(gradient)), rtol=1e-12)
    assert PSGLD.from_config(sampler.get_config()).get_config() == sampler.get_config()
    with pytest.raises(InputError, match="rmsprop_decay must be < 1, got 1.0"):
        PSGLD(rmsprop_decay=1.0)
    with pytest.raises(InputError, match="rmsprop_epsilon must be > 0"):
        PSGLD(rmsprop_epsilon=0.0)


def test_tati_sample_with_four_walkers_and_mini_batches_resumes_bitwise(tmp_path):
    """Three runs of 10 steps, each resuming the last one's checkpoint (V, batches), write the
    tables of one run of 30; SGLD's columns (no momenta)."""
    full, split = one_run_and_three(tmp_path, sampler="pSGLD", step_width=0.001, number_walkers=4, batch_size=50)
    assert_same_tables(full, split)
    assert "kinetic_energy" not in full["run_file"] and full["run_file"].id.nunique() == 4
    assert np.isfinite(full["trajectory_file"].filter(like="weight").to_numpy()).all()


def test_ensemble_preconditioner_is_refused_in_one_line():
    with pytest.raises(InputError, match="^pSGLD has a preconditioner of its own .*drop covariance_blending$"):
        tati.Simulation(sampler="pSGLD", number_walkers=4, covariance_blending=0.5).sample()


def test_tuning_starts_v_from_the_measured_gradients():
    """adapt_mass noise (samplers/psgld.py): the first measurement sets V to the mean square of the
    measured gradients, per walker, not 0 (whose first steps take 10 times the settled G); the
    reported scales are the walkers' mean sqrt(G), as noise_scales gives them for the Simulation's
    measurement before the run; a measurement not due leaves V to RMSprop. A metric from the draws
    (adapt_mass true) is not pSGLD's: one line."""
    rng = np.random.default_rng(seed(31))
    q = tf.Variable(rng.normal(size=(4, 5)))
    sampler = PSGLD(step_width=1e-3, adapt_mass="noise", adaptation_steps=200, seed=seed(32), walker_axis=True)
    sampler.build([q])
    gradients = tf.constant(rng.normal(size=(16, 4, 5)) * [1.0, 2.0, 3.0, 4.0, 50.0] + 0.5)
    sampler.estimate_noise(lambda k: [tf.gather(gradients, k)], 16)
    mean_square = np.mean(np.square(gradients.numpy()), axis=0)
    np.testing.assert_allclose(sampler._mean_squares[0].numpy(), mean_square, rtol=1e-12)
    roots = sampler.noise_scales(gradients.numpy())
    np.testing.assert_allclose(roots, np.sqrt(sampler.preconditioning.numpy()), rtol=1e-12)
    np.testing.assert_allclose(sampler.metric_scales(), roots.mean(axis=0), rtol=1e-12)
    sampler.apply([tf.ones_like(q)], [q])
    stepped = sampler._mean_squares[0].numpy()
    np.testing.assert_allclose(stepped, 0.99 * mean_square + 0.01, rtol=1e-12)
    sampler.estimate_noise(lambda k: [tf.gather(gradients, k)], 16)  # no window closed since: not due
    np.testing.assert_array_equal(sampler._mean_squares[0].numpy(), stepped)
    with pytest.raises(InputError, match="^adapt_mass true is not available with sampler pSGLD"):
        PSGLD(adapt_mass=True, adaptation_steps=200)


@pytest.mark.statistical
def test_it_tunes_itself_on_a_conjugate_regression():
    """With a likelihood, batch_size and no step_width (nothing else given) pSGLD tunes itself, as
    SGLD does: V from the measured gradients, the width by the overdamped rules in G's metric. A
    Bayesian linear regression (200 points, noise sd 1 known, prior sd 1; batches of 10), 32
    walkers, 1000 + 20,000 steps: each coordinate's posterior variance (per walker, after burn-in)
    within the rules' bounds, 5% heat from the noise (the parameters' mean; here 4.6-5.1% each) and
    5% from the discretisation (h lambda_max / 2), plus the Monte Carlo error (Bonferroni over 3,
    budget 1e-3). Measured over seeds 0-5: 0.99-1.06 +- 0.016-0.035 (an epoch's batches cover the data, so their noise
    partly cancels over the slow directions' decorrelation of about 170 steps). The dropped Gamma
    term's bias, which needs V to follow the gradient (the exact-gradient test above), is not seen
    where the batches' noise makes V. Negative control: the same draws against the target at
    beta 1.5 fail."""
    rng = np.random.default_rng(seed(33))
    x = rng.normal(size=(200, 2))
    y = x @ [1.0, -2.0] + 0.5 + rng.normal(size=200)
    design = np.hstack([x, np.ones((200, 1))])
    covariance = np.linalg.inv(design.T @ design + np.eye(3))
    sim = tati.Simulation(dataset=(x, y[:, None]), hidden_dimension=[], output_activation="linear",
                          likelihood="gaussian", noise_standard_deviation=1.0, prior_standard_deviation=1.0,
                          dtype="float64", sampler="pSGLD", batch_size=10, number_walkers=32, burn_in_steps=1000,
                          max_steps=21000, every_nth=5, seed=seed(34))
    draws = sim.sample().trajectory.query("step > 1000")
    assert sim.options["adapt_mass"] == "noise" and sim.measured_width.overdamped
    columns = ["weight0", "weight1", "bias0"]
    critical = t_critical(ALPHA, sim.options["number_walkers"] - 1, 3)

    def off(beta):
        ratios = np.stack([walker[columns].var().to_numpy() * beta / np.diag(covariance)
                           for _, walker in draws.groupby("id")])
        error = ratios.std(axis=0, ddof=1) / np.sqrt(len(ratios))
        print(f"beta {beta}: variance / exact {np.round(ratios.mean(axis=0), 3)} +- {np.round(error, 3)}")
        return np.abs(ratios.mean(axis=0) - 1.0) > critical * error + 0.1

    assert not np.any(off(1.0))
    assert np.all(off(1.5))
