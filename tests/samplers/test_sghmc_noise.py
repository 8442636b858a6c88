"""SGHMC's gradient-noise estimators, mass rescaling and the double-well experiment.

Mechanics (exact checks) and statistics with a stated false-failure budget; seeds from
tests/stats.py's `seed()`.
"""

import importlib.util
import pathlib

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from processes import load_tool
from stats import chain_mean_and_error, seed, t_critical, z_critical
from tati.diagnostics import independent_readings, walker_outliers
from tati.errors import InputError
from tati.samplers import SGHMC
from tati.random.streams import values_per_register

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
@pytest.mark.statistical
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
    ({"gradient_noise_estimator": "batch", "noise_estimation_batches": 1}, "noise_estimation_batches"),
    ({"gradient_noise_estimator": "batch", "noise_estimation_steps": 0}, "noise_estimation_steps"),
    ({"gradient_noise_estimator": "batch", "noise_estimate": 0.1}, "noise_estimate"),
    ({"gradient_noise_estimator": "adam", "noise_estimate": 0.1}, "noise_estimate"),
    ({"gradient_noise_estimator": "adam", "friction_constant": 0.0}, "friction_constant")])
def test_bad_input(options, name):
    with pytest.raises(InputError, match=name) as error:
        tati.Simulation(potential=lambda q: tf.reduce_sum(q ** 2), initial_parameters=[0.0], sampler="SGHMC",
                        **options).sampler
    assert "\n" not in str(error.value)


def _double_well():
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "sghmc_double_well.py"
    spec = importlib.util.spec_from_file_location("sghmc_double_well", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.statistical
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


# -- the batch estimator: K mini-batches of its own at the start of each epoch -------------------
N_POINTS, BATCH = 200, 10  # 20 batches per epoch


def regression_options(**options):
    """Bayesian linear regression y = w.x + b + N(0, 1) on 200 points in mini-batches of 10:
    U on a batch = N / n sum_batch (w.x + b - y)^2 / 2 + const, whose per-example gradients
    (f - y) (x, 1) are known. float64, so that numpy recomputes the estimates exactly."""
    rng = np.random.default_rng(seed(30))
    x = rng.normal(size=(N_POINTS, 2))
    y = x @ np.array([1.0, -2.0]) + 0.5 + rng.normal(size=N_POINTS)
    return dict(dataset=(x, y[:, None]), hidden_dimension=[], output_activation="linear", likelihood="gaussian",
                batch_size=BATCH, dtype="float64", sampler="SGHMC", gradient_noise_estimator="batch",
                step_width=0.002, seed=seed(31), **options)


def per_example_gradients(features, labels, theta):
    """[points, 3]: the gradient of each point's (f - y)^2 / 2 with respect to (w0, w1, b)."""
    residual = features @ theta[:2] + theta[2] - labels[:, 0]
    return np.column_stack([features * residual[:, None], residual])


def test_batch_estimate_is_the_sample_variance_of_its_own_batches():
    """Exact checks, 2 walkers, 45 steps (estimates at steps 1, 21, 41): V-hat is the sample
    variance (divisor K - 1) of the gradients of the K batches data.extra_batch(step - 1, k)
    at the walker's parameters of that step (recomputed in numpy); it stays constant within
    an epoch (run info); the extra batches leave the training batches' position and
    permutation, and the sampler's iteration count, as 45 steps have them."""
    simulation = tati.Simulation(**regression_options(number_walkers=2, every_nth=1, max_steps=45,
                                                      noise_estimation_batches=7))
    result = simulation.sample()
    data = simulation.data  # the training batches: 45 used, the third epoch's permutation
    assert simulation.sampler.iterations.numpy() == 45 and data.position.numpy() == 45
    assert data._order_epoch.numpy() == 2
    np.testing.assert_array_equal(data._order.numpy(), data._permutation(tf.constant(2, tf.int64)).numpy())
    start = result.trajectory[result.trajectory.step == 41].sort_values("id")
    thetas = start[["weight0", "weight1", "bias0"]].to_numpy()  # q at step 41, before its update
    batches = [[a.numpy() for a in simulation.data.extra_batch(40, k)] for k in range(7)]
    for walker, theta in enumerate(thetas):
        gradients = [N_POINTS / BATCH * per_example_gradients(x, y, theta).sum(axis=0) for x, y in batches]
        np.testing.assert_allclose(simulation.sampler.gradient_noise_variance.numpy()[walker],
                                   np.var(gradients, axis=0, ddof=1), rtol=1e-10)
    column = result.run_info.pivot(index="step", columns="id", values="gradient_noise_variance").to_numpy()
    changes = np.flatnonzero(np.any(np.diff(column, axis=0) != 0, axis=1)) + 2  # steps whose value is new
    assert list(changes) == [21, 41]


@pytest.mark.statistical
def test_batch_estimator_matches_minibatch_variance():
    """Acceptance (issue 20): once it has made its first estimate, the batch estimator estimates
    the mini-batch gradient variance of every parameter within its own sampling error.

    100 epochs of one walker, K = 20; at each epoch's first step e the estimate V-hat_e and the
    exact variance V_e = N^2 s_e^2 (N - n) / (n (N - 1)) of a batch's gradient at that step's
    parameters (s_e^2 the per-example gradients' variance; a batch is n points without
    replacement). The ratios r_e = V-hat_e / V_e are independent given the path (each estimate
    has batches of its own) with mean 1 and, the sample variance of K draws, relative sd about
    sqrt(2 / (K - 1)) = 0.32 (normal gradients; the measured kurtosis of a batch's gradient
    raises it a little: sqrt(2 / (K - 1) + excess / K), excess the batch gradient's excess
    kurtosis, about the per-example one over n, with replacement). Checks per parameter, budget
    1e-3 split by Bonferroni over 3 parameters x 2 checks: the mean of the ratios is 1 within
    t(1e-3 / 6, 99) standard errors; their sd agrees with the derived one within z(1e-3 / 6)
    times the sample sd's own relative error sqrt((kappa_r - 1) / (4 E)), kappa_r the ratios'
    kurtosis."""
    epochs, k = 100, 20
    steps = N_POINTS // BATCH
    simulation = tati.Simulation(**regression_options(every_nth=steps, max_steps=steps, noise_estimation_batches=k))
    features, labels = (array.numpy() for array in simulation.data.all())
    ratios, predicted = [], []
    for _ in range(epochs):  # a call per epoch: V-hat after it is the estimate at its first step
        theta = simulation.parameters
        simulation.sample()
        per_example = per_example_gradients(features, labels, theta)
        exact = N_POINTS ** 2 * per_example.var(axis=0) * (N_POINTS - BATCH) / (BATCH * (N_POINTS - 1))
        ratios.append(simulation.sampler.gradient_noise_variance.numpy()[0] / exact)
        centred = per_example - per_example.mean(axis=0)
        excess = (centred ** 4).mean(axis=0) / (centred ** 2).mean(axis=0) ** 2 - 3
        predicted.append(2 / (k - 1) + excess / BATCH / k)
    ratios, predicted = np.array(ratios), np.sqrt(np.mean(predicted, axis=0))
    assert simulation.data.position.numpy() == epochs * steps
    mean, sd = ratios.mean(axis=0), ratios.std(axis=0, ddof=1)
    kurtosis = ((ratios - mean) ** 4).mean(axis=0) / ((ratios - mean) ** 2).mean(axis=0) ** 2
    sd_error = np.sqrt((kurtosis - 1) / (4 * epochs))
    print("mean ratio", np.round(mean, 4), "sd", np.round(sd, 4), "predicted sd", np.round(predicted, 4),
          "sqrt(2/(K-1))", round(np.sqrt(2 / (k - 1)), 4))
    assert np.all(np.abs(mean - 1) < t_critical(1e-3, epochs - 1, 6) * sd / np.sqrt(epochs)), mean
    assert np.all(np.abs(sd / predicted - 1) < z_critical(1e-3, 6) * sd_error), (sd, predicted, sd_error)


NETWORK = dict(hidden_dimension=[3], batch_size=100, sampler="SGHMC", gradient_noise_estimator="batch",
               noise_estimation_batches=4, step_width=0.02, every_nth=1, seed=seed(32))  # 5 batches an epoch


def frames(result, walkers=None):
    """The run info and trajectory, of the first `walkers`, without timings, in (id, step) order."""
    return [frame[frame.id < (walkers or frame.id.max() + 1)].drop(columns=["time_per_nth_step"], errors="ignore")
            .sort_values(["id", "step"], kind="stable").reset_index(drop=True)
            for frame in (result.run_info, result.trajectory)]


def test_batch_estimates_do_not_depend_on_the_walker_count():
    """The extra batches are keyed by (seed, step) only: the first W walkers of a 2W-walker
    run are bitwise those of a W-walker run, run info (with V-hat's mean) and trajectory. W is
    half a SIMD register of float32 values (4 with AVX2, 8 with AVX-512): the network's rows are
    whole SIMD packets there, as in test_walker_randomness.py (with AVX-512, 4 walkers against
    8 differ in the last bits of the trajectory after a few steps)."""
    walkers = values_per_register("float32") // 2
    few = frames(tati.Simulation(number_walkers=walkers, max_steps=12, **NETWORK).sample())
    many = frames(tati.Simulation(number_walkers=2 * walkers, max_steps=12, **NETWORK).sample(), walkers)
    for mine, theirs in zip(few, many):
        pd.testing.assert_frame_equal(mine, theirs, check_exact=True)
    assert few[0].gradient_noise_variance.nunique() == walkers * 3  # estimates at steps 1, 6, 11


def test_batch_estimator_resumes_bitwise(tmp_path):
    """As tests/engine/test_checkpoint.py's bitwise resume: 23 steps equal 12 steps (mid-epoch),
    save_model, restore_model in a new Simulation, 11 steps; V-hat (in the state) included."""
    checkpoint = str(tmp_path / "state.npz")
    options = dict(NETWORK, number_walkers=3)
    full = tati.Simulation(max_steps=23, **options)
    whole = frames(full.sample())
    first = frames(tati.Simulation(max_steps=12, save_model=checkpoint, **options).sample())
    resumed = tati.Simulation(max_steps=11, restore_model=checkpoint, **options)
    second = frames(resumed.sample())
    for index, (mine, theirs) in enumerate(zip(first, second)):
        joined = pd.concat([mine, theirs]).sort_values(["id", "step"], kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(joined, whole[index], check_exact=True)
    np.testing.assert_array_equal(resumed.sampler.gradient_noise_variance.numpy(),
                                  full.sampler.gradient_noise_variance.numpy())


def quartic(q):
    return 0.5 * tf.reduce_sum(q ** 2) + 0.1 * tf.reduce_sum(q ** 4)


def test_batch_estimator_without_mini_batches():
    """A potential (no mini-batches): estimates every noise_estimation_steps steps from step 1.
    A deterministic potential's gradients do not vary, V-hat = 0 exactly, and the run equals
    one without the estimator bitwise: the extra evaluations do not advance the chain (its
    iteration count, noise stream, momenta). A potential with noise of its own (a stateful
    normal, variance 1 per parameter) gets a new V-hat exactly at steps 1, 11, 21."""
    options = dict(potential=quartic, initial_parameters=[0.3, -0.2, 0.1], number_walkers=2, sampler="SGHMC",
                   step_width=0.1, every_nth=1, max_steps=25, seed=seed(33), noise_estimation_steps=10,
                   mass_rescaling_steps=5)
    estimated = frames(tati.Simulation(gradient_noise_estimator="batch", **options).sample())
    plain = frames(tati.Simulation(**options).sample())
    assert np.all(estimated[0].pop("gradient_noise_variance") == 0.0)
    # K = 10 (the default noise_estimation_batches) more gradients at steps 1, 11 and 21
    extra = 10 * ((estimated[0].step.to_numpy() - 1) // 10 + 1)
    np.testing.assert_array_equal(estimated[0].pop("gradient_evaluations"), plain[0].pop("gradient_evaluations") + extra)
    for mine, theirs in zip(estimated, plain):
        pd.testing.assert_frame_equal(mine, theirs, check_exact=True)

    def noisy(q):
        return quartic(q) + tf.reduce_sum(q * tf.random.normal(tf.shape(q), dtype=q.dtype))

    run_info = tati.Simulation(**dict(options, potential=noisy, number_walkers=1, step_width=0.01),
                               gradient_noise_estimator="batch").sample().run_info
    values = run_info.gradient_noise_variance.to_numpy()
    assert list(np.flatnonzero(np.diff(values) != 0) + 2) == [11, 21] and np.all(values > 0)


# -- issue #41: the adam estimator on a real network, and a target with known gradient noise ----
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_adam_estimator_on_yacht_keeps_every_walker_in_its_interval():
    """Issue #41's run, shortened: yacht split 0 (tests/fixtures/uci/yacht), 50 relu units,
    heteroscedastic likelihood, prior sd 1, float64, seed 1, 4 walkers, batches of 32 (9 an
    epoch), step width 1e-3, friction 10, the adam estimator, 100 epochs of burn-in and 50 of
    draws. Before the mass weights only grew, a rescaling at step 1200 set walker 1's weight
    of a variance-head weight from 442 to 1 (adam's V-hat read 0 there, its short mean
    squared above its long second moment), a 442 times larger step in that stiff coordinate:
    the walker's kinetic energy went to 65 times equipartition and its loss to 12,102 (the
    walker lines' "blew up"). Now no walker line fires: each walker's largest kinetic energy
    after burn-in is below ten times the chi-square bound a healthy run stays below with
    probability 1 - 1e-3 (the largest of the four at about 2 times equipartition)."""
    tool = load_tool("uci_benchmark")
    dataset = tool.read_dataset(str(ROOT / "tests" / "fixtures" / "uci" / "yacht"))
    train, _, _ = tool.standardise(dataset["x"], dataset["y"], *dataset["splits"][0])
    epoch = -(-len(train[1]) // 32)
    simulation = tati.Simulation(**tool.model_options(train, dataset["hidden"], 1), sampler="SGHMC",
                                 number_walkers=4, batch_size=32, step_width=1e-3, friction_constant=10.0,
                                 gradient_noise_estimator="adam", burn_in_steps=100 * epoch, max_steps=150 * epoch)
    result = simulation.sample()
    found = walker_outliers(result, simulation)
    assert found == [], [outlier.line() for outlier in found]


def test_a_dip_of_the_estimate_does_not_lower_the_mass():
    """The mechanism of the yacht blow-up, exactly: gradients of sd 50 for 40 steps raise W to
    about m_est beta eps V-hat / (2 C) = 250 at the rescalings (every 10 steps); then a large
    constant gradient makes adam's V-hat read 0 (the short mean squared above the long second
    moment) at the rescaling of step 50. The mass keeps its weights there (before: W = 1, a
    step some 100 times larger in those coordinates)."""
    rng = np.random.default_rng(seed(12))
    gradients = np.concatenate([50.0 * rng.standard_normal((40, 3)), np.full((10, 3), 1e4)])
    sampler = SGHMC(step_width=0.1, friction_constant=1.0, gradient_noise_estimator="adam",
                    mass_rescaling_steps=10, seed=seed(13))
    variable = tf.Variable(np.zeros(3))
    feed(sampler, variable, gradients[:49])
    weights = sampler.mass_weights.numpy()
    assert np.all(weights > 50.0), weights
    estimates = feed(sampler, variable, gradients[49:])
    assert np.all(estimates[-1] == 0.0)  # the dip, at the rescaling step
    np.testing.assert_array_equal(sampler.mass_weights.numpy(), weights)


QUADRATIC_D, QUADRATIC_WALKERS = 25, 4


def noisy_quadratic(sd, seed_value):
    """U(q) = |q|^2 / 2 per walker ([W, d] -> [W]) plus q . xi, xi ~ N(0, sd^2) afresh at each
    evaluation: gradients q + xi, white noise of variance sd^2 exactly, stationary variance 1."""
    generator = tf.random.Generator.from_seed(seed_value)

    def potential(q):
        return tf.reduce_sum(0.5 * q ** 2 + q * sd * generator.normal(tf.shape(q), dtype=q.dtype), axis=1)
    return potential


@pytest.mark.statistical
def test_adam_estimator_holds_the_variance_under_known_gradient_noise():
    """SGHMC on U = |q|^2 / 2 in 25 dimensions, 4 walkers, with white gradient noise of
    variance V = 80 (step width 0.05, friction 1: eps V / 2 = 2 C, twice the thermostat's whole
    noise): with the adam estimator and mass rescaling (W about m_est eps V / (2 C) = 4) the
    position variance is 1 = 1 / beta; without, the noise heats it to 1 + eps V / (2 C) = 3
    (the negative control). The discrete chain's own bias is below 1e-3 (the stationary
    covariance of the linear recursion: 1.0002 at W = 4, 3.002 at W = 1).

    The 100 coordinates x walkers are independent chains (diagonal dynamics, each its own
    noise and its own V-hat and W); each chain's mean of q^2 over 2000 steps after 500 of
    burn-in is one estimate of the variance, and the t test over the chains uses their spread
    (the estimator's error and the correlation in time included). Budget 1e-3, split over the
    two runs: the corrected mean within t(1e-3 / 2, 99) standard errors of 1, the uncorrected
    one above 1 by more than that."""
    options = dict(initial_parameters=np.zeros((QUADRATIC_WALKERS, QUADRATIC_D)), number_walkers=QUADRATIC_WALKERS,
                   potential_batched=True, dtype="float64", sampler="SGHMC", step_width=0.05,
                   friction_constant=1.0, burn_in_steps=500, max_steps=2500, every_nth=10, seed=seed(40))
    columns = [f"param{i}" for i in range(QUADRATIC_D)]
    critical = t_critical(1e-3, QUADRATIC_WALKERS * QUADRATIC_D - 1, 2)
    variances = {}
    for estimator in ("adam", "none"):
        simulation = tati.Simulation(potential=noisy_quadratic(np.sqrt(80.0), seed(41)),
                                     gradient_noise_estimator=estimator, **options)
        trajectory = simulation.sample().trajectory
        kept = trajectory[trajectory.step > 500]
        per_chain = (kept[columns] ** 2).groupby(kept["id"]).mean().to_numpy().ravel()
        variances[estimator] = chain_mean_and_error(per_chain)[:2]
        if estimator == "adam":
            weights = simulation.sampler.mass_weights.numpy()
            print("mass weights: median", np.median(weights), "range", weights.min(), weights.max())
    print("position variance (mean, standard error):", variances)
    (corrected, error), (uncorrected, control_error) = variances["adam"], variances["none"]
    assert abs(corrected - 1.0) < critical * error
    assert uncorrected - 1.0 > critical * control_error
