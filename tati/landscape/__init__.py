"""The loss landscape of a Simulation's model: the loss (and accuracy) on grids, on the plane
through three parameter vectors, along a segment and along a stored trajectory, as DataFrames,
with `plot` drawing any of them (doc/landscape.md; the tool tati-lossfunction-sampler).

    from tati.landscape import loss_on_plane, plot
    frame = loss_on_plane(sim, a, b, c)     # x, y, loss, [accuracy], point
    plot(frame, "plane.png")

| function | table |
|---|---|
| loss_on_grid(sim, parameters, around, width, ranges, points) | a grid over chosen parameters |
| loss_on_directions(sim, directions, around, width, ranges, points) | a grid in the span of directions |
| loss_on_plane(sim, a, b, c, points, margin) | the plane through three vectors, exact at them |
| loss_on_segment(sim, a, b, points, extension) | the line through two vectors, exact at them |
| loss_along_trajectory(sim, trajectory) | every row of a trajectory |

Importing this package imports neither TensorFlow nor matplotlib (the functions do).
"""

import importlib

_LAZY = {"loss_on_grid": "grids", "loss_on_directions": "grids", "loss_on_plane": "grids",
         "loss_on_segment": "grids", "loss_along_trajectory": "grids", "plane_basis": "grids",
         "plot": "draw", "Evaluator": "evaluate"}
__all__ = list(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'tati.landscape' has no attribute '{name}'")
    return getattr(importlib.import_module(f"tati.landscape.{_LAZY[name]}"), name)
