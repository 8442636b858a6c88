"""adapt_mass="noise" (tati/samplers/mass.py): the diagonal mass shaped by the gradient noise, on a
target whose gradient noise is known exactly.

Target: U = sum_i omega_i^2 q_i^2 / 2, d = 8, omega_i^2 log-spaced 1 ... 1e4, each gradient
coordinate carrying Gaussian noise of variance V_i = omega_i^2 / c (c = noise_precision = B / N =
1 / 20): the Fisher relation of a likelihood, so the right mass is M_i = V_i c = omega_i^2, the
posterior's precision, and the noise is as uneven as the curvature (V from 20 to 2e5). The width
is the one measure_step_width gives with that mass: every coordinate's whitened noise is
V_i / M_i = 20, and h is the 5%-excess width of noise 20 (measured_width.noise_width). With the
mass measured from the noise (K = 16 noisy gradients per walker, pooled over the 32 walkers)
every coordinate samples beta omega_i^2 Var(q_i) = 1 within its Monte Carlo error plus that 5%;
unit mass at the same width runs the noisy coordinates hundreds of times hot (negative control).

False-failure budget 1e-3: the 8 coordinates' intervals of the mass run (Bonferroni, Student-t
over the walkers' independent chains); the control's and the scales' checks sit far beyond their
spread (measured values in the comments, seed 11).
"""

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed, t_critical
from tati.adaptation import measured_width as mw
from tati.samplers import BAOAB, SGHMC, SGLD, SGNHT

ALPHA = 1e-3
WALKERS, D = 32, 8
OMEGA2 = np.logspace(0.0, 4.0, D)
SHARE = 1.0 / 20.0  # c = B / N
V = OMEGA2 / SHARE
GAMMA, BURN_IN, STEPS = 1.0, 1000, 4000
WIDTH = float(mw.noise_width(1.0 / SHARE, GAMMA))  # 0.005


def run(adapt_mass, run_seed, sampler_class=BAOAB, width=WIDTH):
    """Per walker and coordinate, beta omega^2 q^2 averaged after burn-in ([W, d]), and the sampler."""
    friction = {} if sampler_class.overdamped else dict(friction_constant=GAMMA)
    sampler = sampler_class(step_width=width, **friction, seed=run_seed, adapt_mass=adapt_mass,
                            adaptation_steps=BURN_IN, noise_mass_sizes=(SHARE, 1.0), walker_axis=True)
    q = tf.Variable(np.random.default_rng(run_seed).normal(size=(WALKERS, D)) / np.sqrt(OMEGA2))
    sampler.build([q])
    omega2, noise_sd = tf.constant(OMEGA2), tf.constant(np.sqrt(V))

    def noisy_gradient(key):
        noise = tf.random.stateless_normal([WALKERS, D], key, dtype=tf.float64)
        return omega2 * tf.convert_to_tensor(q) + noise_sd * noise

    @tf.function(autograph=False)
    def loop():
        def body(i, total):
            if sampler.noise_mass:  # the engine's call at an epoch's start; a no-op unless due
                sampler.estimate_noise(lambda k: [noisy_gradient(tf.stack([tf.cast(i, tf.int64), 1000 + tf.cast(
                    k, tf.int64)]))])
            sampler.apply([noisy_gradient(tf.stack([tf.cast(i, tf.int64), tf.constant(run_seed, tf.int64)]))], [q])
            kept = tf.cast(i >= BURN_IN, tf.float64)
            return i + 1, total + kept * omega2 * tf.square(tf.convert_to_tensor(q))
        return tf.while_loop(lambda i, _: i < BURN_IN + STEPS, body,
                             (tf.constant(0), tf.zeros([WALKERS, D], tf.float64)))[1]

    return loop().numpy() / STEPS, sampler


@pytest.mark.statistical
@pytest.mark.parametrize("sampler_class, control", [(BAOAB, True), (SGHMC, False), (SGNHT, True), (SGLD, False)],
                         ids=["BAOAB", "SGHMC", "SGNHT", "SGLD"])
def test_the_noise_mass_holds_every_coordinate_at_the_temperature(sampler_class, control):
    """SGHMC's Euler friction heats by eps V / (2 gamma) to first order, as BAOAB's exact one does
    (its unit-mass control read BAOAB's within 2%, so it is not run again); SGNHT's thermostat
    absorbs the (now even) heat. Unit mass: SGNHT's one thermostat holds the mean, so its quiet
    coordinates run cold and its noisiest hot (seed 11: 0.04-0.27 and 12.7). SGLD's width by its own
    noise rule, 2 EXCESS T / V, is BAOAB's here (0.1 / 20 = 0.005): it heats by h V / 2 = 5% plus its
    discretisation's h lambda / 2 = 0.25% in the whitened metric (lambda = 1); unit mass at that width
    is unstable on the stiffest coordinate (h omega^2 = 50), so its control is the noise mass at 10
    times the width, h V / 2 = 50% hot (seed 11: 1.47-1.57)."""
    temperatures, sampler = run("noise", seed(11), sampler_class)
    scales = sampler.metric_scales()
    assert sampler.metric_windows() == 7  # the start, one step (here an epoch) later, the five windows' ends
    # s = M^-1/2 within 15% of 1 / omega (the pooled variance's error is about 7%; seed 11: 1-5%)
    np.testing.assert_allclose(scales * np.sqrt(OMEGA2), 1.0, rtol=0.15)
    mean, error = temperatures.mean(axis=0), temperatures.std(axis=0, ddof=1) / np.sqrt(WALKERS)
    critical = t_critical(ALPHA, WALKERS - 1, D)
    print(f"h {WIDTH:.4g}: beta omega^2 Var(q) per coordinate {np.round(mean, 3)} +- {np.round(error, 3)}")
    assert np.all(np.abs(mean - 1.0) < critical * error + mw.EXCESS)
    if sampler_class is SGLD:
        hot = run("noise", seed(11), SGLD, 10 * WIDTH)[0].mean(axis=0)
        print(f"10 h: {np.round(hot, 2)}")
        assert np.all(hot > 1.25), hot
    if not control:
        return
    hot = run(False, seed(11), sampler_class)[0].mean(axis=0)
    print(f"unit mass: {np.round(hot, 2)}")  # seed 11: 1.2 on omega^2 = 1, 250 or more on the noisiest
    assert hot[-1] > 10.0 and hot[0] < hot[-1] / 10.0


def test_the_option_is_checked_and_measured():
    """adapt_mass noise: only the Langevin samplers with a mass, and only with mini-batches; in a
    Simulation its measurements count among the gradient evaluations, and the summary names it."""
    from tati.diagnostics.summary import summarise
    rng = np.random.default_rng(seed(12))
    x = rng.normal(size=(64, 2))
    data = dict(dataset=(x, (x @ [1.0, -2.0])[:, None] + rng.normal(size=(64, 1))), hidden_dimension=[],
                output_activation="linear", likelihood="gaussian", dtype="float64", prior_standard_deviation=2.0)
    with pytest.raises(tati.InputError, match="^adapt_mass noise needs batch_size"):
        tati.Simulation(**data, sampler="BAOAB", adapt_mass="noise")
    with pytest.raises(tati.InputError, match="^adapt_mass noise is not available with sampler HMC2"):
        tati.Simulation(**data, sampler="HMC2", adapt_mass="noise")
    # SGHMC's estimators answer the same noise: refused before anything runs, and by the sampler itself
    refused = r"^adapt_mass {} and gradient_noise_estimator 'adam' both answer the gradient noise .*: give one of them$"
    with pytest.raises(tati.InputError, match=refused.format("noise")):
        tati.Simulation(**data, sampler="SGHMC", adapt_mass="noise", gradient_noise_estimator="adam", batch_size=8)
    with pytest.raises(tati.InputError, match=refused.format("True")):
        SGHMC(adapt_mass=True, adaptation_steps=100, gradient_noise_estimator="adam")
    sim = tati.Simulation(**data, sampler="GLA2", adapt_mass="noise", batch_size=8, number_walkers=2,
                          burn_in_steps=160, max_steps=168, every_nth=8, step_width=1e-3, seed=seed(13))
    result = sim.sample()
    sampler = sim.sampler
    assert sampler.noise_precision == 8 / 64 and sampler.mass_floor == 0.25
    assert sampler.metric_windows() == 3  # the start, an epoch later, the first epoch start after the one window
    assert result.run_info.gradient_evaluations.max() == 168 + 3 * mw.NOISE_BATCHES
    assert np.all(sampler.metric_scales() <= 2.0) and np.any(sampler.metric_scales() < 2.0)
    assert "mass from the gradient noise" in summarise("test", sim, result, True)


@pytest.mark.parametrize("sampler, own", [("SGHMC", dict(mass=2.0, friction_constant="auto", measure_step_width=True)),
                                          ("SGLD", {}), ("pSGLD", {})], ids=["SGHMC", "SGLD", "pSGLD"])
def test_resumed_burn_in_continues_bitwise(tmp_path, sampler, own):
    """SGHMC (scalar mass 2) with the noise mass and its width and friction measured, 160 burn-in
    steps (one window, ending at step 110), cut by a checkpoint at step 60 and continued in a new
    Simulation: the rows of one whole run, bitwise, and the same masses and widths, measured twice;
    the likelihood's noise fits the data's, so nothing is said about it.
    The width measured again with the second mass takes the checkpoint's friction, per unit of the
    scalar mass (it had taken friction 1, as nothing is measured on restoring). SGLD's defaults
    (which tune it: its metric and width, no friction) likewise, and pSGLD's (V started from the
    measured gradients, the width measured in G's metric)."""
    import pandas as pd
    rng = np.random.default_rng(seed(14))
    x = rng.normal(size=(64, 2))
    options = dict(dataset=(x, (x @ [1.0, -2.0])[:, None] + rng.normal(size=(64, 1))), hidden_dimension=[],
                   output_activation="linear", likelihood="gaussian", dtype="float64",
                   adapt_mass="noise", batch_size=8, number_walkers=2, burn_in_steps=160, every_nth=4, seed=seed(15),
                   sampler=sampler, **own)
    whole_sim = tati.Simulation(**options, max_steps=200)
    whole = whole_sim.sample()
    tati.Simulation(**options, max_steps=60, save_model=str(tmp_path / "c.npz")).sample()
    rest_sim = tati.Simulation(**options, max_steps=140, restore_model=str(tmp_path / "c.npz"))
    rest = rest_sim.sample()
    for table in ("run_info", "trajectory"):
        expected = getattr(whole, table)
        expected = expected[expected.step > 60].reset_index(drop=True)
        pd.testing.assert_frame_equal(getattr(rest, table).drop(columns="time_per_nth_step", errors="ignore"),
                                      expected.drop(columns="time_per_nth_step", errors="ignore"), check_exact=True)
    assert whole_sim.sampler.metric_windows() == rest_sim.sampler.metric_windows() == 3
    assert whole_sim.notes == []  # the noise (sd 1) fits the data's: no warning on it (tests/diagnostics/test_data_scale.py)
    np.testing.assert_array_equal(rest_sim.sampler.metric_scales(), whole_sim.sampler.metric_scales())
    np.testing.assert_array_equal(rest_sim.sampler.followed_widths(), whole_sim.sampler.followed_widths())


def test_windows_closing_within_one_epoch_are_one_measurement():
    """The mass is measured at the first epoch start after a window closes: with epochs of 200 steps
    and windows ending at steps 100, 150 and 350, at steps 0, 200 and 400, three times. The summary
    said "measured 5 times" and listed widths and frictions of 0 for the windows between (a network
    on 50,000 points, epochs of 390 steps)."""
    rng = np.random.default_rng(seed(18))
    x = rng.normal(size=(400, 2))
    sim = tati.Simulation(dataset=(x, (x @ [1.0, -2.0])[:, None] + rng.normal(size=(400, 1))), hidden_dimension=[],
                          output_activation="linear", likelihood="gaussian", dtype="float64", batch_size=2,
                          number_walkers=2, burn_in_steps=400, max_steps=450, every_nth=50, seed=seed(19))
    sim.sample()
    sampler = sim.sampler
    assert sampler.metric_ends == [100, 150, 350] and sampler.metric_windows() == 3
    widths, frictions = sampler.followed_widths(), sampler.followed_frictions()
    assert len(widths) == len(frictions) == 3 and np.all(widths > 0) and np.all(frictions >= 1.0)
    assert widths[-1] == np.float32(sampler.step_width.numpy())
    assert "mass from the gradient noise, measured 3 times" in sim.summary()


def test_the_width_is_measured_again_with_each_new_mass():
    """measure_step_width with the noise mass: each of the mass's measurements (step 0, an epoch later,
    the epoch start after the one window) measures the width again, in the compiled loop, and the
    sampler steps with the last. The one at step 0 recomputed here, at the warm start's point
    (the least-squares fit; labels with noise 1e-3, so the gradient noise is small and the
    stability bound sets the width): the mass from the 16 covering batches' gradients there, the
    curvature exactly (linear regression: a batch's Hessian is N / n A_b^T A_b plus the prior's
    1 / sd^2, in the metric s H_b s, the largest over the 8 curvature batches), the width from
    `widths`; the graph's power iteration comes from below within 5%, so its width is within
    2.6% above."""
    rng = np.random.default_rng(seed(16))
    x = rng.normal(size=(64, 2)) * [1.0, 4.0]
    sim = tati.Simulation(dataset=(x, (x @ [1.0, -2.0])[:, None] + 1e-3 * rng.normal(size=(64, 1))),
                          hidden_dimension=[], output_activation="linear", likelihood="gaussian", dtype="float64",
                          prior_standard_deviation=2.0, sampler="BAOAB", adapt_mass="noise", measure_step_width=True,
                          batch_size=8, number_walkers=2, burn_in_steps=160, max_steps=200, every_nth=10,
                          seed=seed(17))
    sim.sample()
    start = tf.constant(sim.warm_start.positions)
    sampler = sim.sampler
    followed = sampler.followed_widths()
    assert len(followed) == sampler.metric_windows() == 3 and np.all(followed > 0)
    assert float(sampler.step_width) == pytest.approx(followed[-1], rel=1e-6)
    gradients = np.stack([sim.model.loss_and_gradient(*sim.data.covering_batch(0, k), theta=start)[1].numpy()
                          for k in range(mw.noise_batch_count(sim.data))])
    variances = np.var(gradients, axis=0, ddof=1)  # [W, d]
    s = sampler.noise_scales(gradients)
    largest = 0.0
    for b in range(8):
        bx = sim.data.covering_batch(0, b)[0].numpy()
        design = np.column_stack([bx, np.ones(len(bx))])
        hessian = 8.0 * design.T @ design + np.eye(3) / 4.0
        largest = max(largest, np.linalg.eigvalsh(s[:, None] * hessian * s[None, :])[-1])
    expected = mw.widths([largest] * 2, np.mean(s ** 2 * variances, axis=1), float(sampler.friction_constant.numpy()))
    assert np.all(expected.stable_width < expected.noise_width)
    assert expected.width * (1 - 1e-9) <= followed[0] <= 1.026 * expected.width
    # the first is the Simulation's measurement before the run, not measured again in the loop
    assert sampler.measured_at_start and followed[0] == np.float32(sim.measured_width.width)


def noisy_regression(**changes):
    """Linear regression with 40 weights on 48 points (noise 0.3, known), batches of 8, 4 walkers,
    600 burn-in + 1,400 steps, every option but these the default (measured width, friction auto,
    the noise mass)."""
    rng = np.random.default_rng(seed(18))
    x = rng.normal(size=(48, 40))
    y = x @ rng.normal(size=40)[:, None] / np.sqrt(40) + 0.3 * rng.normal(size=(48, 1))
    return dict(dict(dataset=(x, y), hidden_dimension=[], output_activation="linear", likelihood="gaussian",
                     noise_standard_deviation=0.3, prior_standard_deviation=1.0, dtype="float64", batch_size=8,
                     number_walkers=4, burn_in_steps=600, max_steps=2000, every_nth=10, seed=seed(19)), **changes)


def kinetic_temperature(simulation, run_info):
    """The mean kinetic temperature after burn-in and its standard error (rows 10 steps apart, the
    momenta decorrelated within a few steps: readings of chi-square(d) / d, sd sqrt(2 / d) each)."""
    burn_in = simulation.options["burn_in_steps"]
    temperature = run_info.loc[run_info.step > burn_in, "kinetic_energy"].to_numpy() / (simulation.num_parameters / 2)
    return temperature.mean(), np.sqrt(2.0 / simulation.num_parameters) / np.sqrt(temperature.size)


@pytest.mark.statistical
def test_sghmc_measures_its_width_and_friction_with_its_euler_friction_heat(monkeypatch):
    """SGHMC's friction step is Euler's, whose own heat is about gamma h / 2 (measured_width,
    `euler`): with it counted, SGHMC's defaults on the noisy regression hold the kinetic
    temperature within the measured width's 5% heat plus 3 standard errors (one-sided,
    false-failure rate 1.3e-3; measured 1.037, 1.025, 1.017 on three data and run seeds). The
    negative control measures as for an exact O step (BAOAB's rule): gamma h reaches 0.54 and the
    run reads 1.34-1.39, 31-37 standard errors above the bound."""
    options = noisy_regression(sampler="SGHMC")
    counted = tati.Simulation(**options)
    mean, error = kinetic_temperature(counted, counted.sample().run_info)
    assert mean < 1.0 + mw.EXCESS + 3.0 * error, mean
    frictions, widths = counted.sampler.followed_frictions(), counted.sampler.followed_widths()
    assert np.all(frictions * widths < 2.0 * mw.EXCESS / (1.0 + mw.EXCESS))  # a's bound at heat E (mass 1)
    monkeypatch.setattr(SGHMC, "euler_friction", False)
    ignored = tati.Simulation(**options)
    mean, error = kinetic_temperature(ignored, ignored.sample().run_info)
    assert mean > 1.0 + mw.EXCESS + 10.0 * error, mean


@pytest.mark.statistical
def test_a_measured_friction_follows_the_noise_as_the_walkers_leave_their_start():
    """friction_constant auto with the noise mass: the friction is measured again with each width
    (samplers/mass.py `follows_friction`), so that the width stays the stability bound's as the
    noise grows. Linear regression with 40 weights on 48 points (noise 0.3, known): the warm
    start's fit leaves residuals under the noise, and the posterior's typical set has more gradient
    noise (measured, seed 18/19: friction 3.4 at the start, then 6.9 to 7.7, never lowered; widths
    0.049, then 0.070 to 0.067). Against the same run with the start's friction given (the width
    then follows the noise alone: 0.047 to 0.044) the width ends at least 1.25 times larger
    (measured 1.55), and
    the kinetic temperature after burn-in holds within the measured width's 5% heat plus 3
    standard errors (measured 1.0015; rows 10 steps apart, the momenta decorrelated within a few
    steps: 560 readings of chi-square(41) / 41, sd 0.22 each, false-failure rate 1.3e-3)."""
    options = noisy_regression()
    followed = tati.Simulation(**options)
    run_info = followed.sample().run_info
    sampler = followed.sampler
    frictions, widths = sampler.followed_frictions(), sampler.followed_widths()
    assert followed.options["friction_constant"] == "auto" and len(frictions) == len(widths) == 6
    assert frictions[0] >= mw.FRICTION_FLOOR and np.max(frictions[1:]) > 1.5 * frictions[0]
    assert np.all(np.diff(frictions) >= 0)  # kept where a later measurement is lower
    assert float(sampler.friction_constant.numpy()) == frictions[-1]
    assert float(sampler.step_width) == pytest.approx(widths[-1], rel=1e-6)  # Keras keeps it in float32
    given = tati.Simulation(**dict(options, friction_constant=followed.measured_width.friction))
    given.sample()
    assert len(given.sampler.followed_frictions()) == 0
    assert widths[-1] > 1.25 * given.sampler.followed_widths()[-1]
    mean, error = kinetic_temperature(followed, run_info)
    assert mean < 1.0 + mw.EXCESS + 3.0 * error, mean


def standardised_digits():
    """scikit-learn's digits, 1,437 of them (a fixed draw), each pixel standardised: a rarely inked
    pixel then reaches 38 standard deviations."""
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    kept = np.random.default_rng(0).permutation(len(x))[360:]
    x, y = x[kept], y[kept]
    return (x - x.mean(axis=0)) / np.maximum(x.std(axis=0), 1e-12), y[:, None].astype(np.float64)


@pytest.mark.statistical
def test_the_mass_measured_an_epoch_in_holds_a_network_that_memorised_its_data(monkeypatch):
    """The start is often a mode fitted closely, whose gradient noise is the least the walkers meet:
    a 64-50-10 relu network (3,760 parameters, categorical, prior sd 1) on standardised digits,
    BAOAB's defaults, 4 walkers, batches of 32, 30 epochs of burn-in and 10 of draws. The warm start
    memorises the data (U 49 for 1,437 points), the friction measured there is the floor, 1, and
    within the first window (measured only after it, at step 132) every walker blew up (seeds 1-5:
    4 of 4 walkers, loss 1e7, test log density -1,400 to -9,000 per point). Measured again one epoch
    in (TATI_TEST_SEED 3-5: friction 3.2-21.8), no walker leaves the mode and the run's own
    kinetic-energy verdict is consistent or warm (batch-means error bar, 3 standard errors; seeds
    3-5: 1.03-1.18 times d/2 over these 10 epochs, 1.007-1.032 over 50 epochs of draws with seeds
    1-5). Negative control: the same run measured only at the windows (seeds 0-5: walkers
    left the mode)."""
    from tati.diagnostics.outliers import walker_outliers
    from tati.diagnostics.summary.temperature import readings
    from tati.samplers.mass import AdaptedMass
    steps = 1437 // 32
    options = dict(dataset=standardised_digits(), hidden_dimension=[50], output_dimension=10,
                   output_activation="linear", likelihood="categorical", prior_standard_deviation=1.0,
                   dtype="float64", number_walkers=4, batch_size=32, burn_in_steps=30 * steps,
                   max_steps=40 * steps, every_nth=steps // 4, seed=seed(31))
    sim = tati.Simulation(**options)
    result = sim.sample()
    frictions = sim.sampler.followed_frictions()
    assert frictions[0] == mw.FRICTION_FLOOR and frictions[1] > 3.0 * frictions[0], frictions
    found = walker_outliers(result, sim)
    assert found == [], [x.line() for x in found]
    [kinetic] = [r for r in readings(sim, result, found) if r.name == "average kinetic energy"]
    print(f"frictions {np.round(frictions, 2)}, kinetic energy {kinetic.value / kinetic.expected:.4f} of d/2")
    assert kinetic.verdict in ("consistent", "warm"), (kinetic.value / kinetic.expected, kinetic.stats)
    monkeypatch.setattr(AdaptedMass, "measures_an_epoch_in", False)
    control = tati.Simulation(**options)
    try:
        kinds = {x.kind for x in walker_outliers(control.sample(), control)}
    except tati.SamplingError:  # a non-finite loss: blown up beyond any table
        kinds = {"blew up"}
    print(f"control: {sorted(kinds)}")
    assert kinds & {"blew up", "left the mode"}, kinds
