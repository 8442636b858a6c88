"""Whether a predictive's probabilities match held-out labels, as numbers and as one figure.

Regression and counts: the probability integral transform (PIT) of a label y under the predictive's
CDF F, u = F(y), is uniform on [0, 1] where the predictive is calibrated (Dawid 1984; Gneiting,
Balabdaoui and Raftery 2007): a histogram of the u's piled at both ends means bands too narrow, a
hump in the middle bands too wide, a slope a biased mean. For counts F jumps, so u is drawn uniformly
between F(y - 1) and F(y), which is uniform again (the randomised PIT, Czado, Gneiting and Held 2009);
tati.bayes.predictive writes u as the column `pit_k`.

Classifiers: the predictive's class is its most probable one and its confidence that probability.
Calibrated, a bin of points with confidence near c holds a fraction c of right classes; the expected
calibration error is the points-weighted mean of |accuracy - confidence| over the bins (Guo, Pleiss,
Sun and Weinberger 2017, with their 10 equal bins of confidence).

The figure's bands are a calibrated predictive's: with probability 1 - BAND_CHANCE every bin lies
inside (Bonferroni over the bins), so a bin outside is evidence, not chance.
"""

import numpy as np
import pandas as pd
from scipy import stats

from tati.errors import InputError

BINS = 10
BAND_CHANCE = 0.01
CLASSIFIERS = ("bernoulli", "categorical")


def as_columns(labels):
    """labels as float64 [points, label columns] (a vector is one column)."""
    labels = np.asarray(labels, np.float64)
    return labels.reshape(-1, 1) if labels.ndim == 1 else labels


def inside_band(table, labels):
    """[points, label columns] bool: whether each label lies in the predictive's band (`lower_k`, `upper_k`)."""
    labels = as_columns(labels)
    return np.column_stack([(table[f"lower_{k}"].to_numpy() <= labels[:, k]) & (labels[:, k] <= table[f"upper_{k}"])
                            for k in range(labels.shape[1])])


def classes_of(labels, likelihood):
    """[points] int: the class of each label (bernoulli: 1 for a label above 0, of 0/1 or -1/+1;
    categorical: an index column or the one-hot column that is 1)."""
    labels = as_columns(labels)
    if likelihood == "bernoulli":
        return (labels[:, 0] > 0).astype(int)
    return labels[:, 0].round().astype(int) if labels.shape[1] == 1 else labels.argmax(axis=1)


def class_probabilities(table, likelihood):
    """[points, classes]: the predictive's class probabilities from its `mean_k` columns."""
    means = table[[c for c in table.columns if c.startswith("mean_")]].to_numpy(np.float64)
    return np.column_stack([1.0 - means[:, 0], means[:, 0]]) if likelihood == "bernoulli" else means


def reliability(probabilities, classes, bins=BINS):
    """(DataFrame of the non-empty bins of confidence in [1/classes, 1], with `lower`, `upper`,
    `points`, `confidence` (mean) and `accuracy`; the expected calibration error)."""
    confidence = probabilities.max(axis=1)
    right = probabilities.argmax(axis=1) == classes
    edges = np.linspace(1.0 / probabilities.shape[1], 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    rows = [{"lower": edges[b], "upper": edges[b + 1], "points": int(np.sum(which == b)),
             "confidence": float(confidence[which == b].mean()), "accuracy": float(right[which == b].mean())}
            for b in range(bins) if np.any(which == b)]
    table = pd.DataFrame(rows)
    error = float(np.sum(table["points"] * np.abs(table["accuracy"] - table["confidence"])) / len(classes))
    return table, error


def scores(table, labels, likelihood, level):
    """One line on the held-out labels: a classifier's accuracy and expected calibration error, else
    the predictive mean's RMSE and how many labels the central `level` band holds."""
    labels = as_columns(labels)
    if likelihood in CLASSIFIERS:
        probabilities = class_probabilities(table, likelihood)
        classes = classes_of(labels, likelihood)
        right = int(np.sum(probabilities.argmax(axis=1) == classes))
        _, error = reliability(probabilities, classes)
        return (f"accuracy {right / len(classes):.4g} ({right} of {len(classes)}), expected calibration error "
                f"{error:.3g} ({BINS} bins of confidence)")
    mean = np.column_stack([table[f"mean_{k}"] for k in range(labels.shape[1])])
    inside = int(inside_band(table, labels).sum())
    rmse = float(np.sqrt(np.mean((labels - mean) ** 2)))
    return (f"RMSE {rmse:.4g} of the predictive mean; the central {level:g} band holds {inside} of "
            f"{labels.size} labels ({inside / labels.size:.0%})")


def _band(count, probabilities, bins):
    """The central 1 - BAND_CHANCE / bins interval of Binomial(count, p) / count for each p."""
    tail = BAND_CHANCE / bins / 2.0
    return (stats.binom.ppf(tail, count, probabilities) / count, stats.binom.isf(tail, count, probabilities) / count)


def plot(table, labels, likelihood, path, level=0.95, label_names=None):
    """The calibration figure at `path` (needs matplotlib): a classifier's reliability diagram and its
    confidences; else per label column the labels against the predictive mean with its band, and the
    PIT histogram (table's `pit_k`)."""
    from tati.analysis import figures
    if likelihood == "none":
        raise InputError("a calibration figure needs a likelihood (option likelihood)")
    labels = as_columns(labels)
    if likelihood in CLASSIFIERS:
        figure, axes = figures.new_figure(columns=2, height=3.6)
        _reliability_panels(axes[0], class_probabilities(table, likelihood), classes_of(labels, likelihood))
    else:
        figure, axes = figures.new_figure(rows=labels.shape[1], columns=2, height=3.4)
        inside = inside_band(table, labels)
        for k, row in enumerate(axes):
            name = label_names[k] if label_names else f"label {k}"
            _label_panel(row[0], table, labels[:, k], inside[:, k], k, name, level)
            _pit_panel(row[1], table[f"pit_{k}"].to_numpy(), name)
    figures.legend_above(figure, axes, columns=3)
    figures.save(figure, path)


def _label_panel(ax, table, y, inside, k, name, level):
    mean, lower, upper = (table[f"{c}_{k}"].to_numpy() for c in ("mean", "lower", "upper"))
    outside = ~inside
    for part, colour, text in ((~outside, "tab:blue", f"inside the central {level:g} band"),
                               (outside, "tab:red", "outside it")):
        if np.any(part):
            ax.errorbar(mean[part], y[part], xerr=[mean[part] - lower[part], upper[part] - mean[part]], fmt=".",
                        color=colour, ecolor=colour, elinewidth=0.6, alpha=0.7, markersize=4, label=text)
    span = [min(mean.min(), y.min()), max(mean.max(), y.max())]
    ax.plot(span, span, color="0.3", lw=0.8, ls="--")
    ax.set_xlabel("predictive mean (band)")
    ax.set_ylabel(f"held-out {name}")
    ax.grid(alpha=0.3)


def _pit_panel(ax, u, name):
    counts, edges = np.histogram(u, bins=BINS, range=(0.0, 1.0))
    ax.bar(edges[:-1], counts / len(u) * BINS, width=1.0 / BINS, align="edge", color="tab:blue", alpha=0.6,
           edgecolor="white", zorder=2)
    low, high = _band(len(u), np.full(1, 1.0 / BINS), BINS)
    ax.axhspan(low[0] * BINS, high[0] * BINS, color="0.5", alpha=0.25, linewidth=0, zorder=1,
               label=f"{1 - BAND_CHANCE:.0%} band of a calibrated predictive (all bins)")
    ax.axhline(1.0, color="0.3", lw=0.8, ls="--")
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel(f"PIT of the held-out {name}: the predictive's CDF at it")
    ax.set_ylabel("density (1 if calibrated)")
    ax.grid(alpha=0.3)


def _reliability_panels(axes, probabilities, classes):
    bins, error = reliability(probabilities, classes)
    low, high = _band(bins["points"].to_numpy(), bins["confidence"].to_numpy(), BINS)
    lowest = 1.0 / probabilities.shape[1]  # the least confidence of a most probable class
    ax = axes[0]
    ax.plot([lowest, 1.0], [lowest, 1.0], color="0.3", lw=0.8, ls="--")
    ax.vlines(bins["confidence"], low, high, color="0.5", lw=6, alpha=0.35,
              label=f"{1 - BAND_CHANCE:.0%} band of a calibrated predictive (all bins)")
    ax.plot(bins["confidence"], bins["accuracy"], "o-", color="tab:blue", label="accuracy per bin of confidence")
    for k, (points, confidence, accuracy) in enumerate(zip(bins["points"], bins["confidence"], bins["accuracy"])):
        ax.annotate(f"{points} point{'s' * (points != 1)}", (confidence, accuracy), textcoords="offset points",
                    xytext=(4, 6 if k % 2 else -10), fontsize=7, color="0.3")  # alternately: neighbours apart
    ax.set_xlim(lowest, 1.0)
    ax.set_xlabel("confidence (the predicted class's probability)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"expected calibration error {error:.3g}", fontsize=10)
    ax.grid(alpha=0.3)
    confidence = probabilities.max(axis=1)
    right = probabilities.argmax(axis=1) == classes
    edges = np.linspace(lowest, 1.0, BINS + 1)
    axes[1].hist([confidence[right], confidence[~right]], bins=edges, stacked=True,
                 color=["tab:blue", "tab:red"], label=["right class", "wrong class"])
    axes[1].set_xlim(lowest, 1.0)
    axes[1].set_xlabel("confidence")
    axes[1].set_ylabel("held-out points")
    axes[1].grid(alpha=0.3)
