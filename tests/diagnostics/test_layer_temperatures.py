"""The momentum diagnostics per layer (issue 20): the momenta table of record_momenta, its
refusal for samplers without persistent momenta, layer_temperatures and the summary's table.

Budget: each statistical test fails a correct implementation with probability at most 1e-3,
Bonferroni-split over the intervals it checks (taken at level 1 - 1e-3 / intervals); the
overheated cases are checked for power (their expected fractions lie far outside).
"""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import tati
from stats import seed, z_critical
from tati.diagnostics.summary import summarise
from tati.diagnostics import layer_temperatures
from tati.errors import InputError
from tati.config.preflight import check
from tati.recording.columns import momenta_columns

NAMES = [f"weight{i}" for i in range(6)] + ["bias0", "bias1", "bias2"]
GROUPS = {"layer1/weights": NAMES[:4], "layer1/biases": NAMES[6:8], "output/weights": NAMES[4:6],
          "output/biases": NAMES[8:]}


def network(**options):
    """The built-in network 2-2-1 (9 parameters, four tensors) on two_clusters, float64."""
    return tati.Simulation(**dict(dict(hidden_dimension=[2], dtype="float64", seed=seed(41)), **options))


def synthetic_run(rng, walkers, steps, noise_times, decay=0.7):
    """The momenta table and trajectory of `walkers` chains whose momenta (scaled, unit mass)
    follow p <- a p + sqrt(1 - a^2) G with the noise added `noise_times` times (stationary
    N(0, noise_times)), and whose positions are exact draws of N(0, K^-1) with gradients K q."""
    stiffness = np.linspace(0.5, 3.0, len(NAMES))
    p = np.sqrt(noise_times) * rng.standard_normal((walkers, len(NAMES)))
    momenta = np.empty((steps, walkers, len(NAMES)))
    for n in range(steps):
        p = decay * p + sum(np.sqrt(1 - decay ** 2) * rng.standard_normal(p.shape) for _ in range(noise_times))
        momenta[n] = p
    q = rng.standard_normal(momenta.shape) / np.sqrt(stiffness)
    ids = np.tile(np.arange(walkers), steps)
    step = np.repeat(np.arange(1, steps + 1), walkers)
    table = pd.DataFrame(np.concatenate([momenta, q * stiffness], axis=2).reshape(steps * walkers, -1),
                         columns=momenta_columns(NAMES)[2:])
    table.insert(0, "step", step)
    table.insert(0, "id", ids)
    trajectory = pd.DataFrame(q.reshape(steps * walkers, -1), columns=NAMES)
    trajectory.insert(0, "loss", 0.0)
    trajectory.insert(0, "step", step)
    trajectory.insert(0, "id", ids)
    return table, trajectory


@pytest.mark.statistical
def test_layer_temperatures_of_exact_and_overheated_momenta():
    """Three walkers, 3000 rows each after a burn-in of 100: with exact Gaussian momenta T_0.99
    and the kinetic temperature lie in their intervals for the whole vector and every layer, and
    the configurational temperature of a Gaussian U is within z of 1 (2 x 5 intervals and 5
    z-tests, 1e-3 / 15 each); with the noise added twice (temperature 2) T_0.99 falls below its
    interval and the kinetic temperature above, per layer too (expected fractions 0.93 for one
    degree of freedom and less for more, against intervals of width ~0.01). The readings
    assumed are the rows over the AR(1)'s autocorrelation time, fewer than the rows."""
    rng = np.random.default_rng(seed(42))
    level = 1 - 1e-3 / 15
    for times in (1, 2):
        momenta, trajectory = synthetic_run(rng, 3, 3100, times)
        table = layer_temperatures(momenta, trajectory, GROUPS, burn_in=100, level=level)
        print(times, table.round(4).to_string(), sep="\n")
        assert list(table.index) == ["all"] + list(GROUPS)
        assert list(table.dof) == [9, 4, 2, 2, 1]
        assert np.all(table.readings < 9000 / 1.5) and np.all(table.readings > 9000 / 4)
        inside = (table.low <= 0.99) & (0.99 <= table.high)
        kinetic = table.kinetic_temperature
        if times == 1:
            assert inside.all()
            assert np.all((table.kinetic_low <= kinetic) & (kinetic <= table.kinetic_high))
            error = np.abs(table.configurational_temperature - 1) / table.configurational_error
            assert np.all(error < z_critical(1e-3, 15)), error
        else:
            assert np.all(table.high < 0.99)
            assert np.all(kinetic > table.kinetic_high)


def test_layer_temperatures_bad_input():
    momenta, trajectory = synthetic_run(np.random.default_rng(0), 1, 10, 1)
    with pytest.raises(InputError, match="after burn_in 10"):
        layer_temperatures(momenta, trajectory, burn_in=10)
    with pytest.raises(InputError, match="momentum_ columns"):
        layer_temperatures(trajectory)
    no_momenta = tati.Result(pd.DataFrame(), trajectory, pd.DataFrame())
    with pytest.raises(InputError, match="record_momenta=True"):
        no_momenta.layer_temperatures()


def test_momenta_table_rows_columns_and_values(tmp_path):
    """BAOAB, 2 walkers, a row every 10 steps, momenta_file: the table has the trajectory's
    rows (id, step) and a momentum and a gradient column per parameter; twice the run info's
    kinetic energy is the row's |p|^2 (exact); its gradients are those of the loss at the
    trajectory's parameters of the row; the file reads back as the DataFrame. SGHMC with mass 2
    and rescaled masses records M^-1/2 p: its kinetic energy is again half the row's |p|^2."""
    path = tmp_path / "momenta.csv"
    sim = network(number_walkers=2, max_steps=40, every_nth=10, momenta_file=str(path))
    result = sim.sample()
    momenta, trajectory = result.momenta, result.trajectory
    assert list(momenta.columns) == ["id", "step"] + [f"momentum_{n}" for n in NAMES] + [f"gradient_{n}" for n in NAMES]
    assert momenta[["id", "step"]].equals(trajectory[["id", "step"]]) and len(momenta) == 8
    squares = (momenta.filter(like="momentum_") ** 2).sum(axis=1)
    np.testing.assert_allclose(0.5 * squares, result.run_info.kinetic_energy, rtol=1e-12)
    last = trajectory.groupby("id").tail(1)
    sim.parameters = last[NAMES].to_numpy()
    np.testing.assert_allclose(momenta.groupby("id").tail(1).filter(like="gradient_").to_numpy(),
                               sim.gradients(), rtol=1e-10, atol=1e-12)
    pd.testing.assert_frame_equal(pd.read_csv(path), momenta, check_exact=True)
    assert result.parameter_groups == GROUPS

    sghmc = network(sampler="SGHMC", mass=2.0, friction_constant=4.0, step_width=0.05, batch_size=20,
                    gradient_noise_estimator="adam", mass_rescaling_steps=5, mass_safety_factor=1e4,
                    max_steps=60, every_nth=3, record_momenta=True)
    result = sghmc.sample()
    assert np.any(sghmc.sampler.mass_weights.numpy() > 1)  # the diagonal mass M_0 W moved
    squares = (result.momenta.filter(like="momentum_") ** 2).sum(axis=1)
    np.testing.assert_allclose(0.5 * squares, result.run_info.kinetic_energy, rtol=1e-12)


def test_every_sampler_with_persistent_momenta_records_them():
    """GLA2 with an adapted mass (whitened momenta) and CCAdL on a potential: half the row's
    |M^-1/2 p|^2 is the run info's kinetic energy (exact), and a potential is one group."""
    import tensorflow as tf

    def potential(q):
        return 0.5 * tf.reduce_sum(q ** 2 * tf.constant([1.0, 4.0, 9.0], q.dtype))

    for sampler, extra in (("GLA2", dict(adapt_mass=True, burn_in_steps=40)), ("CCAdL", {})):
        sim = tati.Simulation(potential=potential, initial_parameters=[0.1, 0.2, 0.3], sampler=sampler,
                              number_walkers=2, max_steps=60, every_nth=3, dtype="float64", record_momenta=True,
                              seed=seed(43), **extra)
        result = sim.sample()
        squares = (result.momenta.filter(like="momentum_") ** 2).sum(axis=1)
        np.testing.assert_allclose(0.5 * squares, result.run_info.kinetic_energy, rtol=1e-12)
        assert list(result.momenta.columns[2:5]) == ["momentum_param0", "momentum_param1", "momentum_param2"]
        assert list(result.layer_temperatures().index) == ["all"]
        if sampler == "GLA2":
            assert np.all(sim.sampler.metric_scales() != 1.0)  # the mass did adapt


@pytest.mark.parametrize("sampler, why", [("HMC2", "redraws its momenta"), ("NUTS", "redraws its momenta"),
                                          ("SGLD", "has no momenta"), ("RWMH", "has no momenta")])
def test_refused_without_persistent_momenta(sampler, why):
    with pytest.raises(InputError, match=f"record_momenta: sampler {sampler} {why}") as error:
        check(dict(sampler=sampler, record_momenta=True))
    assert "\n" not in str(error.value)
    with pytest.raises(InputError, match="record_momenta"):  # the file implies recording
        check(dict(sampler=sampler, momenta_file="momenta.csv"))


def test_refused_for_fit_and_distribution():
    with pytest.raises(InputError, match="optimizer has no momenta"):
        check(dict(record_momenta=True), method="fit")
    with pytest.raises(InputError, match="distribution=mirrored"):
        check(dict(record_momenta=True, distribution="mirrored"))
    with pytest.raises(InputError, match="not to fit"):
        network(record_momenta=True, max_steps=2).fit()


def test_cli_refuses_hmc_in_one_line():
    done = subprocess.run([sys.executable, "-m", "tati.cli.sample", "--sampler", "HMC2", "--record_momenta", "true"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "record_momenta: sampler HMC2 redraws its momenta" in done.stderr


@pytest.fixture(scope="module")
def baoab():
    """BAOAB on the network, 4 walkers x 1500 steps (200 of burn-in), a row every 5 steps;
    friction 5 decorrelates the momenta within a row or two, step 0.05 leaves BAOAB's momentum
    bias (1 - h^2 omega^2 / 4) far below the resolution."""
    sim = network(number_walkers=4, step_width=0.05, friction_constant=5.0, max_steps=1500, every_nth=5,
                  burn_in_steps=200, record_momenta=True)
    return sim, sim.sample()


def test_sampled_momenta_per_layer(baoab):
    """At the run's beta = 1 T_0.99 and the kinetic temperature lie in their intervals for
    every group (2 x 5 intervals at 1e-3 / 10); read at beta = 2 (momenta of temperature 1 are
    twice too hot for it) both fall outside per layer, T_0.99 below (0.93 expected for one
    degree of freedom) and the kinetic temperature above."""
    sim, result = baoab
    level = 1 - 1e-3 / 10
    table = result.layer_temperatures(1.0, burn_in=200, level=level)
    print(table.round(4).to_string())
    assert list(table.index) == ["all"] + list(GROUPS) and table.readings.iloc[0] > 700
    assert np.all((table.low <= 0.99) & (0.99 <= table.high))
    kinetic = table.kinetic_temperature
    assert np.all((table.kinetic_low <= kinetic) & (kinetic <= table.kinetic_high))
    hot = result.layer_temperatures(2.0, burn_in=200, level=level)
    assert np.all(hot.high < 0.99) and np.all(hot.kinetic_temperature > hot.kinetic_high)


def test_summary_prints_the_layer_table(baoab):
    sim, result = baoab
    text = summarise("tati-sample", sim, result, True)
    print(text)
    lines = text.splitlines()
    assert all(len(line) < 100 for line in lines), text
    head = [i for i, line in enumerate(lines) if line.startswith("  momenta per layer, ")]
    assert len(head) == 1
    rows = lines[head[0] + 2:head[0] + 7]
    assert [row.split()[:2] for row in rows] == [["all", "9"], ["layer1/weights", "4"], ["layer1/biases", "2"],
                                                  ["output/weights", "2"], ["output/biases", "1"]]
    for row in rows:
        assert row.split()[5] in ("ok", "hot", "cold") and row.split()[9] in ("ok", "hot", "cold"), row
