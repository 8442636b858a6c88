"""Counts that vary more than Poisson's: a network's posterior under likelihood poisson and under
negative_binomial, side by side (the statistician's first check of count data: overdispersion).

    python examples/count_regression.py [--quick] [--plot counts.png]

Data (seeded): 120 points x uniform in [-2, 2], counts y of mean exp(sin(2x) + 1) from a negative
binomial of dispersion 0.5 (variance mean + 0.5 mean^2: 2.4 to 4.7 times Poisson's at the means
here); 400 held-out points from the same law. Model: a 1-8-k tanh network, prior N(0, 1) on every
parameter, in Bayesian units; likelihood `poisson` (one output, the log of the rate) or
`negative_binomial` (two outputs, the log of the mean and a raw dispersion). NUTS, 2 walkers, the
step width and metric adapted during burn-in after the warm start.

Printed: the line the Poisson run warns with (its counts vary more than Poisson's allow), then per
likelihood the held-out log predictive density per point, how often the central 95% band of the
posterior predictive covers a held-out count (at least 0.95 for a right model: counts are discrete,
so a band's edges hold some probability of their own), the largest R-hat over the parameters and
the seconds. Poisson's band is too narrow.
"""

import argparse
import time

import numpy as np
import pandas as pd

import tati

GRID = np.linspace(-2.0, 2.0, 81)[:, None]
DISPERSION = 0.5


def data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, n)
    mean = np.exp(np.sin(2.0 * x) + 1.0)
    r = 1.0 / DISPERSION
    y = rng.negative_binomial(r, r / (r + mean))
    return x[:, None], y[:, None].astype(np.float64)


def run(likelihood, train, test, quick):
    """(Simulation, the table row, the band on GRID) of one likelihood."""
    burn_in, steps = (150, 300) if quick else (500, 1500)
    start = time.perf_counter()
    sim = tati.Simulation(dataset=train, hidden_dimension=[8], hidden_activation="tanh", likelihood=likelihood,
                          prior_standard_deviation=1.0, sampler="NUTS", number_walkers=2, burn_in_steps=burn_in,
                          max_steps=steps, dtype="float64", seed=1)
    result = sim.sample()
    table, lpd = sim.predictive(*test)
    covered = float(np.mean((table["lower_0"] <= test[1][:, 0]) & (test[1][:, 0] <= table["upper_0"])))
    band, _ = sim.predictive(GRID)
    row = {"likelihood": likelihood, "test lpd per point": lpd / len(test[0]), "95% band covers": covered,
           "largest R-hat": result.convergence()["r_hat"].max(), "seconds": time.perf_counter() - start}
    return sim, row, band


def plot_bands(bands, train, truth, path, ylabel="count y", step="mid"):
    """Each likelihood's predictive band and mean on GRID beside `truth` (values, label) and the run's data,
    one panel per likelihood, sharing y (robust_regression.py draws its figure so too, step None: a
    continuous band)."""
    from tati.analysis import figures
    figure, axes = figures.new_figure(columns=len(bands), width=9.2, height=3.4)
    axes[0, 1].sharey(axes[0, 0])
    for ax, (likelihood, band) in zip(axes[0], bands.items()):
        ax.fill_between(GRID[:, 0], band["lower_0"], band["upper_0"], step=step, color="tab:blue", alpha=0.25,
                        linewidth=0, label="central 95% band")
        ax.plot(GRID[:, 0], band["mean_0"], color="tab:blue", label="predictive mean")
        ax.plot(GRID[:, 0], truth[0], "--", color="black", linewidth=1, label=truth[1])
        ax.plot(train[0][:, 0], train[1][:, 0], "o", markerfacecolor="none", color="tab:red", markersize=4,
                markeredgewidth=0.8, label="run's data")
        ax.set_title(f"likelihood {likelihood}")
        ax.set_xlabel("x")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel(ylabel)
    figures.legend_above(figure, axes)
    figures.save(figure, path)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short runs (150 + 150 NUTS steps)")
    parser.add_argument("--plot", default=None, help="PNG of both likelihoods' bands")
    args = parser.parse_args()
    train, test = data(120, 3), data(400, 4)
    rows, bands = [], {}
    for likelihood in ("poisson", "negative_binomial"):
        sim, row, bands[likelihood] = run(likelihood, train, test, args.quick)
        for note in sim.notes:
            print(note)
        rows.append(row)
    with pd.option_context("display.width", 120, "display.precision", 4):
        print(pd.DataFrame(rows).set_index("likelihood"))
    if args.plot is not None:
        try:
            plot_bands(bands, train, (np.exp(np.sin(2.0 * GRID[:, 0]) + 1.0), "true mean"), args.plot)
        except ImportError:
            print("install tati[plots] (matplotlib) for the figure")


if __name__ == "__main__":
    main()
