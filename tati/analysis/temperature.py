"""Whether the temperature is right: the kinetic and the configurational temperature of the
run-info rows, with intervals, against 1 / beta.

    table = temperature(result, burn_in=1000, inverse_temperature=10.0)

For d degrees of freedom in equilibrium at inverse temperature beta:

* kinetic: T_kin = 2 K / d from each row's kinetic_energy K = |p|^2 / 2 (equipartition:
  E[K] = d / (2 beta));
* configurational: T_conf = q . grad U / d = 2 virial / d from each row's virial (the
  configurational temperature with the vector field q: E[q . grad U] = d / beta when
  exp(-beta U) confines q, by integration by parts; a network's loss without a prior does not,
  and there T_conf need not be 1/beta). It uses positions only, so it is free of the momenta's
  step-width bias.

Each is the mean over the rows after burn-in (all walkers), with the standard error of batch
means (tati/diagnostics/equipartition.py, which accounts for the rows' correlation) and the
interval mean +- t x error at `level`, t the Student-t quantile with batches - 1 degrees of
freedom. verdict: 'consistent' when 1/beta is inside the interval (unless the error is above
TOO_NOISY of 1/beta: 'too noisy to judge', as the run's summary says), else 'too hot' or 'too
cold' by so many standard errors (hot by at most the 5% heat that a measured step_width allows
from the mini-batch gradient noise says so: the run's summary reads that 'warm', and these
files do not say whether the width was measured); 'the same in every row' when the readings do not vary
(a virial of 0 in every row: U is flat where the walkers are, as a network's loss is where its
units saturate). d is the number of parameter columns of the trajectory, or `dof`.
"""

import math

import numpy as np
import pandas as pd
from scipy import stats

from tati.adaptation.width_rules import EXCESS
from tati.analysis import select
from tati.diagnostics.equipartition import batch_means, deviation
from tati.diagnostics.summary.temperature import TOO_NOISY
from tati.errors import InputError

PURPOSE = "temperature"
ESTIMATORS = {"kinetic": "kinetic_energy", "configurational": "virial"}
COLUMNS = ["estimator", "column", "temperature", "standard_error", "low", "high", "level", "batches",
           "expected", "deviation", "verdict"]


def temperature(result, burn_in=None, inverse_temperature=None, dof=None, estimators=None, level=0.99):
    """DataFrame with the columns COLUMNS, one row per estimator (see the module docstring)."""
    burn_in = select.run_burn_in(result, burn_in)
    inverse_temperature = select.run_inverse_temperature(result, inverse_temperature)
    asked = select.names_list(estimators)
    for name in asked or []:
        if name not in ESTIMATORS:
            raise InputError(f"estimators: '{name}' is unknown; choose among {', '.join(ESTIMATORS)}")
    run_info = select.table(result, "run_info", PURPOSE)
    # None: those the table has (model.fit's recorder has no virial, SGLD no kinetic energy)
    estimators = asked or [name for name, column in ESTIMATORS.items() if column in run_info.columns] or list(ESTIMATORS)
    for name in estimators:
        if ESTIMATORS[name] not in run_info.columns:
            hint = (" (a sampler without momenta, such as SGLD, has none: give estimators configurational)"
                    if name == "kinetic" else " (give estimators kinetic)")
            raise InputError(f"{select.describe(result, 'run_info')} has no column '{ESTIMATORS[name]}' "
                             f"(needed by the {name} temperature){hint}")
    dof = degrees_of_freedom(result, dof)
    kept = select.after_burn_in(result, "run_info", run_info, burn_in, PURPOSE)
    expected = 1.0 / inverse_temperature
    rows = []
    for name in estimators:
        column = ESTIMATORS[name]
        series = [2.0 * values[:, 0] / dof for _, values in select.by_walker(kept, [column])]
        found = batch_means(series)
        pooled = np.concatenate(series)
        value = float(np.mean(pooled[np.isfinite(pooled)])) if np.isfinite(pooled).any() else math.nan
        if found is None:
            rows.append([name, column, value, math.nan, math.nan, math.nan, level, 0, expected, math.nan,
                         "too few rows for an error bar"])
            continue
        mean, error, batches = found
        if error == 0.0:  # every reading the same: no interval to judge by
            flat = "; U is flat where the walkers are, every gradient 0" if name == "configurational" else ""
            rows.append([name, column, mean, 0.0, mean, mean, level, batches, expected, math.nan,
                         f"the same in every row{flat}"])
            continue
        half = stats.t.ppf(0.5 + level / 2, batches - 1) * error
        z = deviation(mean, error, expected)
        if mean - half <= expected <= mean + half:  # an interval too wide to fail is no verdict (the summary's rule)
            word = ("consistent" if error <= TOO_NOISY * expected else
                    f"too noisy to judge: its error bar is {error / expected:.0%} of 1/beta")
        else:
            word = f"too {'hot' if z > 0 else 'cold'} by {abs(z):.1f} standard errors"
            above = mean / expected - 1.0
            if 0.0 < above <= EXCESS:  # the run's summary reads it "warm" where it measured
                word += f" ({above:.1%} above: within the {EXCESS:.0%} a measured step_width allows)"
        rows.append([name, column, mean, error, mean - half, mean + half, level, batches, expected, z, word])
    return pd.DataFrame(rows, columns=COLUMNS)


def degrees_of_freedom(result, dof):
    """`dof`, or the number of parameter columns of the trajectory."""
    if dof is not None:
        return int(dof)
    trajectory = getattr(result, "trajectory", None)
    if trajectory is None or len(trajectory.columns) == 0:
        raise InputError("temperature needs the number of degrees of freedom: give --dof, or the "
                         "trajectory (--trajectory_file) whose parameter columns it counts")
    return len(select.parameter_names(result, PURPOSE))


def running(result, burn_in, dof, estimators):
    """{estimator: (steps, running mean of the temperature after burn-in)}, each step's readings
    averaged over walkers first."""
    kept = select.after_burn_in(result, "run_info", result.run_info, burn_in, PURPOSE)
    out = {}
    for name in estimators:
        by_step = (2.0 * kept[ESTIMATORS[name]] / dof).groupby(kept["step"]).mean()
        out[name] = (by_step.index.to_numpy(), by_step.expanding().mean().to_numpy())
    return out


def plot(result, table, path, burn_in=None, dof=None):
    """The running mean of each estimator over the steps after burn-in, its final value with
    its interval beside the curves' end, and the exact 1/beta."""
    burn_in = select.run_burn_in(result, burn_in)
    from tati.analysis import figures
    dof = degrees_of_freedom(result, dof)
    curves = running(result, burn_in, dof, list(table["estimator"]))
    figure, axes = figures.new_figure(height=3.6)
    ax = axes[0, 0]
    last = max(float(steps[-1]) for steps, _ in curves.values())
    first = min(float(steps[0]) for steps, _ in curves.values())
    for k, ((_, row), colour) in enumerate(zip(table.iterrows(), ("tab:blue", "tab:orange"))):
        steps, values = curves[row["estimator"]]
        ax.plot(steps, values, color=colour, linewidth=1.5,
                label=f"{row['estimator']} ({row['column']}): running mean")
        if np.isfinite(row["low"]):  # the interval, beside the end of the curves
            at = last + (0.03 + 0.03 * k) * (last - first)
            ax.errorbar([at], [row["temperature"]], yerr=[[row["temperature"] - row["low"]],
                                                         [row["high"] - row["temperature"]]],
                        fmt="o", color=colour, capsize=4, markersize=5,
                        label=f"{row['estimator']}: {row['level']:.0%} interval {row['low']:.4g} to {row['high']:.4g}")
    expected = float(table["expected"].iloc[0])
    settled = [v[len(v) // 10:] for _, v in curves.values()]  # the first readings swing widely
    levels = np.concatenate(settled + [table[["low", "high"]].to_numpy().ravel(), [expected]])
    levels = levels[np.isfinite(levels)]
    margin = 0.15 * (levels.max() - levels.min()) or 0.05 * abs(expected)
    ax.set_ylim(levels.min() - margin, levels.max() + margin)
    ax.axhline(expected, color="black", linestyle="--", linewidth=1.2, label=f"exact 1/beta = {expected:.4g}")
    ax.set_xlabel("step")
    ax.set_ylabel("temperature")
    ax.grid(alpha=0.3)
    figures.legend_above(figure, axes, columns=2)
    figures.save(figure, path)


def summary(table):
    lines = []
    for _, row in table.iterrows():
        if row["standard_error"] > 0:  # NaN (too few rows) and 0 (no spread) have no interval
            lines.append(f"  {row['estimator']} temperature {row['temperature']:.5g} +- {row['standard_error']:.2g} "
                         f"({row['level']:.0%}: {row['low']:.5g} to {row['high']:.5g}; 1/beta = "
                         f"{row['expected']:.5g}: {row['verdict']})")
        else:
            lines.append(f"  {row['estimator']} temperature {row['temperature']:.5g} ({row['verdict']})")
    return lines
