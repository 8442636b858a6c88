"""tati/bayes/predictive.py's posterior_predictive_draws: each replicate is drawn from the run's
likelihood at its draw's network outputs, in the labels' shape and coding.

Checks against the exact distributions given the outputs (computed here with numpy from the same
parameters), each with its false-failure budget: the Gaussian and Student-t replicates' standardised
residuals and the counts' randomised probability integral transforms by the DKWM inequality (alpha
1e-6), the class frequencies by a z-test at 4.9 sd summed over the points (two-sided, Bonferroni over
the classes: below 1e-5 together); each has a negative control: the noise's sd 25% off, a Gaussian's
tail for Student's, the log-odds (the log mean) 0.2 off.
"""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy import special, stats as scipy_stats

import tati
from stats import dkwm_bound, seed
from tati.bayes import predictive
from tati.errors import InputError

POINTS, DRAWS, Z = 60, 400, 4.9


def network(likelihood, labels, outputs, hidden=(), **options):
    """A Simulation of a network on POINTS inputs with these labels, and DRAWS parameter rows drawn
    around 0 (their spread makes the outputs differ from draw to draw)."""
    x = np.random.default_rng(seed(1)).normal(size=(POINTS, 2))
    sim = tati.Simulation(dataset=(x, labels(x)), hidden_dimension=list(hidden), output_activation="linear",
                          output_dimension=outputs, likelihood=likelihood, prior_standard_deviation=1.0,
                          dtype="float64", seed=seed(2), **options)
    names = list(sim.model.parameter_names)
    draws = pd.DataFrame(np.random.default_rng(seed(3)).normal(size=(DRAWS, len(names))), columns=names)
    f = sim.model.outputs(sim.data.all()[0], theta=tf.constant(draws[names].to_numpy())).numpy()
    return sim, draws, f  # f: [DRAWS, POINTS, outputs]


def z_scores(hits, p):
    """Per class: (observed - expected count) / sd, summed over draws and points."""
    return (hits - p).sum(axis=(0, 1)) / np.sqrt((p * (1.0 - p)).sum(axis=(0, 1)))


@pytest.mark.parametrize("likelihood, outputs", [("gaussian", 1), ("heteroscedastic_gaussian", 2)])
def test_gaussian_replicates_are_the_likelihoods_draws(likelihood, outputs):
    sim, draws, f = network(likelihood, lambda x: x[:, :1] + x[:, 1:], outputs, hidden=(3,))
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(4))
    assert replicates.shape == (DRAWS, POINTS, 1) and replicates.dtype == np.float64
    sd = np.ones_like(f[..., :1]) if likelihood == "gaussian" else np.sqrt(special.softplus(f[..., 1:]) + 1e-6)
    residuals = ((replicates - f[..., :1]) / sd).ravel()
    bound = dkwm_bound(len(residuals))
    assert scipy_stats.kstest(residuals, "norm").statistic < bound
    # negative control: the noise's sd 25% off
    assert scipy_stats.kstest(residuals / 1.25, "norm").statistic > bound
    # the generator's seed gives the same replicates
    np.testing.assert_array_equal(predictive.posterior_predictive_draws(sim, draws, seed=seed(4)), replicates)


def test_student_t_replicates_are_the_likelihoods_draws():
    """student_t (degrees_of_freedom 3): the replicates' probability integral transforms under mu + sigma
    t_3 uniform; under the Gaussian of the same scale (a lighter tail: the negative control) not."""
    sim, draws, f = network("student_t", lambda x: x[:, :1] + x[:, 1:], 2, hidden=(3,), degrees_of_freedom=3.0)
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(4))
    assert replicates.shape == (DRAWS, POINTS, 1) and replicates.dtype == np.float64
    scaled = ((replicates - f[..., :1]) / np.sqrt(special.softplus(f[..., 1:]) + 1e-6)).ravel()
    bound = dkwm_bound(len(scaled))
    assert scipy_stats.kstest(scaled, scipy_stats.t(3.0).cdf).statistic < bound
    assert scipy_stats.kstest(scaled, "norm").statistic > bound


@pytest.mark.parametrize("coding", [(0.0, 1.0), (-1.0, 1.0)])
def test_bernoulli_replicates_in_the_labels_coding(coding):
    sim, draws, f = network("bernoulli", lambda x: np.where(x[:, :1] > 0, coding[1], coding[0]), 1)
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(5))
    assert set(np.unique(replicates)) == set(coding)
    p = special.expit(f)
    assert abs(z_scores(replicates == 1.0, p)[0]) < Z
    # negative control: the log-odds 0.2 higher
    assert abs(z_scores(replicates == 1.0, special.expit(f + 0.2))[0]) > Z


@pytest.mark.parametrize("one_hot", [False, True])
def test_categorical_replicates_as_index_or_one_hot(one_hot):
    def labels(x):
        classes = np.argmax(x @ [[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]], axis=1)
        return np.eye(3)[classes] if one_hot else classes[:, None].astype(float)
    sim, draws, f = network("categorical", labels, 3)
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(6))
    if one_hot:
        assert replicates.shape == (DRAWS, POINTS, 3) and (replicates.sum(axis=-1) == 1.0).all()
        hits = replicates == 1.0
    else:
        assert replicates.shape == (DRAWS, POINTS, 1) and set(np.unique(replicates)) <= {0.0, 1.0, 2.0}
        hits = replicates == np.arange(3)
    p = special.softmax(f, axis=-1)
    assert (np.abs(z_scores(hits, p)) < Z).all()
    # negative control: the first class's log-odds 0.2 higher
    assert (np.abs(z_scores(hits, special.softmax(f + [0.2, 0.0, 0.0], axis=-1))) > Z).any()


@pytest.mark.parametrize("likelihood, outputs", [("poisson", 1), ("negative_binomial", 2)])
def test_count_replicates_are_the_likelihoods_draws(likelihood, outputs):
    """Counts drawn at mean exp(f) (the negative binomial's r = 1 / (softplus(raw) + 1e-6)): their randomised
    probability integral transform F(y - 1) + v (F(y) - F(y - 1)), v uniform, is uniform exactly where y ~ F,
    within the DKWM bound; negative control: the log mean 0.2 higher."""
    sim, draws, f = network(likelihood, lambda x: np.round(np.exp(x[:, :1])), outputs)
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(8))
    assert replicates.shape == (DRAWS, POINTS, 1) and replicates.min() == 0
    assert (replicates == np.round(replicates)).all()
    v = np.random.default_rng(seed(9)).random(replicates.shape)

    def transform(shift):
        mean = np.exp(f[..., :1] + shift)
        if likelihood == "poisson":
            counts = scipy_stats.poisson(mean)
        else:
            r = 1.0 / (special.softplus(f[..., 1:]) + 1e-6)
            counts = scipy_stats.nbinom(r, r / (r + mean))
        below = counts.cdf(replicates - 1.0)
        return (below + v * (counts.cdf(replicates) - below)).ravel()
    bound = dkwm_bound(replicates.size)
    assert scipy_stats.kstest(transform(0.0), "uniform").statistic < bound
    assert scipy_stats.kstest(transform(0.2), "uniform").statistic > bound


def test_replicates_need_a_network_with_a_likelihood():
    potential = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x * x), initial_parameters=[0.0])
    draws = pd.DataFrame({"param0": [0.0]})
    with pytest.raises(InputError, match="posterior_predictive needs a network; this simulation samples"):
        predictive.posterior_predictive_draws(potential, draws, seed=0)
    sim = tati.Simulation(hidden_dimension=[])
    draws = pd.DataFrame(np.zeros((1, sim.num_parameters)), columns=list(sim.model.parameter_names))
    with pytest.raises(InputError, match=r"posterior_predictive needs a likelihood \(option likelihood\)"):
        predictive.posterior_predictive_draws(sim, draws, seed=0)


def test_replicates_at_new_points_take_the_runs_coding():
    """With features given the replicates are drawn at those points (predictions), by the same
    likelihood in the run's labels' coding: one-hot classes at 30 new points, each point's class
    frequencies over the draws against softmax of the outputs there (z-test at 5.3 sd, two-sided,
    Bonferroni over 90 points and classes: below 1e-5; negative control: the outputs at the run's
    own first 30 points instead). Features of another width: one line."""
    def labels(x):
        return np.eye(3)[np.argmax(x @ [[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]], axis=1)]
    sim, draws, _ = network("categorical", labels, 3)
    rng = np.random.default_rng(seed(7))
    names = list(sim.model.parameter_names)
    # draws close to one parameter vector, so that each point has its own class probabilities
    draws = pd.DataFrame(rng.normal(scale=2.0, size=len(names)) + 0.1 * draws.to_numpy(), columns=names)
    new = rng.normal(size=(30, 2))
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(8), features=new)
    assert replicates.shape == (DRAWS, 30, 3) and (replicates.sum(axis=-1) == 1.0).all()
    theta = tf.constant(draws.to_numpy())
    f = sim.model.outputs(tf.constant(new), theta=theta).numpy()
    f_run = sim.model.outputs(sim.data.all()[0], theta=theta).numpy()
    hits = replicates == 1.0

    def z(p):  # per point and class, over the draws
        return (hits - p).sum(axis=0) / np.sqrt((p * (1.0 - p)).sum(axis=0))
    assert (np.abs(z(special.softmax(f, axis=-1))) < 5.3).all()
    assert (np.abs(z(special.softmax(f_run[:, :30], axis=-1))) > 5.3).any()
    with pytest.raises(InputError, match=r"features of shape \(30, 3\); the network takes \[points, 2\]"):
        predictive.posterior_predictive_draws(sim, draws, seed=0, features=np.zeros((30, 3)))


def test_held_out_labels_beyond_the_tails_are_said_with_the_cure():
    """Labels drawn from the predictive itself (calibrated) raise no line over 200 seeds' draws (budget 1e-4
    each); 3 of 60 labels at the predictive's 1 - 1e-6 quantile do, naming student_t, or under student_t
    a smaller degrees_of_freedom; the line is a warning of Simulation.predictive."""
    probabilities = np.random.default_rng(seed(5)).random((200, 60))
    assert not any(predictive.held_out_tail_line(p, "gaussian") for p in probabilities)
    sim, draws, f = network("heteroscedastic_gaussian", lambda x: x[:, :1], 2)
    x = sim.data.all()[0].numpy()
    mu, sd = f[..., :1], np.sqrt(special.softplus(f[..., 1:]) + 1e-6)
    rng = np.random.default_rng(seed(6))
    pick = rng.integers(DRAWS, size=POINTS)  # each label from a draw picked at random: from the mixture
    labels = mu[pick, np.arange(POINTS)] + sd[pick, np.arange(POINTS)] * rng.normal(size=(POINTS, 1))
    np.testing.assert_allclose(predictive.mixture_cdf(mu, sd, labels), special.ndtr((labels - mu) / sd).mean(axis=0))
    trajectory = draws.assign(step=np.arange(1, DRAWS + 1), id=0)
    labels[:3] = predictive.mixture_quantile(mu[:, :3], sd[:, :3], 1.0 - 1e-6)  # beyond the 99.9998% band
    line = r"^predictive: 3 of 60 held-out labels lie beyond the predictive's 99.98% band, where 0.012 would, so " \
           r"likelihood heteroscedastic_gaussian's tails are too light for these data: use likelihood student_t$"
    with pytest.warns(UserWarning, match=line):
        sim.predictive(x, labels, trajectory=trajectory, burn_in=0)
    probabilities = probabilities[0]
    probabilities[:3] = 1e-6
    line = predictive.held_out_tail_line(probabilities, "student_t", 4.0)
    assert line.endswith("likelihood student_t's tails are too light for these data: give a smaller "
                         "degrees_of_freedom (now 4)")


def test_a_predictive_too_narrow_overall_is_said_with_the_cure():
    """Labels three times as far from one network's mean as its noise sd: its central 95% band holds about
    half (P(|z| < 0.65) = 0.48), far below what chance allows at 1e-4 (49 of 60 or more), and the line names a
    fit's cure, to sample. From a fit's few networks, labels beyond the 99.98% band are the same narrowness;
    from a run's many draws they are outliers (the test above), and a band too narrow without them points at
    the run's convergence; with a fixed noise sd, the cure is a larger one. Labels drawn from the predictive
    raise no line: the 200 seeds of the test above."""
    sim, draws, f = network("heteroscedastic_gaussian", lambda x: x[:, :1], 2)
    x = sim.data.all()[0].numpy()
    mu, sd = f[0, :, :1], np.sqrt(special.softplus(f[0, :, 1:]) + 1e-6)
    z = 3.0 * np.random.default_rng(seed(7)).normal(size=(POINTS, 1))
    inside, far = int(np.sum(np.abs(z) < scipy_stats.norm.ppf(0.975))), int(np.sum(np.abs(z) > 3.719))
    assert inside <= 48
    line = (rf"^predictive: the central 95% band holds {inside} of 60 held-out labels \(57 would\) and {far} lie "
            r"beyond its 99.98% band \(0.012 would\): the predictive of 1 network is far too narrow for these "
            r"data, its noise variance fitted to the training points: sample the posterior \(a sampler's draws\)$")
    with pytest.warns(UserWarning, match=line):
        sim.predictive(x, mu + sd * z, trajectory=draws.iloc[:1].assign(step=1, id=0), burn_in=0)
    narrow = np.r_[np.full(40, 0.5), np.full(20, 0.01)]
    outliers = np.r_[np.full(57, 0.5), np.full(3, 1e-6)]
    assert predictive.held_out_tail_line(outliers, "student_t", 4.0, 5).endswith(
        "the predictive of 5 networks is far too narrow for these data, their noise variances fitted to the "
        "training points: sample the posterior (a sampler's draws)")
    assert predictive.held_out_tail_line(outliers, "student_t", 4.0, 400).endswith(
        "give a smaller degrees_of_freedom (now 4)")
    assert predictive.held_out_tail_line(narrow, "heteroscedastic_gaussian", None, 400).endswith(
        "the predictive of these draws is far too narrow for these data: check the run's convergence (its "
        "summary's R-hat) and temperature")
    assert predictive.held_out_tail_line(narrow, "gaussian", None, 1).endswith(
        "far too narrow for these data: give a larger noise_standard_deviation, or likelihood "
        "heteroscedastic_gaussian")
    assert predictive.held_out_tail_line(np.r_[np.full(49, 0.5), np.full(11, 0.01)], "gaussian", None, 1) is None
