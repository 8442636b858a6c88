"""Kinetic and configurational temperature (tati/analysis/temperature.py) and traces with
running means (tati/analysis/traces.py) on synthetic tables with known answers."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from stats import seed
from tati.analysis.runs import RunTables
from tati.analysis.temperature import temperature
from tati.analysis.traces import traces
from tati.errors import InputError

DOF, BETA, ROWS, WALKERS = 6, 4.0, 2500, 4


def run_info(rng, beta=BETA):
    """Independent equilibrium readings for d = DOF: the kinetic energy |p|^2 / 2 and the virial
    q . grad U / 2 of U = |q|^2 / 2 are both Gamma(d / 2, 1 / beta)."""
    return pd.DataFrame({"id": np.tile(np.arange(WALKERS), ROWS),
                         "step": np.repeat(np.arange(1, ROWS + 1), WALKERS), "loss": 1.0,
                         "kinetic_energy": rng.gamma(DOF / 2, 1 / beta, ROWS * WALKERS),
                         "virial": rng.gamma(DOF / 2, 1 / beta, ROWS * WALKERS)})


@pytest.mark.statistical
def test_temperatures_of_equilibrium_readings():
    """Mean of 2K/d: 1/beta; its standard error for 10000 independent readings is
    sqrt(2 / d) / (beta sqrt(10000)) = 0.0014434; batch means (4 x 50 batches) estimate it within
    about 5% (1 / sqrt(2 x 199)), so within 20% fails with probability below 1e-4. The interval
    at level 0.999 holds 1/beta except with probability 1e-3 per estimator."""
    table = temperature(RunTables(run_info=run_info(np.random.default_rng(seed(4000)))), dof=DOF,
                        inverse_temperature=BETA, level=0.999)
    assert list(table.columns) == ["estimator", "column", "temperature", "standard_error", "low", "high",
                                   "level", "batches", "expected", "deviation", "verdict"]
    assert list(table.estimator) == ["kinetic", "configurational"]
    exact_error = np.sqrt(2.0 / DOF) / (BETA * np.sqrt(ROWS * WALKERS))
    for _, row in table.iterrows():
        assert row.low < 1 / BETA < row.high and row.verdict == "consistent", row
        assert row.standard_error == pytest.approx(exact_error, rel=0.2)
        assert row.batches == 200 and row.expected == 1 / BETA


@pytest.mark.statistical
def test_a_wrong_temperature_is_reported():
    """Readings at beta = 4 judged against beta = 3.6: 1/beta differs by 0.028, about 19 standard
    errors, so 'too cold'."""
    tables = RunTables(run_info=run_info(np.random.default_rng(seed(4010))))
    table = temperature(tables, dof=DOF, inverse_temperature=3.6, estimators="kinetic")
    assert list(table.estimator) == ["kinetic"]
    assert table.verdict[0] == f"too cold by {-table.deviation[0]:.1f} standard errors" and table.deviation[0] < -10


@pytest.mark.statistical
def test_hot_within_a_measured_widths_heat_says_so():
    """Readings at beta = 4 judged against beta = 4.12 (1/beta 2.9% lower: about 5 standard errors hot)
    name the 5% heat that a measured step_width allows, as the run's summary reads it "warm"; against
    beta = 4.4 (9.1% lower) they do not."""
    tables = RunTables(run_info=run_info(np.random.default_rng(seed(4010))))
    warm = temperature(tables, dof=DOF, inverse_temperature=4.12, estimators="kinetic")
    above = warm.temperature[0] * 4.12 - 1.0
    assert warm.verdict[0] == (f"too hot by {warm.deviation[0]:.1f} standard errors ({above:.1%} above: within the "
                               "5% a measured step_width allows)") and warm.deviation[0] > 3
    hot = temperature(tables, dof=DOF, inverse_temperature=4.4, estimators="kinetic")
    assert hot.verdict[0] == f"too hot by {hot.deviation[0]:.1f} standard errors"


@pytest.mark.statistical
def test_an_interval_too_wide_to_fail_is_not_judged():
    """A virial whose standard error is above TOO_NOISY (20%) of 1/beta would be 'consistent' with
    anything (a heteroscedastic network's: 50%, and a negative temperature); the run's summary says
    'too noisy to judge', and so does the analysis. The kinetic readings beside it are judged."""
    frame = run_info(np.random.default_rng(seed(4020)))
    frame["virial"] = DOF / (2 * BETA) + 50.0 * np.random.default_rng(seed(4021)).standard_normal(len(frame))
    table = temperature(RunTables(run_info=frame), dof=DOF, inverse_temperature=BETA,
                        level=0.999).set_index("estimator")  # each interval misses 1/beta with probability 1e-3
    noisy = table.loc["configurational"]
    assert noisy.standard_error > 0.2 / BETA and noisy.low < 1 / BETA < noisy.high
    assert noisy.verdict == f"too noisy to judge: its error bar is {noisy.standard_error * BETA:.0%} of 1/beta"
    assert table.loc["kinetic"].verdict == "consistent"


def test_degrees_of_freedom_and_missing_columns():
    info = run_info(np.random.default_rng(seed(4020)))
    trajectory = info[["id", "step", "loss"]].assign(**{f"w{i}": 0.0 for i in range(DOF)})
    by_trajectory = temperature(RunTables(run_info=info, trajectory=trajectory), inverse_temperature=BETA)
    by_option = temperature(RunTables(run_info=info), dof=DOF, inverse_temperature=BETA)
    pd.testing.assert_frame_equal(by_trajectory, by_option)
    with pytest.raises(InputError, match="needs the number of degrees of freedom"):
        temperature(RunTables(run_info=info))
    sgld = RunTables(run_info=info.drop(columns="kinetic_energy"), sources={"run_info": "run_file 'r.csv'"})
    with pytest.raises(InputError, match="run_file 'r.csv' has no column 'kinetic_energy' .*SGLD"):
        temperature(sgld, dof=DOF, estimators="kinetic")
    assert list(temperature(sgld, dof=DOF, estimators=["configurational"]).estimator) == ["configurational"]
    assert list(temperature(sgld, dof=DOF).estimator) == ["configurational"]  # by default those it has
    with pytest.raises(InputError, match="'warm' is unknown"):
        temperature(sgld, dof=DOF, estimators="warm")
    flat = temperature(RunTables(run_info=info.assign(virial=0.0)), dof=DOF)  # U flat: every gradient 0
    assert flat.verdict[1] == "the same in every row; U is flat where the walkers are, every gradient 0"
    assert flat.temperature[1] == 0.0 and flat.standard_error[1] == 0.0 and np.isnan(flat.deviation[1])
    few = temperature(RunTables(run_info=info[info.step <= 3]), dof=DOF)
    assert (few.verdict == "too few rows for an error bar").all() and few.standard_error.isna().all()


def test_traces_and_running_means_after_burn_in():
    """The running mean is each walker's expanding mean from the first row after burn-in; NaN
    before. Quantities come from run info, trajectory or averages, whichever has them."""
    rng = np.random.default_rng(seed(4030))
    info = run_info(rng).iloc[: 40 * WALKERS]
    info["total_energy"] = info.loss + info.kinetic_energy
    trajectory = info[["id", "step", "loss"]].assign(param0=rng.standard_normal(len(info)))
    averages = info[info.step > 10][["id", "step"]].assign(epoch=0, loss=1.0, average_virials=2.0)
    tables = RunTables(run_info=info, trajectory=trajectory, averages=averages)
    table = traces(tables, parameters=["param0"], burn_in=10)
    assert list(table.columns) == ["id", "step", "loss", "loss_running_mean", "kinetic_energy",
                                   "kinetic_energy_running_mean", "total_energy", "total_energy_running_mean",
                                   "param0", "param0_running_mean"]
    for walker in range(WALKERS):
        rows = table[table.id == walker]
        assert rows.step.is_monotonic_increasing and len(rows) == 40
        assert rows.kinetic_energy_running_mean[rows.step <= 10].isna().all()
        after = rows[rows.step > 10]
        np.testing.assert_allclose(after.param0_running_mean, after.param0.expanding().mean(), rtol=1e-12)
    mixed = traces(tables, quantities="kinetic_energy,average_virials", burn_in=0)
    assert mixed.average_virials_running_mean.dropna().eq(2.0).all()
    assert mixed.average_virials.isna().sum() == 10 * WALKERS  # the averages table starts after burn-in
    with pytest.raises(InputError, match="quantities: the run-info table has no column 'kinetic' "
                                         "\\(did you mean 'kinetic_energy'\\?\\)"):
        traces(tables, quantities="kinetic")
    only = traces(RunTables(trajectory=trajectory))
    assert list(only.columns) == ["id", "step", "loss", "loss_running_mean"]


def test_a_runs_own_burn_in_and_inverse_temperature_are_the_defaults():
    """A sample() result knows its burn_in_steps and beta: left out, they are the run's (before, a run
    at beta 4 was judged against 1 / beta = 1 over its burn-in too); a table read back knows neither."""
    import tati
    sim = tati.Simulation(potential=lambda x: 0.5 * tf.reduce_sum(x ** 2), initial_parameters=[3.0] * DOF,
                          dtype="float64", inverse_temperature=BETA, step_width=0.2, burn_in_steps=200,
                          max_steps=600, every_nth=2, seed=seed(4030))
    result = sim.sample()
    table = temperature(result)
    pd.testing.assert_frame_equal(table, temperature(result, burn_in=200, inverse_temperature=BETA))
    assert (table.expected == 1 / BETA).all()
    from tati.analysis.moments import moments
    reweighted = moments(result, inverse_temperature=2 * BETA)  # from the run's beta: no run_inverse_temperature
    pd.testing.assert_frame_equal(reweighted, moments(result, burn_in=200, inverse_temperature=2 * BETA,
                                                      run_inverse_temperature=BETA))
    read_back = RunTables(run_info=result.run_info, trajectory=result.trajectory)
    pd.testing.assert_frame_equal(temperature(read_back), temperature(result, burn_in=0, inverse_temperature=1.0))
