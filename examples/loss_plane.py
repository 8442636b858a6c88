"""The loss on the plane through three SGD solutions of a one-hidden-layer network, and along
the straight segments between them (the essay among the source documents,
001_ed9d4b16a3fef3fd.txt, "Loss landscape").

    python examples/loss_plane.py [--points 61] [--plot plane.png] [--segment-plot segment.png]

The network and data are those of examples/bayesian_regression_1d.py (a 1-10-2 tanh network
with a heteroscedastic Gaussian likelihood and a N(0, 1) prior on every parameter, 40 points):
three walkers of fit() start from independent initialisations and descend with the essay's
exponentially decaying learning rate. tati.landscape.loss_on_plane evaluates U (the negative
log-posterior) on the plane through the three solutions, which it reproduces exactly at the
three points; loss_on_segment gives the loss along each pair's straight line. Printed: the three
solutions' losses, their distances, and the highest loss on each segment above its ends (the
barrier a straight path has to cross; zero means the two solutions are linearly connected).
"""

import argparse
import itertools
import time

import numpy as np

import tati
from bayesian_regression_1d import data, model_options
from tati.landscape import loss_on_plane, loss_on_segment, plot


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=61, help="grid points per axis of the plane")
    parser.add_argument("--steps", type=int, default=3000, help="gradient-descent steps of each solution")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--segment-plot", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    sim = tati.Simulation(**model_options(data(40, args.seed), 1.0), number_walkers=3, optimizer="GradientDescent",
                          learning_rate=1e-3, learning_rate_decay_rate=0.1, learning_rate_decay_steps=args.steps,
                          max_steps=args.steps, every_nth=args.steps)
    sim.fit()
    solutions = np.asarray(sim.parameters)
    losses = np.asarray(sim.loss())
    for k, (theta, loss) in enumerate(zip(solutions, losses)):
        print(f"solution {k}: loss {loss:.4f}, |theta| {np.linalg.norm(theta):.3f}")
    plane = loss_on_plane(sim, *solutions, points=args.points, labels=("0", "1", "2"))
    marked = plane[plane["point"] != ""]
    print("plane reproduces the three losses exactly:",
          bool(np.array_equal(marked.sort_values("point")["loss"].to_numpy(), losses)))
    segments = {}
    for i, j in itertools.combinations(range(3), 2):
        segment = loss_on_segment(sim, solutions[i], solutions[j], points=101, extension=0.0,
                                  labels=(str(i), str(j)))
        barrier = float(segment["loss"].max() - max(losses[i], losses[j]))
        print(f"segment {i}-{j}: distance {np.linalg.norm(solutions[j] - solutions[i]):.3f}, "
              f"barrier {barrier:.4f} above the higher end")
        segments[(i, j)] = segment
    if args.plot or args.segment_plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("install tati[plots] (matplotlib) for the figure")
        else:
            if args.plot:
                plot(plane, args.plot)
                print(f"wrote {args.plot}")
            if args.segment_plot:
                plot(segments[(0, 1)], args.segment_plot)
                print(f"wrote {args.segment_plot}")
    print(f"took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
