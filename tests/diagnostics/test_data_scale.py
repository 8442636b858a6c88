"""The data's warnings (tati/diagnostics/data_scale.py): network inputs far from unit scale, a
Gaussian likelihood's noise far below the residuals, residuals with heavy tails, and Poisson counts that
vary more than Poisson's (tests/models/test_likelihood.py runs the last). Each names
what is wrong and the cure; data of unit scale and a noise that fits warn of nothing."""

import warnings

import numpy as np
import pytest

import tati
from tati.diagnostics.data_scale import (did_not_hold, heavy_tail_line, input_scale_line, measured_cure, misfit_lines,
                                        noise_misfit_line)


def test_inputs_far_from_unit_scale_are_named_counted_from_one():
    rng = np.random.default_rng(0)
    standard = rng.normal(size=(200, 4))
    assert input_scale_line(standard) is None
    assert input_scale_line(standard * [1.0, 9.0, 1.0, 1.0] + [0.0, 0.0, 9.0, 0.0]) is None  # within 10
    raw = standard * [1.0, 80.0, 1.0, 1.0] + [0.0, 0.0, 0.0, 972.0]  # concrete-like columns 2 and 4
    line = input_scale_line(raw)
    assert line.startswith("network inputs 2, 4 (of 4, counted from 1) are far from unit scale")
    assert "standardise each column" in line and "\n" not in line


def test_residuals_far_above_the_noise_are_named_with_the_cure():
    line = noise_misfit_line(4.4, 1.0)
    assert "4.4 times noise_standard_deviation 1" in line
    assert "set noise_standard_deviation near 4.4 or use likelihood heteroscedastic_gaussian" in line
    assert noise_misfit_line(2.9, 1.0) is None and noise_misfit_line(4.4, 2.0) is None
    assert noise_misfit_line(float("nan"), 1.0) is None and noise_misfit_line(float("inf"), 1.0) is None


def test_the_misfit_is_judged_on_the_walker_that_fits_best_without_numpy_warnings():
    """At a run's end (no warm start named a walker) the best walker's fit counts: a walker gone far (its
    outputs inf, a rate exp(-900) = 0, nan) neither raises the line nor prints numpy's warnings."""
    labels = np.array([[1.0], [0.0], [3.0], [2.0]])
    fitting = labels[None] + 0.5
    far = np.array([[[np.inf], [0.0], [1.0], [np.nan]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert misfit_lines("gaussian", labels, np.concatenate([far, fitting]), None, 1.0, "at x") == []
        assert "rms at x is 4.5" in misfit_lines("gaussian", labels, fitting + 4.0, None, 1.0, "at x")[0]
        assert misfit_lines("gaussian", labels, far, None, 1.0, "at x") == []
        assert misfit_lines("poisson", labels, np.full((1, 4, 1), -900.0), None, 1.0, "at x") == []
    counts = np.random.default_rng(0).negative_binomial(1.0, 0.2, (300, 1)).astype(float)  # mean 4, variance 20
    far = np.full((1, 300, 1), np.nan)  # a walker gone far first: the best of the others is judged
    line, = misfit_lines("poisson", counts, np.concatenate([far, np.full((1, 300, 1), np.log(4.0))]), None, 1.0,
                         "at x")
    assert line.startswith("likelihood poisson: the counts vary ") and "rates at x as Poisson's" in line


def test_heavy_tails_are_named_with_the_cure():
    """Residuals of 1,000 points, scaled by each point's sd: none of 2,000 Gaussian samples (their largest
    count beyond 4 robust sd is 3, the line needs 11), nor a Gaussian's with a scale 5 times the noise's (the
    robust sd takes it), raises the line; 3% of them 10 sd out do, as do Student-t_2's; the heteroscedastic
    outputs' own sds scale them."""
    rng = np.random.default_rng(0)
    bulk = rng.normal(size=1000)
    assert heavy_tail_line("gaussian", 5.0 * bulk) is None
    assert not any(heavy_tail_line("gaussian", z) for z in np.random.default_rng(1).normal(size=(2000, 1000)))
    out = bulk.copy()
    out[:30] = 10.0
    line = heavy_tail_line("gaussian", out, "at x")
    assert line.startswith("likelihood gaussian: 30 of 1000 residuals at x lie beyond 4 sd of the bulk")
    assert line.endswith("use likelihood student_t") and "where a Gaussian puts 0.063" in line
    assert heavy_tail_line("gaussian", rng.standard_t(2.0, size=1000)) is not None
    labels = out[:, None]
    sd = np.where(np.arange(1000) < 30, 10.0, 1.0)[:, None]  # the outliers' fitted variance 100: no tail left
    raw = np.log(np.expm1(sd ** 2))
    outputs = np.concatenate([np.zeros_like(labels), raw], axis=-1)[None]
    assert misfit_lines("heteroscedastic_gaussian", labels, outputs, None, 1.0, "at x") == []
    outputs[..., 1] = np.log(np.expm1(1.0))
    line, = misfit_lines("heteroscedastic_gaussian", labels, outputs, None, 1.0, "at x")
    assert line.startswith("likelihood heteroscedastic_gaussian: 30 of 1000")


def test_the_built_in_network_warns_of_raw_inputs_and_not_of_standardised_ones():
    rng = np.random.default_rng(1)
    features = rng.normal(size=(50, 2)) * [1.0, 100.0]
    labels = features @ [1.0, 0.01]
    with pytest.warns(UserWarning, match=r"network inputs 2 \(of 2, counted from 1\) are far from unit scale"):
        sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[2], likelihood="gaussian")
    assert len(sim.notes) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tati.Simulation(dataset=(features / [1.0, 100.0], labels), hidden_dimension=[2], likelihood="gaussian")


def test_a_keras_model_is_warned_of_raw_inputs_only_where_a_dense_layer_takes_them():
    import keras
    rng = np.random.default_rng(1)
    features = rng.normal(size=(50, 2)) * [1.0, 100.0]
    labels = features @ [1.0, 0.01]
    dense = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, activation="relu"), keras.layers.Dense(1)])
    with pytest.warns(UserWarning, match=r"network inputs 2 \(of 2, counted from 1\) are far from unit scale"):
        tati.Simulation(model=dense, dataset=(features, labels), likelihood="gaussian")
    normalised = keras.Sequential([keras.Input((2,)), keras.layers.Normalization(mean=[0.0, 0.0], variance=[1.0, 1e4]),
                                   keras.layers.Dense(1)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tati.Simulation(model=normalised, dataset=(features, labels), likelihood="gaussian")


def test_a_gaussian_noise_far_below_the_residuals_warns_after_the_warm_start():
    """Data with noise sd 4 (a linear model can fit no better) and noise_standard_deviation 1:
    named after the warm start (BAOAB with batch_size measures its width from there), with the
    residuals' rms, and kept for the summary. (A noise that fits warns of nothing:
    tests/samplers/test_noise_mass.py test_resumed_burn_in_continues_bitwise.)"""
    rng = np.random.default_rng(2)
    features = rng.normal(size=(60, 1))
    labels = 0.5 * features + 4.0 * rng.normal(size=(60, 1))
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[2], likelihood="gaussian",
                          prior_standard_deviation=1.0, batch_size=20, number_walkers=2, burn_in_steps=20,
                          max_steps=1, seed=3)
    with pytest.warns(UserWarning, match="residuals' rms at the warm start's end") as caught:
        sim.sample()
    line = next(str(w.message) for w in caught if "residuals' rms" in str(w.message))
    rms = float(line.split("end is ")[1].split(",")[0])
    assert 3.0 < rms < 5.0 and sim.notes == [line]


@pytest.mark.parametrize("likelihood, noted", [("gaussian", True), ("student_t", False)])
def test_outliers_are_named_at_the_runs_end_under_a_gaussian_likelihood(likelihood, noted):
    """A line with 8 of 200 points 8 sd off (one walker: no warm start, so at the run's end): named with the
    cure under gaussian, nothing said under student_t, which takes them."""
    rng = np.random.default_rng(4)
    features = rng.normal(size=(200, 1))
    labels = 0.5 * features + 0.3 * rng.normal(size=(200, 1))
    labels[:8] += 2.4
    sim = tati.Simulation(dataset=(features, labels), hidden_dimension=[], likelihood=likelihood,
                          noise_standard_deviation=0.3, prior_standard_deviation=1.0, sampler="NUTS",
                          burn_in_steps=50, max_steps=100, dtype="float64", seed=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sim.sample()
    said = [str(w.message) for w in caught if "residuals" in str(w.message)]
    assert said == ([f"likelihood gaussian: 8 of 200 residuals at the run's end lie beyond 4 sd of the bulk (1.4826 "
                     "times their median absolute deviation), where a Gaussian puts 0.013: outliers, which pull a "
                     "Gaussian fit: use likelihood student_t"] if noted else [])
    assert (said[0] in sim.notes) if noted else sim.notes == []


def test_the_cure_of_a_measured_width_keeps_it_measured_where_there_are_mini_batches():
    """A given step_width turns the self-tuning off (warm start, noise mass, measured friction): with
    mini-batches the cure is a larger batch, without them a smaller width."""
    assert measured_cure({"batch_size": 32}, "more burn_in_steps") == "raise batch_size, or more burn_in_steps"
    assert measured_cure({"batch_size": None}) == "give a smaller step_width"
    assert did_not_hold(measured_cure({"batch_size": 32}), width="0.00278") == (
        "the measured step_width 0.00278 did not hold here: raise batch_size")
