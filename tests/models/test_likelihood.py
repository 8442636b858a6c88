"""Bayesian units (option `likelihood`): U = the data's negative log-likelihood + the prior's,
so that inverse_temperature 1 samples the posterior with the prior in the parameters' units.

False-failure budget: 1e-3 split (Bonferroni) over each test's moment assertions."""

import math
import re

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from scipy import stats as sps

import tati
from stats import seed
from stats import first_and_second_moments, mcse_deviations


def conjugate_regression():
    """y = w . x + b + N(0, sigma^2), prior N(0, s^2) on w and b: (features, labels, sigma, s,
    posterior mean, posterior covariance)."""
    rng = np.random.default_rng(seed(4600))
    n, sigma, s = 40, 0.5, 1.0
    features = rng.normal(size=(n, 2))
    labels = features @ [0.7, -0.4] + 0.3 + sigma * rng.normal(size=n)
    design = np.hstack([features, np.ones((n, 1))])
    covariance = np.linalg.inv(design.T @ design / sigma ** 2 + np.eye(3) / s ** 2)
    mean = covariance @ design.T @ labels / sigma ** 2
    return features, labels[:, None], sigma, s, mean, covariance


@pytest.mark.statistical
@pytest.mark.parametrize("sampler, options", [("NUTS", {}), ("BAOAB", dict(step_width=0.02, friction_constant=5.0))])
def test_gaussian_likelihood_samples_the_conjugate_posterior(sampler, options):
    """4 walkers after burn-in: means and covariances of (w, b) within the MCSE bound."""
    features, labels, sigma, s, mean, covariance = conjugate_regression()
    burn_in = 1000 if sampler == "NUTS" else 4000
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], output_activation="linear",
                          likelihood="gaussian", noise_standard_deviation=sigma, prior_standard_deviation=s,
                          sampler=sampler, number_walkers=4, burn_in_steps=burn_in,
                          max_steps=burn_in + (2000 if sampler == "NUTS" else 40000),
                          every_nth=1 if sampler == "NUTS" else 10, dtype="float64", seed=seed(46), **options)
    trajectory = sim.sample().trajectory
    columns = ["weight0", "weight1", "bias0"]
    moments, (i, j) = first_and_second_moments(trajectory, columns, burn_in)
    x = moments[..., :3]
    centred = np.concatenate([x, (x - mean)[..., i] * (x - mean)[..., j]], axis=-1)
    exact = np.concatenate([mean, covariance[i, j]])
    deviations = mcse_deviations(centred, exact)
    assert np.all(deviations < sps.norm.ppf(1 - 1e-3 / (2 * len(exact)))), deviations


def test_the_loss_is_the_negative_log_posterior():
    """U at given parameters equals the closed form: the Gaussian log-likelihood of every point
    plus the prior on weights and bias, also through mini-batches (N / n x a batch's sum: the
    whole-data value when the batch is the dataset), and heteroscedastic outputs."""
    features, labels, sigma, s, _, _ = conjugate_regression()
    theta = np.array([0.5, -0.2, 0.1])
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], output_activation="linear",
                          likelihood="gaussian", noise_standard_deviation=sigma, prior_standard_deviation=s,
                          dtype="float64")
    sim.parameters = theta
    residual = labels[:, 0] - features @ theta[:2] - theta[2]
    expected = (np.sum(0.5 * (residual / sigma) ** 2 + math.log(sigma) + 0.5 * math.log(2 * math.pi))
                + np.sum(theta ** 2) / (2 * s ** 2))
    assert sim.loss() == pytest.approx(expected, rel=1e-12)

    hetero = tati.Simulation(dataset=(features, labels), hidden_dimension=[], output_activation="linear",
                             likelihood="heteroscedastic_gaussian", dtype="float64")
    assert hetero.num_parameters == 2 * 2 + 2  # a mean and a raw variance per label
    hetero.parameters = np.array([0.5, 0.0, -0.2, 0.0, 0.1, 0.3])  # weights [2, 2] row-major, biases
    variance = np.log1p(np.exp(0.3)) + 1e-6
    mu = features @ [0.5, -0.2] + 0.1
    expected = np.sum(0.5 * (labels[:, 0] - mu) ** 2 / variance + 0.5 * np.log(variance) + 0.5 * math.log(2 * math.pi))
    assert hetero.loss() == pytest.approx(expected, rel=1e-12)


def test_likelihood_needs_a_network():
    with pytest.raises(tati.InputError, match="likelihood gaussian needs a network"):
        tati.Simulation(potential=lambda x: tf.reduce_sum(x * x), initial_parameters=[0.0], likelihood="gaussian")


@pytest.mark.parametrize("likelihood, outputs, message", [
    ("heteroscedastic_gaussian", 1, "has 1 output.*needs 2 .a mean and a raw variance"),
    ("categorical", 1, "has 1 output.*needs 3 .a logit per class; one logit for two classes is likelihood bernoulli"),
    ("gaussian", 2, "has 2 output.*needs 1 .one per label column"),
    ("negative_binomial", 1, "has 1 output.*needs 2 .a log mean and a raw dispersion for each of the 1 label"),
    ("gaussian", 3, "has 3 output.*needs 1")])
def test_a_keras_models_outputs_must_be_what_its_likelihood_reads(likelihood, outputs, message):
    """One line, before any step: a width that would broadcast into a wrong posterior."""
    import keras
    from tati.errors import InputError
    features = np.linspace(-1.0, 1.0, 30)[:, None]
    labels = np.arange(30)[:, None] % 3  # class indices 0, 1, 2 (a regression target too)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(outputs)])
    with pytest.raises(InputError, match=f"^likelihood {likelihood}: the model {message}"):
        tati.Simulation(model=model, dataset=(features, labels), likelihood=likelihood)
    tati.Simulation(model=keras.Sequential([keras.Input((1,)), keras.layers.Dense(
        {"heteroscedastic_gaussian": 2, "categorical": 3, "negative_binomial": 2}.get(likelihood, 1))]),
        dataset=(features, labels), likelihood=likelihood)  # the right width builds


def test_classes_counted_from_1_are_named_with_the_cure():
    """Many datasets store classes as 1, 2, 3 (wine's). With the outputs given (output_dimension, a
    Keras model's width), labels reaching past them were TensorFlow's traceback at the first step:
    now one line before any step. With the outputs implied by the labels, class 0 would get a logit
    and no point: a warning. Classes 0, 1, 2 say nothing."""
    import keras
    import warnings
    features = np.linspace(-1.0, 1.0, 30)[:, None]
    from_one = np.arange(30)[:, None] % 3 + 1.0
    network = dict(hidden_dimension=[], output_activation="linear", likelihood="categorical")
    with pytest.raises(tati.InputError, match=r"^likelihood categorical with 3 outputs takes class indices 0 to 2; "
                                              r"these labels reach 3: classes counted from 1\? subtract 1"):
        tati.Simulation(dataset=(features, from_one), output_dimension=3, **network)
    with pytest.raises(tati.InputError, match=r"these labels reach 3: give output_dimension 4$"):
        tati.Simulation(dataset=(features, from_one - 1.0 + (features > 0.9)), output_dimension=3, **network)
    with pytest.raises(tati.InputError, match=r"the model has 3 output\(s\), it needs 4 \(a logit per class; "
                                              r"classes counted from 1\? subtract 1 from the labels\)"):
        tati.Simulation(model=keras.Sequential([keras.Input((1,)), keras.layers.Dense(3)]),
                        dataset=(features, from_one), likelihood="categorical")
    with pytest.warns(UserWarning, match=r"^the labels are classes 1 to 3, so the network has 4 outputs and class 0 "
                                         r"none of the data: classes counted from 1\? subtract 1 from the labels$"):
        tati.Simulation(dataset=(features, from_one), max_steps=1, **network).sample()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tati.Simulation(dataset=(features, from_one - 1.0), max_steps=1, **network).sample()


@pytest.mark.parametrize("taking, last, squashing", [
    (dict(likelihood="categorical"), lambda layers: [layers.Dense(3, activation="softmax")], "softmax"),
    (dict(likelihood="bernoulli"), lambda layers: [layers.Dense(1), layers.Activation("sigmoid")], "sigmoid"),
    (dict(loss="softmax_cross_entropy"), lambda layers: [layers.Dense(3), layers.Softmax()], "softmax")])
def test_a_keras_model_ending_in_probabilities_is_refused_where_logits_are_read(taking, last, squashing):
    """Keras' classifiers end in softmax or sigmoid; tati's classification likelihoods and losses
    apply it themselves to logits, so such a model would give a wrong posterior: refused in one
    line naming the layer. The same model without the activation builds; a regression's is not
    looked at."""
    import keras
    features = np.linspace(-1.0, 1.0, 30)[:, None]
    labels = np.arange(30)[:, None] % (2 if "bernoulli" in taking.values() else 3)
    layers = last(keras.layers)
    model = keras.Sequential([keras.Input((1,)), *layers])
    name, value = next(iter(taking.items()))
    with pytest.raises(tati.InputError, match=rf"^{name} {value} takes logits, and the model's last layer "
                                              rf"'{model.layers[-1].name}' applies {squashing}: drop that activation"):
        tati.Simulation(model=model, dataset=(features, labels), **taking)
    plain = keras.Sequential([keras.Input((1,)), keras.layers.Dense(layers[0].units)])
    tati.Simulation(model=plain, dataset=(features, labels), **taking)
    tati.Simulation(model=model, dataset=(features, features), loss="mean_squared")


def test_a_likelihood_makes_the_output_linear_unless_told_otherwise():
    """tanh, the default without a likelihood, would bound a logit to [-1, 1]."""
    data = dict(dataset=(np.linspace(-1.0, 1.0, 30)[:, None], (np.arange(30) % 2)[:, None]))
    assert tati.Simulation(**data).options["output_activation"] == "tanh"
    assert tati.Simulation(**data, likelihood="bernoulli").options["output_activation"] == "linear"
    assert tati.Simulation(**data, likelihood="bernoulli", output_activation="tanh").options["output_activation"] == "tanh"


def test_predictive_defaults_to_the_last_sample_calls_draws():
    features = np.linspace(-1.0, 1.0, 30)[:, None]
    sim = tati.Simulation(dataset=(features, 0.5 * features), hidden_dimension=[], likelihood="gaussian",
                          max_steps=20, seed=1)
    with pytest.raises(tati.InputError, match=r"^predictive needs draws: call sample\(\) first, or give trajectory="):
        sim.predictive(features)
    sim.sample()
    last = sim.sample()  # the second call's rows
    pd.testing.assert_frame_equal(sim.predictive(features, burn_in=0)[0],
                                  sim.predictive(features, trajectory=last.trajectory, burn_in=0)[0])


def test_bernoulli_takes_two_label_values():
    """Class indices 0, 1, 2 would be read as 0, 1, 1 (labels > 0): refused, with the way out."""
    features = np.linspace(-1.0, 1.0, 30)[:, None]
    with pytest.raises(tati.InputError, match=r"^likelihood bernoulli takes labels 0/1 or -1/\+1; these have 3 "
                                              r"values \(0, 1, 2\): for more classes use likelihood categorical$"):
        tati.Simulation(dataset=(features, np.arange(30)[:, None] % 3), likelihood="bernoulli")
    for labels in (np.arange(30) % 2, 2 * (np.arange(30) % 2) - 1):
        tati.Simulation(dataset=(features, labels[:, None]), likelihood="bernoulli")


@pytest.mark.statistical
def test_predictive_interval_and_log_density():
    """NUTS draws of the conjugate posterior: the 95% predictive band covers held-out points
    drawn from the exact posterior predictive at a rate inside the binomial bounds (two-sided,
    false-failure rate 1e-3) around 0.95, and the log predictive density equals the direct float64 computation. Then, scaled
    so far out that every p(y | x, theta_i) underflows, it stays finite and matches the
    closed form of the largest term."""
    features, labels, sigma, s, mean, covariance = conjugate_regression()
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], output_activation="linear",
                          likelihood="gaussian", noise_standard_deviation=sigma, prior_standard_deviation=s,
                          sampler="NUTS", number_walkers=4, burn_in_steps=500, max_steps=1500, dtype="float64",
                          seed=seed(49))
    trajectory = sim.sample().trajectory
    rng = np.random.default_rng(seed(4601))
    held_out = rng.normal(size=(400, 2))
    # each point from the exact posterior predictive: its own posterior draw, then the noise,
    # so that each is covered with probability 0.95, independently
    truth = rng.multivariate_normal(mean, covariance, size=400)
    y = np.sum(held_out * truth[:, :2], axis=1) + truth[:, 2] + sigma * rng.normal(size=400)
    table, lpd = sim.predictive(held_out, y, trajectory=trajectory, draws=2000)
    covered = int(np.sum((table["lower_0"] <= y) & (y <= table["upper_0"])))
    low, high = sps.binom.ppf([5e-4, 1 - 5e-4], 400, 0.95)
    assert low <= covered <= high, covered

    theta = trajectory[trajectory.step > 500][["weight0", "weight1", "bias0"]].to_numpy()
    rows = np.unique(np.linspace(0, len(theta) - 1, 2000).round().astype(int))
    mu = held_out @ theta[rows, :2].T + theta[rows, 2]  # [points, n]
    direct = np.log(np.mean(sps.norm.pdf(y[:, None], mu, sigma), axis=1))
    np.testing.assert_allclose(table["log_predictive_density"], direct, rtol=1e-10)
    assert lpd == pytest.approx(direct.sum(), rel=1e-10)

    far = y + 1000.0  # 2000 sigma away: every density is exp(-2e6), zero in float64
    assert np.all(sps.norm.pdf(far[:, None], mu, sigma) == 0.0)
    table, lpd = sim.predictive(held_out, far, trajectory=trajectory, draws=2000)
    log_p = sps.norm.logpdf(far[:, None], mu, sigma)
    largest = log_p.max(axis=1)
    exact = largest + np.log(np.exp(log_p - largest[:, None]).sum(axis=1)) - np.log(log_p.shape[1])
    assert np.all(np.isfinite(table["log_predictive_density"]))
    np.testing.assert_allclose(table["log_predictive_density"], exact, rtol=1e-10)

    # points and labels of another shape than the run's data would broadcast into a wrong density
    for points, values, message in [(held_out, np.stack([y, y], axis=1), r"labels of shape \(400, 2\) for 400 "
                                     r"points; the run's data has 1 label column\(s\), so \[400, 1\]"),
                                    (held_out, y[:5], r"labels of shape \(5, 1\) for 400 points"),
                                    (held_out[:, :1], y, r"features of shape \(400, 1\); the network takes "
                                     r"\[points, 2\]")]:
        with pytest.raises(tati.InputError, match=message):
            sim.predictive(points, values, trajectory=trajectory)


def test_mixture_quantile_is_exact():
    """The band's quantiles: one Gaussian gives mu + z sd (a single network's band is its noise's),
    a mixture's quantile has CDF exactly p (float64 rounding)."""
    from scipy import special, stats as scipy_stats

    from tati.bayes.predictive import mixture_quantile
    mu, sd = np.array([[0.3, -2.0]]), np.array([[0.5, 1e-3]])
    for p in (0.025, 0.5, 0.975):
        np.testing.assert_allclose(mixture_quantile(mu, sd, p), mu[0] + scipy_stats.norm.ppf(p) * sd[0],
                                   rtol=0, atol=1e-12)
    rng = np.random.default_rng(4)
    mu, sd = rng.normal(size=(50, 7)), rng.uniform(0.1, 2.0, size=(50, 7))
    for p in (0.025, 0.975):
        q = mixture_quantile(mu, sd, p)
        np.testing.assert_allclose(special.ndtr((q - mu) / sd).mean(axis=0), p, rtol=0, atol=1e-12)


def grid_moments(weight, grid):
    """The mean and covariance of the grid's points [n, 2] under the weights (normalised here)."""
    weight = weight.ravel() / weight.sum()
    mean = weight @ grid
    return mean, (weight[:, None] * (grid - mean)).T @ (grid - mean)


def grid_posterior(weight, first, second):
    """(weights, points [n, 2]) of a posterior's density `weight` on the meshgrid (first, second), whose
    edges must hold less than 1e-12 of its peak (the grid holds the posterior)."""
    edges = np.concatenate([weight[0], weight[-1], weight[:, 0], weight[:, -1]])
    assert edges.max() < 1e-12
    return weight, np.stack([first.ravel(), second.ravel()], axis=1)


def assert_samples_the_grid_posterior(trajectory, columns, burn_in, weight, grid):
    """The sampled means and covariance of the two `columns` after burn_in within the MCSE bound of the grid
    posterior's (Bonferroni over the 5 statistics, budget 1e-3); negative control: those of the posterior
    tempered to inverse_temperature 2, weight^2 (whose covariance is about half), fail the same bound."""
    moments, (i, j) = first_and_second_moments(trajectory, columns, burn_in)
    bound = sps.norm.ppf(1 - 1e-3 / (2 * 5))

    def deviations(weight):
        mean, covariance = grid_moments(weight, grid)
        x = moments[..., :2]
        centred = np.concatenate([x, (x - mean)[..., i] * (x - mean)[..., j]], axis=-1)
        return mcse_deviations(centred, np.concatenate([mean, covariance[i, j]]))
    assert np.all(deviations(weight) < bound), deviations(weight)
    assert np.any(deviations(weight ** 2) > bound)


def poisson_regression():
    """Counts y ~ Poisson(exp(w x + b)), prior N(0, s^2) on w and b: (features, labels, s, the grid's
    weights and points), the posterior's density for quadrature on a grid of 401^2 points over 12 sd each side of the mode (Newton's, the sd Laplace's), whose edges hold less
    than 1e-12 of the peak's density (the skewed tail reaches further than a Gaussian's)."""
    rng = np.random.default_rng(seed(4700))
    n, s = 50, 1.0
    x = rng.normal(size=n)
    y = rng.poisson(np.exp(0.5 * x + 1.0)).astype(float)
    design = np.stack([x, np.ones(n)], axis=1)
    mode = np.zeros(2)
    for _ in range(50):
        rate = np.exp(design @ mode)
        hessian = design.T @ (rate[:, None] * design) + np.eye(2) / s ** 2
        mode -= np.linalg.solve(hessian, design.T @ (rate - y) + mode / s ** 2)
    half = 12.0 * np.sqrt(np.diag(np.linalg.inv(hessian)))
    w, b = np.meshgrid(*(np.linspace(m - h, m + h, 401) for m, h in zip(mode, half)), indexing="ij")
    log_f = w[..., None] * x + b[..., None]
    log_post = (y * log_f - np.exp(log_f)).sum(axis=-1) - (w ** 2 + b ** 2) / (2 * s ** 2)
    weight = np.exp(log_post - log_post.max())
    return (x[:, None], y[:, None], s) + grid_posterior(weight, w, b)


@pytest.mark.statistical
def test_poisson_likelihood_samples_the_exact_posterior():
    """NUTS, 4 walkers: the means and covariance of (w, b) within the MCSE bound of the quadrature's
    (Bonferroni over the 5 statistics, budget 1e-3); negative control: the posterior tempered to
    inverse_temperature 2 (whose covariance is about half) fails the same bound."""
    features, labels, s, weight, grid = poisson_regression()
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], likelihood="poisson",
                          prior_standard_deviation=s, sampler="NUTS", number_walkers=4, burn_in_steps=500,
                          max_steps=2500, dtype="float64", seed=seed(47))
    assert_samples_the_grid_posterior(sim.sample().trajectory, ["weight0", "bias0"], 500, weight, grid)


def test_count_likelihoods_loss_labels_and_keras_outputs():
    """U equals minus scipy's Poisson (log k! exact, not Stirling's) and negative binomial log-probabilities
    plus the prior; labels that are not counts are refused in one line, as is a Keras model whose last
    layer already makes a rate (exponential, softplus, relu), where poisson takes its log."""
    import keras
    features, labels, s, *_ = poisson_regression()
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], likelihood="poisson",
                          prior_standard_deviation=s, dtype="float64")
    theta = np.array([0.4, 0.9])
    sim.parameters = theta
    expected = -np.sum(sps.poisson.logpmf(labels[:, 0], np.exp(features[:, 0] * theta[0] + theta[1]))) + \
        np.sum(theta ** 2) / (2 * s ** 2)
    assert sim.loss() == pytest.approx(expected, rel=1e-12)
    assert sim.options["output_activation"] == "linear"

    spread = tati.Simulation(dataset=(features, labels), hidden_dimension=[], likelihood="negative_binomial",
                             prior_standard_deviation=s, dtype="float64")
    assert spread.num_parameters == 4  # a log mean and a raw dispersion per label column
    theta = np.array([0.4, 0.2, 0.9, -1.0])  # weights [1, 2], then biases
    spread.parameters = theta
    log_mean, raw = features[:, 0] * theta[0] + theta[2], features[:, 0] * theta[1] + theta[3]
    r = 1.0 / (np.log1p(np.exp(raw)) + 1e-6)
    expected = (-np.sum(sps.nbinom.logpmf(labels[:, 0], r, r / (r + np.exp(log_mean))))
                + np.sum(theta ** 2) / (2 * s ** 2))
    assert spread.loss() == pytest.approx(expected, rel=1e-12)
    # near Poisson's limit (r = 1 / softplus(-12) = 1.6e5) float32 keeps each point's term within 1e-4
    # (lgamma(y + r) - lgamma(r) computed directly is off by 0.1)
    from tati.models.losses import point_nll
    f = np.stack([np.full(len(labels), 1.5), np.full(len(labels), -12.0)], axis=-1)[None]
    r = 1.0 / (np.log1p(np.exp(-12.0)) + 1e-6)
    exact = -sps.nbinom.logpmf(labels[:, 0], r, r / (r + np.exp(1.5)))
    single = point_nll("negative_binomial")(tf.constant(labels, tf.float32), tf.constant(f, tf.float32)).numpy()[0]
    np.testing.assert_allclose(single, exact, rtol=0, atol=1e-4)
    with pytest.raises(tati.InputError, match=r"^output_dimension 1 must be 2 with likelihood negative_binomial "
                                              r"\(a log mean and a raw dispersion per label column\)$"):
        tati.Simulation(dataset=(features, labels), likelihood="negative_binomial", output_dimension=1)

    for likelihood in ("poisson", "negative_binomial"):
        for bad, shown in ((labels - 10.0, "-"), (labels + 0.5, r"\d+\.5")):
            refused = (rf"^likelihood {likelihood} takes counts 0, 1, 2, ... as labels; these include {shown}.*: "
                       "for real-valued labels use likelihood gaussian$")
            with pytest.raises(tati.InputError, match=refused):
                tati.Simulation(dataset=(features, bad), likelihood=likelihood)
    for activation, last in (("exponential", None), ("softplus", None), ("relu", None), ("relu", keras.layers.ReLU())):
        layers = [keras.layers.Dense(1), last] if last is not None else [keras.layers.Dense(1, activation=activation)]
        model = keras.Sequential([keras.Input((1,)), *layers])
        with pytest.raises(tati.InputError, match=rf"^likelihood poisson takes the log of the rate, and the model's "
                                                  rf"last layer '.*' applies {activation}: drop that activation "
                                                  r"\(likelihood poisson applies exp\)$"):
            tati.Simulation(model=model, dataset=(features, labels), likelihood="poisson")
    tati.Simulation(model=keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)]), dataset=(features, labels),
                    likelihood="poisson")


@pytest.mark.parametrize("generated, likelihood, warm, noted", [
    ("nbinom", "poisson", True, True), ("nbinom", "poisson", False, True), ("poisson", "poisson", True, False),
    ("poisson", "poisson", False, False), ("nbinom", "negative_binomial", True, False)])
def test_counts_varying_more_than_poissons_are_said(generated, likelihood, warm, noted):
    """Counts of a negative binomial (dispersion 1: variance 5 times Poisson's at mean 4) under likelihood
    poisson: a warning at the warm start's end, or at the run's end where no warm start ran, and a summary
    line naming negative_binomial; Poisson counts, or the negative binomial likelihood, none."""
    rng = np.random.default_rng(seed(4701))
    x = rng.normal(size=(400, 1))
    mean = np.exp(0.3 * x[:, 0] + 1.4)
    y = rng.poisson(mean) if generated == "poisson" else rng.negative_binomial(1.0, 1.0 / (1.0 + mean))
    sim = tati.Simulation(dataset=(x, y[:, None].astype(float)), hidden_dimension=[], likelihood=likelihood,
                          prior_standard_deviation=1.0, sampler="NUTS", warm_start=warm, burn_in_steps=100,
                          max_steps=150, dtype="float64", seed=1)
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.sample()
    said = [str(w.message) for w in caught if "Pearson" in str(w.message)]
    where = "the warm start's end" if warm else "the run's end"
    line = rf"likelihood poisson: the counts vary [\d.]+ times as much about the fitted rates at {where} as .*: use " \
        "likelihood negative_binomial"
    assert bool(said) == noted and all(re.match(line, message) for message in said)
    assert bool(re.search(line, " ".join(sim.summary().split()))) == noted


def test_count_bands_are_the_mixtures_quantile():
    """The counts' band: one rate gives scipy's Poisson quantile; a mixture's q, of Poisson or negative
    binomial components, is the least count whose mixture CDF reaches p (the CDF at q - 1 falls short)."""
    from tati.bayes.predictive import count_distribution, count_mixture_quantile
    outputs = np.log([[[0.3], [4.0], [250.0]]])
    for p in (0.025, 0.5, 0.975):
        np.testing.assert_array_equal(count_mixture_quantile(count_distribution("poisson", outputs), p),
                                      sps.poisson.ppf(p, np.exp(outputs[0])))
    rng = np.random.default_rng(5)
    for name, width in (("poisson", 1), ("negative_binomial", 2)):
        counts = count_distribution(name, rng.normal(1.0, 1.5, size=(50, 7, width)))
        for p in (0.025, 0.5, 0.975):
            q = count_mixture_quantile(counts, p)
            assert np.all(counts.cdf(q).mean(axis=0) >= p)
            assert np.all(counts.cdf(q - 1).mean(axis=0) < p)


def student_t_location_scale():
    """y ~ mu + sigma t_3 with a few gross outliers; the network's inputs all 0, so its outputs are its two
    biases: the location mu = b0 and the raw squared scale b1, sigma^2 = softplus(b1) + 1e-6 (its weights
    meet no data: their posterior is the prior). Prior N(0, s^2) on each. (features, labels, s, the grid's
    weights and points of (b0, b1)): the posterior's density for quadrature on 401^2 points over
    where a coarse grid's density exceeds 1e-16 of its peak, one coarse cell wider each side, whose edges
    hold less than 1e-12 of the peak's density."""
    rng = np.random.default_rng(seed(4800))
    y = np.concatenate([0.7 + 0.5 * rng.standard_t(3.0, size=40), [9.0, -7.0, 12.0]])
    s, nu = 2.0, 3.0

    def density(b0_range, b1_range, points):
        b0, b1 = np.meshgrid(np.linspace(*b0_range, points), np.linspace(*b1_range, points), indexing="ij")
        scale = np.sqrt(np.log1p(np.exp(b1)) + 1e-6)
        log_post = sps.t.logpdf(y, nu, loc=b0[..., None], scale=scale[..., None]).sum(axis=-1) - (
            b0 ** 2 + b1 ** 2) / (2 * s ** 2)
        return b0, b1, np.exp(log_post - log_post.max())
    b0, b1, weight = density((-8.0, 8.0), (-10.0, 16.0), 161)
    held, cell = weight > 1e-16, (16.0 / 160, 26.0 / 160)
    b0, b1, weight = density((b0[held].min() - cell[0], b0[held].max() + cell[0]),
                             (b1[held].min() - cell[1], b1[held].max() + cell[1]), 401)
    return (np.zeros((len(y), 1)), y[:, None], s) + grid_posterior(weight, b0, b1)


@pytest.mark.statistical
def test_student_t_likelihood_samples_the_exact_posterior():
    """NUTS, 4 walkers, degrees_of_freedom 3: the means and covariance of (location, raw squared scale) within
    the MCSE bound of the quadrature's (Bonferroni over 5, budget 1e-3); the posterior tempered to
    inverse_temperature 2 fails the bound; and the location is the bulk's (its median's, within 0.1), not
    pulled to the outliers' side as the data's mean is (by 0.14-0.37 over TATI_TEST_SEED 0-5)."""
    features, labels, s, weight, grid = student_t_location_scale()
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], likelihood="student_t",
                          degrees_of_freedom=3.0, prior_standard_deviation=s, sampler="NUTS", number_walkers=4,
                          burn_in_steps=500, max_steps=2500, dtype="float64", seed=seed(48))
    trajectory = sim.sample().trajectory
    assert_samples_the_grid_posterior(trajectory, ["bias0", "bias1"], 500, weight, grid)
    bulk = np.median(labels[:40])
    assert abs(trajectory.bias0[trajectory.step > 500].mean() - bulk) < 0.1 < abs(labels.mean() - bulk)


def test_student_t_loss_limit_widths_and_bands():
    """U equals minus scipy's Student-t log-density plus the prior, and tends to heteroscedastic_gaussian's as
    nu grows; two outputs per label column; the band of one draw is mu + sigma t_nu's quantile, a mixture's
    quantile has CDF exactly p (10 sd would not bracket t_1's 97.5% quantile, 12.7 sd)."""
    from scipy import special

    from tati.bayes.predictive import mixture_quantile
    from tati.models.losses import point_nll
    features, labels, sigma, s, _, _ = conjugate_regression()
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], likelihood="student_t",
                          degrees_of_freedom=2.5, prior_standard_deviation=s, dtype="float64")
    assert sim.num_parameters == 6 and sim.options["output_activation"] == "linear"
    theta = np.array([0.5, 0.1, -0.2, 0.3, 0.1, -1.0])  # weights [2, 2] row by row, then the two biases
    sim.parameters = theta
    f = features @ theta[:4].reshape(2, 2) + theta[4:]
    scale = np.sqrt(np.log1p(np.exp(f[:, 1])) + 1e-6)
    expected = -np.sum(sps.t.logpdf(labels[:, 0], 2.5, loc=f[:, 0], scale=scale)) + np.sum(theta ** 2) / (2 * s ** 2)
    assert sim.loss() == pytest.approx(expected, rel=1e-12)
    outputs = tf.constant(np.random.default_rng(1).normal(size=(3, len(labels), 2)))
    # nu 1e9: the limit's remainder, about z^4 / (4 nu), is 1e-4 at nu 1e7 where a label lies 8 sd out (seed 3's
    # data), 8e-7 here with the constant's lgamma(nu / 2) - lgamma((nu + 1) / 2) in float64
    far = point_nll("student_t", degrees_of_freedom=1e9)(tf.constant(labels), outputs).numpy()
    np.testing.assert_allclose(far, point_nll("heteroscedastic_gaussian")(tf.constant(labels), outputs).numpy(),
                               rtol=0, atol=1e-4)
    with pytest.raises(tati.InputError, match=r"^output_dimension 1 must be 2 with likelihood student_t "
                                              r"\(a location and a raw squared scale per label column\)$"):
        tati.Simulation(dataset=(features, labels), likelihood="student_t", output_dimension=1)
    mu, sd = np.array([[0.3, -2.0]]), np.array([[0.5, 1e-3]])
    for p in (0.025, 0.5, 0.975):
        np.testing.assert_allclose(mixture_quantile(mu, sd, p, 1.0), mu[0] + sps.t.ppf(p, 1.0) * sd[0],
                                   rtol=0, atol=1e-12)
    rng = np.random.default_rng(4)
    mu, sd = rng.normal(size=(50, 7)), rng.uniform(0.1, 2.0, size=(50, 7))
    for nu in (1.0, 4.0):
        for p in (0.025, 0.975):
            q = mixture_quantile(mu, sd, p, nu)
            np.testing.assert_allclose(special.stdtr(nu, (q - mu) / sd).mean(axis=0), p, rtol=0, atol=1e-12)
