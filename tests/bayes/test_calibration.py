"""tati/bayes/calibration.py and the predictive's `pit_k` columns: labels drawn from the predictive itself
have uniform PITs (DKWM at alpha 1e-6 for each likelihood; negative control: labels spread 1.5 times as far
from the predictive mean, or counts of twice the mean, fail it); a classifier's reliability table and
expected calibration error exact on a small case, and on a large one within its bound where the classes are
drawn from the probabilities (10 bins' accuracies each within 5.33 binomial sd: Bonferroni at 1e-6) and
beyond it for a sharpened predictive; the figures written."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats as scipy_stats

import tati
from stats import dkwm_bound, seed
from tati.analysis import figures
from tati.bayes import calibration, predictive
from tati.errors import InputError

POINTS, DRAWS = 1500, 100


def network(likelihood, outputs, **options):
    """(Simulation of a 2-3-outputs tanh network on 50 points, DRAWS parameter rows around 0, POINTS
    held-out features)."""
    rng = np.random.default_rng(seed(31))
    x = rng.normal(size=(50, 2))
    y = {"poisson": np.round(np.exp(x[:, :1])), "negative_binomial": np.round(np.exp(x[:, :1])),
         "bernoulli": (x[:, :1] > 0).astype(float), "categorical": (x[:, :1] > 0) + (x[:, 1:] > 0.5)}.get(
        likelihood, x[:, :1])
    sim = tati.Simulation(dataset=(x, y), hidden_dimension=[3], hidden_activation="tanh", output_activation="linear",
                          output_dimension=outputs, likelihood=likelihood, prior_standard_deviation=1.0,
                          dtype="float64", seed=seed(32), **options)
    names = list(sim.model.parameter_names)
    draws = pd.DataFrame(0.5 * rng.normal(size=(DRAWS, len(names))), columns=names)
    draws.insert(0, "step", np.arange(1, DRAWS + 1))
    return sim, draws, rng.normal(size=(POINTS, 2))


def from_the_predictive(sim, draws, features):
    """[points, 1]: each point's label from one draw picked at random, i.e. from the predictive mixture."""
    replicates = predictive.posterior_predictive_draws(sim, draws, seed=seed(33), features=features)
    pick = np.random.default_rng(seed(34)).integers(DRAWS, size=len(features))
    return replicates[pick, np.arange(len(features))]


@pytest.mark.parametrize("likelihood, outputs, options", [
    ("gaussian", 1, dict(noise_standard_deviation=0.3)), ("heteroscedastic_gaussian", 2, {}),
    ("student_t", 2, dict(degrees_of_freedom=3.0)), ("poisson", 1, {}), ("negative_binomial", 2, {})])
def test_labels_drawn_from_the_predictive_have_uniform_pits(likelihood, outputs, options):
    sim, draws, features = network(likelihood, outputs, **options)
    labels = from_the_predictive(sim, draws, features)
    table, _ = sim.predictive(features, labels, trajectory=draws, burn_in=0, draws=DRAWS)
    bound = dkwm_bound(POINTS)
    assert scipy_stats.kstest(table["pit_0"], "uniform").statistic < bound
    if likelihood in ("poisson", "negative_binomial"):  # negative control: counts of twice the mean
        wrong = labels + from_the_predictive(sim, draws.iloc[::-1].assign(step=draws["step"]), features)
    else:  # labels 1.5 times as far from the mean: a predictive too narrow
        wrong = table[["mean_0"]].to_numpy() + 1.5 * (labels - table[["mean_0"]].to_numpy())
    with warnings.catch_warnings():  # labels far out: the held-out tails' warning, tested elsewhere
        warnings.simplefilter("ignore")
        table, _ = sim.predictive(features, wrong, trajectory=draws, burn_in=0, draws=DRAWS)
    assert scipy_stats.kstest(table["pit_0"], "uniform").statistic > bound


def test_a_classifiers_predictive_has_no_pit():
    sim, draws, features = network("bernoulli", 1)
    table, _ = sim.predictive(features[:20], (features[:20, :1] > 0).astype(float), trajectory=draws, burn_in=0)
    assert not [c for c in table.columns if c.startswith("pit")]


def test_reliability_counts_each_bin():
    probabilities = np.array([[0.92, 0.08], [0.83, 0.17], [0.38, 0.62], [0.29, 0.71]])
    table, error = calibration.reliability(probabilities, np.array([0, 1, 1, 1]))
    assert table["points"].tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(table["confidence"], [0.62, 0.71, 0.83, 0.92])
    assert table["accuracy"].tolist() == [1.0, 1.0, 0.0, 1.0]
    np.testing.assert_allclose(table["lower"], [0.6, 0.7, 0.8, 0.9])
    assert error == pytest.approx((0.38 + 0.29 + 0.83 + 0.08) / 4)


@pytest.mark.parametrize("likelihood, coding", [("bernoulli", (0.0, 1.0)), ("bernoulli", (-1.0, 1.0)),
                                                ("categorical", "index"), ("categorical", "one-hot")])
def test_a_calibrated_classifier_reads_calibrated_and_a_sharpened_one_does_not(likelihood, coding):
    """Classes drawn from the probabilities: the expected calibration error below 5.33 * 0.5 * sqrt(10 / n)
    (each bin's accuracy within 5.33 sd of its mean confidence, sd <= 0.5 / sqrt(its points)); the same
    classes under probabilities sharpened (logits doubled) exceed it."""
    n, classes_number = 20000, 2 if likelihood == "bernoulli" else 3
    rng = np.random.default_rng(seed(35))
    logits = 1.5 * rng.normal(size=(n, classes_number))
    p = special.softmax(logits, axis=1)
    classes = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    if likelihood == "bernoulli":
        labels = np.where(classes == 1, coding[1], coding[0])[:, None]
    else:
        labels = classes[:, None].astype(float) if coding == "index" else np.eye(3)[classes]
    assert (calibration.classes_of(labels, likelihood) == classes).all()
    bound = 5.33 * 0.5 * np.sqrt(calibration.BINS / n)

    def table_of(probabilities):
        means = probabilities[:, 1:] if likelihood == "bernoulli" else probabilities
        return pd.DataFrame({f"mean_{k}": means[:, k] for k in range(means.shape[1])})
    _, error = calibration.reliability(calibration.class_probabilities(table_of(p), likelihood), classes)
    assert error < bound
    line = calibration.scores(table_of(p), labels, likelihood, 0.95)
    right = int((p.argmax(axis=1) == classes).sum())
    assert line == (f"accuracy {right / n:.4g} ({right} of {n}), expected calibration error {error:.3g} "
                    "(10 bins of confidence)")
    sharpened = special.softmax(2.0 * logits, axis=1)
    _, error = calibration.reliability(calibration.class_probabilities(table_of(sharpened), likelihood), classes)
    assert error > bound


@pytest.mark.skipif(not figures.available(), reason="needs matplotlib")
@pytest.mark.parametrize("likelihood, outputs", [("heteroscedastic_gaussian", 2), ("poisson", 1),
                                                 ("categorical", 3)])
def test_the_figure_is_written(tmp_path, likelihood, outputs):
    sim, draws, features = network(likelihood, outputs)
    labels = from_the_predictive(sim, draws, features[:200]) if likelihood != "categorical" else \
        (features[:200, :1] > 0).astype(float)
    table, _ = sim.predictive(features[:200], labels, trajectory=draws, burn_in=0)
    calibration.plot(table, labels, likelihood, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="a calibration figure needs a likelihood"):
        calibration.plot(table, labels, "none", tmp_path / "d.png")


def test_the_classes_of_labels_and_predictive():
    assert calibration.classes_of(np.array([-1.0, 1.0, 1.0]), "bernoulli").tolist() == [0, 1, 1]
    table = pd.DataFrame({"mean_0": [0.2, 0.9]})
    np.testing.assert_allclose(calibration.class_probabilities(table, "bernoulli"), [[0.8, 0.2], [0.1, 0.9]])


def test_an_overconfident_classifier_is_said_with_the_cure():
    """Classes drawn from the probabilities raise no line over 200 seeds (each at most 1e-4); the same
    classes under sharpened probabilities (logits tripled) do, naming a fit's cure for one network and the
    run's convergence for many draws; sim.predictive warns where one network's large logits meet labels of a
    coin."""
    rng = np.random.default_rng(seed(36))
    for _ in range(200):
        p = special.softmax(1.5 * rng.normal(size=(300, 3)), axis=1)
        classes = (rng.random(300)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
        assert predictive.overconfidence_line(p, classes, 1) is None
    sharpened = special.softmax(3.0 * np.log(p), axis=1)
    line = predictive.overconfidence_line(sharpened, classes, 1)
    found = re.fullmatch(r"predictive: (\d+) of the (\d+) held-out points whose predicted class has probability "
                         r"0\.\d+-1 are wrong, where ([\d.]+) would be: the predictive of 1 network, fitted to the "
                         r"training points, is overconfident: sample the posterior \(a sampler's draws\)", line)
    assert found and int(found[1]) > float(found[3]), line
    assert predictive.overconfidence_line(sharpened, classes, 400).endswith(
        "the predictive of these draws is overconfident: check the run's convergence (its summary's R-hat) and "
        "temperature")
    sim, draws, features = network("bernoulli", 1)
    coin = (np.random.default_rng(seed(37)).random((300, 1)) < 0.5).astype(float)
    with pytest.warns(UserWarning, match=r"^predictive: \d+ of the \d+ held-out points .* predictive of 1 network"):
        sim.predictive(features[:300], coin, trajectory=(10.0 * draws.iloc[:1]).assign(step=1), burn_in=0)
