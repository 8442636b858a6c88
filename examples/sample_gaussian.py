"""Sample a correlated 2-D Gaussian with BAOAB and compare with the exact covariance.

    python examples/sample_gaussian.py [--steps 20000] [--plot gaussian.png]

U(x) = x^T A x / 2 with A chosen so that the target has standard deviations 1 and 2 and
correlation 0.9. BAOAB's positions are exact on Gaussians at any stable step width, so the
sample covariance approaches inverse(A) / beta up to Monte Carlo error.
"""

import argparse

import numpy as np
import tensorflow as tf

import tati


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--plot", help="write a scatter plot to this PNG (needs matplotlib)")
    args = parser.parse_args()

    std, rho = np.array([1.0, 2.0]), 0.9
    covariance = np.outer(std, std) * np.array([[1.0, rho], [rho, 1.0]])
    precision = tf.constant(np.linalg.inv(covariance))
    sim = tati.Simulation(
        potential=lambda x: 0.5 * tf.tensordot(x, tf.linalg.matvec(precision, x), 1),
        initial_parameters=[0.0, 0.0], dtype="float64", sampler="BAOAB", step_width=0.4,
        friction_constant=1.0, max_steps=args.steps, every_nth=5, burn_in_steps=500, seed=7)
    result = sim.sample()
    samples = result.trajectory[result.trajectory.step > 500][["param0", "param1"]].to_numpy()
    print("exact covariance:\n", covariance)
    print("sampled covariance:\n", np.cov(samples.T))
    print(result.averages.tail(1).to_string(index=False))
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
            return
        plt.figure(figsize=(4, 4))
        plt.plot(samples[:, 0], samples[:, 1], ".", markersize=1, alpha=0.3)
        plt.xlabel("param0")
        plt.ylabel("param1")
        plt.title("BAOAB samples")
        plt.tight_layout()
        plt.savefig(args.plot, dpi=100)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
