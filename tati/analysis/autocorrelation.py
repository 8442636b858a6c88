"""How long a chain remembers: the integrated autocorrelation time and effective sample size of
each parameter and of the projections on the leading covariance eigenvectors, R-hat across
walkers, and a verdict.

    table = autocorrelation(result, burn_in=1000, components=2)
    table.loc[table.coordinate == "param0", ["tau", "tau_error", "ess", "r_hat", "verdict"]]

Rows: each parameter, then eigenvector1, ... eigenvectorK, the centred projections
(theta - mean) . v_i on the leading eigenvectors of the pooled covariance
(tati/analysis/covariance.py). Over the trajectory's rows after burn-in, each walker's last
rows, as many as the walker with the fewest has (HMC's walkers have different counts):

* ess, r_hat: tati.diagnostics.convergence, i.e. tfp.mcmc.effective_sample_size (all walkers
  together, Geyer's initial positive sequence) and the square root of
  tfp.mcmc.potential_scale_reduction (split chains); r_hat NaN with one walker;
* tau = rows x walkers / ess, the integrated autocorrelation time 1 + 2 sum_t rho_t in table
  rows (multiply by every_nth for steps);
* tau_error: the standard error of tau, tau sqrt(2 (2 M + 1) / N) (Madras and Sokal 1988;
  Sokal 1997, eq. 3.19), N = rows x walkers and M the summation window: the first lag at
  which the walkers' mean autocorrelation function (tfp.stats.auto_correlation) is negative,
  where the initial positive sequence that the ESS sums ends. A window that a run of noise
  keeps open longer gives a larger tau and a larger error together. ess_error = ess x
  tau_error / tau. `window` is M;
* verdict: 'ok' when R-hat <= 1.01 and ESS >= 100 per walker (Vehtari et al. 2021, as the
  summary of tati-sample), else what fails.
"""


import warnings

import numpy as np
import pandas as pd

from tati.analysis import select
from tati.analysis.covariance import decompose
from tati.diagnostics.summary.walkers import ESS_PER_WALKER, R_HAT_MAX
from tati.errors import InputError

PURPOSE = "autocorrelation"
COLUMNS = ["coordinate", "tau", "tau_error", "ess", "ess_error", "r_hat", "window", "rows", "walkers",
           "verdict"]


def coordinates(result, burn_in=None, parameters=None, components=2):
    """(names, chains [rows, walkers, coordinates] float64): the parameters and the projections
    on the leading eigenvectors, over each walker's last rows after burn-in."""
    burn_in = select.run_burn_in(result, burn_in)
    from tati.diagnostics.convergence import MIN_ROWS, equal_rows
    names = select.parameter_names(result, PURPOSE)
    trajectory = result.trajectory
    if parameters is not None:
        names = select.check_names(result, "trajectory", trajectory, select.names_list(parameters),
                                   "parameters", PURPOSE)
    select.after_burn_in(result, "trajectory", trajectory, burn_in, PURPOSE, least=2)
    rows = equal_rows(trajectory, burn_in)
    counts = rows.groupby("id").size()
    n, walkers = int(counts.iloc[0]), len(counts)
    if n < MIN_ROWS:
        raise InputError(f"autocorrelation needs at least {MIN_ROWS} rows per walker after "
                         f"burn_in_steps {burn_in}, got {n}")
    values = rows[names].to_numpy(dtype=np.float64).reshape(walkers, n, len(names)).transpose(1, 0, 2)
    k = min(components, len(names))
    if k > 0:
        mean, _, _, vectors = decompose(values.reshape(-1, len(names)))
        projections = (values - mean) @ vectors[:k].T
        values = np.concatenate([values, projections], axis=2)
        names = names + [f"eigenvector{i + 1}" for i in range(k)]
    return names, np.ascontiguousarray(values)


def _trajectory(chains, names):
    """A trajectory table of chains [rows, walkers, coordinates], for convergence()."""
    rows, walkers, _ = chains.shape
    table = pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                          "step": np.repeat(np.arange(1, rows + 1), walkers), "loss": 0.0})
    data = pd.DataFrame(chains.reshape(rows * walkers, -1), columns=names)
    return pd.concat([table, data], axis=1)


def autocorrelation(result, burn_in=None, parameters=None, components=2):
    """DataFrame with the columns COLUMNS, one row per coordinate; see the module docstring."""
    burn_in = select.run_burn_in(result, burn_in)
    from tati.diagnostics.convergence import convergence
    names, chains = coordinates(result, burn_in, parameters, components)
    rows, walkers, _ = chains.shape
    pooled = convergence(_trajectory(chains, names))
    ess = pooled["ess"].to_numpy()
    window = windows(functions(chains, rows - 1))
    total = rows * walkers
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = total / ess
        tau_error = tau * np.sqrt(2.0 * (2.0 * window + 1.0) / total)
        ess_error = ess * tau_error / tau
    table = pd.DataFrame({"coordinate": names, "tau": tau, "tau_error": tau_error, "ess": ess,
                          "ess_error": ess_error, "r_hat": pooled["r_hat"].to_numpy(), "window": window,
                          "rows": rows, "walkers": walkers})
    table["verdict"] = [verdict(r, e, walkers) for r, e in zip(table["r_hat"], table["ess"])]
    return table[COLUMNS]


def windows(acf):
    """The first lag at which each column of the autocorrelation functions [lags, coordinates]
    is negative (the last lag if none is)."""
    negative = acf < 0
    return np.where(negative.any(axis=0), np.argmax(negative, axis=0), len(acf) - 1)


def verdict(r_hat, ess, walkers):
    """'ok', or what fails of R-hat <= R_HAT_MAX and ESS >= ESS_PER_WALKER x walkers."""
    if not np.isfinite(ess):
        return "does not move"
    need = ESS_PER_WALKER * walkers
    faults = []
    if np.isfinite(r_hat) and r_hat > R_HAT_MAX:
        faults.append(f"R-hat {r_hat:.3f} > {R_HAT_MAX} (walkers disagree)")
    if ess < need:
        faults.append(f"ESS {ess:.0f} < {need} (too few independent draws)")
    return "; ".join(faults) if faults else "ok"


def functions(chains, max_lag):
    """The autocorrelation function of each coordinate up to max_lag, mean over walkers
    ([max_lag + 1, coordinates]), by tfp.stats.auto_correlation."""
    from tati.diagnostics.convergence import _quiet_tfp
    with _quiet_tfp() as tfp:
        acf = tfp.stats.auto_correlation(chains, axis=0, max_lags=max_lag).numpy()
    with warnings.catch_warnings():  # a coordinate that never moves is NaN in every walker: NaN it stays
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        return np.nanmean(acf, axis=1)


def plot(result, table, path, burn_in=None, parameters=None, components=2, shown=8):
    """Two panels: the autocorrelation functions of up to `shown` coordinates (eigenvectors
    first) with tau in the legend, up to 5 tau but at most half the rows (tfp's estimate at lag
    k divides by rows - k, so the last lags rest on a few pairs and leave [-1, 1]), and tau with
    two standard errors for every coordinate."""
    burn_in = select.run_burn_in(result, burn_in)
    from tati.analysis import figures
    names, chains = coordinates(result, burn_in, parameters, components)
    moving = np.isfinite(table["tau"].to_numpy(dtype=float))  # a coordinate that never moves has no ACF
    order = [i for i, n in enumerate(names) if n.startswith("eigenvector") and moving[i]]
    order = (order + [i for i in range(len(names)) if i not in order and moving[i]])[:shown]
    finite = table["tau"][np.isfinite(table["tau"])]
    max_lag = int(min(chains.shape[0] // 2, max(10, 5 * (finite.max() if len(finite) else 2))))
    acf = functions(chains[:, :, order], max_lag)
    figure, axes = figures.new_figure(rows=2, height=2.9)
    lags = np.arange(max_lag + 1)
    for j, (i, colour) in enumerate(zip(order, figures.colours(len(order)))):
        row = table.iloc[i]
        dashed = row["coordinate"].startswith("eigenvector")  # may coincide with a parameter's curve
        axes[0, 0].plot(lags, acf[:, j], color=colour, linewidth=2.2 if dashed else 1.2,
                        linestyle="--" if dashed else "-",
                        label=f"{row['coordinate']}: tau {row['tau']:.3g} +- {row['tau_error']:.2g}")
    axes[0, 0].axhline(0.0, color="0.5", linewidth=0.8)
    axes[0, 0].set_xlabel("lag (rows)")
    axes[0, 0].set_ylabel("autocorrelation")
    x = np.arange(len(table))
    ok = (table["verdict"] == "ok").to_numpy()
    for mask, colour, label in ((ok, "tab:green", "tau +- 2 standard errors, verdict ok"),
                                (~ok & moving, "tab:red", "tau +- 2 standard errors, not converged")):
        if mask.any():
            axes[1, 0].errorbar(x[mask], table["tau"][mask], yerr=2 * table["tau_error"][mask].fillna(0.0),
                                fmt="o", color=colour, capsize=2, markersize=4, label=label)
    from matplotlib.transforms import blended_transform_factory
    for i in np.flatnonzero(~moving):
        axes[1, 0].text(i, 0.5, "does not move", ha="center", va="center", fontsize=8, color="0.35",
                        rotation=90, transform=blended_transform_factory(axes[1, 0].transData, axes[1, 0].transAxes))
    figures.label_ticks(axes[1, 0], list(table["coordinate"]))
    axes[1, 0].set_xlim(-0.6, len(table) - 0.4)
    axes[1, 0].set_ylabel("tau (rows)")
    for ax in axes[:, 0]:
        ax.grid(alpha=0.3)
    figures.legend_above(figure, axes, columns=2)
    figures.save(figure, path)


def summary(table):
    walkers = int(table["walkers"].iloc[0])
    worst_tau = table.loc[table["tau"].idxmax()] if table["tau"].notna().any() else None
    lines = []
    if worst_tau is not None:
        lines.append(f"  tau max {worst_tau['tau']:.4g} +- {worst_tau['tau_error']:.2g} rows "
                     f"({worst_tau['coordinate']}), ESS min {table['ess'].min():.0f} over "
                     f"{walkers} walker{'s' if walkers > 1 else ''} of {int(table['rows'].iloc[0])} rows")
    if table["r_hat"].notna().any():
        lines.append(f"  R-hat max {table['r_hat'].max():.4f} ({table.loc[table['r_hat'].idxmax(), 'coordinate']})")
    bad = table[table["verdict"] != "ok"]
    if bad.empty and walkers == 1:  # R-hat compares walkers
        lines.append(f"  ok: ESS >= {ESS_PER_WALKER} for every coordinate; R-hat not checked: it compares "
                     "walkers, and this run has one (number_walkers 4 gives it)")
    elif bad.empty:
        lines.append(f"  ok: R-hat <= {R_HAT_MAX}, ESS >= {ESS_PER_WALKER * walkers} for every coordinate")
    else:
        for _, row in bad.head(5).iterrows():
            lines.append(f"  {row['coordinate']}: {row['verdict']}")
        if len(bad) > 5:
            lines.append(f"  ... and {len(bad) - 5} more coordinates not converged")
    return lines
