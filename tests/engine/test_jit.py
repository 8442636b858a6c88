"""jit_compile: the XLA-compiled loop runs the same dynamics as the graph loop. XLA draws
other (equally valid) stateless random numbers than TensorFlow's kernels, so the comparison
is exact only without noise; with noise it is reproducible and statistically right."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from stats import seed, t_critical


def tables(**options):
    options = dict(dict(dtype="float64", max_steps=40, every_nth=4, seed=seed(7)), **options)
    result = tati.Simulation(**options).sample()
    return [getattr(result, t).drop(columns="time_per_nth_step", errors="ignore")
            for t in ("run_info", "trajectory", "averages")]


@pytest.mark.parametrize("options", [
    dict(dataset="two_clusters", dataset_size=100, hidden_dimension=[4], sampler="BAOAB",
         number_walkers=2, friction_constant=0.0),
    dict(potential=lambda x: 0.5 * tf.reduce_sum(x ** 2, axis=1), potential_batched=True,
         initial_parameters=np.arange(12.0).reshape(4, 3) / 10, number_walkers=4, sampler="GLA2", friction_constant=0.0, covariance_blending=1.0,
         covariance_after_steps=5),
], ids=["network", "preconditioned"])
def test_without_noise_xla_and_graph_agree(options):
    """Zero friction switches the noise off: the same deterministic trajectory either way."""
    for graph, xla in zip(tables(**options), tables(**options, jit_compile=True)):
        pd.testing.assert_frame_equal(graph, xla, check_exact=False, rtol=1e-9, atol=1e-12)


def test_a_one_walker_potential_under_xla_is_the_batched_one():
    """XLA fails on tf.vectorized_map of a one-walker potential ("LLVM compilation error: Cannot allocate
    memory"), so up to UNROLLED_WALKERS walkers it calls the potential once per walker: NUTS's tables are
    those of the same potential written for the batch, bit for bit."""
    def one(x):
        return 0.5 * tf.reduce_sum(x ** 2 * tf.range(1.0, 4.0, dtype=x.dtype)) + tf.math.log1p(tf.exp(x[0]))

    def batch(x):
        return 0.5 * tf.reduce_sum(x ** 2 * tf.range(1.0, 4.0, dtype=x.dtype), axis=1) + tf.math.log1p(tf.exp(x[:, 0]))

    options = dict(initial_parameters=np.arange(12.0).reshape(4, 3) / 10, number_walkers=4, sampler="NUTS",
                   burn_in_steps=20, jit_compile=True)
    batched = tables(potential=batch, potential_batched=True, **options)
    for unrolled, expected in zip(tables(potential=one, **options), batched):
        pd.testing.assert_frame_equal(unrolled, expected)


@pytest.mark.statistical
def test_xla_hmc_is_reproducible_and_exact():
    """HMC2 on N(0, I_4) with 200 walkers under XLA: same seed, same tables; after burn-in (the
    default, 450 steps, which adapts width and leg length: its draws are not exact, 0.973 +-
    0.006 at these seeds) the variance is 1 within a Student-t bound across walkers
    (false-failure rate 1e-3)."""
    walkers = 200
    rng = np.random.default_rng(seed(4700))
    options = dict(potential=lambda x: 0.5 * tf.reduce_sum(tf.square(x), axis=1), potential_batched=True,
                   initial_parameters=rng.normal(size=(walkers, 4)), number_walkers=walkers,
                   sampler="HMC2", step_width=0.8, hamiltonian_dynamics_time=2.4, max_steps=900,
                   every_nth=1000, jit_compile=True)
    first, again = tables(**options), tables(**options)
    for a, b in zip(first, again):
        pd.testing.assert_frame_equal(a, b)
    sim = tati.Simulation(dtype="float64", **dict(options, seed=seed(8), every_nth=1))
    trajectory = sim.sample().trajectory
    trajectory = trajectory[trajectory.step > sim.options["burn_in_steps"]]
    squares = (trajectory[[f"param{i}" for i in range(4)]] ** 2).mean(axis=1).groupby(trajectory["id"]).mean()
    error = squares.std(ddof=1) / np.sqrt(walkers)
    assert abs(squares.mean() - 1.0) < t_critical(1e-3, walkers - 1) * error, (squares.mean(), error)
