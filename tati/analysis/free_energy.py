"""Where the basins are: the free energy along the leading covariance eigenvectors or along
chosen parameters, from a histogram of the sampled rows.

    table = free_energy(result, burn_in=1000, inverse_temperature=10.0, components=2)

Along a coordinate x (a parameter, or eigenvectorI: the centred projection (theta - mean) . v_I
on the I-th eigenvector of the pooled covariance, tati/analysis/covariance.py) the rows after
burn-in of all walkers are put into `bins` equal bins between their smallest and largest value.
With count_i rows of N in bin i of width w:

    density_i = count_i / (N w),   free_energy_i = -log(density_i) / beta - min_j(...),

so the lowest bin is at 0; for rows drawn from exp(-beta U) this is U along x up to a constant
when x is the only coordinate, and the free energy (U with the other coordinates integrated
out) otherwise. free_energy_error is the standard error of free_energy_i from that of the
bin's fraction p_i = count_i / N: error(p_i) / (beta p_i), with error(p_i) from batch means of
the indicator of bin i over each walker's rows (tati/diagnostics/equipartition.py), which
accounts for the rows' correlation in time. It does not include the error of the shift (that of
the lowest bin) and is reliable for bins with a few tens of rows or more. Empty bins have NaN.
A histogram averages the density over a bin: for a quadratic F of curvature k the bins' values
have a curvature smaller by a relative w^2 beta k / 12. walkers_r_hat (the same on each row of a
coordinate) is Gelman and Rubin's R-hat of the walkers' values of it: above select.APART_R_HAT
each walker's rows make a cluster of their own, and the profile between them is not sampled
(the summary and the figure say so).
"""

import numpy as np
import pandas as pd

from tati.analysis import select
from tati.analysis.covariance import leading_directions
from tati.diagnostics.equipartition import batch_means
from tati.errors import InputError

PURPOSE = "free_energy"
COLUMNS = ["coordinate", "center", "left", "right", "count", "density", "free_energy", "free_energy_error",
           "walkers_r_hat"]


def coordinates(result, burn_in=None, parameters=None, components=2):
    """(names, [(walker, [rows, coordinates] array)]): the chosen parameters' values, or the
    projections on the leading eigenvectors."""
    burn_in = select.run_burn_in(result, burn_in)
    if parameters is not None:
        select.parameter_names(result, PURPOSE)
        names = select.check_names(result, "trajectory", result.trajectory, select.names_list(parameters),
                                   "parameters", PURPOSE)
        kept = select.after_burn_in(result, "trajectory", result.trajectory, burn_in, PURPOSE, least=2)
        return names, select.by_walker(kept, names)
    if components < 1:
        raise InputError("components must be at least 1 (or give parameters)")
    _, mean, _, vectors, walkers = leading_directions(result, burn_in, components, purpose=PURPOSE)
    names = [f"eigenvector{i + 1}" for i in range(len(vectors))]
    return names, [(walker, (values - mean) @ vectors.T) for walker, values in walkers]


def free_energy(result, burn_in=None, inverse_temperature=None, parameters=None, components=2, bins=40):
    """DataFrame with the columns COLUMNS, `bins` rows per coordinate (see the module docstring)."""
    burn_in = select.run_burn_in(result, burn_in)
    inverse_temperature = select.run_inverse_temperature(result, inverse_temperature)
    if bins < 2:
        raise InputError(f"bins must be at least 2, got {bins}")
    names, walkers = coordinates(result, burn_in, parameters, components)
    beta = inverse_temperature
    blocks = []
    for j, name in enumerate(names):
        series = [values[:, j] for _, values in walkers]
        pooled = np.concatenate(series)
        low, high = float(pooled.min()), float(pooled.max())
        if not high > low:
            raise InputError(f"free_energy: {name} does not move (every row has {low:g}); "
                             "choose other parameters")
        edges = np.linspace(low, high, bins + 1)
        counts = np.histogram(pooled, edges)[0]
        width = edges[1] - edges[0]
        total = len(pooled)
        with np.errstate(divide="ignore"):
            density = counts / (total * width)
            energy = np.where(counts > 0, -np.log(density) / beta, np.nan)
        energy -= np.nanmin(energy)
        index = [np.clip(np.searchsorted(edges, s, side="right") - 1, 0, bins - 1) for s in series]
        errors = np.full(bins, np.nan)
        for i in np.flatnonzero(counts):
            found = batch_means([(k == i).astype(np.float64) for k in index])
            if found is not None:
                errors[i] = found[1] / (beta * counts[i] / total)
        blocks.append(pd.DataFrame({"coordinate": name, "center": (edges[:-1] + edges[1:]) / 2,
                                    "left": edges[:-1], "right": edges[1:], "count": counts,
                                    "density": density, "free_energy": energy,
                                    "free_energy_error": errors, "walkers_r_hat": select.walkers_r_hat(series)}))
    return pd.concat(blocks, ignore_index=True)[COLUMNS]


def offset(table, curve):
    """The constant c for which curve(center) + c best matches the table's free energy (least
    squares weighted by 1 / free_energy_error^2 over the occupied bins): potentials and free
    energies are defined up to a constant."""
    x, f, e = (table[c].to_numpy(dtype=float) for c in ("center", "free_energy", "free_energy_error"))
    gap = f - np.asarray(curve(x), dtype=float)
    good = np.isfinite(gap)
    weights = np.ones(good.sum())
    if np.all(np.isfinite(e[good]) & (e[good] > 0)):
        weights = 1.0 / e[good] ** 2
    return float(np.sum(weights * gap[good]) / weights.sum()) if good.any() else 0.0


def harmonic(result, burn_in=None, inverse_temperature=None, parameters=None, components=2):
    """{coordinate: curve}: the free energy of a Gaussian with the rows' mean and variance along
    each coordinate, (x - m)^2 / (2 beta s^2), the harmonic approximation."""
    burn_in = select.run_burn_in(result, burn_in)
    inverse_temperature = select.run_inverse_temperature(result, inverse_temperature)
    names, walkers = coordinates(result, burn_in, parameters, components)
    curves = {}
    for j, name in enumerate(names):
        values = np.concatenate([v[:, j] for _, v in walkers])
        m, s2 = values.mean(), values.var(ddof=1)
        curves[name] = (lambda x, m=m, s2=s2: (x - m) ** 2 / (2.0 * inverse_temperature * s2))
    return curves


def plot(table, path, exact=None, approximations=None):
    """One panel per coordinate: the free energy with two standard errors, the exact curves
    given as {coordinate: callable} (solid) and approximations such as harmonic() (dashed),
    each shifted by offset()."""
    from tati.analysis import figures
    names = list(dict.fromkeys(table["coordinate"]))
    figure, axes = figures.new_figure(rows=len(names), height=2.8)
    for ax, name in zip(axes[:, 0], names):
        rows = table[table["coordinate"] == name]
        shown = rows[rows["count"] > 0]
        bars = 2 * shown["free_energy_error"].fillna(0.0)
        ax.errorbar(shown["center"], shown["free_energy"], yerr=bars, fmt="o", markersize=3, capsize=2,
                    color="tab:blue", label="free energy +- 2 standard errors")
        x = np.linspace(rows["left"].min(), rows["right"].max(), 200)
        for curves, style, colour, label in ((exact, "-", "black", "exact"),
                                             (approximations, "--", "tab:orange", "harmonic approximation")):
            if curves and name in curves:
                curve = curves[name]
                ax.plot(x, np.asarray(curve(x), dtype=float) + offset(rows, curve), style, color=colour,
                        linewidth=1.3, label=label)
        top = np.nanmax(shown["free_energy"] + bars)
        apart = _apart(rows)
        ax.set_ylim(-0.05 * top - 0.1, (1.3 if apart else 1.15) * top + 0.1)  # room for the line
        ax.set_xlabel(name)
        ax.set_ylabel("free energy")
        if apart:
            ax.text(0.5, 0.97, apart, transform=ax.transAxes, ha="center", va="top", fontsize=9, color="tab:red")
        ax.grid(alpha=0.3)
    figures.legend_above(figure, axes, columns=3)
    figures.save(figure, path)


def summary(table):
    lines = []
    for name, rows in table.groupby("coordinate", sort=False):
        shown = rows[rows["count"] > 0]
        lowest = shown.loc[shown["free_energy"].idxmin()]
        apart = _apart(rows)
        lines.append(f"  {name}: {int(rows['count'].sum())} rows in {len(rows)} bins from "
                     f"{rows['left'].min():.4g} to {rows['right'].max():.4g}; minimum at {lowest['center']:.4g}, "
                     f"highest occupied bin {shown['free_energy'].max():.4g} above it" + (apart and f"; {apart}"))
    return lines


def _apart(rows):
    """'' or what the walkers' R-hat along the coordinate says: that the profile between their
    clusters is not sampled (each walker's rows make a cluster of their own)."""
    r_hat = rows["walkers_r_hat"].iloc[0]
    if not r_hat > select.APART_R_HAT:
        return ""
    return (f"walkers apart (R-hat {r_hat:.3g} > {select.APART_R_HAT:g}): each is a cluster, the profile "
            "between them not sampled")
