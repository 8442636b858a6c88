"""Outliers: a network's posterior under likelihood heteroscedastic_gaussian and under student_t, side by
side (the statistician's robust regression).

    python examples/robust_regression.py [--quick] [--plot robust.png]

Data (seeded): 120 points x uniform in [-2, 2], y = sin(2x) + N(0, 0.2^2), and 8% of the points
(x and y both drawn so) shifted by 1.5 to 3 up or down: gross outliers, as a faulty sensor or a typing
slip makes; 400 held-out points from the same law. Model: a 1-8-2 tanh network, prior N(0, 1) on every
parameter, in Bayesian units; two outputs per label, the mean (location) and a raw variance (squared
scale); likelihood `heteroscedastic_gaussian` or `student_t` (degrees_of_freedom 4, the default). NUTS,
2 walkers, the step width and metric adapted during burn-in after the warm start.

Printed: the lines the Gaussian run warns with (its held-out labels beyond the predictive's tails), then
per likelihood the held-out log predictive density per point, the rms distance of the predictive mean
from the true sin(2x) on a grid (how far the outliers pull the fit), the largest R-hat over the
parameters and the seconds.
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd

import tati
from count_regression import GRID, plot_bands  # the same x grid and side-by-side figure
NOISE, SHARE = 0.2, 0.08


def data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, n)
    y = np.sin(2.0 * x) + NOISE * rng.normal(size=n)
    out = rng.random(n) < SHARE
    y[out] += rng.choice([-1.0, 1.0], out.sum()) * rng.uniform(1.5, 3.0, out.sum())
    return x[:, None], y[:, None]


def run(likelihood, train, test, quick):
    """(the warnings' lines, the table row, the band on GRID) of one likelihood."""
    burn_in, steps = (150, 400) if quick else (500, 1500)  # 400: XLA pays from there (config/compilation.py)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        sim = tati.Simulation(dataset=train, hidden_dimension=[8], hidden_activation="tanh", likelihood=likelihood,
                              prior_standard_deviation=1.0, sampler="NUTS", number_walkers=2, burn_in_steps=burn_in,
                              max_steps=steps, dtype="float64", seed=1)
        result = sim.sample()
        _, lpd = sim.predictive(*test)
    band, _ = sim.predictive(GRID)
    pulled = float(np.sqrt(np.mean(np.square(band["mean_0"] - np.sin(2.0 * GRID[:, 0])))))
    row = {"likelihood": likelihood, "test lpd per point": lpd / len(test[0]), "mean's rms from sin(2x)": pulled,
           "largest R-hat": result.convergence()["r_hat"].max(), "seconds": time.perf_counter() - start}
    said = [str(w.message) for w in caught if "residuals" in str(w.message) or "held-out" in str(w.message)]
    return said, row, band


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs (150 + 250 NUTS steps)")
    parser.add_argument("--plot", default=None, help="PNG of both likelihoods' bands")
    args = parser.parse_args()
    train, test = data(120, 3), data(400, 4)
    rows, bands = [], {}
    for likelihood in ("heteroscedastic_gaussian", "student_t"):
        said, row, bands[likelihood] = run(likelihood, train, test, args.quick)
        for line in said:
            print(line)
        rows.append(row)
    with pd.option_context("display.width", 120, "display.max_columns", None, "display.precision", 4):
        print(pd.DataFrame(rows).set_index("likelihood"))
    if args.plot is not None:
        try:
            plot_bands(bands, train, (np.sin(2.0 * GRID[:, 0]), "true sin(2x)"), args.plot, ylabel="y", step=None)
        except ImportError:
            print("install tati[plots] (matplotlib) for the figure")


if __name__ == "__main__":
    main()
