"""Sample a correlated 2-D Gaussian with BAOAB and compare with the exact answers.

    python examples/sample_gaussian.py [--steps 20000] [--seed 7] [--plot gaussian.png]

U(x) = x^T A x / 2 with A = inverse(C), C the covariance with standard deviations 1 and 2
and correlation 0.9, at inverse temperature beta = 1. BAOAB's positions are exact on Gaussians
at any stable step width (here h = 0.4, h omega_max = 1.0 < 2), so:

* the sampled covariance approaches C; the example prints it with its standard error (from 20
  batch means of the trajectory after burn-in) and the largest deviation in standard errors;
* the fraction of samples inside the k-sigma ellipse x^T A x <= k^2 approaches
  1 - exp(-k^2 / 2): 0.393 for k = 1, 0.865 for k = 2;
* the average virial 1/2 x . grad U approaches d / (2 beta) = 1 exactly, while the average
  kinetic energy carries BAOAB's O(h^2) bias: its exact value is
  sum_i (1 - h^2 omega_i^2 / 4) / (2 beta) over the frequencies omega_i^2 = eigenvalues of A.

The plot shows the samples and the exact 1- and 2-sigma ellipses of C.
"""

import argparse

import numpy as np
import tensorflow as tf

import tati

STD, RHO, STEP_WIDTH, BURN_IN, EVERY_NTH, BATCHES = np.array([1.0, 2.0]), 0.9, 0.4, 500, 5, 20


def exact_answers():
    """Covariance C, precision A = inverse(C), and BAOAB's exact average kinetic energy (beta = 1)."""
    covariance = np.outer(STD, STD) * np.array([[1.0, RHO], [RHO, 1.0]])
    precision = np.linalg.inv(covariance)
    omega2 = np.linalg.eigvalsh(precision)
    kinetic = float(np.sum(1.0 - STEP_WIDTH ** 2 * omega2 / 4) / 2)
    return covariance, precision, kinetic


def batch_covariances(samples, batches=BATCHES):
    """Covariance of all samples and its standard error from `batches` consecutive batch means."""
    parts = np.array_split(samples, batches)
    each = np.array([np.cov(part.T) for part in parts])
    return np.cov(samples.T), each.std(axis=0, ddof=1) / np.sqrt(batches)


def ellipse(covariance, k, points=200):
    """Points of the k-sigma ellipse x^T inverse(covariance) x = k^2."""
    angle = np.linspace(0.0, 2.0 * np.pi, points)
    return k * np.linalg.cholesky(covariance) @ np.stack([np.cos(angle), np.sin(angle)])


def plot(path, samples, covariance):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 6.0))
    ax.plot(samples[:, 0], samples[:, 1], ".", color="tab:blue", markersize=2, alpha=0.35,
            label=f"BAOAB samples ({len(samples)}, every {EVERY_NTH}th step)")
    for k, style in ((1, "-"), (2, "--")):
        x, y = ellipse(covariance, k)
        ax.plot(x, y, style, color="black", lw=1.8,
                label=f"exact {k}-sigma ellipse (holds {1 - np.exp(-k * k / 2):.1%})")
    ax.set_aspect("equal")
    limit = 1.05 * np.maximum(np.abs(samples).max(axis=0), np.abs(ellipse(covariance, 2)).max(axis=1))
    ax.set_xlim(-limit[0], limit[0])
    ax.set_ylim(-limit[1], limit[1])
    ax.set_xlabel("param0 (x0; exact sd 1)")
    ax.set_ylabel("param1 (x1; exact sd 2)")
    ax.set_title(f"2-D Gaussian, correlation {RHO}: BAOAB at h = {STEP_WIDTH}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=8, markerscale=4, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--plot", help="write the scatter plot with the exact ellipses to this PNG "
                                       "(needs matplotlib)")
    args = parser.parse_args()

    covariance, precision, kinetic = exact_answers()
    A = tf.constant(precision)
    sim = tati.Simulation(
        potential=lambda x: 0.5 * tf.tensordot(x, tf.linalg.matvec(A, x), 1),
        initial_parameters=[0.0, 0.0], dtype="float64", sampler="BAOAB", step_width=STEP_WIDTH,
        friction_constant=1.0, inverse_temperature=1.0, max_steps=args.steps, every_nth=EVERY_NTH,
        burn_in_steps=BURN_IN, seed=args.seed)
    result = sim.sample()
    samples = result.trajectory[result.trajectory.step > BURN_IN][["param0", "param1"]].to_numpy()
    sampled, standard_error = batch_covariances(samples)
    deviation = np.abs(sampled - covariance) / standard_error

    np.set_printoptions(precision=4, suppress=True)
    print(f"{len(samples)} samples (every {EVERY_NTH}th of {args.steps} steps, after {BURN_IN} burn-in steps)")
    print("exact covariance:     ", covariance.tolist())
    print("sampled covariance:   ", np.round(sampled, 4).tolist())
    print(f"standard error:       ", np.round(standard_error, 4).tolist(), f"({BATCHES} batch means)")
    print(f"largest |sampled - exact|: {deviation.max():.1f} standard errors")
    inside = np.einsum("ni,ij,nj->n", samples, precision, samples)
    for k in (1, 2):
        print(f"inside the {k}-sigma ellipse: {np.mean(inside <= k * k):.3f} of the samples "
              f"(exact {1 - np.exp(-k * k / 2):.3f})")
    last = result.averages.iloc[-1]
    print(f"average virial {last.average_virials:.4f} (exact d / (2 beta) = 1: positions are exact); "
          f"average kinetic energy {last.average_kinetic_energy:.4f} (BAOAB's exact {kinetic:.4f}, "
          f"an O(h^2) bias)")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("install tati[plots] (matplotlib) for the figure")
            return
        plot(args.plot, samples, covariance)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
