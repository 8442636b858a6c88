"""Figures of the landscape tables (matplotlib, the extra `plots`): which figure follows from
the table's columns, so a table read back from its CSV file draws alike.

- plane (x, y, point): filled contours of the loss (and of the accuracy in a second panel),
  the marked points labelled with their loss, equal axes so the triangle keeps its shape;
- segment (t): the loss (and accuracy) along t, the two ends marked;
- trajectory (step): the recomputed loss per walker, and the recorded (batch) loss dashed;
- a grid over one axis: a line; over two axes: filled contours, the centre marked.
"""

import numpy as np

from tati.analysis import figures
from tati.errors import InputError

LEVELS = 24


def plot(frame, path):
    """Draw a landscape table into the PNG file `path` (see the module docstring)."""
    figures.check("plot")
    columns = list(frame.columns)
    if "loss" not in columns:
        raise InputError("plot: the table has no column 'loss'")
    if frame.empty:
        raise InputError("plot: the table has no rows")
    quantities = [q for q in ("loss", "accuracy") if q in columns]
    if {"x", "y", "point"} <= set(columns):
        names = ", ".join(_marked(frame))
        return _contours(frame, ["x", "y"], quantities, path, _marked(frame), equal=True,
                         title="on the plane through " + (names if len(names) <= 24 else "the three points"))
    if "t" in columns:
        return _segment(frame, quantities, path)
    if "step" in columns:
        return _trajectory(frame, path)
    coordinates = columns[:columns.index("loss")]
    centre = frame.attrs.get("points", {}).get("centre")
    inside = centre is not None and len(centre) == len(coordinates) and all(
        frame[c].min() <= x <= frame[c].max() for c, x in zip(coordinates, centre))  # ranges may leave it out
    marked = {"centre": centre} if inside else {}
    if len(coordinates) == 1:
        return _lines(frame, coordinates[0], quantities, path, marked, coordinates[0])
    if len(coordinates) == 2:
        return _contours(frame, coordinates, quantities, path, marked, equal=False,
                         title="around the centre" if marked else "on the grid")
    raise InputError(f"plot draws a grid over one or two axes; this one has {len(coordinates)} "
                     f"({', '.join(coordinates[:4])}{', ...' if len(coordinates) > 4 else ''})")


def _marked(frame):
    """{label: coordinates} of the rows named in the column `point` (empty cells are grid rows)."""
    if "point" not in frame.columns:
        return {}
    rows = frame[frame["point"].notna() & (frame["point"].astype(str) != "")]
    coordinates = [c for c in ("x", "y", "t") if c in frame.columns]
    # in the order of the plane's construction: a at the origin, b on the x axis, c above it
    rows = rows.sort_values(coordinates[::-1])
    return {str(row["point"]): tuple(row[coordinates]) for _, row in rows.iterrows()}


def _levels(values, quantity):
    """Contour levels: logarithmic for a positive loss spanning more than a decade, and for a
    loss that is not positive (a negative log-posterior) logarithmic in loss - lowest + 1 when
    that spans more than a decade (a landscape's basins are then told apart, not drowned by its
    highest ridge)."""
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    if constant(values):
        return None, False
    if quantity == "loss" and low > 0 and high / low > 10:
        return np.geomspace(low, high, LEVELS + 1), True
    if quantity == "loss" and low <= 0 and high - low + 1 > 10:
        return low - 1 + np.geomspace(1, high - low + 1, LEVELS + 1), True
    return np.linspace(low, high, LEVELS + 1), False


def constant(values):
    """Whether values are one number up to rounding (a flat loss, an accuracy that never
    changes): matplotlib would spread its levels over the rounding noise."""
    low, high = float(np.nanmin(values)), float(np.nanmax(values))
    return high - low <= 1e-9 * max(abs(low), abs(high), 1e-300)


def _at(values, key):
    """The table's value at a marked point, or None where the point is not a grid point (a grid
    given by ranges, or an even number of points, misses its centre)."""
    return values.loc[key] if key in values.index else None


def _contours(frame, axes_names, quantities, path, marked, equal, title):
    from matplotlib.colors import BoundaryNorm
    xs, ys = (np.unique(frame[name].to_numpy(dtype=float)) for name in axes_names)
    if len(frame) != len(xs) * len(ys):
        raise InputError("plot: the table is not a full grid over " + " and ".join(axes_names))
    ordered = frame.sort_values(list(axes_names))
    height = 4.8
    if equal:  # the panels' height follows the plane's aspect, leaving no band empty
        height = float(np.clip(4.2 * (ys[-1] - ys[0]) / (xs[-1] - xs[0]) + 1.3, 3.0, 8.0))
    figure, axes = figures.new_figure(columns=len(quantities), width=5.6 * len(quantities), height=height)
    for ax, quantity in zip(axes[0], quantities):
        z = ordered[quantity].to_numpy(dtype=float).reshape(len(xs), len(ys)).T
        levels, log = _levels(z, quantity)
        flat = constant(z)
        if flat:  # one band, its one value as the colour bar's one tick
            middle = float(np.nanmean(z))
            levels = middle + max(abs(middle), 1.0) * np.array([-1e-6, 1e-6])
        norm = BoundaryNorm(levels, 256) if log else None  # one colour step per level
        filled = ax.contourf(xs, ys, z, levels=levels, cmap="viridis", norm=norm)
        if levels is not None and not flat:
            ax.contour(xs, ys, z, levels=levels[::4], colors="white", linewidths=0.4, alpha=0.6, norm=norm)
        bar = figure.colorbar(filled, ax=ax, shrink=0.85)
        scale = " (log scale)" if levels is None or levels[0] > 0 else " (log scale of loss - lowest + 1)"
        bar.set_label(quantity + (scale if log else " (the same everywhere)" if flat else ""))
        if log:  # a few levels as labels, not the locator's powers of ten with mantissas
            ticks = levels[::LEVELS // 6]
            bar.minorticks_off()
            bar.set_ticks(ticks, labels=[f"{t:.3g}" for t in ticks])
        if flat:
            bar.set_ticks([middle], labels=[f"{middle:.6g}"])
        values = frame.set_index(list(axes_names))[quantity]
        for label, xy in marked.items():
            ax.plot(*xy, "o", color="red", markeredgecolor="white", markersize=8)
            value = _at(values, tuple(xy))
            text = label if value is None else f"{label}\n{quantity} {value:.4g}"
            right = xy[0] > (xs[0] + xs[-1]) / 2  # the label towards the middle, inside the axes
            ax.annotate(text, xy, xytext=(-7 if right else 7, 7), textcoords="offset points", fontsize=8,
                        color="white", ha="right" if right else "left",
                        bbox=dict(boxstyle="round,pad=0.2", facecolor="black", alpha=0.55, linewidth=0))
        ax.set_xlabel(axes_names[0])
        ax.set_ylabel(axes_names[1])
        ax.set_title(f"{quantity} {title}", fontsize=10)
        if equal:
            ax.set_aspect("equal")
    figures.save(figure, path)


def _lines(frame, coordinate, quantities, path, marked, xlabel):
    figure, axes = figures.new_figure(rows=len(quantities), sharex=True, height=2.8)
    ordered = frame.sort_values(coordinate)
    for ax, quantity in zip(axes[:, 0], quantities):
        ax.plot(ordered[coordinate], ordered[quantity], "-", color="C0", linewidth=1.5)
        values = frame.set_index(coordinate)[quantity]
        for k, (label, position) in enumerate(marked.items()):
            x = position[0]
            y = _at(values, x)
            ax.axvline(x, color="0.6", linewidth=0.8, linestyle=":", label=None if y is not None else label)
            if y is not None:
                ax.plot(x, y, "o", color=f"C{k + 1}", markersize=7, label=f"{label}: {quantity} {y:.4g}")
        ax.set_ylabel(quantity)
        ax.grid(alpha=0.3)
        if constant(ordered[quantity].to_numpy(dtype=float)):  # not an axis of rounding noise
            middle = float(ordered[quantity].mean())
            ax.set_ylim(middle - max(abs(middle), 1.0) * 0.1, middle + max(abs(middle), 1.0) * 0.1)
            ax.ticklabel_format(axis="y", useOffset=False)
        if marked:
            ax.legend(fontsize=8, loc="best")
    axes[-1, 0].set_xlabel(xlabel)
    figures.save(figure, path)


def _segment(frame, quantities, path):
    marked = _marked(frame)
    names = list(marked) or ["a", "b"]
    _lines(frame, "t", quantities, path, marked,
           f"t (0 at {names[0]}, 1 at {names[-1]}; distance = t x {_length(frame):.4g})")


def _length(frame):
    row = frame[frame["t"] != 0].iloc[0]
    return float(row["distance"] / row["t"]) if "distance" in frame.columns else np.nan


def _trajectory(frame, path):
    from matplotlib.lines import Line2D
    figure, axes = figures.new_figure(height=3.6)
    ax = axes[0, 0]
    walkers = sorted(frame["id"].unique()) if "id" in frame.columns else [None]
    palette = figures.colours(len(walkers))
    recorded = "recorded_loss" in frame.columns
    for walker, colour in zip(walkers, palette):
        rows = frame if walker is None else frame[frame["id"] == walker]
        ax.plot(rows["step"], rows["loss"], "-", color=colour, linewidth=1.2,
                label=f"walker {walker}" if walker is not None and len(walkers) <= 8 else None)
        if recorded:
            ax.plot(rows["step"], rows["recorded_loss"], "--", color=colour, linewidth=0.9, alpha=0.8)
    handles = [Line2D([], [], color="black", linewidth=1.2, label="loss on the whole dataset")]
    if recorded:
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.9,
                              label="recorded loss (on the step's batch)"))
    walker_handles, _ = ax.get_legend_handles_labels()
    figure.legend(handles=handles + walker_handles, loc="outside upper center", frameon=False,
                  ncols=min(len(handles) + len(walker_handles), 4))
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    figures.save(figure, path)
