"""The UCI regression benchmark (Hernandez-Lobato and Adams 2015) with tati's methods.

    python tools/uci_benchmark.py DATA_FOLDER [--splits 0,1,...] [--methods map,nuts,...] [--quick]
        [--steps-factor K] [--likelihood student_t] [--csv splits.csv] [--plot summary.png] [--seed 1]

DATA_FOLDER holds one dataset in the format of the published experiments (as under
../shared/data/uci/): data.txt (whitespace-separated numbers, one row per example),
index_features.txt and index_target.txt (0-based columns), index_train_k.txt and
index_test_k.txt (0-based rows of split k; the splits are k = 0, 1, ... as far as both files
exist) and optionally n_hidden.txt (the hidden units; 50 without it).

Each split: inputs and target standardised with the training part's mean and sd (an input
constant on the training part is only centred); a network with one hidden layer of n_hidden relu
units whose two outputs are the mean and the raw variance of y (likelihood
heteroscedastic_gaussian; with --likelihood student_t the location and raw squared scale of a
Student-t of 4 degrees of freedom, its methods named so: "hmc2 student_t"), prior N(0, 1) on every
parameter, float64, inverse temperature 1 (the posterior). The methods and their settings are in
METHODS below; --quick shrinks their steps (QUICK) and, without --splits, runs split 0 only;
--steps-factor K multiplies the sampling methods' burn-in and steps (and names them so: "baoab x16").
Every method's draws go through Simulation.predictive: test RMSE of the predictive mean and test
log-likelihood per point (LogSumExp over the draws - log n), both in the target's original units (RMSE times sd_y; the
log-likelihood minus log sd_y), as in the published tables; and the share of test targets inside the
predictive's central 95% band (0.95 where the predictive is calibrated; the published tables do not give it).

Printed: a progress line per split and method (for a sampler with several walkers also the
R-hat of the loss across them after burn-in, the CSV's loss_r_hat: near 1 when the walkers
agree; for a Langevin sampler the draws' kinetic temperature, 2 beta K / d, near 1 and within
the measured width's 5% heat when it holds; and what the run's summary flags: walkers hot, cold,
blown up or far out, a kinetic energy or virial hot), then per method the mean +- standard error
over the splits, the seconds per split and the splits flagged (a walker flagged or a reading hot,
or the run failed), beside the published figures of the dataset (PUBLISHED, by the folder's
name). --csv writes every split and method; --plot the summary as a PNG.
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without installing

from tati.cli.common import run_command  # noqa: E402  (one line and exit 2 for bad input)
from tati.bayes import calibration  # noqa: E402
from tati.errors import InputError, SamplingError  # noqa: E402

PROG = "uci_benchmark.py"
# The benchmark's likelihood: two outputs, the mean and the raw variance of y; student_t (--likelihood) has the
# same two outputs with heavy tails (degrees_of_freedom 4, the Simulation's default)
LIKELIHOOD, LIKELIHOODS = "heteroscedastic_gaussian", ("heteroscedastic_gaussian", "student_t")
DRAWS = 1000  # parameter draws of the predictive at most, thinned evenly
LEVEL = 0.95  # the predictive's central band whose share of the test targets is reported (calibrated: LEVEL)
MAP_FIT = dict(optimizer="L-BFGS", max_steps=2000, every_nth=100)
# Each method's Simulation options; steps and burn_in are sampler steps (HMC2: leapfrog steps,
# NUTS: transitions), burn-in included. start_at_map: first fit the MAP (MAP_FIT) and sample from
# there. BAOAB, SGHMC, SGLD and pSGLD run with their defaults: with a likelihood, batch_size and no step_width
# they measure their mass from the gradient noise, their width (and friction), from a warm start
# (doc/samplers.md, "No tuning"); burn-in and draws are yacht's 200 + 200 epochs of 9 batches.
# SWAG's SGD takes learning_rate "measured": SWAG_RATE / the largest curvature
# of the training batches at the MAP (swag_learning_rate), half SGD's stability bound 2 / lambda;
# yacht's MAP reads about 2e9 there, where the earlier fixed 1e-7 diverged at its first step.
METHODS = {
    "map": dict(fit=MAP_FIT),
    "ensemble": dict(fit={**MAP_FIT, "number_walkers": 5}),
    "swag": dict(start_at_map=True, optimizer="GradientDescent", learning_rate="measured", batch_size=32,
                 steps=4000, every_nth=20, burn_in=1000, rank=20),
    "nuts": dict(sampler="NUTS", number_walkers=2, burn_in=500, steps=1500, jit_compile=True),
    "hmc2": dict(sampler="HMC2", number_walkers=4, burn_in=10000, steps=20000, jit_compile=False,
                 hamiltonian_dynamics_time=0.01),
    "baoab": dict(sampler="BAOAB", number_walkers=4, batch_size=32, burn_in=1800, steps=3600, every_nth=10),
    "sghmc": dict(sampler="SGHMC", number_walkers=4, batch_size=32, burn_in=1800, steps=3600, every_nth=10),
    "sgld": dict(sampler="SGLD", number_walkers=4, batch_size=32, burn_in=1800, steps=3600, every_nth=10),
    "psgld": dict(sampler="pSGLD", number_walkers=4, batch_size=32, burn_in=1800, steps=3600, every_nth=10),
}
SWAG_RATE = 1.0  # times 1 / lambda_max: half the stability bound (swag_learning_rate)
TOOL_KEYS = ("fit", "start_at_map", "burn_in", "steps")  # read by the tool, not Simulation options
# --quick: these settings replace the ones above
QUICK = {
    "map": dict(fit={**MAP_FIT, "max_steps": 300}),
    "ensemble": dict(fit={**MAP_FIT, "max_steps": 300, "number_walkers": 5}),
    "swag": dict(steps=1000, burn_in=200),
    "nuts": dict(burn_in=30, steps=90, max_tree_depth=7),
    "hmc2": dict(burn_in=400, steps=1200),
    "baoab": dict(burn_in=500, steps=2000),
    "sghmc": dict(burn_in=500, steps=2000),
    "sgld": dict(burn_in=500, steps=2000),
    "psgld": dict(burn_in=500, steps=2000),
}
# Published test RMSE and log-likelihood (mean, +-) over the 20 splits, from
# ../shared/data/uci/README.md: PBP and deep ensembles from Lakshminarayanan et al. (2017, Table 1;
# the ensembles' +- is a standard deviation), MC dropout from Gal's 2018 grid-search rerun.
PUBLISHED = {
    "bostonHousing": {"PBP": ((3.01, 0.18), (-2.57, 0.09)), "MC dropout": ((2.90, 0.18), (-2.40, 0.04)),
                      "deep ensembles": ((3.28, 1.00), (-2.41, 0.25))},
    "concrete": {"PBP": ((5.67, 0.09), (-3.16, 0.02)), "MC dropout": ((4.82, 0.16), (-2.93, 0.02)),
                 "deep ensembles": ((6.03, 0.58), (-3.06, 0.18))},
    "energy": {"PBP": ((1.80, 0.05), (-2.04, 0.02)), "MC dropout": ((0.54, 0.06), (-1.21, 0.01)),
               "deep ensembles": ((2.09, 0.29), (-1.38, 0.22))},
    "wine-quality-red": {"PBP": ((0.64, 0.01), (-0.97, 0.01)), "MC dropout": ((0.62, 0.01), (-0.93, 0.01)),
                         "deep ensembles": ((0.64, 0.04), (-0.94, 0.12))},
    "yacht": {"PBP": ((1.02, 0.05), (-1.63, 0.02)), "MC dropout": ((0.67, 0.05), (-1.25, 0.01)),
              "deep ensembles": ((1.58, 0.48), (-1.18, 0.21))},
}
COLUMNS = ["dataset", "split", "method", "test_rmse", "test_log_likelihood", "test_coverage", "draws", "seconds",
           "loss_r_hat", "kinetic_temperature", "flagged"]


# ---- the data ----

def _read(folder, name, integers):
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file (a UCI dataset folder holds data.txt, index_features.txt, "
                         f"index_target.txt, index_train_k.txt and index_test_k.txt)")
    try:
        values = np.loadtxt(path, ndmin=1 if integers else 2)
    except ValueError as error:
        raise InputError(f"{path}: not a file of numbers ({error})") from None
    if values.size == 0:
        raise InputError(f"{path}: empty")
    if integers:
        if not np.all(values == np.round(values)) or values.min() < 0:
            raise InputError(f"{path}: indices must be non-negative integers")
        return values.astype(np.int64)
    return values


def _indices(folder, name, bound, what):
    values = _read(folder, name, integers=True)
    if values.max() >= bound:
        raise InputError(f"{os.path.join(folder, name)}: index {values.max()} out of range ({what} {bound})")
    return values


def read_dataset(folder):
    """dict: name, x [examples, inputs], y [examples], splits [(train rows, test rows)], hidden."""
    if not os.path.isdir(folder):
        raise InputError(f"{folder}: no such folder (give a UCI dataset folder, e.g. ../shared/data/uci/yacht)")
    data = _read(folder, "data.txt", integers=False)
    features = _indices(folder, "index_features.txt", data.shape[1], "columns of data.txt:")
    target = _indices(folder, "index_target.txt", data.shape[1], "columns of data.txt:")
    if len(target) != 1:
        raise InputError(f"{os.path.join(folder, 'index_target.txt')}: one target column, got {len(target)}")
    splits = []
    while os.path.isfile(os.path.join(folder, f"index_train_{len(splits)}.txt")):
        k = len(splits)
        splits.append(tuple(_indices(folder, f"index_{part}_{k}.txt", len(data), "rows of data.txt:")
                            for part in ("train", "test")))
    if not splits:
        _read(folder, "index_train_0.txt", integers=True)  # names the missing file
    hidden = 50
    if os.path.isfile(os.path.join(folder, "n_hidden.txt")):
        hidden = int(_read(folder, "n_hidden.txt", integers=True)[0])
    name = os.path.basename(os.path.normpath(folder))
    return dict(name=name, x=data[:, features], y=data[:, target[0]], splits=splits, hidden=hidden)


def standardise(x, y, train, test):
    """((x, y) training, (x, y) test, sd_y): both parts standardised with the training part's
    mean and sd (ddof 0, as the published code); an input constant on the training part is
    only centred. y as a column [n, 1]."""
    x_mean, x_sd = x[train].mean(axis=0), x[train].std(axis=0)
    x_sd = np.where(x_sd > 0, x_sd, 1.0)
    y_mean, y_sd = y[train].mean(), y[train].std()
    scaled_x, scaled_y = (x - x_mean) / x_sd, ((y - y_mean) / y_sd)[:, None]
    return (scaled_x[train], scaled_y[train]), (scaled_x[test], scaled_y[test]), float(y_sd)


def in_target_units(residuals, log_densities, y_sd):
    """(test RMSE, test log-likelihood per point) in the target's units from the standardised
    residuals and log predictive densities: RMSE scales with sd_y, a density by 1 / sd_y."""
    rmse = math.sqrt(float(np.mean(np.square(residuals)))) * y_sd
    return rmse, float(np.mean(log_densities)) - math.log(y_sd)


# ---- the methods ----

def settings(name, quick, factor=1):
    """A method's settings (METHODS; QUICK's with quick), its burn-in and steps times factor."""
    s = {**METHODS[name], **(QUICK[name] if quick else {})}
    return {k: v * factor if k in ("burn_in", "steps") else v for k, v in s.items()}


def sampler_options(s):
    """A sampling method's Simulation options: all its settings but the tool's own (TOOL_KEYS),
    so that no setting in METHODS is dropped silently."""
    return {k: v for k, v in s.items() if k not in TOOL_KEYS}


def model_options(train, hidden, seed, likelihood=LIKELIHOOD):
    return dict(dataset=train, hidden_dimension=[hidden], hidden_activation="relu", output_dimension=2,
                output_activation="linear", likelihood=likelihood, prior_standard_deviation=1.0,
                dtype="float64", seed=seed)


def draws_of(name, options, quick, factor=1):
    """(Simulation, the parameter draws as trajectory rows, the sample() result or None) of one method
    on the network of `options` (model_options)."""
    import tati
    from tati.bayes.swag import swag
    s = settings(name, quick, factor)
    seed = options["seed"]
    if "fit" in s:
        sim = tati.Simulation(**options, **s["fit"])
        return sim, sim.fit().trajectory.groupby("id").tail(1), None
    start = None
    if s.get("start_at_map"):
        fitted = tati.Simulation(**options, **settings("map", quick)["fit"])
        fitted.fit()
        start = fitted.parameters
    if name == "swag":
        rate = s["learning_rate"]
        if rate == "measured":
            rate = swag_learning_rate(options, s["batch_size"], start, seed)
        sgd = tati.Simulation(**options, optimizer=s["optimizer"], learning_rate=rate,
                              batch_size=s["batch_size"], max_steps=s["steps"], every_nth=s["every_nth"],
                              initial_parameters=start)
        posterior = swag(sgd.fit().trajectory, rank=s["rank"], burn_in=s["burn_in"])
        return sgd, posterior.sample(DRAWS, seed=seed), None
    sim = tati.Simulation(**options, **sampler_options(s), burn_in_steps=s["burn_in"], max_steps=s["steps"],
                          initial_parameters=start)
    result = sim.sample()
    trajectory = result.trajectory
    return sim, trajectory[trajectory.step > s["burn_in"]], result


def swag_learning_rate(options, batch_size, start, seed):
    """SWAG_RATE / lambda_max, lambda_max the largest curvature of U over the training batches at
    `start` (the MAP): power iteration on each batch's Hessian, as the samplers' measured width
    (tati/adaptation/measured_width.py). SGD at a constant rate h is stable along a direction of
    curvature lambda only for h < 2 / lambda."""
    import tati
    from tati.adaptation.measured_width import measure
    sim = tati.Simulation(**options, batch_size=batch_size, initial_parameters=start)
    return SWAG_RATE / float(np.max(measure(sim.model, sim.data, 1.0, seed=seed).curvature))


def loss_r_hat(name, draws):
    """R-hat of the loss across a sampler's walkers after burn-in (tati.diagnostics.convergence;
    a network's weights are not identified, its loss is); NaN for a fit, SWAG, one walker or
    fewer than 4 rows per walker."""
    from tati.diagnostics.convergence import MIN_ROWS, convergence, equal_rows
    if "fit" in METHODS[name] or name == "swag" or draws.id.nunique() < 2:
        return math.nan
    rows = equal_rows(draws)
    if rows.groupby("id").size().min() < MIN_ROWS:
        return math.nan
    return float(convergence(rows, columns=["loss"]).r_hat.iloc[0])


def kinetic_temperature(simulation, result):
    """The draws' kinetic temperature, 2 beta K / d averaged over the walkers' rows after burn-in,
    of a sampler whose momenta persist (a Langevin sampler's; HMC and NUTS redraw theirs); NaN else."""
    from tati.engine.registry import spec_of
    if result is None or not spec_of(simulation.options["sampler"]).persistent_momenta:
        return math.nan
    rows = result.run_info[result.run_info.step > simulation.options["burn_in_steps"]]
    beta = simulation.options["inverse_temperature"]
    return float(2.0 * beta * rows.kinetic_energy.mean() / simulation.num_parameters) if len(rows) else math.nan


def flagged(simulation, result):
    """What the run's summary flags, as Python's RunWarning does: the walkers gone wrong
    (tati.diagnostics.walker_outliers: hot, cold, blew up, far out) and the kinetic energy or virial
    read hot, as "walker 1 far out; average kinetic energy hot"; "" where none is, or for a fit."""
    from tati.diagnostics import walker_outliers
    from tati.diagnostics.summary.temperature import hot_readings
    if result is None:
        return ""
    found = walker_outliers(result, simulation)
    return "; ".join([f"walker {outlier.walker} {outlier.kind}" for outlier in found] +
                     [f"{reading.name} hot" for reading in hot_readings(simulation, result, found)])


def evaluate(name, options, test, y_sd, quick, factor=1):
    """(test RMSE, test log-likelihood per point, the fraction of test targets inside the predictive's
    central 95% band, draws, loss R-hat, kinetic temperature, flagged walkers) of one method on one split's
    network (model_options)."""
    sim, draws, result = draws_of(name, options, quick, factor)
    table, _ = sim.predictive(test[0], test[1], trajectory=draws, burn_in=-1, draws=DRAWS, level=LEVEL)
    y = test[1][:, 0]
    rmse, ll = in_target_units(y - table["mean_0"].to_numpy(), table["log_predictive_density"].to_numpy(), y_sd)
    coverage = float(calibration.inside_band(table, y).mean())
    return (rmse, ll, coverage, min(len(draws), DRAWS), loss_r_hat(name, draws), kinetic_temperature(sim, result),
            flagged(sim, result))


def run_benchmark(dataset, splits, methods, seed, quick, factor=1, likelihood=LIKELIHOOD):
    """One row per split and method (COLUMNS); a method that meets a non-finite loss gets NaN."""
    rows = []
    # a method the factor lengthens, or on another likelihood, is named so in the CSV, the summary and the
    # plot: "baoab x16", "hmc2 student_t"
    label = {name: (f"{name} x{factor}" if settings(name, quick, factor) != settings(name, quick) else name)
             + ("" if likelihood == LIKELIHOOD else f" {likelihood}") for name in methods}
    for count, k in enumerate(splits, 1):
        train, test, y_sd = standardise(dataset["x"], dataset["y"], *dataset["splits"][k])
        options = model_options(train, dataset["hidden"], seed, likelihood)
        for name in methods:
            start = time.perf_counter()
            try:
                rmse, ll, coverage, draws, r_hat, temperature, flags = evaluate(name, options, test, y_sd, quick,
                                                                                factor)
                note = ("" if math.isnan(r_hat) else f", loss R-hat {r_hat:.2f}") + (
                    "" if math.isnan(temperature) else f", kinetic temperature {temperature:.3f}") + (
                    f", flagged: {flags}" if flags else "")
            except SamplingError as error:
                rmse, ll, coverage, draws, r_hat, temperature, flags = (math.nan, math.nan, math.nan, 0, math.nan,
                                                                        math.nan, "failed")
                note = f" (failed: {error})"
            seconds = time.perf_counter() - start
            rows.append(dict(zip(COLUMNS, (dataset["name"], k, label[name], rmse, ll, coverage, draws, seconds,
                                           r_hat, temperature, flags))))
            print(f"split {k} ({count}/{len(splits)}) {label[name]}: test RMSE {rmse:.3f}, test LL {ll:.3f}, "
                  f"{LEVEL:.0%} band holds {coverage:.0%}, {seconds:.1f} s{note}", flush=True)
    return pd.DataFrame(rows, columns=COLUMNS)


# ---- the summary ----

def mean_and_error(values):
    values = np.asarray(values, np.float64)
    error = values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return float(values.mean()), float(error)


def summarise(rows):
    """Per method (in the order run): mean and standard error over the splits of RMSE and LL,
    seconds per split, number of splits, and of those flagged (what the summary flags: a walker, a
    hot reading; or a failed run)."""
    table = []
    for name, group in rows.groupby("method", sort=False):
        rmse, ll = mean_and_error(group.test_rmse), mean_and_error(group.test_log_likelihood)
        coverage = mean_and_error(100.0 * group.test_coverage)
        table.append(dict(method=name, rmse=rmse[0], rmse_se=rmse[1], ll=ll[0], ll_se=ll[1],
                          coverage=coverage[0], coverage_se=coverage[1],
                          seconds=float(group.seconds.mean()), splits=len(group),
                          flagged=int((group.flagged.fillna("") != "").sum())))
    return pd.DataFrame(table)


def _pm(value, error, digits=2):
    return f"{value:.{digits}f}" if math.isnan(error) else f"{value:.{digits}f} +- {error:.{digits}f}"


def format_summary(summary, name):
    lines = [f"| method | test RMSE | test LL | {LEVEL:.0%} band holds (%) | seconds per split | splits | flagged |",
             "|---|---|---|---|---|---|---|"]
    for r in summary.itertuples():
        lines.append(f"| {r.method} | {_pm(r.rmse, r.rmse_se)} | {_pm(r.ll, r.ll_se)} | "
                     f"{_pm(r.coverage, r.coverage_se, 0)} | {r.seconds:.1f} | {r.splits} | {r.flagged} |")
    for source, (rmse, ll) in PUBLISHED.get(name, {}).items():
        lines.append(f"| published: {source} | {_pm(*rmse)} | {_pm(*ll)} | | | 20 | |")
    return "\n".join(lines)


def _off_scale(axis, values, rows, lowest):
    """Values below `lowest` (a diverged method) drawn at the axis' edge as '<' with their number."""
    for value, row in zip(values, rows):
        if value < lowest:
            axis.plot([lowest], [row], "<", color="tab:red")
            axis.annotate(f"{value:.3g}", (lowest, row), xytext=(8, 4), textcoords="offset points", fontsize=8,
                          color="tab:red")


def plot(summary, name, path):
    """Four panels: RMSE (log scale), log-likelihood (cut 5 below the best, so that a diverged
    method does not hide the others), the share of test targets in the central band, and seconds per
    split; the published figures in grey; a method with splits flagged says how many under its name."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install tati[plots]") from None
    published = PUBLISHED.get(name, {})
    labels = [f"{r.method}\n({r.flagged} of {r.splits} flagged)" if r.flagged else r.method
              for r in summary.itertuples()] + [f"published: {s}" for s in published]
    rows = np.arange(len(labels))[::-1]
    ours = len(summary)
    figure, axes = plt.subplots(1, 4, figsize=(14, 0.45 * len(labels) + 1.6), sharey=True, layout="constrained")
    for axis, key, title in ((axes[0], "rmse", "test RMSE (lower is better)"),
                             (axes[1], "ll", "test LL per point (higher is better)")):
        axis.errorbar(summary[key], rows[:ours], xerr=np.nan_to_num(summary[f"{key}_se"]), fmt="o",
                      color="tab:blue", capsize=3)
        for row, (rmse, ll) in zip(rows[ours:], published.values()):
            value, error = rmse if key == "rmse" else ll
            axis.errorbar([value], [row], xerr=[error], fmt="s", color="0.45", capsize=3)
        axis.set_title(title, fontsize=10)
        axis.grid(alpha=0.3)
    axes[0].set_xscale("log")
    values = np.concatenate([summary.ll.to_numpy(), [ll[0] for _, ll in published.values()]])
    best = np.nanmax(values)
    lowest = max(np.nanmin(values), best - 5.0)
    axes[1].set_xlim(lowest - 0.3, best + 0.3)
    _off_scale(axes[1], summary.ll, rows[:ours], lowest - 0.3)
    axes[2].errorbar(summary.coverage, rows[:ours], xerr=np.nan_to_num(summary.coverage_se), fmt="o",
                     color="tab:blue", capsize=3)
    axes[2].axvline(100.0 * LEVEL, color="0.3", lw=0.8, ls="--")
    axes[2].set_title(f"in the {LEVEL:.0%} band (%; {100 * LEVEL:g} if calibrated)", fontsize=10)
    axes[2].grid(alpha=0.3)
    axes[3].barh(rows[:ours], summary.seconds, color="tab:blue", alpha=0.7)
    axes[3].set_title("seconds per split", fontsize=10)
    axes[3].grid(alpha=0.3)
    axes[0].set_yticks(rows, labels)
    splits = ", ".join(sorted({str(n) for n in summary.splits}))
    figure.suptitle(f"UCI {name}: mean +- standard error over the splits ({splits}); published: 20 splits",
                    fontsize=11)
    figure.savefig(path, dpi=90)
    plt.close(figure)


# ---- the command line ----

def parse(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a UCI dataset folder (data.txt, index_*.txt)")
    parser.add_argument("--splits", default=None, help="comma-separated split numbers, or all (the default; "
                        "with --quick: 0)")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, of " + ",".join(METHODS))
    parser.add_argument("--quick", action="store_true", help="a short run: fewer steps (QUICK), split 0")
    parser.add_argument("--steps-factor", type=int, default=1, metavar="K",
                        help="every sampler's (and SWAG's) burn-in and steps times K (1): the stochastic-gradient "
                        "samplers need epochs more than tuning (doc/samplers.md, 'a floor in epochs')")
    parser.add_argument("--likelihood", default=LIKELIHOOD, choices=LIKELIHOODS,
                        help=f"the network's likelihood ({LIKELIHOOD}, the benchmark's; student_t's heavy tails "
                        "take outliers)")
    parser.add_argument("--seed", type=int, default=1, help="seed of initialisations, samplers and SWAG")
    parser.add_argument("--csv", default=None, help="write every split and method to this CSV file")
    parser.add_argument("--plot", default=None, help="write the summary to this PNG file")
    return parser.parse_args(argv)


def choose(args, dataset):
    """(splits, methods) from --splits and --methods, or InputError."""
    methods = [m.strip().lower() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise InputError(f"--methods: unknown method {unknown[0] if unknown else '(none)'} "
                         f"(choose from {','.join(METHODS)})")
    if args.steps_factor < 1:
        raise InputError(f"--steps-factor: {args.steps_factor} is not a whole number of at least 1")
    n = len(dataset["splits"])
    text = args.splits or ("0" if args.quick else "all")
    if text == "all":
        return list(range(n)), methods
    try:
        splits = [int(s) for s in text.split(",")]
    except ValueError:
        raise InputError(f"--splits: {text!r} is not a comma-separated list of split numbers or all") from None
    missing = [k for k in splits if not 0 <= k < n]
    if missing:
        raise InputError(f"--splits: no split {missing[0]} in {args.folder} "
                         f"(index_train_{missing[0]}.txt; it has splits 0 to {n - 1})")
    return splits, methods


def main(argv=None):
    args = parse(argv)

    def work():
        dataset = read_dataset(args.folder)
        splits, methods = choose(args, dataset)
        for path in (args.csv, args.plot):
            if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
                raise InputError(f"{path}: its folder does not exist")
        print(f"{dataset['name']}: {len(dataset['y'])} examples, {dataset['x'].shape[1]} inputs, "
              f"{len(splits)} of {len(dataset['splits'])} splits, {dataset['hidden']} hidden units, "
              f"methods {','.join(methods)}{' (quick)' if args.quick else ''}"
              f"{f', steps times {args.steps_factor}' if args.steps_factor > 1 else ''}"
              f"{f', likelihood {args.likelihood}' if args.likelihood != LIKELIHOOD else ''}", flush=True)
        rows = run_benchmark(dataset, splits, methods, args.seed, args.quick, args.steps_factor, args.likelihood)
        if args.csv:
            rows.to_csv(args.csv, index=False)
            print(f"wrote {args.csv}")
        summary = summarise(rows)
        print(format_summary(summary, dataset["name"]))
        if args.plot:
            plot(summary, dataset["name"], args.plot)
            print(f"wrote {args.plot}")

    run_command(PROG, work)


if __name__ == "__main__":
    main()
