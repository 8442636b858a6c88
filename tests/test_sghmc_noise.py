"""SGHMC's gradient-noise estimators, mass rescaling and the double-well experiment.

Mechanics (exact checks) and statistics with a stated false-failure budget; seeds from
tests/stats.py's `seed()`.
"""

import importlib.util
import pathlib

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed, z_critical
from tati.diagnostics import independent_readings
from tati.errors import InputError
from tati.samplers import SGHMC

ESTIMATORS = ("adam", "adam_centered")


def feed(sampler, variable, gradients):
    """Apply the rows of `gradients` ([steps, ...]) one per step, in one compiled loop; returns
    V-hat after each step with an estimator ([steps, ...]), else None."""
    gradients = tf.constant(gradients, variable.dtype)
    steps = int(gradients.shape[0])
    if not sampler.built:
        sampler.build([variable])

    @tf.function
    def loop():
        estimates = tf.TensorArray(variable.dtype, size=steps)
        for n in tf.range(steps):
            sampler.apply([gradients[n]], [variable])
            if sampler.estimating:
                estimates = estimates.write(n, tf.convert_to_tensor(sampler._noise_variances[0]))
        return estimates.stack() if sampler.estimating else tf.zeros([0])

    estimates = loop().numpy()
    return estimates if sampler.estimating else None


def regression(rng, examples=200, features=3):
    x = np.column_stack([np.ones(examples), rng.normal(size=(examples, features - 1))])
    y = x @ np.array([0.5, -1.0, 2.0]) + rng.normal(scale=0.5, size=examples)
    return x, y


def minibatch_gradients(rng, x, y, theta, batch, steps):
    """Gradients of U~ = N / n sum_batch (x.theta - y)^2 / 2 for random batches drawn without
    replacement, and the exact variance of each component: N^2 s^2 (N - n) / (n (N - 1)),
    s^2 the population variance of the per-example gradients."""
    examples = len(y)
    per_example = x * (x @ theta - y)[:, None]  # [N, p]
    exact = examples ** 2 * per_example.var(axis=0) * (examples - batch) / (batch * (examples - 1))
    rows = np.array([rng.choice(examples, batch, replace=False) for _ in range(steps)])
    return examples / batch * per_example[rows].sum(axis=1), exact


@pytest.mark.parametrize("estimator, place, decays", [
    ("adam", "minimum", (0.9, 0.999)), ("adam_centered", "minimum", (0.9, 0.999)),
    ("adam", "away", (0.999, 0.999)), ("adam_centered", "away", (0.9, 0.999))])
def test_estimator_matches_minibatch_variance(estimator, place, decays):
    """Once warmed up (3000 steps of b2 = 0.999), V-hat is within 20% of the exact mini-batch
    gradient variance of every parameter, at the least-squares minimum (mean gradient 0, where
    sampling spends its time) and away from it (mean gradient comparable to its noise).

    The warmed-up estimate is V-hat's mean over the last 1000 steps: with b1 = 0.9 a single
    reading of Adam's v - m^2 also carries m^2, whose spread (about sqrt(2) S sigma^2, S =
    (1 - b1) / (1 + b1) = 0.053) decorrelates within ~10 steps, while v's level, the part that
    can be biased, is correlated over ~1000 steps and stays in the mean. Adam's moments with
    b1 < b2 are only checked at the minimum: away from it the term 2 mu (mean over b2's window
    - mean over b1's window) of v - m^2 spreads by about 2 |mu| sigma sqrt(S), more than sigma^2
    there (doc/samplers.md); b1 = b2 removes that term.
    Tolerance: v is a weighted mean of about (1 + b2) / (1 - b2) = 2000 effective squares, its
    relative standard deviation sqrt((kappa - 1) (1 - b2) / (1 + b2)) (kappa the kurtosis of a
    gradient component, measured from the fed gradients) is 3-5%; the test checks that 20% is
    at least z(1e-3 / 12) such deviations (budget 1e-3 over the 4 cases x 3 parameters), so an
    unbiased estimator fails with probability below 1e-3, while a bias of 20% fails it."""
    rng = np.random.default_rng(seed(20))
    x, y = regression(rng)
    theta = np.linalg.lstsq(x, y, rcond=None)[0]
    if place == "away":
        theta = theta + np.array([0.3, -0.2, 0.25])
    gradients, exact = minibatch_gradients(rng, x, y, theta, batch=10, steps=4000)
    if place == "away":
        assert np.all(np.abs(gradients.mean(axis=0)) > 0.5 * np.sqrt(exact))
    sampler = SGHMC(step_width=0.01, friction_constant=1.0, gradient_noise_estimator=estimator,
                    first_moment_decay=decays[0], second_moment_decay=decays[1], seed=seed(3))
    variable = tf.Variable(np.zeros(3))
    estimates = feed(sampler, variable, gradients)
    estimate = estimates[-1000:].mean(axis=0)
    centred = gradients - gradients.mean(axis=0)
    kurtosis = (centred ** 4).mean(axis=0) / (centred ** 2).mean(axis=0) ** 2
    b2 = decays[1]
    relative_sd = np.sqrt((kurtosis - 1) * (1 - b2) / (1 + b2))
    assert np.all(0.2 >= z_critical(1e-3, 12) * relative_sd), relative_sd
    error = estimate / exact - 1
    print(estimator, place, "relative errors", np.round(error, 4), "last reading", np.round(estimates[-1] / exact - 1, 4))
    assert np.all(np.abs(error) < 0.2), (estimate, exact)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_constant_gradients_give_plain_sghmc(estimator):
    """Noise-free gradients: V-hat = 0, no rescaling, the same trajectory as B-hat = 0."""
    gradients = np.tile([0.5, -1.0, 2.0], (120, 1))
    runs = []
    for options in ({}, {"gradient_noise_estimator": estimator, "mass_rescaling_steps": 10}):
        sampler = SGHMC(step_width=0.1, friction_constant=2.0, seed=seed(5), **options)
        variable = tf.Variable(np.array([0.1, 0.2, 0.3]))
        feed(sampler, variable, gradients)
        runs.append((variable.numpy(), sampler.momenta[0].numpy(), sampler.mass_weights.numpy()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-10)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-10)
    assert np.all(runs[1][2] == 1.0)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_friction_bound_holds_at_every_step(estimator):
    """With mass rescaling on (every 25 steps, m_est = 2) and gradient noise whose standard
    deviation grows 100-fold over the run (so estimates overtake the bound between rescalings):
    at every step m_est beta B-hat <= C = C_0 W (the source's m_est beta-hat <= alpha / beta),
    the clamp is used at some steps, the mass grows, and the noise the step injected equals
    sqrt(2 eps (C_0 W / beta - B-hat)) G, G reconstructed from a B-hat = 0 sampler of the same
    seed (same stream): so the B-hat checked is the one the step used. Exact checks."""
    eps, friction, beta, safety, steps = 0.1, 1.0, 2.0, 2.0, 300
    rng = np.random.default_rng(seed(7))
    scales = np.exp(np.linspace(0.0, np.log(100.0), steps))[:, None] * np.array([0.5, 2.0, 8.0])
    gradients = scales * rng.standard_normal((steps, 3))
    options = dict(step_width=eps, friction_constant=friction, inverse_temperature=beta, seed=seed(9))
    sampler = SGHMC(gradient_noise_estimator=estimator, mass_rescaling_steps=25, mass_safety_factor=safety, **options)
    reference = SGHMC(**options)
    variable, twin = tf.Variable(np.zeros(3)), tf.Variable(np.zeros(3))
    step = tf.function(lambda g: sampler.apply([g], [variable]))
    reference_step = tf.function(lambda g: reference.apply([g], [twin]))
    step(tf.constant(gradients[0]))  # builds the slots
    reference_step(tf.constant(gradients[0]))
    eps = float(sampler.learning_rate.numpy())  # Keras keeps the step width in float32
    clamped, decay = 0, 1.0 - eps * friction  # unit mass: alpha = eps C_0 / M_0
    for n in range(1, steps):
        weight_before, r_before = sampler.mass_weights.numpy(), sampler.momenta[0].numpy()
        r_twin = reference.momenta[0].numpy()
        step(tf.constant(gradients[n]))
        reference_step(tf.constant(gradients[n]))
        weight, b_hat = sampler.mass_weights.numpy(), sampler.noise_term.numpy()
        assert np.all(safety * beta * b_hat <= friction * weight * (1 + 1e-12)), n
        clamped += np.any(0.5 * eps * sampler.gradient_noise_variance.numpy() > friction * weight / (safety * beta))
        g = gradients[n]
        normal = (reference.momenta[0].numpy() - decay * r_twin + eps * g) / np.sqrt(2 * eps * friction / beta)
        start = r_before * np.sqrt(weight / weight_before)
        injected = sampler.momenta[0].numpy() - decay * start + eps * g
        np.testing.assert_allclose(injected, np.sqrt(2 * eps * (friction * weight / beta - b_hat)) * normal,
                                   rtol=1e-8, atol=1e-10)
    assert clamped > 10
    assert np.all(sampler.mass_weights.numpy() > 1.0)


def test_kinetic_energy_with_rescaled_mass():
    """The reported kinetic energy is r^T M^{-1} r / 2 with M = M_0 W."""
    sampler = SGHMC(step_width=0.1, mass=2.0, gradient_noise_estimator="adam", mass_rescaling_steps=5, seed=seed(1))
    variable = tf.Variable(np.zeros(4))
    feed(sampler, variable, 50.0 * np.random.default_rng(seed(2)).standard_normal((30, 4)))
    weights = sampler.mass_weights.numpy()
    assert np.all(weights > 1.0)
    before = sampler.momenta[0].numpy()  # the next step (31 % 5 != 0) keeps W
    feed(sampler, variable, np.zeros((1, 4)))
    assert float(sampler.step_info["kinetic_energy"]) == pytest.approx(0.5 * np.sum(before ** 2 / (2.0 * weights)))


def test_state_is_in_the_optimizer_variables():
    """Copying optimizer.variables into a fresh sampler continues the run exactly (as tati's
    checkpoint does); V-hat and W are among them."""
    rng = np.random.default_rng(seed(11))
    gradients = 30.0 * rng.standard_normal((80, 2))

    def make():
        return SGHMC(step_width=0.1, gradient_noise_estimator="adam_centered", mass_rescaling_steps=20,
                     seed=seed(4)), tf.Variable(np.zeros(2))

    first, q1 = make()
    feed(first, q1, gradients[:60])
    second, q2 = make()
    second.build([q2])
    for target, source in zip(second.variables, first.variables):
        target.assign(source)
    q2.assign(q1)
    feed(first, q1, gradients[60:])
    feed(second, q2, gradients[60:])
    np.testing.assert_array_equal(q1.numpy(), q2.numpy())
    np.testing.assert_array_equal(first.gradient_noise_variance.numpy(), second.gradient_noise_variance.numpy())
    assert np.any(first.mass_weights.numpy() > 1.0)


def test_simulation_walkers_and_config():
    """Through a Simulation with walkers: V-hat has the parameters' shape [W, d]; get_config
    round-trips the new options."""
    simulation = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum(q ** 2), initial_parameters=[0.5, -0.5],
                                 sampler="SGHMC", gradient_noise_estimator="adam", number_walkers=3,
                                 mass_rescaling_steps=10, max_steps=20)
    simulation.sample()
    sampler = simulation.sampler
    assert tuple(sampler.gradient_noise_variance.shape) == (3, 2)
    config = sampler.get_config()
    assert config["gradient_noise_estimator"] == "adam" and config["mass_rescaling_steps"] == 10
    assert SGHMC.from_config(config).get_config() == config


@pytest.mark.parametrize("options, name", [
    ({"gradient_noise_estimator": "adamm"}, "gradient_noise_estimator"),
    ({"first_moment_decay": 1.0}, "first_moment_decay"),
    ({"second_moment_decay": 0.0}, "second_moment_decay"),
    ({"mass_safety_factor": 0.5}, "mass_safety_factor"),
    ({"mass_rescaling_steps": -1}, "mass_rescaling_steps"),
    ({"gradient_noise_estimator": "adam", "noise_estimate": 0.1}, "noise_estimate"),
    ({"gradient_noise_estimator": "adam", "friction_constant": 0.0}, "friction_constant")])
def test_bad_input(options, name):
    with pytest.raises(InputError, match=name) as error:
        tati.Simulation(potential=lambda q: tf.reduce_sum(q ** 2), initial_parameters=[0.0], sampler="SGHMC",
                        **options).sampler
    assert "\n" not in str(error.value)


def _double_well():
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "sghmc_double_well.py"
    spec = importlib.util.spec_from_file_location("sghmc_double_well", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_double_well_noise_correction():
    """The reduced double-well experiment (examples/sghmc_double_well.py, 400 chains x 1200
    steps, 200 of burn-in): the corrected SGHMC histogram's TV distance to exp(-U) lies below
    the bound an exact sampler stays below with probability 1 - 1e-3, and the uncorrected one
    (B-hat = 0, the same noisy gradients and injected noise) is further from it.

    The bound, for the histogram p-hat of n_eff independent draws over bins of probability p_b
    (and the mass outside): E|p-hat_b - p_b| <= sqrt(p_b (1 - p_b) / n_eff), so
    E TV <= 1/2 sum_b sqrt(p_b (1 - p_b) / n_eff); and TV changes by at most 1 / n_eff when one
    draw changes, so by McDiarmid P(TV > E TV + t) <= exp(-2 n_eff t^2), t = sqrt(ln(1e3) / (2 n_eff)).
    n_eff = samples / tau, tau the integrated autocorrelation time of theta (chains pooled,
    Geyer's initial positive sequence), which the well-switching makes about 100 steps. The
    bound leaves out SGHMC's O(eps) discretisation bias: the test says it is below this
    resolution for the corrected chain. The comparison uses common random numbers: both runs
    share the seed, hence the gradient noise and the injected G."""
    module = _double_well()
    _, bins = module.exact_density()
    corrected = module.run_sghmc("corrected", 400, 1200, seed(1))
    uncorrected = module.run_sghmc("uncorrected", 400, 1200, seed(1))
    effective = independent_readings(corrected)
    bound = module.tv_bound(bins, effective)
    tv_corrected, tv_uncorrected = module.total_variation(corrected, bins), module.total_variation(uncorrected, bins)
    print(f"n_eff {effective}, bound {bound:.4f}, TV corrected {tv_corrected:.4f}, uncorrected {tv_uncorrected:.4f}")
    assert tv_corrected < bound
    assert tv_uncorrected > tv_corrected


def test_run_info_has_the_mean_estimated_noise_variance():
    """With an estimator, run info's gradient_noise_variance is each walker's V-hat averaged over
    its parameters (at the last row: the sampler's state after the call); without, no column."""
    options = dict(sampler="SGHMC", batch_size=50, hidden_dimension=[4], max_steps=60, every_nth=20,
                   number_walkers=2, step_width=0.01, inverse_temperature=100.0, seed=seed(48))
    sim = tati.Simulation(gradient_noise_estimator="adam", **options)
    run_info = sim.sample().run_info
    last = run_info.groupby("id").tail(1)["gradient_noise_variance"].to_numpy()
    np.testing.assert_allclose(last, sim.sampler.gradient_noise_variance.numpy().mean(axis=1), rtol=1e-6)
    assert np.all(last > 0)
    assert "gradient_noise_variance" not in tati.Simulation(**options).sample().run_info
