"""The warm-up's pieces (tati/samplers/adaptation.py): the initial width's search (Hoffman &
Gelman 2014, Algorithm 4) in HMC1, HMC2, NUTS and RWMH, the width's restart after a metric
window, and a metric window refused when too few legs of burn-in would follow it.

False-failure budget: 1e-3 over the search's statistical assertions (Hoeffding bounds, below).
"""

import math

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed
from tati.samplers import adaptation
from tati.engine.registry import spec_of

SIGMA, D, WALKERS = 3.0, 10, 64
# x* = h* / sigma, where the mean one-step acceptance min(1, exp(-dH)) on N(0, sigma^2 I_10) is
# 0.5, from 400,000 draws in numpy: leapfrog (HMC2, NUTS) 1.2104, symplectic Euler (HMC1, BA
# and AB alike) 0.6659, a random-walk proposal (RWMH) 0.4428.
RIGHT = {"HMC2": 1.2104, "NUTS": 1.2104, "HMC1": 0.6659, "RWMH": 0.4428}


def found_width(sampler, start):
    """The width the search found from `start` times the right one, over the right one."""
    right = RIGHT[sampler] * SIGMA
    sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum((q / SIGMA) ** 2, axis=-1), potential_batched=True,
                          initial_parameters=np.random.default_rng(seed(4500)).normal(size=(WALKERS, D)) * SIGMA,
                          number_walkers=WALKERS, sampler=sampler, step_width=start * right, burn_in_steps=100,
                          max_steps=12, dtype="float64", seed=seed(46), warm_start=False)  # the search itself
    result = sim.sample()
    if spec_of(sampler).evaluates_target:  # the width of the first transition
        return result.run_info.loc[result.run_info.step == 1, "step_width"].iloc[0] / right
    return sim.sampler.found_step_width() / right


@pytest.mark.parametrize("sampler", ["HMC2", "NUTS", "HMC1", "RWMH"])
def test_initial_width_search_finds_the_scale_from_far_off(sampler):
    """From a start 100 times too wide and 100 times too narrow (64 walkers at exact draws of a
    10-D Gaussian of sd 3), the search halves or doubles 7 times: it stops at the first width
    whose pooled one-step acceptance crosses 0.5, so it lands at 100 / 128 = 0.78 and 128 / 100
    = 1.28 times the right width h* (the widths probed are 100 h* / 2^k and h* 2^k / 100).

    Leapfrog (HMC2, NUTS): exactly there. The mean acceptances (numpy) are 0.745 at 0.78 h*
    and 0.173 at 1.28 h* (0.024 at 1.56 h*, 0.858 at 0.64 h*), so by Hoeffding a wrong side
    has probability at most exp(-2 * 64 * 0.245^2) = 4.6e-4 (the others < 1.2e-6). (To 1e-6:
    HMC keeps its width in float32.)
    HMC1 and RWMH, whose acceptance falls off more slowly (0.68 and 0.60 at 0.78 h*): within a
    factor 4 of h*, which fails only if a width twice as far is on the wrong side too
    (acceptance 0.92 and 0.79 at 0.39 h*, 0.001 and 0.10 at 2.56 h*: below 2e-5)."""
    above, below = found_width(sampler, 100.0), found_width(sampler, 0.01)
    if sampler in ("HMC2", "NUTS"):
        assert above == pytest.approx(100.0 / 128.0, rel=1e-6) and below == pytest.approx(1.28, rel=1e-6), \
            (above, below)
    else:
        assert 0.25 < above < 4.0 and 0.25 < below < 4.0, (above, below)


def test_initial_width_search_steps():
    """Algorithm 4's rule as a pure function: the first probe sets the direction, the width
    doubles while the acceptance stays above 0.5 and is found at the first that does not."""
    state = adaptation.initial_width_start(1.0)
    for acceptance, width, found in ((0.9, 2.0, 0.0), (0.7, 4.0, 0.0), (0.3, 4.0, 1.0)):
        state = adaptation.initial_width_update(state, tf.constant(acceptance, tf.float64))
        assert float(tf.exp(state[2])) == width and float(state[3]) == found
    state = adaptation.initial_width_start(1.0)
    for acceptance, width, found in ((0.1, 0.5, 0.0), (float("nan"), 0.25, 0.0), (0.6, 0.25, 1.0)):
        state = adaptation.initial_width_update(state, tf.constant(acceptance, tf.float64))  # NaN counts as 0
        assert float(tf.exp(state[2])) == width and float(state[3]) == found
    state = adaptation.initial_width_update(adaptation.initial_width_start(1.0), tf.constant(0.9, tf.float64),
                                            go_on=tf.constant(False))
    assert float(state[3]) == 1.0 and float(tf.exp(state[2])) == 1.0  # burn-in over: the width as it is


def test_dual_averaging_restarts_at_the_width_over_the_smallest_growth():
    """After a metric window the width restarts at exp(log eps_n) / growth, mu at ten times that."""
    state = adaptation.dual_averaging_start(0.1)
    for acceptance in (0.2, 0.9, 0.5):
        state = adaptation.dual_averaging_update(state, tf.constant(acceptance, tf.float64), 0.8)
    restarted = adaptation.dual_averaging_restart(state, tf.constant(True), tf.constant(1e-3, tf.float64))
    count, h, log_step, log_step_bar, mu = restarted.numpy()
    assert count == 0.0 and h == 0.0 and log_step == log_step_bar
    assert log_step == pytest.approx(float(state[2]) + math.log(1e3), rel=1e-14)
    assert mu == pytest.approx(log_step + math.log(10.0), rel=1e-14)
    kept = adaptation.dual_averaging_restart(state, tf.constant(False), tf.constant(1e-3, tf.float64))
    np.testing.assert_array_equal(kept.numpy(), state.numpy())


def test_no_metric_window_closes_without_legs_left_to_adapt_the_width(monkeypatch):
    """HMC2 (4 walkers) on a Gaussian of sds 0.1, 0.3, 1 with legs of time T = 10 (fixed), about
    70 steps at the width adapted to the narrowest sd, in a burn-in of 300 steps: the first
    window has its 8 draws (2 legs) only after 30% of burn-in, where the steps left would hold
    fewer than MIN_LEGS_AFTER_WINDOW = 20 legs at the restarted width (the width over the
    smallest growth, about 0.1): the metric stays 1. Without that rule it takes the window (the
    control, measured); with a burn-in of 4000 steps the metric adapts (4 windows, measured)."""
    def run(burn_in):
        sim = tati.Simulation(potential=lambda q: 0.5 * tf.reduce_sum((q / [0.1, 0.3, 1.0]) ** 2, axis=-1),
                              potential_batched=True, initial_parameters=[0.1, -0.2, 0.5], number_walkers=4,
                              sampler="HMC2", hamiltonian_dynamics_time=10.0, adapt_trajectory_length=False,
                              burn_in_steps=burn_in, max_steps=burn_in, dtype="float64", seed=seed(47))
        sim.sample()
        return sim.sampler
    short = run(300)
    assert short.metric_windows() == 0 and np.all(short.metric_scales() == 1.0)
    assert run(4000).metric_windows() >= 1
    monkeypatch.setattr(adaptation, "MIN_LEGS_AFTER_WINDOW", 0)
    assert run(300).metric_windows() >= 1
