"""The measured step width of the stochastic-gradient samplers (tati/adaptation/measured_width.py)
on targets whose Hessian and gradient noise are known exactly.

False-failure budget 1e-3 for the file: the noise variance's check over its 32 walkers (4e-4,
Bonferroni) and the BAOAB run's two asserted means (6e-4); the other checks are deterministic.
"""

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed, t_critical, z_critical
from tati.adaptation import measured_width as mw
from tati.samplers import BAOAB

WALKERS, D = 32, 64
OMEGA2 = np.tile([1.0, 4.0], D // 2)  # the diagonal Hessian: lambda_max 4
V, GAMMA, BETA = 10.0, 1.0, 1.0


def test_power_iteration_finds_the_largest_curvature():
    """A rotated Hessian with eigenvalues 1 .. 100 (the next below the top 50): 20 iterations
    come within 5% of 100 on every walker, from below."""
    rng = np.random.default_rng(seed(1))
    rotation, _ = np.linalg.qr(rng.normal(size=(40, 40)))
    hessian = rotation @ np.diag(np.r_[np.linspace(1.0, 50.0, 39), 100.0]) @ rotation.T
    found = mw.graph_power_iteration(lambda v: v @ hessian, tf.constant(rng.normal(size=(3, 40)))).numpy()
    assert np.all(found <= 100.0 * (1 + 1e-12)) and np.all(found > 95.0)


def test_batch_curvature_is_the_largest_batch_and_graph_width_the_numpy_one():
    """Three batches' diagonal Hessians (largest 2, 9, 5): the largest is found, per walker; the
    graph's width equals `widths` of the same curvature and noise, at the given friction and, with
    the friction measured, at the measured one (equal to the numpy rule's); a NaN curvature gives NaN."""
    diagonals = tf.constant([[1.0, 2.0, 0.5], [9.0, 1.0, 3.0], [5.0, 4.0, 1.0]], tf.float64)
    start = tf.constant(np.random.default_rng(seed(9)).normal(size=(2, 3)))
    found = mw.batch_curvature(lambda b, v: v * diagonals[b], 3, start).numpy()
    np.testing.assert_allclose(found, [9.0, 9.0], rtol=1e-6)
    noise = tf.constant([3.0, 0.5], tf.float64)
    width, friction = mw.graph_width(lambda b, v: v * diagonals[b], 3, noise, start, mw.Friction(GAMMA), 2.0, 1.5)
    expected = mw.widths([9.0, 9.0], [3.0, 0.5], GAMMA, 2.0, 1.5)
    assert abs(width.numpy() - expected.width) < 1e-6 * expected.width and friction.numpy() == GAMMA
    loud = tf.constant([300.0, 50.0], tf.float64)  # friction measured too: the numpy rule's, above the floor
    width, friction = mw.graph_width(lambda b, v: v * diagonals[b], 3, loud, start, mw.Friction(GAMMA, True), 2.0, 1.5)
    expected = mw.widths([9.0, 9.0], [300.0, 50.0], None, 2.0, 1.5)
    assert expected.friction > mw.FRICTION_FLOOR
    assert abs(friction.numpy() - expected.friction) < 1e-5 * expected.friction
    assert abs(width.numpy() - expected.width) < 1e-5 * expected.width
    broken = mw.graph_width(lambda b, v: v * diagonals[b] * (np.nan if b == 1 else 1.0), 3, noise, start,
                            mw.Friction(GAMMA))
    assert np.isnan(broken[0].numpy()) and np.isnan(broken[1].numpy())


def test_noise_variance_within_its_sampling_error():
    """K = 16 gradients g + sqrt(V) zeta per walker: the mean over d of the sample variances has
    sd V sqrt(2 / ((K - 1) d)) (independent coordinates)."""
    rng = np.random.default_rng(seed(2))
    gradients = rng.normal(size=(WALKERS, D)) + np.sqrt(V) * rng.normal(size=(mw.NOISE_BATCHES, WALKERS, D))
    deviation = (mw.noise_variance(gradients) - V) / (V * np.sqrt(2.0 / ((mw.NOISE_BATCHES - 1) * D)))
    assert np.all(np.abs(deviation) < z_critical(4e-4, WALKERS))


def test_noise_width_gives_the_asked_excess():
    h = mw.noise_width(np.array([V, 1.0, 0.0]), GAMMA)
    np.testing.assert_allclose(mw.excess_heat(h[:2], np.array([V, 1.0]), GAMMA), mw.EXCESS, rtol=1e-9)
    assert h[2] == np.inf
    assert abs(h[0] - 2 * GAMMA * mw.EXCESS / V) < 0.02 * h[0]  # small gamma h: h V / (2 gamma) = EXCESS


def test_euler_heat_is_sghmc_momentum_recursion_in_equilibrium():
    """SGHMC's friction step p <- (1 - a) p - h g + sqrt(2 a T) G with g of variance V: the
    stationary variance of p from the discrete Lyapunov equation (scipy, unit mass, no curvature),
    against excess_heat(euler=True); BAOAB's exact O step gives no heat without noise, Euler's a / (2 - a)."""
    from scipy.linalg import solve_discrete_lyapunov
    for a, h, variance in ((0.068, 0.02, 10.0), (0.2, 0.05, 1.0), (0.02, 0.01, 0.0)):
        stationary = solve_discrete_lyapunov(np.array([[1.0 - a]]), np.array([[h * h * variance + 2.0 * a]]))[0, 0]
        assert float(mw.excess_heat(h, variance, a / h, euler=True)) == pytest.approx(stationary - 1.0, rel=1e-9)
    assert float(mw.excess_heat(0.02, 0.0, 1.0, euler=True)) == pytest.approx(0.02 / 1.98)
    assert float(mw.excess_heat(0.02, 0.0, 1.0)) == 0.0
    assert float(mw.excess_heat(0.02, 1.0, 50.0, euler=True)) == np.inf  # a = 1: p reversed, not damped


def test_euler_friction_is_the_least_that_holds_the_excess():
    """SGHMC's measured friction at width h: where a friction holds the heat (r = h^2 V <= E^2 / (1 + E))
    the heat at it is EXCESS and a smaller one heats more; where none does, the width falls to
    sqrt(E^2 / ((1 + E) V)), with a = E / (1 + E) there, and its heat is EXCESS."""
    h = 0.02
    for variance in (1.0, 5.0, 20.0):
        friction = float(mw.graph_friction(tf.constant(h, tf.float64), tf.constant([variance], tf.float64), euler=True))
        width = mw.noise_width(np.array([variance]), friction, euler=True)[0]
        if h * h * variance <= mw.EXCESS ** 2 / (1 + mw.EXCESS):
            assert width >= h * (1 - 1e-9)
            if friction > mw.FRICTION_FLOOR:
                assert float(mw.excess_heat(h, variance, friction, euler=True)) == pytest.approx(mw.EXCESS, rel=1e-6)
                assert float(mw.excess_heat(h, variance, 0.9 * friction, euler=True)) > mw.EXCESS
        else:
            widest = np.sqrt(mw.EXCESS ** 2 / ((1 + mw.EXCESS) * variance))
            assert width == pytest.approx(widest, rel=1e-6) and friction * width == pytest.approx(
                mw.EXCESS / (1 + mw.EXCESS), rel=1e-6)
        assert float(mw.excess_heat(width, variance, friction, euler=True)) == pytest.approx(mw.EXCESS, rel=1e-6)
    sghmc = mw.widths([401.0, 240.0], [7.22, 10.3], None, euler=True)  # yacht's figures, as below
    exact = mw.widths([401.0, 240.0], [7.22, 10.3], None)
    assert sghmc.width < exact.width and "with its Euler friction's own" in sghmc.line()


def test_measure_on_linear_regression():
    """Bayesian linear regression on 200 points, batches of 10: a batch's U = N / n sum_batch
    (w.x + b - y)^2 / 2 has the Hessian N / n A_b^T A_b, A_b = [x, 1] of its points; the curvature
    is the largest over the 20 curvature batches (every point in one), which exceeds the whole
    dataset's A^T A; V is the sample variance of the gradients N / n sum_batch (f - y) (x, 1) of
    the 20 covering batches (one epoch's), recomputed here."""
    rng = np.random.default_rng(seed(3))
    x = rng.normal(size=(200, 2)) * [1.0, 3.0]
    y = x @ np.array([1.0, -2.0]) + 0.5 + rng.normal(size=200)
    simulation = tati.Simulation(dataset=(x, y[:, None]), hidden_dimension=[], output_activation="linear",
                                 likelihood="gaussian", batch_size=10, dtype="float64", number_walkers=2,
                                 seed=seed(4))
    measured = mw.measure(simulation.model, simulation.data, GAMMA)
    design = np.column_stack([x, np.ones(200)])
    seen, largest = [], 0.0
    for b in range(20):
        bx = simulation.data.covering_batch(0, b)[0].numpy()
        seen.append(bx)
        batch = np.column_stack([bx, np.ones(len(bx))])
        largest = max(largest, np.linalg.eigvalsh(20.0 * batch.T @ batch)[-1])
    assert np.array_equal(np.sort(np.concatenate(seen), axis=0), np.sort(x, axis=0)) and measured.batches == 20
    assert largest > 1.2 * np.linalg.eigvalsh(design.T @ design)[-1]
    np.testing.assert_allclose(measured.curvature, largest, rtol=0.05)
    theta = simulation.parameters
    gradients = []
    for k in range(mw.noise_batch_count(simulation.data)):  # 20: one epoch's, more than 16
        bx, by = (a.numpy() for a in simulation.data.covering_batch(0, k))
        residual = bx @ theta[:, :2].T + theta[:, 2] - by  # [n, W]
        gradients.append(20.0 * np.stack([np.column_stack([bx * r[:, None], r]).sum(axis=0) for r in residual.T]))
    np.testing.assert_allclose(measured.noise_variance, mw.noise_variance(np.array(gradients)), rtol=1e-9)
    np.testing.assert_allclose(measured.widths, np.minimum(measured.stable_width, measured.noise_width))


def test_hessian_vector_products_agree_in_both_modes():
    """Reverse over reverse mode (a Keras convolution's walkers need it) gives the Hessian-vector
    products of forward over reverse, to rounding, on a network of two walkers with mini-batches."""
    rng = np.random.default_rng(seed(30))
    x = rng.normal(size=(40, 3))
    simulation = tati.Simulation(dataset=(x, np.tanh(x @ [1.0, -1.0, 0.5])[:, None]), hidden_dimension=[4],
                                 hidden_activation="tanh", likelihood="gaussian", batch_size=8, dtype="float64",
                                 number_walkers=2, seed=seed(31))
    model, tangent = simulation.model, tf.constant(rng.normal(size=(2, simulation.num_parameters)))
    products = []
    for reverse in (False, True):
        model.hessian_by_reverse_mode = reverse
        products.append(mw.hessian_vector_on(model, simulation.data, lambda: tf.constant(simulation.parameters),
                                             0)(tf.constant(1), tangent).numpy())
    assert np.abs(products[0]).max() > 1.0
    np.testing.assert_allclose(products[1], products[0], rtol=1e-10, atol=1e-10 * np.abs(products[0]).max())


def baoab_temperature(width, run_seed, steps=3000, burn_in=500):
    """Per walker, beta |p|^2 / d averaged after burn-in, of BAOAB on U = sum omega^2 q^2 / 2 with
    the gradient noise sqrt(V) zeta (a seeded stream of its own)."""
    sampler = BAOAB(step_width=width, friction_constant=GAMMA, inverse_temperature=BETA, seed=run_seed,
                    walker_axis=True)
    q = tf.Variable(np.random.default_rng(run_seed).normal(size=(WALKERS, D)) / np.sqrt(BETA * OMEGA2))
    sampler.build([q])
    omega2 = tf.constant(OMEGA2)

    @tf.function(autograph=False)
    def loop():
        def body(i, total):
            noise = tf.random.stateless_normal([WALKERS, D], tf.stack([tf.constant(run_seed, tf.int64),
                                                                       tf.cast(i, tf.int64)]), dtype=tf.float64)
            sampler.apply([omega2 * tf.convert_to_tensor(q) + np.sqrt(V) * noise], [q])
            kinetic = sampler.step_info["kinetic_energy"]
            return i + 1, total + tf.cast(i >= burn_in, tf.float64) * kinetic
        return tf.while_loop(lambda i, _: i < steps, body, (tf.constant(0), tf.zeros([WALKERS], tf.float64)))[1]

    return 2.0 * BETA * loop().numpy() / (D * (steps - burn_in))


def reported_excess(h):
    """BAOAB's reported momentum (between its two kicks, sampler docstring) in equilibrium under
    noise alone: alpha^2 h^2 V / (1 - alpha^2) after the O step, plus a half kick's h^2 V / 4."""
    alpha2 = np.exp(-2 * GAMMA * h)
    return BETA * h ** 2 * V * (alpha2 / (1 - alpha2) + 0.25)


@pytest.mark.statistical
def test_measured_width_holds_the_temperature_where_the_default_runs_hot():
    """The width from the measured curvature (power iteration on the diagonal Hessian) and noise
    (16 noisy gradients per walker): BAOAB's kinetic temperature is 1 + its predicted excess
    (<= 5%) within its Monte Carlo interval (Student-t over the walkers); at width 0.1 it reads
    about 1.48 (negative control)."""
    rng = np.random.default_rng(seed(5))
    curvature = mw.graph_power_iteration(lambda v: v * OMEGA2, tf.constant(rng.normal(size=(WALKERS, D)))).numpy()
    noisy = rng.normal(size=(WALKERS, D)) + np.sqrt(V) * rng.normal(size=(mw.NOISE_BATCHES, WALKERS, D))
    measured = mw.widths(curvature, mw.noise_variance(noisy), GAMMA, 1.0 / BETA)
    h = measured.width
    assert 0.005 < h < 0.015 and np.all(measured.noise_width < measured.stable_width)
    critical = t_critical(6e-4, WALKERS - 1, 2)
    temperatures = baoab_temperature(h, seed(6))
    mean, error = temperatures.mean(), temperatures.std(ddof=1) / np.sqrt(WALKERS)
    print(f"h {h:.4g}: beta |p|^2 / d = {mean:.4f} +- {error:.4f}, predicted {1 + reported_excess(h):.4f}")
    assert abs(mean - 1.0 - reported_excess(h)) < critical * error and reported_excess(h) <= mw.EXCESS
    hot = baoab_temperature(0.1, seed(6), steps=600, burn_in=100)
    print(f"h 0.1: beta |p|^2 / d = {hot.mean():.4f}")
    assert hot.mean() - 1.0 - mw.EXCESS > critical * hot.std(ddof=1) / np.sqrt(WALKERS) and hot.mean() > 1.3


# -- the option measure_step_width ----------------------------------------------------------------
def regression(**options):
    rng = np.random.default_rng(seed(7))
    x = rng.normal(size=(200, 2))
    y = x @ np.array([1.0, -2.0]) + 0.5 + rng.normal(size=200)
    return dict(dataset=(x, y[:, None]), hidden_dimension=[], output_activation="linear", likelihood="gaussian",
                dtype="float64", number_walkers=2, max_steps=20, every_nth=10, seed=seed(8), **options)


def test_a_measured_width_that_blows_up_says_it_was_measured(monkeypatch):
    """A measured width far past the stability bound (STABILITY 50: h sqrt(lambda) = 50; full batch, so
    no noise bounds it) stops with the measured width named and the cure, not as a step_width the
    user gave."""
    from tati.errors import SamplingError
    monkeypatch.setattr(mw, "STABILITY", 50.0)
    simulation = tati.Simulation(**dict(regression(sampler="BAOAB", measure_step_width=True), max_steps=200))
    with pytest.raises(SamplingError, match=r"the measured step_width \S+ did not hold here: give a smaller "
                                            r"step_width; every row before is kept"):
        simulation.sample()


def test_a_non_finite_loss_at_a_measured_friction_names_a_larger_friction_too():
    """With mini-batches and friction_constant auto, the error of a non-finite loss names the blown-up
    walker's two cures, as its summary line does (tati/diagnostics/outliers.py friction_cure): on
    standardised digits with a 64-100-100-10 network, BAOAB's defaults ended non-finite at step 2,406
    where raise batch_size, the one cure it named, read 51% hot and friction_constant 10 held (5.2%
    above). With the friction given, only the batch (negative control)."""
    from types import SimpleNamespace
    from tati.diagnostics.outliers import friction_cure
    row = {"nonfinite_step": 7, "nonfinite_walkers": np.array([False, True])}
    measured = tati.Simulation(**regression(sampler="BAOAB", batch_size=10))
    measured.sample()
    cure = friction_cure(measured)
    assert measured.options["friction_constant"] == "auto" and cure.startswith("friction_constant ")
    error = str(measured._nonfinite(row, SimpleNamespace(is_sampler=True)))
    assert error.startswith("non-finite loss or gradient at step 7 (walker 1): the measured step_width ")
    assert f"did not hold here: raise batch_size, or {cure}; every row before is kept" in error
    given = tati.Simulation(**regression(sampler="BAOAB", batch_size=10, friction_constant=1.0))
    given.sample()
    assert "did not hold here: raise batch_size; every row" in str(given._nonfinite(row, SimpleNamespace(is_sampler=True)))


@pytest.mark.parametrize("sampler, choice", [("BAOAB", "auto"), ("SGHMC", True)])
def test_option_sets_the_sampler_width_before_the_first_step(sampler, choice):
    """On (BAOAB: auto, with a likelihood, batch_size and no step_width; SGHMC only when asked):
    the sampler steps at the measured width (the least over the walkers), which the summary names."""
    from tati.diagnostics.summary import summarise
    simulation = tati.Simulation(**regression(sampler=sampler, batch_size=10, measure_step_width=choice))
    result = simulation.sample()
    measured = simulation.measured_width
    assert measured.width == np.min(measured.widths) and len(measured.widths) == 2
    assert simulation.sampler.step_width.numpy() == np.float32(measured.width)  # Keras keeps it in float32
    text = summarise("test", simulation, result, True)
    assert all(len(line) < 100 for line in text.splitlines()), text  # the long line goes on over the next
    flowing = " ".join(line.strip() for line in text.splitlines())
    assert f"step_width {measured.width:.3g}, measured" in text and measured.line() in flowing


def test_a_sample_call_after_fit_tunes_itself_as_a_first_one():
    """fit() then sample() (a MAP, then the posterior), with a likelihood, batch_size and no
    step_width: sample() starts a run of its own, so the walkers start warm, the width is
    measured (with the mass from the gradient noise, followed in burn-in) as for a first call;
    before, the sampler stepped at the default width 0.1 and blew up on a real network."""
    simulation = tati.Simulation(**dict(regression(batch_size=10, burn_in_steps=40, optimizer="adam",
                                                   learning_rate=0.01), max_steps=60))
    simulation.fit()
    assert simulation.measured_width is None and simulation.warm_start is None
    simulation.sample()
    assert simulation.warm_start is not None and simulation.measured_width is not None
    width = float(simulation.sampler.step_width.numpy())  # followed with each new mass
    assert simulation.sampler.follows_width and 0.5 < width / simulation.measured_width.width < 2.0
    assert f"BAOAB (step_width {width:.3g}, measured)" in simulation.summary()


def test_a_checkpoint_of_fit_restored_into_sample_starts_a_run_that_tunes_itself(tmp_path, monkeypatch):
    """tati-optimize --save_model, then tati-sample --restore_model (the original TATi's way to
    sample from a trained network): the checkpoint gives the start, and the new sampling run
    warm-starts from it and measures its width there, with no note of changed options (nothing
    continues); before, it stepped at the default width 0.1. A sampling run's checkpoint still
    continues with its own width (test_a_resumed_run_keeps_the_measured_friction)."""
    import warnings
    path = str(tmp_path / "map.npz")
    options = regression(batch_size=10, burn_in_steps=40, optimizer="adam", learning_rate=0.01)
    trained = tati.Simulation(**options, save_model=path)
    trained.fit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "continuing with changed options"
        simulation = tati.Simulation(**dict(options, max_steps=60), restore_model=path)
    starts, original = [], mw.measure

    def measure(model, *args, **kwargs):
        starts.append(model.flat_parameters().numpy())
        return original(model, *args, **kwargs)

    monkeypatch.setattr(mw, "measure", measure)
    simulation.sample()
    assert simulation.warm_start is not None and simulation.measured_width is not None
    np.testing.assert_allclose(simulation.warm_start.start_losses, trained.loss(), rtol=1e-12)  # the checkpoint's
    np.testing.assert_array_equal(starts[0], simulation.warm_start.positions)
    assert "measured)" in simulation.summary().splitlines()[0]


@pytest.mark.parametrize("options, measures", [
    (dict(batch_size=10, measure_step_width="auto", step_width=0.01), False),  # a width given
    (dict(measure_step_width="auto"), False),  # full batch
    (dict(batch_size=10), True),  # the default: auto
    (dict(batch_size=10, sampler="SGHMC"), True),  # auto: GLA1, GLA2, BAOAB, CCAdL, SGHMC
    (dict(batch_size=10, sampler="SGHMC", gradient_noise_estimator="adam"), False),  # not with an estimator
    (dict(batch_size=10, sampler="SGNHT"), True),
    (dict(batch_size=10, sampler="SGLD"), True),  # by the overdamped rules, without friction
    (dict(batch_size=10, sampler="pSGLD"), True),  # by the overdamped rules in its G's metric
    (dict(measure_step_width=True, step_width=0.01), True)])
def test_when_it_measures(options, measures):
    simulation = tati.Simulation(**regression(**options))
    assert simulation.options["measure_step_width"] is measures


def test_sgld_measures_by_the_overdamped_rules():
    """SGLD's width (measured_width docstring, 5.): h lambda = 0.1 for the stiffest mode, h V / (2 T) = 5%
    for the noise, no friction; with a likelihood and batch_size it tunes itself (its mass from the
    noise, its width measured again with each, no friction option set) and says nothing of the default
    step_width, which it blew up with on yacht (issue #41)."""
    import warnings
    measured = mw.widths([40.0, 10.0], [4.0, 0.0], None, temperature=2.0, overdamped=True)
    np.testing.assert_allclose(measured.stable_width, [0.1 / 40.0, 0.01])
    np.testing.assert_allclose(measured.noise_width, [2 * 0.05 * 2.0 / 4.0, np.inf])
    assert measured.width == 0.0025 and measured.friction is None
    assert "0.1 / largest curvature 40, 10" in measured.line() and "friction" not in measured.line()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulation = tati.Simulation(**dict(regression(sampler="SGLD", batch_size=10, burn_in_steps=40),
                                            max_steps=60))
    assert simulation.options["adapt_mass"] == "noise" and simulation.options["friction_constant"] != "auto"
    simulation.sample()
    assert simulation.measured_width.overdamped and simulation.sampler.follows_width
    assert len(simulation.sampler.followed_widths()) == 3 and len(simulation.sampler.followed_frictions()) == 0
    assert "SGLD (step_width" in simulation.summary() and "measured)" in simulation.summary()


def test_the_curvature_takes_at_most_64_batches_and_the_noise_an_epoch():
    """A measurement's curvature costs POWER_ITERATIONS Hessian-vector products per batch: at most the
    epoch's first CURVATURE_BATCHES (on 60,000 points, 469 batches, one measurement took 60 s); the
    noise keeps an epoch's batches, which cover the data (16 random ones missed wine's kicking points)."""
    from types import SimpleNamespace
    for per_epoch, curvature, noise in ((9, 9, 16), (45, 45, 45), (469, 64, 469)):
        data = SimpleNamespace(full=False, batches_per_epoch=per_epoch)
        assert (mw.curvature_batches(data), mw.noise_batch_count(data)) == (curvature, noise)
    assert mw.curvature_batches(SimpleNamespace(full=True)) == 1


def test_needs_friction():
    with pytest.raises(tati.InputError, match="measure_step_width needs friction_constant > 0"):
        tati.Simulation(**regression(measure_step_width=True, friction_constant=0.0))


def test_the_summary_line_gives_a_range_for_many_walkers():
    few = mw.widths([4.0, 16.0], [0.0, 0.0], GAMMA)
    assert "per walker 0.25, 0.125" in few.line() and few.width == 0.125
    many = mw.widths(np.linspace(4.0, 16.0, 10), np.zeros(10), GAMMA)
    assert "per walker 0.125 .. 0.25" in many.line()


def test_measured_friction_lets_the_noise_allow_the_stability_width():
    """friction_constant auto: at the measured friction the noisiest walker's noise width is the
    run's stability width (yacht's figures: curvatures 240-401, whitened noise 7-10: gamma 2.75),
    within [1, 1 / h]."""
    curvature, variance = np.array([401.0, 401.0, 387.0, 240.0]), np.array([7.22, 9.02, 8.06, 10.3])
    measured = mw.widths(curvature, variance, None)
    stable = mw.STABILITY / np.sqrt(curvature.max())
    np.testing.assert_allclose(mw.excess_heat(stable, variance.max(), measured.friction), mw.EXCESS, rtol=1e-9)
    assert measured.width == pytest.approx(stable, rel=1e-9) and measured.friction == pytest.approx(2.75, abs=0.01)
    assert "at the measured friction_constant 2.75" in measured.line()
    assert mw.widths(curvature, variance * 1e-6, None).friction == mw.FRICTION_FLOOR  # little noise: the floor
    loud = mw.widths(curvature, variance * 1e3, None)  # no friction holds it: 1 / h, the noise bound's width
    assert loud.friction == pytest.approx(1.0 / stable) and loud.width < stable


def test_friction_auto_measures_and_the_sampler_takes_it():
    simulation = tati.Simulation(**regression(sampler="BAOAB", batch_size=10, friction_constant="auto",
                                              measure_step_width="auto"))
    simulation.sample()
    friction = simulation.measured_width.friction
    assert friction >= mw.FRICTION_FLOOR and simulation.options["friction_constant"] == "auto"
    assert simulation.sampler.friction_constant.numpy() == pytest.approx(friction)


def test_a_resumed_run_keeps_the_measured_friction(tmp_path):
    """friction_constant auto is measured once, at the start; the checkpoint carries it (CCAdL: with its
    noise amplitude sqrt(2 gamma / beta)), a resumed run does not fall back to a default."""
    options = regression(sampler="CCAdL", batch_size=10, friction_constant="auto", measure_step_width="auto")
    first = tati.Simulation(**options, save_model=str(tmp_path / "run"))
    first.sample()
    resumed = tati.Simulation(**dict(options, max_steps=30), restore_model=str(tmp_path / "run"))
    resumed.sample()
    friction = first.measured_width.friction
    values = {name: float(v.numpy()) for name, v in resumed.sampler._parameter_variables.items()}
    assert friction != 1.0 and values["friction_constant"] == pytest.approx(friction)
    assert values["sigmaA"] == pytest.approx(np.sqrt(2.0 * friction))


@pytest.mark.parametrize("options", [dict(batch_size=10, friction_constant="auto", measure_step_width="auto", step_width=0.01),
                                     dict(batch_size=10, friction_constant="auto", sampler="SGHMC",
                                          gradient_noise_estimator="adam")])
def test_friction_auto_needs_the_measured_width(options):
    with pytest.raises(tati.InputError, match=r"^friction_constant auto is measured with the step width"):
        tati.Simulation(**regression(**options))
