"""A Bayesian network on scikit-learn's diabetes data: MAP, ensemble, SWAG, HMC2 and NUTS.

Test MSE and test log predictive density of each in one table, as in the results section of
the essay among the source documents (001_ed9d4b16a3fef3fd.txt).

    python examples/bayesian_diabetes.py [--quick] [--methods MAP,ensemble,SWAG,HMC2,NUTS]
        [--table results.csv] [--plot PREFIX]

Needs scikit-learn, whose package ships the data (no download): pip install tati[examples].

Data: the 442 patients of sklearn.datasets.load_diabetes, 10 inputs (age, sex, body mass
index, blood pressure, six blood serum measurements), target a measure of disease progression
one year later. A fixed split (seeded: --split-seed) keeps 88 patients (20%) for testing;
inputs and target are standardised with the training part's mean and standard deviation, so
a test MSE of 1 is about what predicting the training mean gives, and every number is in units
of the target's standard deviation.

Model: a 10-5-2 tanh network whose outputs are the mean and the raw variance of y
(likelihood heteroscedastic_gaussian, as the essay's networks), prior N(0, s^2) on every
parameter (s = 1), in Bayesian units (inverse_temperature 1 samples the posterior). Why a
network and not a Bayesian linear model, whose posterior NUTS would sample best: the essay's
subject is a network's posterior, with the symmetries and several modes that make an
ensemble differ from a MAP; 5 hidden units are enough on data this close to linear and keep
NUTS (whose cost grows with the parameters' number, here 67) to about a minute.

- MAP: gradient descent with the essay's exponentially decaying learning rate;
- deep ensemble: the same from 6 independent initialisations (6 walkers of fit());
- SWAG: SGD from the MAP with mini-batches of 32 at the constant rate 5e-4 (half the MAP
  schedule's starting rate), rank 20 (tati.bayes.swag);
- HMC2 (4 walkers) and NUTS (2 walkers): nothing set but burn_in_steps and max_steps; step
  width and diagonal metric adapt during burn-in.

Printed and written (--table): per method the number of parameter draws the predictive
averages over (at most 1000), test MSE of the predictive mean, test log predictive density per
point (LogSumExp over the draws - log n, tati.bayes.predictive), the fraction of test points inside
the 95% predictive band, and seconds; also the baseline N(training mean, training variance).
With --plot PREFIX (matplotlib): PREFIX_traces.png and PREFIX_autocorrelation.png (NUTS's
walkers, else HMC2's, by tati.analysis.traces and .autocorrelation), PREFIX_marginals.png
(every method's draws of the same parameters) and PREFIX_residuals.png (test residuals
y - predictive mean per method, and over the predictive standard deviation).
"""

import argparse
import sys
import time

import numpy as np
import pandas as pd

try:
    from sklearn.datasets import load_diabetes
except ImportError:
    sys.exit("bayesian_diabetes.py needs scikit-learn for its data: pip install tati[examples]")

import tati
from tati.bayes.swag import swag

METHODS = ("MAP", "ensemble", "SWAG", "HMC2", "NUTS")
# Shown in the figures: the output biases of the mean (bias5) and of the raw variance (bias6),
# which no relabelling or sign flip of the hidden units changes, and hidden unit 0's weight into
# the mean (weight50), which flips sign with the unit: one mode per sign.
SHOWN = ["bias5", "bias6", "weight50"]
TEST_FRACTION = 0.2
DRAWS = 1000  # parameter draws of the predictive, thinned evenly (tati.bayes.predictive)
Z95 = 1.959964
TRACE_ROWS = 500  # rows per walker drawn in the traces figure, thinned evenly


def data(split_seed):
    """((x, y) training, (x, y) test), standardised by the training part's moments."""
    x, y = load_diabetes(return_X_y=True)
    order = np.random.default_rng(split_seed).permutation(len(x))
    test, train = np.sort(order[:round(TEST_FRACTION * len(x))]), np.sort(order[round(TEST_FRACTION * len(x)):])
    x_mean, x_sd = x[train].mean(axis=0), x[train].std(axis=0)
    y_mean, y_sd = y[train].mean(), y[train].std()
    scaled = ((x - x_mean) / x_sd, ((y - y_mean) / y_sd)[:, None])
    return tuple((scaled[0][part], scaled[1][part]) for part in (train, test))


def model_options(train, prior, hidden, seed):
    return dict(dataset=train, hidden_dimension=[hidden], hidden_activation="tanh", output_dimension=2,
                output_activation="linear", likelihood="heteroscedastic_gaussian",
                prior_standard_deviation=prior, dtype="float64", seed=seed)


def run_method(name, options, quick):
    """(Simulation, the parameter draws as trajectory rows, the sampler's Result or None)."""
    fit = dict(optimizer="GradientDescent", learning_rate=1e-3, learning_rate_decay_rate=0.1,
               learning_rate_decay_steps=3000, max_steps=3000, every_nth=100)
    if name in ("MAP", "ensemble"):
        sim = tati.Simulation(**options, **fit, number_walkers=6 if name == "ensemble" else 1)
        return sim, sim.fit().trajectory.groupby("id").tail(1), None
    if name == "SWAG":
        sim = tati.Simulation(**options, **fit)
        sim.fit()
        # half the MAP schedule's starting rate: at 1e-3 SGD with mini-batches diverged for 2 of 6
        # seeds, at 2e-4 the iterates stay so close to the MAP that SWAG is hardly wider
        sgd = tati.Simulation(**options, optimizer="GradientDescent", learning_rate=5e-4, batch_size=32,
                              max_steps=1000 if quick else 4000, every_nth=20, initial_parameters=sim.parameters)
        return sgd, swag(sgd.fit().trajectory, rank=20, burn_in=200).sample(500, seed=options["seed"]), None
    # HMC2's steps are leapfrog steps (NUTS takes about 90 per transition here), NUTS's transitions;
    # HMC2's legs after burn-in reach a few hundred steps: --quick leaves it 3000 for a few legs each
    burn_in, total = {"HMC2": (1000, 4000), "NUTS": (100, 300)}[name] if quick else \
        {"HMC2": (2000, 8000), "NUTS": (500, 1500)}[name]
    sim = tati.Simulation(**options, sampler=name, number_walkers=4 if name == "HMC2" else 2,
                          burn_in_steps=burn_in, max_steps=total)
    result = sim.sample()
    return sim, result.trajectory[result.trajectory.step > burn_in], result


def compare(methods, train, test, prior, hidden, seed, quick):
    rows, residuals, draws_of, samplers = {}, {}, {}, {}
    y = test[1][:, 0]
    for name in methods:
        start = time.perf_counter()
        sim, draws, result = run_method(name, model_options(train, prior, hidden, seed), quick)
        table, lpd = sim.predictive(test[0], test[1], trajectory=draws, burn_in=-1, draws=DRAWS)
        residual = y - table["mean_0"].to_numpy()
        # the band's half-width as 1.96 predictive standard deviations (exact for one Gaussian)
        scale = (table["upper_0"] - table["lower_0"]).to_numpy() / (2.0 * Z95)
        residuals[name] = (residual, residual / scale)
        draws_of[name] = draws
        if result is not None:
            samplers[name] = (result, sim.options["burn_in_steps"])
        inside = (table["lower_0"] <= y) & (y <= table["upper_0"])
        rows[name] = {"draws": min(len(draws), DRAWS), "test MSE": float(np.mean(residual ** 2)),
                      "test lpd per point": lpd / len(y), "95% band coverage": float(inside.mean()),
                      "seconds": time.perf_counter() - start}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "method"
    return table, residuals, draws_of, samplers


def baseline(train, test):
    """(MSE, lpd per point) of predicting N(training mean, training variance) everywhere."""
    mean, sd = train[1].mean(), train[1].std()
    y = test[1][:, 0]
    lpd = -0.5 * np.mean(((y - mean) / sd) ** 2) - np.log(sd) - 0.5 * np.log(2.0 * np.pi)
    return float(np.mean((y - mean) ** 2)), float(lpd)


def matplotlib_or_hint():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure")
        return None


def shrink(path):
    """Rewrite the PNG with a 64-colour palette (Pillow, which matplotlib needs): a third of
    the size, no visible change."""
    from PIL import Image
    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(64, method=Image.Quantize.MEDIANCUT)
    palette.save(path, optimize=True)


def draw_sampler_figures(samplers, prefix):
    """Traces and autocorrelation of SHOWN for NUTS (else HMC2), by tati.analysis."""
    from tati.analysis import autocorrelation, traces
    from tati.analysis.autocorrelation import plot as plot_autocorrelation
    from tati.analysis.traces import plot as plot_traces
    name = "NUTS" if "NUTS" in samplers else next(iter(samplers))
    result, burn_in = samplers[name]
    table = traces(result, quantities=["loss"], parameters=SHOWN, burn_in=burn_in)
    every = max(1, -(-int(table.groupby("id").size().max()) // TRACE_ROWS))  # a lighter PNG
    plot_traces(table.groupby("id").nth(slice(None, None, every)), f"{prefix}_traces.png", burn_in=burn_in)
    shrink(f"{prefix}_traces.png")
    print(f"wrote {prefix}_traces.png ({name})")
    table = autocorrelation(result, burn_in=burn_in, parameters=SHOWN, components=0)
    plot_autocorrelation(result, table, f"{prefix}_autocorrelation.png", burn_in=burn_in, parameters=SHOWN,
                         components=0)
    shrink(f"{prefix}_autocorrelation.png")
    print(f"wrote {prefix}_autocorrelation.png ({name})")
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(f"{name}: autocorrelation of the parameters shown")
        print(table[["coordinate", "tau", "ess", "r_hat", "verdict"]].to_string(index=False))


def draw_marginals(draws_of, path):
    plt = matplotlib_or_hint()
    if plt is None:
        return
    figure, axes = plt.subplots(1, len(SHOWN), figsize=(3.3 * len(SHOWN), 3.3), layout="constrained")
    colours = {"SWAG": "tab:green", "HMC2": "tab:orange", "NUTS": "tab:blue"}
    for axis, parameter in zip(axes, SHOWN):
        values = np.concatenate([d[parameter].to_numpy() for d in draws_of.values()])
        edges = np.linspace(values.min(), values.max(), 41)
        for name, colour in colours.items():
            if name in draws_of:
                axis.hist(draws_of[name][parameter], bins=edges, density=True, histtype="step", lw=1.5,
                          color=colour, label=name)
        if "ensemble" in draws_of:
            for k, value in enumerate(draws_of["ensemble"][parameter]):
                axis.axvline(value, color="0.4", lw=1.0, ls=":", label="ensemble members" if k == 0 else None)
        if "MAP" in draws_of:
            axis.axvline(float(draws_of["MAP"][parameter].iloc[0]), color="tab:red", lw=1.5, label="MAP")
        axis.set_xlabel(parameter)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("density")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside upper center", ncols=len(labels), frameon=False)
    figure.savefig(path, dpi=90)
    plt.close(figure)
    shrink(path)
    print(f"wrote {path}")


def draw_residuals(residuals, table, path):
    """Per method: the test residuals y - predictive mean, and the same over the predictive
    standard deviation (band half-width / 1.96) beside N(0, 1), where overconfidence shows."""
    plt = matplotlib_or_hint()
    if plt is None:
        return
    names = list(residuals)
    figure, axes = plt.subplots(2, len(names), figsize=(2.6 * len(names), 5.0), sharey="row", layout="constrained",
                                squeeze=False)
    largest = max(np.abs(r).max() for r, _ in residuals.values())
    edges = np.linspace(-largest, largest, 21)
    scaled_edges = np.linspace(-5.0, 5.0, 26)
    z = np.linspace(-5.0, 5.0, 201)
    for column, name in enumerate(names):
        raw, scaled = residuals[name]
        top, bottom = axes[0, column], axes[1, column]
        top.hist(raw, bins=edges, color="tab:blue", alpha=0.7)
        top.set_title(f"{name}: MSE {table.loc[name, 'test MSE']:.3f}", fontsize=10)
        top.set_xlabel("y - predictive mean")
        bottom.hist(np.clip(scaled, -5.0, 5.0), bins=scaled_edges, density=True, color="tab:blue", alpha=0.7,
                    label="test points (beyond 5: at 5)")
        bottom.plot(z, np.exp(-0.5 * z ** 2) / np.sqrt(2.0 * np.pi), color="black", lw=1.0, label="N(0, 1)")
        bottom.set_title(f"95% band covers {table.loc[name, '95% band coverage']:.2f}", fontsize=10)
        bottom.set_xlabel("(y - mean) / predictive sd")
        for axis in (top, bottom):
            axis.axvline(0.0, color="0.3", lw=0.8)
            axis.grid(alpha=0.3)
    axes[0, 0].set_ylabel("test points")
    axes[0, 0].yaxis.get_major_locator().set_params(integer=True)
    axes[1, 0].set_ylabel("density")
    handles, labels = axes[1, 0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False)
    figure.savefig(path, dpi=90)
    plt.close(figure)
    shrink(path)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer steps: HMC2 4000 (1000 of burn-in), NUTS 300 (100), SWAG 1000")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, of " + ",".join(METHODS))
    parser.add_argument("--prior", type=float, default=1.0, help="prior standard deviation s")
    parser.add_argument("--hidden", type=int, default=5, help="hidden units")
    parser.add_argument("--seed", type=int, default=1, help="seed of initialisations and samplers")
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the train/test split")
    parser.add_argument("--table", default=None, help="write the table to this CSV file")
    parser.add_argument("--plot", default=None, help="prefix of the PNG files")
    args = parser.parse_args()
    methods = args.methods.split(",")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        parser.error(f"--methods: unknown method {unknown[0]} (choose from {','.join(METHODS)})")
    start = time.perf_counter()
    train, test = data(args.split_seed)
    print(f"{len(train[1])} training and {len(test[1])} test patients; inputs and target standardised "
          f"by the training part; variance of the test targets {test[1].var():.4f}")
    table, residuals, draws_of, samplers = compare(methods, train, test, args.prior, args.hidden, args.seed,
                                                   args.quick)
    mse, lpd = baseline(train, test)
    print(f"baseline N(training mean, training variance): test MSE {mse:.4f}, test lpd per point {lpd:.4f}")
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.precision", 4):
        print(table)
    for name in table.index:
        print(f"{name}: test MSE {table.loc[name, 'test MSE']:.4f}, "
              f"test lpd per point {table.loc[name, 'test lpd per point']:.4f}, "
              f"coverage {table.loc[name, '95% band coverage']:.4f}")
    if args.table:
        table.to_csv(args.table)
        print(f"wrote {args.table}")
    if args.plot:
        if matplotlib_or_hint() is not None:
            if samplers:
                draw_sampler_figures(samplers, args.plot)
            draw_marginals(draws_of, f"{args.plot}_marginals.png")
            draw_residuals(residuals, table, f"{args.plot}_residuals.png")
    print(f"took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
