"""The covariance matrix of the parameters and its leading eigenvalues and eigenvectors: the
soft (large eigenvalue) and stiff directions of the sampled landscape.

    found = covariance(result, burn_in=1000)
    found.matrix          # parameter, then one column per parameter
    found.eigen           # rank, eigenvalue, eigenvalue_error, fraction, walkers_r_hat, then the components

Over the trajectory's rows after burn-in: pooled, all walkers' rows about their common mean
(so walkers in different basins show as a large variance along the line between them); or
per walker (column id), each about its own mean. For draws from exp(-beta U) with U near a
minimum of Hessian H, the covariance is (beta H)^-1: a large eigenvalue is a soft direction.

The eigenvalues come in decreasing order; `fraction` is eigenvalue / trace. Each eigenvector
has unit length and its largest component positive (eigenvectors are defined up to sign).
eigenvalue_error is the standard error of the eigenvalue as the variance along its eigenvector,
from batch means of the squared centred projections (tati/diagnostics/equipartition.py), so it
accounts for the rows' correlation in time; it leaves out the estimator's bias, of relative
size about sum_j lambda_j / (n (lambda_i - lambda_j)) for n independent rows, small unless two
eigenvalues are close. walkers_r_hat is Gelman and Rubin's R-hat of the walkers' projections on
the eigenvector (NaN per walker or with one walker): above select.APART_R_HAT the walkers have not
mixed along it, and the eigenvalue is mostly the spread between them.
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tati.analysis import select
from tati.diagnostics.equipartition import batch_means

PURPOSE = "covariance"


@dataclass
class Covariance:
    matrix: pd.DataFrame
    eigen: pd.DataFrame


def covariance(result, burn_in=None, per_walker=False, components=None, parameters=None):
    """Covariance(matrix, eigen) of the parameters (see the module docstring); `components`
    limits the eigen table to the leading ones."""
    burn_in = select.run_burn_in(result, burn_in)
    names, walkers = _walker_values(result, burn_in, parameters, PURPOSE)
    groups = [walkers] if not per_walker else [[w] for w in walkers]
    matrices, eigens = [], []
    for group in groups:
        matrix, eigen = _analyse(group, names, components)
        if per_walker:
            matrix.insert(0, "id", group[0][0])
            eigen.insert(0, "id", group[0][0])
        matrices.append(matrix)
        eigens.append(eigen)
    return Covariance(pd.concat(matrices, ignore_index=True), pd.concat(eigens, ignore_index=True))


def _walker_values(result, burn_in, parameters, purpose):
    names = select.parameter_names(result, purpose)
    if parameters is not None:
        names = select.check_names(result, "trajectory", result.trajectory, select.names_list(parameters),
                                   "parameters", purpose)
    kept = select.after_burn_in(result, "trajectory", result.trajectory, burn_in, purpose, least=2)
    return names, select.by_walker(kept, names)


def decompose(values):
    """(mean, covariance, eigenvalues decreasing, eigenvectors as rows, sign-fixed) of rows."""
    mean = values.mean(axis=0)
    centred = values - mean
    matrix = centred.T @ centred / max(len(values) - 1, 1)
    eigenvalues, vectors = np.linalg.eigh(matrix)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues, vectors = eigenvalues[order], vectors[:, order].T
    signs = np.sign(vectors[np.arange(len(vectors)), np.argmax(np.abs(vectors), axis=1)])
    return mean, matrix, eigenvalues, vectors * np.where(signs == 0, 1.0, signs)[:, None]


def leading_directions(result, burn_in=None, components=2, parameters=None, purpose=PURPOSE):
    """(parameter names, pooled mean, eigenvalues, eigenvectors [k, d], walkers) of the pooled
    rows after burn-in: the k leading directions, for the analyses along them."""
    burn_in = select.run_burn_in(result, burn_in)
    names, walkers = _walker_values(result, burn_in, parameters, purpose)
    mean, _, eigenvalues, vectors = decompose(np.concatenate([v for _, v in walkers]))
    k = min(components, len(names))
    return names, mean, eigenvalues[:k], vectors[:k], walkers


def _analyse(walkers, names, components):
    values = np.concatenate([v for _, v in walkers])
    mean, matrix, eigenvalues, vectors = decompose(values)
    k = len(names) if components is None else min(components, len(names))
    errors, r_hats = [], []
    for vector in vectors[:k]:
        projections = [(v - mean) @ vector for _, v in walkers]
        found = batch_means([p ** 2 for p in projections])
        errors.append(found[1] if found is not None else math.nan)
        r_hats.append(select.walkers_r_hat(projections))
    trace = float(np.trace(matrix))
    frame = pd.DataFrame(matrix, columns=names)
    frame.insert(0, "parameter", names)
    eigen = pd.DataFrame(vectors[:k], columns=names)
    eigen.insert(0, "rank", np.arange(1, k + 1))
    eigen.insert(1, "eigenvalue", eigenvalues[:k])
    eigen.insert(2, "eigenvalue_error", errors)
    eigen.insert(3, "fraction", eigenvalues[:k] / trace if trace > 0 else np.nan)
    eigen.insert(4, "walkers_r_hat", r_hats)
    return frame, eigen


def plot(found, path, vectors=3):
    """Three panels: the covariance matrix (of walker 0 with per_walker), the eigenvalue
    spectrum with two standard errors (every walker's with per_walker), the leading eigenvectors'
    components."""
    from matplotlib.ticker import MaxNLocator

    from tati.analysis import figures
    matrix, eigen = found.matrix, found.eigen
    walkers = sorted(eigen["id"].unique()) if "id" in eigen else [None]
    if walkers[0] is not None:
        matrix = matrix[matrix["id"] == walkers[0]].drop(columns="id")
    names = list(matrix["parameter"])
    figure, axes = figures.new_figure(columns=3, height=3.6, width=11.0, width_ratios=[1.1, 1.0, 1.0])
    values = matrix[names].to_numpy()
    scale = np.abs(values).max() or 1.0
    image = axes[0, 0].imshow(values, cmap="RdBu_r", vmin=-scale, vmax=scale)
    figure.colorbar(image, ax=axes[0, 0], shrink=0.8)
    axes[0, 0].set_title("covariance" + ("" if walkers[0] is None else f", walker {walkers[0]}"),
                         fontsize=10)
    if len(names) <= 30:
        figures.label_ticks(axes[0, 0], names, "x")
        figures.label_ticks(axes[0, 0], names, "y")
    if len(names) <= 6:
        for (i, j), value in np.ndenumerate(values):
            axes[0, 0].text(j, i, f"{value:.3g}", ha="center", va="center", fontsize=8,
                            color="white" if abs(value) > 0.6 * scale else "black")
    palette = figures.colours(len(walkers))
    for walker, colour in zip(walkers, palette):
        rows = eigen if walker is None else eigen[eigen["id"] == walker]
        axes[0, 1].errorbar(rows["rank"], rows["eigenvalue"], yerr=2 * rows["eigenvalue_error"].fillna(0.0),
                            fmt="o-", color=colour, markersize=4, capsize=2, linewidth=1,
                            label="eigenvalue +- 2 standard errors" if walker is None
                            else (f"walker {walker}" if len(walkers) <= 8 else None))
    positive = eigen["eigenvalue"][eigen["eigenvalue"] > 0]
    if len(positive) == len(eigen) and positive.max() / positive.min() > 10:
        axes[0, 1].set_yscale("log")
    axes[0, 1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0, 1].set_xlim(0.5, eigen["rank"].max() + 0.5)  # one eigenvalue: whole ranks still
    axes[0, 1].set_xlabel("rank")
    axes[0, 1].set_title("eigenvalues", fontsize=10)
    first = eigen if walkers[0] is None else eigen[eigen["id"] == walkers[0]]
    shown = first.head(vectors)
    for k, ((_, row), colour) in enumerate(zip(shown.iterrows(), figures.colours(max(vectors, 1)))):
        offset = (k - (len(shown) - 1) / 2) * 0.6 / max(len(shown), 1)
        axes[0, 2].plot(np.arange(len(names)) + offset, row[names].to_numpy(dtype=float),
                        "o" if len(names) <= 30 else ".", color=colour, markersize=5,
                        label=f"eigenvector {int(row['rank'])}")
    axes[0, 2].axhline(0.0, color="0.6", linewidth=0.8)
    axes[0, 2].set_title("leading eigenvectors", fontsize=10)
    axes[0, 2].set_xlim(-0.6, len(names) - 0.4)
    axes[0, 2].set_ylim(-1.08, 1.08)
    figures.label_ticks(axes[0, 2], names, limit=15)
    for ax in axes[0, 1:]:
        ax.grid(alpha=0.3)
    figures.legend_above(figure, axes, columns=4)
    figures.save(figure, path)


def summary(found):
    eigen = found.eigen
    lines = []
    if "id" in eigen:
        lines.append("  (walker 0; every walker's rows are in the CSV files)")
        eigen = eigen[eigen["id"] == eigen["id"].min()]
    for _, row in eigen.head(5).iterrows():
        apart = (f"; walkers apart along it (R-hat {row['walkers_r_hat']:.3g}): their spread, not one basin's"
                 if row["walkers_r_hat"] > select.APART_R_HAT else "")
        lines.append(f"  eigenvalue {int(row['rank'])}: {row['eigenvalue']:.6g} +- "
                     f"{row['eigenvalue_error']:.2g} ({row['fraction']:.1%} of the trace){apart}")
    return lines
