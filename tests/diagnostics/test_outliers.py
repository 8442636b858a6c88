"""Walkers hot, cold or far out (tati/diagnostics/outliers.py) on synthetic run-info tables:
one walker of four far out is named with its values and fix, healthy walkers are not, and the
kinetic interval keeps its false-alarm budget."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from stats import seed
from tati.diagnostics import outliers
from tati.diagnostics.outliers import (Outlier, kinetic_outliers, loss_outliers, peak_outliers, typical_set_width,
                                       walker_outliers)
from tati.config.options import OPTIONS

D, BETA = 10, 1.0  # equipartition d / (2 beta) = 5


def table(kinetic, loss, burn_in=0):
    """A run-info table of [walkers, rows] readings, one row per step from step 1."""
    walkers, rows = kinetic.shape
    return pd.DataFrame({"id": np.repeat(np.arange(walkers), rows), "step": np.tile(np.arange(1, rows + 1), walkers),
                         "loss": loss.ravel(), "kinetic_energy": kinetic.ravel()})


def healthy(rng, walkers=4, rows=400):
    """Independent draws of a 10-D Gaussian at beta = 1: kinetic energy and U - U_min both
    Gamma(d/2, 1/beta)."""
    return rng.gamma(D / 2, 1 / BETA, (walkers, rows)), rng.gamma(D / 2, 1 / BETA, (walkers, rows))


def run(kinetic, loss, **changes):
    o = {option.name: option.default for option in OPTIONS}
    o.update(inverse_temperature=BETA, burn_in_steps=0, **changes)  # a Simulation's options hold the resolved burn-in
    simulation = SimpleNamespace(options=o, num_parameters=D, num_walkers=len(kinetic))
    return SimpleNamespace(run_info=table(kinetic, loss)), simulation


def test_one_walker_of_four_far_out_is_named_with_its_values_and_fix():
    """Issue #41's run: one SGHMC walker of four at 11.6 times equipartition and loss 2388."""
    kinetic, loss = healthy(np.random.default_rng(1))
    kinetic[2] *= 11.6
    loss[2] += 2388.0
    result, simulation = run(kinetic, loss, sampler="SGHMC", batch_size=10)
    hot, far = walker_outliers(result, simulation)
    assert (hot.walker, hot.kind, hot.reference) == (2, "hot", 5.0)
    assert hot.value == pytest.approx(kinetic[2].mean())
    assert hot.fix == "lower step_width, or set gradient_noise_estimator"
    assert 1.0 <= hot.error / (kinetic[2].std() / 20) < 1.25  # 400 readings, correlation time 1 or a bit above
    assert hot.text() == (f"walker 2 hot: kinetic energy {hot.value:.1f} +- {hot.error:.1f} after burn-in, "
                          f"{hot.value / 5:.3g} times equipartition 5")
    assert (far.walker, far.kind, far.fix) == (2, "far out", hot.fix)  # thrown out by the same step
    assert far.value == pytest.approx(np.median(loss[2]))
    assert far.reference == pytest.approx(np.median([np.quantile(loss[w], 0.99) for w in (0, 1, 3)]))
    assert far.line() == (f"walker 2 far out: median loss {far.value:.4g} after burn-in; the others' stay "
                          f"below {far.reference:.4g}: {far.fix}")
    result, simulation = run(kinetic, loss, sampler="BAOAB")  # full-batch: no noise estimator to set
    assert [outlier.fix for outlier in walker_outliers(result, simulation)] == ["lower step_width"] * 2


def test_healthy_walkers_and_one_walker_are_not_flagged():
    kinetic, loss = healthy(np.random.default_rng(2))
    assert walker_outliers(*run(kinetic, loss, sampler="SGHMC")) == []
    kinetic[2] *= 11.6
    assert walker_outliers(*run(kinetic[2:3], loss[2:3], sampler="SGHMC")) == []  # the run's line judges it


def test_a_walker_stuck_at_the_right_temperature_is_told_how_to_restart():
    kinetic, loss = healthy(np.random.default_rng(3))
    loss[1] += 100.0
    [stuck] = walker_outliers(*run(kinetic, loss, sampler="BAOAB"))
    assert (stuck.walker, stuck.fix) == (1, "stuck (in a minor mode?): start it elsewhere (initial_parameters), "
                                            "or raise burn_in_steps")
    result, simulation = run(kinetic, loss, sampler="NUTS")  # momenta redrawn: only the loss is judged
    [stuck] = walker_outliers(result, simulation)
    assert stuck.fix == "stuck (in a minor mode?): warm_start true restarts it at the best walker's point"
    simulation.warm_start = SimpleNamespace(losses=np.zeros(4))  # it started warm (U_min 0) and still got stuck
    assert walker_outliers(result, simulation)[0].fix.endswith("or raise burn_in_steps")


def test_a_walker_above_the_mode_that_came_back_at_the_last_row_is_named_without_a_step():
    """A walker whose median loss after burn-in is far above the warm start's mode but whose last row
    is below the bound has no last stretch above it: named, with no step (sample() ended in an
    IndexError there, after the run)."""
    kinetic, loss = healthy(np.random.default_rng(8))
    blown = loss.copy()
    blown[:, 30:-1] += 7e9
    result, simulation = run(kinetic, blown, sampler="BAOAB", measure_step_width=True)
    simulation.warm_start = SimpleNamespace(losses=np.zeros(4))
    found = walker_outliers(result, simulation)
    assert [(x.walker, x.kind, x.step) for x in found] == [(w, "left the mode", 0) for w in range(4)]
    assert "rose above" not in found[0].line()


def test_walkers_far_above_the_warm_starts_mode_blew_up_whatever_their_number():
    """Every walker alike at loss 7e9 after a warm start to a mode of loss 0 (a 784-100-10 network on
    20,000 points, its softmax saturated at a memorising mode: nothing else said more than 6% hot),
    each named from the row it stayed above 10 typical-set widths over the mode (here 10 (5 + 4
    sqrt 5) = 139), with one walker too; the cure for a measured width is to start elsewhere.
    Negative controls: healthy walkers (U - U_min of Gamma(5)), a rise of 9 widths, no warm start,
    and one walker far out from the others, which stays that walker's finding."""
    kinetic, loss = healthy(np.random.default_rng(8))
    warm = SimpleNamespace(losses=np.array([0.0, 0.3, 0.1, 0.2]))
    blown = loss.copy()
    blown[:, 30:] += 7e9
    for walkers in (4, 1):
        result, simulation = run(kinetic[:walkers], blown[:walkers], sampler="BAOAB", measure_step_width=True)
        simulation.warm_start = warm
        found = walker_outliers(result, simulation)
        assert [(x.walker, x.kind, x.step) for x in found] == [(w, "left the mode", 31) for w in range(walkers)]
        bound = 10 * typical_set_width(D, BETA)
        assert found[0].error == pytest.approx(bound) and bound == pytest.approx(139.4, abs=0.1)
        assert found[0].line() == (f"walker 0 blew up: median loss {found[0].value:.4g} after burn-in, above "
                                   f"{bound:.4g}, 10 typical-set widths over the warm start's 0; it rose above at "
                                   "step 31: warm_start false (the width and mass were measured at its mode), or a "
                                   "smaller step_width")
    result, simulation = run(kinetic, blown, sampler="BAOAB")
    simulation.warm_start = warm
    assert {x.fix for x in walker_outliers(result, simulation)} == {"lower step_width"}  # a width the user gave
    for rise in (0.0, 9 * typical_set_width(D, BETA)):
        result, simulation = run(kinetic, loss + rise, sampler="BAOAB")
        simulation.warm_start = warm
        assert walker_outliers(result, simulation) == []
    assert walker_outliers(*run(kinetic, blown, sampler="BAOAB")) == []  # no warm start: no mode to compare
    thrown = loss.copy()
    thrown[2] += 1e4
    result, simulation = run(kinetic, thrown, sampler="BAOAB")
    simulation.warm_start = warm
    assert [(x.walker, x.kind) for x in walker_outliers(result, simulation)] == [(2, "far out")]


def test_a_walker_that_left_the_others_was_thrown_out_not_stuck():
    """A Langevin walker among the others for 300 rows, then thrown far and relaxing (wine's split 8
    at 16 times the epochs): it left them at step 301 (or a few rows before, by chance), though
    another walker's spike later rose above it (wine's split 3), and the fix is the step's,
    measured or given; one above the others from its start stays stuck; a NUTS walker that left is
    not told to lower a step_width it does not set."""
    kinetic, loss = healthy(np.random.default_rng(5))
    loss[2, 300:] += 500.0 * np.exp(-np.arange(100) / 200.0)
    loss[0, 390] += 1e4  # one row: the others' highest, not their median
    result, simulation = run(kinetic, loss, sampler="BAOAB")
    simulation.options["burn_in_steps"] = 200
    [left] = walker_outliers(result, simulation)
    # among them, it is above their median by chance in a row with probability 1/2: k rows before 301, 2^-k
    assert (left.walker, left.fix) == (2, "lower step_width") and 291 <= left.step <= 301
    assert left.text().endswith(f"; it left them at step {left.step}")
    simulation.options["measure_step_width"] = True
    assert walker_outliers(result, simulation)[0].fix == (
        "the measured step_width did not hold here: give a smaller step_width")  # full batch
    simulation.options["batch_size"] = 10  # a given width would turn the self-tuning off: a larger batch
    assert walker_outliers(result, simulation)[0].fix == "the measured step_width did not hold here: raise batch_size"
    stuck = loss.copy()
    stuck[2] += 500.0
    [never] = walker_outliers(*run(kinetic, stuck, sampler="BAOAB"))
    assert never.step == 0 and never.fix.startswith("stuck (in a minor mode?)") and "left" not in never.text()
    result, simulation = run(kinetic, loss, sampler="NUTS")
    simulation.options["burn_in_steps"] = 200
    assert walker_outliers(result, simulation)[0].fix.startswith("stuck (in a minor mode?)")


def test_far_means_beyond_the_typical_set_and_the_others_spread():
    """Every walker's median is below the others' 99% quantile; one above it by less than the
    typical set's width (d/2 + 4 sqrt(d/2) = 17.6) is not far, nor one above it by less than 5
    of the others' spreads; two walkers far out do not hide each other."""
    assert typical_set_width(D, BETA) == pytest.approx(5 + 4 * 5 ** 0.5)
    assert typical_set_width(D, 4.0) == pytest.approx(typical_set_width(D, 1.0) / 4)
    kinetic, loss = healthy(np.random.default_rng(4))
    top = np.median([np.quantile(loss[w], 0.99) for w in (0, 1, 3)])
    near = loss.copy()
    near[2] += top - np.median(loss[2]) + 0.9 * typical_set_width(D, BETA)
    assert loss_outliers(table(kinetic, near), D, BETA) == []
    assert [o.walker for o in loss_outliers(table(kinetic, near), D, 4.0)] == [2]  # colder: narrower
    noisy = 10.0 * loss  # mini-batch noise: spreads of about 22, 5 of them beyond the typical set
    spread = np.median([np.subtract(*np.quantile(noisy[w], [0.75, 0.25])) / 1.349 for w in (0, 1, 3)])
    assert 5 * spread > 3 * typical_set_width(D, BETA)
    top = np.median([np.quantile(noisy[w], 0.99) for w in (0, 1, 3)])
    noisy[2] += top - np.median(noisy[2]) + 0.9 * 5 * spread
    assert loss_outliers(table(kinetic, noisy), D, BETA) == []
    two = loss.copy()
    two[[1, 2]] += 1000.0
    assert [o.walker for o in loss_outliers(table(kinetic, two), D, BETA)] == [1, 2]


def test_burn_in_rows_and_short_runs_are_left_out():
    kinetic, loss = healthy(np.random.default_rng(5))
    kinetic[3, :300] *= 10.0  # hot and far out during burn-in only
    loss[3, :300] += 1000.0
    assert kinetic_outliers(table(kinetic, loss), D, BETA, burn_in=300) == []
    assert loss_outliers(table(kinetic, loss), D, BETA, burn_in=300) == []
    assert [o.walker for o in loss_outliers(table(kinetic, loss), D, BETA)] == [3]
    # the walker's kinetic energy falls from hot to right: a long correlation time, too few
    # independent readings (MIN_INDEPENDENT) to judge its level by
    assert kinetic_outliers(table(kinetic, loss), D, BETA) == []
    kinetic[3] = 10.0 * kinetic[0]
    assert [o.kind for o in kinetic_outliers(table(kinetic, loss), D, BETA)] == ["hot"]
    # 49 rows after burn-in are too few independent readings; 9 too few for a median
    assert kinetic_outliers(table(kinetic, loss), D, BETA, burn_in=351) == []
    assert loss_outliers(table(kinetic, loss), D, BETA, burn_in=391) == []
    assert kinetic_outliers(table(kinetic, loss).drop(columns="kinetic_energy"), D, BETA) == []


def test_a_kinetic_energy_is_off_only_by_a_factor_and_outside_its_interval():
    """Every walker at 0.75 of equipartition (BAOAB's bias at h = 1, which the run's own line
    reports) is within the factor 2; a walker at 2.5 times whose readings come in two long
    blocks (0 and 5 times) has too few independent readings to call it; a walker at 0.3 is cold."""
    kinetic, loss = healthy(np.random.default_rng(6))
    assert kinetic_outliers(table(0.75 * kinetic, loss), D, BETA) == []
    blocks = kinetic.copy()
    blocks[0] = np.where(np.arange(400) % 200 < 100, 0.0, 25.0)
    assert kinetic[0].mean() * 2 < blocks[0].mean()
    assert kinetic_outliers(table(blocks, loss), D, BETA) == []
    cold = kinetic.copy()
    cold[1] *= 0.3
    [found] = kinetic_outliers(table(cold, loss), D, BETA)
    assert (found.walker, found.kind) == (1, "cold")
    result, simulation = run(cold, loss, sampler="GLA2")
    assert walker_outliers(result, simulation)[0].fix == "lower step_width, or raise burn_in_steps"


@pytest.mark.statistical
def test_the_kinetic_interval_keeps_its_false_alarm_budget(monkeypatch):
    """Without the factor, the interval alone flags a healthy run of 4 walkers (400 independent
    readings each) with probability FALSE_ALARMS = 1e-3 (measured 1.3e-3 over 3000 runs). Even at
    2e-3, Binomial(300, 2e-3) exceeds 4 with probability 3.4e-4, this test's budget; an interval
    much too narrow (no Bonferroni, a correlation time too small) fails it."""
    rng = np.random.default_rng(seed(7))
    monkeypatch.setattr(outliers, "FACTOR", 1.0)
    flagged = sum(len(kinetic_outliers(table(*healthy(rng)), D, BETA)) for _ in range(300))
    assert flagged <= 4


def test_a_walker_thrown_out_once_blew_up():
    """Issue #41's walker as it was: healthy but for one kick to 100 times equipartition that
    friction takes 100 rows to undo (its readings too correlated for the mean check). The line
    names the step of the largest reading; with an estimator already set, SGHMC's cure is the
    step width alone. The bound is ten times the chi-square(10) quantile at 1 - 1e-3 / 1600,
    over 2 beta: 48 times equipartition here; a walker at 40 times is not flagged, nor a run
    whose walkers are all 15 times hot, readings up to 60 times (the run's line reports that:
    the bound scales with their median)."""
    kinetic, loss = healthy(np.random.default_rng(8))
    kinetic[1, 200:300] += 500.0 * 0.97 ** np.arange(100)
    assert kinetic_outliers(table(kinetic, loss), D, BETA) == []
    result, simulation = run(kinetic, loss, sampler="SGHMC", batch_size=10, gradient_noise_estimator="adam")
    [blew] = walker_outliers(result, simulation)
    peak = 201 + int(np.argmax(kinetic[1, 200:]))  # steps count from 1
    assert (blew.walker, blew.kind, blew.step, blew.reference) == (1, "blew up", peak, 5.0)
    assert blew.value == kinetic[1].max() and blew.error == pytest.approx(10 * stats.chi2.isf(1e-3 / 1600, D) / 2)
    assert blew.line() == (f"walker 1 blew up: kinetic energy {blew.value:.4g} at step {blew.step}, "
                           f"{blew.value / 5:.3g} times equipartition 5: lower step_width")
    result, simulation = run(kinetic, loss, sampler="SGHMC", batch_size=10)
    assert walker_outliers(result, simulation)[0].fix == "lower step_width, or set gradient_noise_estimator"
    kinetic, loss = healthy(np.random.default_rng(9))
    kinetic[2, 50] = 40.0 * 5.0
    assert peak_outliers(table(kinetic, loss), D, BETA) == []
    hot = 15.0 * healthy(np.random.default_rng(10))[0]
    assert hot.max() > 48 * 5.0 and peak_outliers(table(hot, loss), D, BETA) == []
    kinetic[2, 50] = 60.0 * 5.0
    assert [o.walker for o in peak_outliers(table(kinetic, loss), D, BETA)] == [2]


def test_a_measured_friction_adds_a_cure_four_times_it():
    """Where the run measured its friction (friction_constant auto, mini-batches) and it is the O step's,
    the cure of a blown-up walker names FRICTION_CURE (4) times it, rounded up (digits' 64-100-100-10
    network blew up at the measured 2.18 and at batch_size 128, held at 10), beside a larger batch,
    and beside warm_start false for a walker that left the mode; not for a thermostat's friction
    (CCAdL, SGNHT: not fixed_friction), a given one, or the whole dataset."""
    from tati.diagnostics.outliers import friction_cure
    kinetic, loss = healthy(np.random.default_rng(8))
    kinetic[1, 200:300] += 500.0 * 0.97 ** np.arange(100)
    result, simulation = run(kinetic, loss, sampler="BAOAB", batch_size=10, measure_step_width=True,
                             friction_constant="auto")
    simulation.sampler_made = SimpleNamespace(fixed_friction=True, friction_constant=2.18)
    [blew] = walker_outliers(result, simulation)
    assert blew.fix == "the measured step_width did not hold here: raise batch_size, or friction_constant 10"
    for measured, named in ((11.7, "friction_constant 50"), (0.5, "friction_constant 2"), (1.0, "friction_constant 5")):
        simulation.sampler_made.friction_constant = measured
        assert friction_cure(simulation) == named
    simulation.sampler_made.friction_constant = 2.18
    simulation.warm_start = SimpleNamespace(losses=np.zeros(4))
    blown = loss.copy()
    blown[:, 30:] += 7e9
    found = walker_outliers(SimpleNamespace(run_info=table(kinetic, blown)), simulation)
    assert {x.fix for x in found if x.kind == "left the mode"} == {
        "warm_start false (the width and mass were measured at its mode), or friction_constant 10"}
    simulation.sampler_made.fixed_friction = False
    assert friction_cure(simulation) is None
    simulation.sampler_made.fixed_friction = True
    for change in ({"friction_constant": 1.0}, {"batch_size": None}):
        simulation.options.update(change)
        assert friction_cure(simulation) is None
        simulation.options.update(friction_constant="auto", batch_size=10)


def test_the_typical_set_is_the_warm_starts():
    from tati.adaptation.warm_start import threshold
    assert typical_set_width(33, 2.0) == threshold(33, 2.0)
    assert isinstance(Outlier(0, "hot", 1.0, 1.0, 0.1), tuple)


def test_a_measured_width_that_blew_a_walker_up_names_a_cure_that_keeps_it_measured():
    """With measure_step_width the user gave no width to lower: the cure names the measured one and
    a larger batch, or the note on the data where the Simulation has one (diagnostics/data_scale.py).
    The summary then leaves the kinetic energy and the momentum test unjudged (the blow-up spans
    their error bars: on wine-quality-red a walker at 1,720 times equipartition left T_0.99 reading
    "warm")."""
    from tati.diagnostics.summary.temperature import temperature_lines
    kinetic, loss = healthy(np.random.default_rng(8))
    kinetic[1, 200:300] += 500.0 * 0.97 ** np.arange(100)
    result, simulation = run(kinetic, loss, sampler="BAOAB", batch_size=10, measure_step_width=True)
    [blew] = walker_outliers(result, simulation)
    assert blew.kind == "blew up" and blew.fix == "the measured step_width did not hold here: raise batch_size"
    simulation.notes = ["network inputs 1 (of 1, counted from 1) are far from unit scale ..."]  # its likely cause
    [blew] = walker_outliers(result, simulation)
    assert blew.fix == "the measured step_width did not hold here: see the note on the data above"
    del simulation.notes
    frame = table(kinetic, loss)
    averages = frame.groupby("id").tail(1)[["id", "step"]].assign(average_kinetic_energy=kinetic.mean(axis=1))
    result.averages, result.trajectory = averages, frame
    simulation.num_parameters = D
    lines = temperature_lines(simulation, result, walker_outliers(result, simulation))
    [line] = [x for x in lines if "kinetic energy" in x]
    assert line.endswith("not judged, walker 1 blew up)")
    assert [x for x in lines if "momentum test" in x] == ["  momentum test not judged: walker 1 blew up"]
