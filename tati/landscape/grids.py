"""The loss landscape as tables: the loss (and accuracy) on grids, planes, segments and along a
trajectory, each a pandas DataFrame with one row per evaluated parameter vector.

All losses are the Simulation's U on the whole dataset (with its prior, as `sim.loss()`), and
accuracy is `sim.score()`'s, where the model has one. Coordinates are Euclidean in parameter
space: on a plane or segment, the distance from the first point.
"""

import numpy as np
import pandas as pd

from tati.errors import InputError
from tati.landscape import points as P
from tati.landscape.evaluate import Evaluator
from tati.recording.columns import check_parameter_columns

MAX_POINTS = 1_000_000  # rows of one table


def loss_on_grid(sim, parameters=None, around=None, width=1.0, ranges=None, points=21,
                 exclude_parameters=None):
    """The loss on a grid over chosen parameters, the others kept at `around`.

    parameters: names (weight0, bias1, param0, ...) or indices; or exclude_parameters: all but
    these; default all. around: the grid's centre (a vector or trajectory row; default walker
    0's current parameters). Each axis spans its parameter's centre value +- width (a number or
    one per parameter; an odd number of points hits the centre exactly), or ranges: one
    (low, high) per parameter. points: per axis (a number or one per parameter).
    Returns a DataFrame: one column per chosen parameter (its value), loss, [accuracy].
    """
    centre = P.vector(sim, around, "around")
    names = list(sim.model.parameter_names)
    chosen = P.parameter_indices(names, parameters, exclude_parameters)
    axes = _axes(centre[chosen], width, ranges, points, "parameters")
    grid = _mesh(axes)
    vectors = np.repeat(centre[None], len(grid), axis=0)
    vectors[:, chosen] = grid
    frame = _table({names[i]: grid[:, k] for k, i in enumerate(chosen)}, Evaluator(sim)(vectors), sim)
    frame.attrs.update(kind="grid", coordinates=[names[i] for i in chosen],
                       points={"centre": tuple(float(v) for v in centre[chosen])})
    return frame


def loss_on_directions(sim, directions, around=None, width=None, ranges=None, points=21, components=None):
    """The loss on a grid in the span of directions through `around`: theta = around + sum_k s_k v_k.

    directions: an array [k, d] (or one vector), or tati-analyse covariance's eigenvector table
    (a DataFrame of rank, eigenvalue, ... and parameter columns, e.g. read from its
    eigen_output file); components: use the first k. Each coordinate s_k spans +- width (default
    3 standard deviations sqrt(eigenvalue) for an eigenvector table, else 1) or ranges
    (low, high). Returns a DataFrame: one column per direction (eigenvector1, ... or
    direction1, ...), loss, [accuracy].
    """
    centre = P.vector(sim, around, "around")
    vectors, labels, eigenvalues = P.directions(sim, directions, components)
    if width is None and ranges is None:
        width = (3.0 * np.sqrt(eigenvalues) if eigenvalues is not None and np.all(eigenvalues > 0)
                 else 1.0)
    axes = _axes(np.zeros(len(vectors)), width, ranges, points, "directions")
    grid = _mesh(axes)
    thetas = centre[None] + grid @ vectors
    frame = _table(dict(zip(labels, grid.T)), Evaluator(sim)(thetas), sim)
    frame.attrs.update(kind="directions", coordinates=labels, points={"centre": (0.0,) * len(labels)})
    return frame


def plane_basis(a, b, c):
    """(e1, e2, coordinates [3, 2]): the orthonormal basis of the plane through the vectors a, b,
    c by Gram-Schmidt of b - a and c - a, and the three points' coordinates (a at the origin,
    b on the first axis, c with a positive second coordinate)."""
    ab, ac = b - a, c - a
    length = np.linalg.norm(ab)
    if length == 0:
        raise InputError("plane: the first and second points are the same vector")
    e1 = ab / length
    x_c = float(ac @ e1)
    rest = ac - x_c * e1
    rest -= (rest @ e1) * e1  # once more, for orthogonality to rounding
    y_c = float(np.linalg.norm(rest))
    if y_c <= 1e-12 * max(length, np.linalg.norm(ac)):
        raise InputError("plane: the three points lie on one line (or two are the same); a plane needs "
                         "three points not on one line")
    return e1, rest / y_c, np.array([[0.0, 0.0], [length, 0.0], [x_c, y_c]])


def loss_on_plane(sim, a, b, c, points=41, margin=0.25, labels=("a", "b", "c")):
    """The loss on the plane through three parameter vectors (fitted solutions, walkers or
    trajectory rows: vectors or rows, see tati.landscape.points).

    The plane's coordinates x, y are along the orthonormal basis of plane_basis(a, b, c): a at
    (0, 0), b at (|b - a|, 0), c above the x axis. The grid covers the triangle with `margin`
    times the larger side of its bounding box on every side, `points` per axis plus the three points' own
    coordinates, so the grid passes through them; there the loss is evaluated at the given
    vectors themselves (as sim.loss() does), so it reproduces their loss exactly.
    Returns a DataFrame: x, y, loss, [accuracy], point (the label of the three points' rows,
    else empty); frame.attrs["points"] holds {label: (x, y)}.
    """
    if not margin >= 0:
        raise InputError(f"margin must be >= 0, got {margin!r}")
    marked = [P.vector(sim, p, name) for p, name in zip((a, b, c), ("a", "b", "c"))]
    labels = _labels(labels, 3)
    e1, e2, coordinates = plane_basis(*marked)
    low, high = coordinates.min(axis=0), coordinates.max(axis=0)
    pad = margin * (high - low).max()
    axes = [_union(np.linspace(low[k] - pad, high[k] + pad, _count(points, "points")), coordinates[:, k])
            for k in range(2)]
    grid = _mesh(axes)
    thetas = marked[0][None] + grid[:, :1] * e1 + grid[:, 1:] * e2
    frame = _marked_table({"x": grid[:, 0], "y": grid[:, 1]}, thetas, grid, coordinates, marked, labels, sim)
    frame.attrs.update(kind="plane", coordinates=["x", "y"],
                       points={label: tuple(map(float, xy)) for label, xy in zip(labels, coordinates)})
    return frame


def loss_on_segment(sim, a, b, points=41, extension=0.25, labels=("a", "b")):
    """The loss along the line through two parameter vectors, theta = a + t (b - a), for t from
    -extension to 1 + extension (`points` values plus 0 and 1, where the loss is evaluated at a
    and b themselves, reproducing their loss exactly).
    Returns a DataFrame: t, distance (t |b - a|), loss, [accuracy], point."""
    marked = [P.vector(sim, p, name) for p, name in zip((a, b), ("a", "b"))]
    labels = _labels(labels, 2)
    length = float(np.linalg.norm(marked[1] - marked[0]))
    if length == 0:
        raise InputError("segment: the two points are the same vector")
    if not extension >= 0:
        raise InputError(f"extension must be >= 0, got {extension!r}")
    t = _union(np.linspace(-extension, 1 + extension, _count(points, "points")), [0.0, 1.0])
    thetas = marked[0][None] + t[:, None] * (marked[1] - marked[0])
    frame = _marked_table({"t": t, "distance": t * length}, thetas, t[:, None], np.array([[0.0], [1.0]]),
                          marked, labels, sim)
    frame.attrs.update(kind="segment", coordinates=["t"],
                       points={labels[0]: (0.0,), labels[1]: (1.0,)})
    return frame


def loss_along_trajectory(sim, trajectory):
    """The loss on the whole dataset at every row of a trajectory (a DataFrame with the model's
    parameter columns, as sample() returns or load_run reads it; or a Result).
    Returns a DataFrame: id and step (if the trajectory has them), loss, [accuracy], and
    recorded_loss, the trajectory's own loss column (on the step's batch) if it has one."""
    frame = getattr(trajectory, "trajectory", trajectory)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"trajectory must be a DataFrame of parameter columns, got {trajectory!r:.60}")
    names = list(sim.model.parameter_names)
    check_parameter_columns(frame.columns, names, "trajectory")
    if frame.empty:
        raise InputError("trajectory has no rows")
    try:
        vectors = frame[names].to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("trajectory has cells that are not numbers in its parameter columns") from None
    if not np.all(np.isfinite(vectors)):
        raise InputError("trajectory has NaN or infinite parameters")
    keys = {c: frame[c].to_numpy() for c in ("id", "step") if c in frame.columns}
    table = _table(keys, Evaluator(sim)(vectors), sim)
    if "loss" in frame.columns:
        table["recorded_loss"] = frame["loss"].to_numpy(dtype=np.float64)
    table.attrs.update(kind="trajectory", coordinates=list(keys))
    return table


# -- helpers ------------------------------------------------------------------------------------
def _count(points, option):
    if isinstance(points, bool) or not isinstance(points, (int, np.integer)) or points < 2:
        raise InputError(f"{option} must be an integer >= 2, got {points!r}")
    return int(points)


def _per_axis(value, k, option):
    values = list(value) if np.ndim(value) else [value]
    values = values * k if len(values) == 1 else values  # one value for every axis
    if len(values) != k:
        raise InputError(f"{option} must give one value or {k} (one per axis), got {len(values)}")
    return values


def _axes(centres, width, ranges, points, what):
    """One array of values per axis: centre +- width or (low, high), `points` values each."""
    k = len(centres)
    counts = [_count(n, "points") for n in _per_axis(points, k, "points")]
    if ranges is not None:
        spans = [ranges] * k if np.ndim(ranges) == 1 else _per_axis(ranges, k, "ranges")  # one pair: every axis
        axes = []
        for span, n in zip(spans, counts):
            try:
                low, high = (float(v) for v in span)
            except (TypeError, ValueError):
                raise InputError(f"ranges must be one (low, high) pair per axis of {what}, "
                                 f"got {ranges!r:.60}") from None
            if not (np.isfinite(low) and np.isfinite(high) and low < high):
                raise InputError(f"ranges: each (low, high) needs finite low < high, got ({low:g}, {high:g})")
            axes.append(np.linspace(low, high, n))
    else:
        axes = []
        for centre, half, n in zip(centres, _per_axis(width, k, "width"), counts):
            if not (np.isfinite(half) and half > 0):
                raise InputError(f"width must be > 0, got {half!r}")
            offsets = np.linspace(-half, half, n)
            if n % 2:
                offsets[n // 2] = 0.0  # the centre itself, not a rounding of it
            axes.append(centre + offsets)
    total = int(np.prod([len(a) for a in axes], dtype=np.float64))
    if total > MAX_POINTS:
        raise InputError(f"the grid over {k} axes ({what}) has {total} points, more than {MAX_POINTS}: "
                         f"choose fewer {what} or fewer points")
    return axes


def _union(values, extra):
    return np.union1d(values, np.asarray(extra, np.float64))


def _mesh(axes):
    """[n, k]: every combination of the axes' values, the last axis fastest."""
    return np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)


def _labels(labels, count):
    labels = [str(label) for label in labels]
    if len(labels) != count or len(set(labels)) != count or "" in labels:
        raise InputError(f"labels must be {count} different non-empty names, got {labels!r:.60}")
    return labels


def _table(columns, evaluated, sim):
    losses, accuracies = evaluated
    frame = pd.DataFrame(columns)
    frame["loss"] = losses
    if accuracies is not None:
        frame["accuracy"] = accuracies
    return frame


def _marked_table(columns, thetas, grid, coordinates, marked, labels, sim):
    """_table, with the rows at the marked points' coordinates evaluated at the marked vectors
    themselves (Evaluator.exact) and named in the column `point`."""
    evaluator = Evaluator(sim)
    frame = _table(columns, evaluator(thetas), sim)
    frame["point"] = ""
    for label, xy, vector in zip(labels, coordinates, marked):
        row = np.flatnonzero(np.all(grid == xy, axis=1))[0]
        loss, accuracy = evaluator.exact(vector)
        frame.loc[row, "loss"] = loss
        if "accuracy" in frame.columns:
            frame.loc[row, "accuracy"] = accuracy
        frame.loc[row, "point"] = label
    return frame
