"""The initial width's search (tati/adaptation/width_search.py; Hoffman & Gelman 2014,
Algorithm 4): its rule as a pure function, and the search in HMC1, HMC2, NUTS and RWMH.

False-failure budget: 1e-3 over the search's statistical assertions (Hoeffding bounds, below).
"""

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed
from tati.adaptation import width_search
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


# HMC1 searches in HMC's kernel as HMC2 does (its search cut by a checkpoint: tests/samplers/
# test_proposal.py); its case runs with -m slow, for the suite's time.
@pytest.mark.parametrize("sampler", ["HMC2", "NUTS", pytest.param("HMC1", marks=pytest.mark.slow), "RWMH"])
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
    state = width_search.init(1.0)
    for acceptance, width, found in ((0.9, 2.0, 0.0), (0.7, 4.0, 0.0), (0.3, 4.0, 1.0)):
        state = width_search.update(state, tf.constant(acceptance, tf.float64))
        assert float(width_search.width(state)) == width and float(state.found) == found
    state = width_search.init(1.0)
    for acceptance, width, found in ((0.1, 0.5, 0.0), (float("nan"), 0.25, 0.0), (0.6, 0.25, 1.0)):
        state = width_search.update(state, tf.constant(acceptance, tf.float64))  # NaN counts as 0
        assert float(width_search.width(state)) == width and float(state.found) == found
    assert not bool(width_search.searching(state)) and float(state.probes) == 3.0
    state = width_search.update(width_search.init(1.0), tf.constant(0.9, tf.float64), go_on=tf.constant(False))
    assert float(state.found) == 1.0 and float(width_search.width(state)) == 1.0  # burn-in over: the width as it is


def test_stops_after_max_probes():
    """An acceptance that never crosses (a target flat in the width) stops after MAX_PROBES probes
    at 2^(MAX_PROBES - 1) times the start; the packed vector keeps the checkpoint's order."""
    state = width_search.init(1.0)
    while bool(width_search.searching(state)):
        state = width_search.update(state, tf.constant(1.0, tf.float64))
    assert float(state.probes) == width_search.MAX_PROBES
    assert float(width_search.width(state)) == pytest.approx(2.0 ** (width_search.MAX_PROBES - 1), rel=1e-12)
    assert width_search.State._fields == ("probes", "direction", "log_width", "found")
    np.testing.assert_array_equal(width_search.pack(state).numpy(), [float(x) for x in state])
