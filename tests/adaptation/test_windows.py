"""The metric's windows (tati/adaptation/windows.py): Stan's schedule, HMC's windows counted in
legs, and a metric window refused when too few legs of burn-in would follow it. Exact
assertions (the schedule is arithmetic), but for the last test, a measured run (see there)."""

import numpy as np
import pytest
import tensorflow as tf

import tati
from stats import seed
from tati.adaptation import windows


@pytest.mark.parametrize("burn_in, first, ends", [
    # Stan's reference manual ("Automatic parameter tuning"): 1000 warm-up iterations give an
    # initial buffer of 75, windows of 25, 50, 100, 200 and 500 (the last stretched), and a
    # terminal buffer of 50.
    (1000, 75, [100, 150, 250, 450, 950]),
    (2000, 75, [100, 150, 250, 450, 850, 1950]),
    (150, 75, [100]),  # 75 + 25 + 50: one window
    # Fewer than 150: 15% / 75% / 10% (Stan's rule for a short warm-up), one window.
    (100, 15, [90]),
    (20, 3, [18]),
    (19, 0, []),  # Stan turns the adaptation off below 20
])
def test_stans_schedule(burn_in, first, ends):
    assert windows.metric_windows(burn_in) == (first, ends)


def test_collecting_and_window_end_follow_the_schedule():
    """Draws of steps first < k <= the last end; a window ends at each of its ends."""
    first, ends = windows.metric_windows(1000)
    ends_tensor = tf.constant(ends, tf.int64)
    collecting = windows.collecting(tf.range(0, 1001, dtype=tf.int64), first, ends_tensor).numpy()
    assert np.flatnonzero(collecting).tolist() == list(range(76, 951))
    near = sorted({k + i for k in [0, 1000] + ends for i in (-1, 0, 1)})
    assert [k for k in near if bool(windows.window_end(tf.constant(k, tf.int64), ends_tensor))] == ends


def test_leg_windows():
    """HMC's windows in legs: 25, 50, 100, ...; open from LEG_METRIC_START to LEG_METRIC_END of
    burn-in; window 1 closes at its 50th leg if 100 more legs would fit before the terminal
    ones; a closed window resets its legs and draws, counts the window only where taken."""
    assert windows.window_legs(tf.constant([0.0, 1.0, 2.0], tf.float64)).numpy().tolist() == [25.0, 50.0, 100.0]
    f64, burn_in = tf.float64, 10000
    state = windows.LegWindow(*(tf.constant(x, f64) for x in (1.0, 50.0, 400.0, 0.0)))
    yes, no = tf.constant(True), tf.constant(False)
    now = tf.constant(5000.0, f64)
    opened = windows.leg_window_open(state, now, burn_in, tf.constant(1000.0, f64))
    assert bool(opened) and not bool(windows.leg_window_open(state, tf.constant(9000.0, f64), burn_in, 1000.0))
    assert not bool(windows.leg_collecting(opened, yes, tf.constant(1499.0, f64), burn_in))
    collecting = windows.leg_collecting(opened, yes, now, burn_in)

    def closes(legs_left):
        return [bool(x) for x in windows.leg_window_closes(state, collecting, opened, yes, now, burn_in,
                                                           tf.constant(legs_left, f64), yes)]
    assert closes(300.0) == [True, False] and closes(299.0) == [False, False]
    taken = windows.leg_window_next(state, yes, no, yes)
    assert [float(x) for x in taken] == [2.0, 0.0, 0.0, 0.0]
    refused = windows.leg_window_next(state, yes, yes, no)
    assert [float(x) for x in refused] == [1.0, 0.0, 0.0, 1.0]
    np.testing.assert_array_equal(windows.pack(windows.leg_window_next(state, no, no, no)).numpy(),
                                  [1.0, 50.0, 400.0, 0.0])


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
    monkeypatch.setattr(windows, "MIN_LEGS_AFTER_WINDOW", 0)
    assert run(300).metric_windows() >= 1
