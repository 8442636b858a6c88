"""Parameter means and variances, plain and reweighted to another temperature.

    table = moments(result, burn_in=1000)                       # the run's own ensemble averages
    table = moments(result, inverse_temperature=20.0, run_inverse_temperature=10.0)  # at beta 20

Over the trajectory's rows after burn-in, for the loss U and every parameter theta:

* mean, variance (ddof 1) and sd of the rows: for rows sampled from exp(-beta U) these are the
  ensemble averages; mean_error is the standard error of the mean from batch means, which
  accounts for the rows' correlation in time (tati/diagnostics/equipartition.py; NaN with
  fewer than 20 rows or 10 batches);
* weighted_mean and weighted_variance: the averages at another inverse temperature beta,
  from rows drawn at the run's beta_s, with the weights w_k = exp(-(beta - beta_s) U_k):
  sum_k w_k theta_k / sum_k w_k. weighted_rows is Kish's effective number of rows
  (sum w)^2 / sum w^2: when it is small, a few rows decide the weighted values. Rows are
  reweighted only when asked for a beta other than the run's: without `inverse_temperature`
  (or with the run's) the weighted columns are the plain ones. The tables do not record the
  run's beta, so reweighting needs `run_inverse_temperature` (0 for rows drawn uniformly, an
  exploration: then the weights are the Boltzmann weights exp(-beta U) themselves).

With per_walker, one block of rows per walker (column id); else all walkers' rows pooled, with
walkers_r_hat, Gelman and Rubin's R-hat of the walkers' rows (NaN per walker): above
select.APART_R_HAT the walkers never mixed and the pooled values mix their places; the summary
counts such parameters.
"""

import math

import numpy as np
import pandas as pd

from tati.analysis import select
from tati.diagnostics.equipartition import batch_means
from tati.errors import InputError

PURPOSE = "moments"
COLUMNS = ["parameter", "mean", "mean_error", "variance", "sd", "weighted_mean", "weighted_variance",
           "rows", "weighted_rows", "walkers_r_hat"]


def moments(result, burn_in=None, inverse_temperature=None, per_walker=False, parameters=None,
            run_inverse_temperature=None):
    """DataFrame with the columns COLUMNS (and id first with per_walker), one row per parameter
    (the loss first); see the module docstring."""
    burn_in = select.run_burn_in(result, burn_in)
    # a sample() result knows the beta its rows were drawn at
    run_inverse_temperature = select.run_inverse_temperature(result, run_inverse_temperature, unknown=None)
    shift = reweighting(inverse_temperature, run_inverse_temperature)
    names = select.parameter_names(result, PURPOSE)
    trajectory = result.trajectory
    if parameters is not None:
        names = select.check_names(result, "trajectory", trajectory, select.names_list(parameters),
                                   "parameters", PURPOSE)
    kept = select.after_burn_in(result, "trajectory", trajectory, burn_in, PURPOSE)
    columns = ["loss"] + [n for n in names if n != "loss"]
    walkers = select.by_walker(kept, columns)
    if per_walker:
        blocks = []
        for walker, values in walkers:
            block = _moments([(walker, values)], columns, shift)
            block.insert(0, "id", walker)
            blocks.append(block)
        table = pd.concat(blocks, ignore_index=True)
    else:
        table = _moments(walkers, columns, shift)
    table.attrs["reweighted_to"] = None if shift is None else inverse_temperature  # for plot and summary
    return table


def reweighting(inverse_temperature, run_inverse_temperature):
    """beta - beta_s of the weights exp(-(beta - beta_s) U), or None where the rows are not
    reweighted (no beta asked for, or the run's)."""
    for name, value, least in (("inverse_temperature", inverse_temperature, "> 0"),
                               ("run_inverse_temperature", run_inverse_temperature, ">= 0")):
        if value is not None and not (np.isfinite(value) and (value > 0 or least == ">= 0" and value == 0)):
            raise InputError(f"{name} must be {least}, got {value!r}")
    if inverse_temperature is None or inverse_temperature == run_inverse_temperature:
        return None
    if run_inverse_temperature is None:
        raise InputError(f"moments: reweighting to inverse_temperature {inverse_temperature:g} needs the beta "
                         "the rows were sampled at, which the tables do not record: give run_inverse_temperature "
                         "(--run_inverse_temperature; 0 for rows drawn uniformly), or leave inverse_temperature "
                         "out for the run's own averages")
    return inverse_temperature - run_inverse_temperature


def _moments(walkers, columns, shift):
    values = np.concatenate([v for _, v in walkers])
    loss = values[:, 0]
    mean = values.mean(axis=0)
    variance = values.var(axis=0, ddof=1) if len(values) > 1 else np.full(len(columns), np.nan)
    if shift is None:  # the run's own temperature: the plain values
        weighted_mean, weighted_variance, effective = mean, variance, float(len(values))
    else:
        weights = np.exp(-shift * (loss - (loss.min() if shift > 0 else loss.max())))  # the largest is 1
        weights /= weights.sum()
        weighted_mean = weights @ values
        weighted_variance = weights @ (values - weighted_mean) ** 2
        effective = 1.0 / np.sum(weights ** 2)
    errors, r_hats = [], []
    for i in range(len(columns)):
        series = [v[:, i] for _, v in walkers]
        found = batch_means(series)
        errors.append(found[1] if found is not None else math.nan)
        r_hats.append(select.walkers_r_hat(series))
    return pd.DataFrame({"parameter": columns, "mean": mean, "mean_error": errors, "variance": variance,
                         "sd": np.sqrt(variance), "weighted_mean": weighted_mean,
                         "weighted_variance": weighted_variance, "rows": len(values),
                         "weighted_rows": effective, "walkers_r_hat": r_hats})


def plot(table, path):
    """Two panels over the parameters (the loss left out): the means with two standard errors
    and the standard deviations, beside them the reweighted values where the rows were
    reweighted; with per_walker each walker's values side by side."""
    from tati.analysis import figures
    inverse_temperature = table.attrs.get("reweighted_to")
    table = table[table["parameter"] != "loss"]
    walkers = sorted(table["id"].unique()) if "id" in table else [None]
    names = list(dict.fromkeys(table["parameter"]))
    figure, axes = figures.new_figure(rows=2, height=2.8, sharex=True)
    x = np.arange(len(names))
    slot = 0.8 / ((1 if inverse_temperature is None else 2) * len(walkers))
    for k, walker in enumerate(walkers):
        rows = (table if walker is None else table[table["id"] == walker]).set_index("parameter").loc[names]
        step = 1 if inverse_temperature is None else 2
        plain = x - 0.4 + (step * k + 0.5) * slot
        first = k == 0
        axes[0, 0].errorbar(plain, rows["mean"], yerr=2 * rows["mean_error"].fillna(0.0), fmt="o",
                            color="tab:blue", markersize=4, capsize=2,
                            label="mean +- 2 standard errors" if first else None)
        axes[1, 0].plot(plain, rows["sd"], "o", color="tab:blue", markersize=4)
        if inverse_temperature is not None:
            axes[0, 0].plot(plain + slot, rows["weighted_mean"], "s", color="tab:orange", markersize=4,
                            label=f"reweighted to beta {inverse_temperature:g}" if first else None)
            axes[1, 0].plot(plain + slot, np.sqrt(rows["weighted_variance"]), "s", color="tab:orange", markersize=4)
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
    """The lines tati-analyse prints; the reweighted means only where the rows were reweighted."""
    inverse_temperature = table.attrs.get("reweighted_to")
    pooled = table if "id" not in table else table.groupby("parameter", sort=False).first().reset_index()
    lines = ["  not reweighted: the run's own averages (give inverse_temperature and run_inverse_temperature "
             "for another temperature's)" if inverse_temperature is None else
             f"  reweighted to beta {inverse_temperature:g}: {pooled['weighted_rows'].iloc[0]:.4g} effective rows "
             f"of {int(pooled['rows'].iloc[0])}"]
    for _, row in pooled.head(8).iterrows():
        weighted = "" if inverse_temperature is None else f"; reweighted mean {row['weighted_mean']:.6g}"
        apart = f"; walkers apart (R-hat {row['walkers_r_hat']:.3g})" if _apart(row) else ""
        lines.append(f"  {row['parameter']}: mean {row['mean']:.6g} +- {row['mean_error']:.2g}, "
                     f"sd {row['sd']:.4g}{weighted}{apart}")
    if len(pooled) > 8:
        lines.append(f"  ... and {len(pooled) - 8} more parameters")
    apart = pooled[[_apart(row) for _, row in pooled.iterrows()]]
    if "id" not in table and len(apart):
        lines.append(f"  walkers apart on {len(apart)} of {len(pooled)} (R-hat > {select.APART_R_HAT:g}): there the "
                     "means and sds pool the walkers' places, not one mixed chain's (run longer; a network's "
                     "weights: hidden units swap places)")
    if "id" in table:
        lines.insert(1, "  (walker 0; every walker's rows are in the CSV file)")
    return lines


def _apart(row):
    """Whether the walkers never mixed along this parameter (select.APART_R_HAT)."""
    return bool(row["walkers_r_hat"] > select.APART_R_HAT)
