"""Parameter means and variances, plain and Boltzmann-weighted (ensemble averages).

    table = moments(result, burn_in=1000, inverse_temperature=10.0)

Over the trajectory's rows after burn-in, for the loss U and every parameter theta:

* mean, variance (ddof 1) and sd of the rows: for rows sampled from exp(-beta U) these are the
  ensemble averages; mean_error is the standard error of the mean from batch means, which
  accounts for the rows' correlation in time (tati/diagnostics/equipartition.py; NaN with
  fewer than 20 rows or 10 batches);
* weighted_mean and weighted_variance with the Boltzmann weights w_k = exp(-beta U_k), the
  weighting of the averages table's ensemble_average_loss: sum_k w_k theta_k / sum_k w_k. For
  rows drawn from exp(-beta_s U) this is the average under exp(-(beta_s + beta) U); for rows
  drawn uniformly (an exploration) it is the ensemble average at beta. weighted_rows is Kish's
  effective number of rows (sum w)^2 / sum w^2: when it is small, a few rows decide the
  weighted values.

With per_walker, one block of rows per walker (column id); else all walkers' rows pooled.
"""

import math

import numpy as np
import pandas as pd

from tati.analysis import select
from tati.diagnostics.equipartition import batch_means

PURPOSE = "moments"
COLUMNS = ["parameter", "mean", "mean_error", "variance", "sd", "weighted_mean", "weighted_variance",
           "rows", "weighted_rows"]


def moments(result, burn_in=0, inverse_temperature=1.0, per_walker=False, parameters=None):
    """DataFrame with the columns COLUMNS (and id first with per_walker), one row per parameter
    (the loss first); see the module docstring."""
    names = select.parameter_names(result, PURPOSE)
    trajectory = result.trajectory
    if parameters is not None:
        names = select.check_names(result, "trajectory", trajectory, select.names_list(parameters),
                                   "parameters", PURPOSE)
    kept = select.after_burn_in(result, "trajectory", trajectory, burn_in, PURPOSE)
    columns = ["loss"] + [n for n in names if n != "loss"]
    walkers = select.by_walker(kept, columns)
    if not per_walker:
        return _moments(walkers, columns, inverse_temperature)
    blocks = []
    for walker, values in walkers:
        block = _moments([(walker, values)], columns, inverse_temperature)
        block.insert(0, "id", walker)
        blocks.append(block)
    return pd.concat(blocks, ignore_index=True)


def _moments(walkers, columns, beta):
    values = np.concatenate([v for _, v in walkers])
    loss = values[:, 0]
    weights = np.exp(-beta * (loss - loss.min()))  # the largest is 1: no overflow
    weights /= weights.sum()
    mean = values.mean(axis=0)
    variance = values.var(axis=0, ddof=1) if len(values) > 1 else np.full(len(columns), np.nan)
    weighted_mean = weights @ values
    weighted_variance = weights @ (values - weighted_mean) ** 2
    errors = []
    for i in range(len(columns)):
        found = batch_means([v[:, i] for _, v in walkers])
        errors.append(found[1] if found is not None else math.nan)
    return pd.DataFrame({"parameter": columns, "mean": mean, "mean_error": errors, "variance": variance,
                         "sd": np.sqrt(variance), "weighted_mean": weighted_mean,
                         "weighted_variance": weighted_variance, "rows": len(values),
                         "weighted_rows": 1.0 / np.sum(weights ** 2)})


def plot(table, path, inverse_temperature=1.0):
    """Two panels over the parameters (the loss left out): the means with two standard errors
    beside the Boltzmann-weighted means, and the plain and weighted standard deviations; with
    per_walker each walker's values side by side."""
    from tati.analysis import figures
    table = table[table["parameter"] != "loss"]
    walkers = sorted(table["id"].unique()) if "id" in table else [None]
    names = list(dict.fromkeys(table["parameter"]))
    figure, axes = figures.new_figure(rows=2, height=2.8, sharex=True)
    x = np.arange(len(names))
    slot = 0.8 / (2 * len(walkers))
    for k, walker in enumerate(walkers):
        rows = (table if walker is None else table[table["id"] == walker]).set_index("parameter").loc[names]
        plain = x - 0.4 + (2 * k + 0.5) * slot
        weighted = plain + slot
        first = k == 0
        axes[0, 0].errorbar(plain, rows["mean"], yerr=2 * rows["mean_error"].fillna(0.0), fmt="o",
                            color="tab:blue", markersize=4, capsize=2,
                            label="mean +- 2 standard errors" if first else None)
        axes[0, 0].plot(weighted, rows["weighted_mean"], "s", color="tab:orange", markersize=4,
                        label=f"Boltzmann-weighted (beta {inverse_temperature:g})" if first else None)
        axes[1, 0].plot(plain, rows["sd"], "o", color="tab:blue", markersize=4)
        axes[1, 0].plot(weighted, np.sqrt(rows["weighted_variance"]), "s", color="tab:orange", markersize=4)
    axes[0, 0].set_ylabel("mean")
    axes[1, 0].set_ylabel("standard deviation")
    for ax in axes[:, 0]:
        ax.grid(alpha=0.3)
        ax.set_xlim(-0.6, len(names) - 0.4)
    figures.label_ticks(axes[1, 0], names)
    axes[1, 0].set_xlabel("parameter" + ("" if walkers == [None] else " (each walker's values side by side)"))
    figures.legend_above(figure, axes, columns=2)
    figures.save(figure, path)


def summary(table):
    lines = []
    pooled = table if "id" not in table else table.groupby("parameter", sort=False).first().reset_index()
    for _, row in pooled.head(8).iterrows():
        lines.append(f"  {row['parameter']}: mean {row['mean']:.6g} +- {row['mean_error']:.2g}, "
                     f"sd {row['sd']:.4g}; weighted mean {row['weighted_mean']:.6g}")
    if len(pooled) > 8:
        lines.append(f"  ... and {len(pooled) - 8} more parameters")
    if "id" in table:
        lines.insert(0, "  (walker 0; every walker's rows are in the CSV file)")
    return lines
