"""Figures of the analyses: matplotlib (the optional extra `plots`) without pyplot's global
state, so that plotting from a script or a notebook leaves its backend alone.

    figure, axes = new_figure(rows=2)
    ...
    save(figure, "traces.png")
"""

import importlib.util
import os

from tati.errors import InputError

MISSING = "needs matplotlib: pip install tati[plots]"
WIDTH = 8.0        # inches; at DPI this is 800 pixels
PANEL_HEIGHT = 3.0
DPI = 100


def available():
    return importlib.util.find_spec("matplotlib") is not None


FORMATS = ("png", "pdf", "svg")


def check(what="plot", path=None):
    """InputError '<what> needs matplotlib: ...' when the extra is not installed, or naming
    `path` when its suffix is not one of FORMATS (the figure is written in the suffix's format)."""
    if not available():
        raise InputError(f"{what} {MISSING}")
    if path is not None and _format(path) is None:
        raise InputError(f"{what} '{path}': a figure is written as {', '.join('.' + f for f in FORMATS)}; "
                         "name the file with one of these suffixes")


def _format(path):
    suffix = os.path.splitext(str(path))[1][1:].lower()
    return suffix if suffix in FORMATS else None


def new_figure(rows=1, columns=1, height=PANEL_HEIGHT, width=WIDTH, sharex=False, width_ratios=None):
    """(figure, 2-D array of axes), drawn by the Agg canvas; `height` is per row of panels."""
    check()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    figure = Figure(figsize=(width, height * rows), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False, sharex=sharex, width_ratios=width_ratios)
    return figure, axes


def save(figure, path):
    """Write the figure to `path` in its suffix's format, PNG for any other (the caller checked
    that this loses nothing)."""
    try:
        figure.savefig(path, format=_format(path) or "png", dpi=DPI)
    except OSError as error:
        raise InputError(f"cannot write '{path}': {error.strerror}") from None


def legend_above(figure, axes, columns=None):
    """One legend for the figure, above the panels, from every panel's labelled artists (each
    label once), so it hides no data."""
    handles, labels = [], []
    for ax in axes.ravel():
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if handles:
        figure.legend(handles, labels, loc="outside upper center", ncols=columns or min(len(labels), 4),
                      frameon=False)


def colours(count):
    """`count` distinguishable colours (tab10, then tab20, then a continuous map)."""
    from matplotlib import colormaps
    if count <= 10:
        return [colormaps["tab10"](i) for i in range(count)]
    if count <= 20:
        return [colormaps["tab20"](i) for i in range(count)]
    return [colormaps["viridis"](i / (count - 1)) for i in range(count)]


def label_ticks(ax, names, axis="x", limit=30):
    """Categorical tick labels, rotated when many; only every k-th when more than `limit`."""
    step = max(1, -(-len(names) // limit))
    positions = list(range(0, len(names), step))
    labels = [names[i] for i in positions]
    rotation = 90 if len(names) > 8 else 0
    if axis == "x":
        ax.set_xticks(positions, labels, rotation=rotation)
    else:
        ax.set_yticks(positions, labels)
