"""Train a small network on two_clusters, then sample its loss manifold around the minimum.

    python examples/network_posterior.py [--steps 5000] [--out DIR] [--plot network.png]

fit() finds a minimum with gradient descent (1000 steps); sample() then explores exp(-beta U)
from there with BAOAB (h = 0.02, friction 1, beta = 1000). At this high inverse temperature
the walker stays in the minimum's basin: the loss and the accuracy stay near their values at
the minimum. The kinetic energy checks the thermostat: by equipartition its average is
N / (2 beta) for N parameters (BAOAB's O(h^2) bias is negligible at h = 0.02). The example
prints the average of the readings (one every 50 steps, about one momentum correlation time
1 / gamma apart) with its standard error.

--out DIR writes the three tables (run.csv, trajectory.csv, averages.csv); --plot writes the
loss of the training and of the sampling against the step, and the kinetic energy with its
running average and the equipartition value.
"""

import argparse
import math
import os

import tati

FIT_STEPS, BETA, EVERY_NTH = 1000, 1000.0, 50


def plot(path, fit, result, burn_in, equipartition):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 5.6), sharex=True)
    run = result.run_info
    top.plot(fit.run_info.step, fit.run_info.loss, "-", color="tab:gray", label="fit: gradient descent")
    top.plot(FIT_STEPS + run.step, run.loss, "-", color="tab:blue", lw=1, label="sample: BAOAB")
    top.axhline(fit.run_info.loss.iloc[-1], color="black", ls="--", lw=1, label="loss at the end of fit")
    top.set_yscale("log")
    top.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    top.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    top.yaxis.set_minor_locator(NullLocator())
    top.yaxis.set_minor_formatter(NullFormatter())
    top.set_ylabel("loss U (mean over the dataset)")
    top.set_title(f"two_clusters, 8 hidden units: train, then sample at beta = {BETA:g}", fontsize=10)
    top.legend(fontsize=8, loc="upper right")
    top.grid(True, alpha=0.3)

    averages = result.averages
    bottom.plot(FIT_STEPS + run.step, run.kinetic_energy, ".", color="tab:blue", markersize=3,
                label=f"kinetic energy (every {EVERY_NTH} steps)")
    bottom.plot(FIT_STEPS + averages.step, averages.average_kinetic_energy, "-", color="tab:red",
                label="running average (after burn-in)")
    bottom.axhline(equipartition, color="black", ls="--", lw=1.2, label=f"equipartition N/(2 beta) = {equipartition:.4f}")
    bottom.axvline(FIT_STEPS + burn_in, color="0.5", ls=":", lw=1.2, label="end of burn-in")
    # the top 40% of the panel stays free of points, for the legend
    bottom.set_ylim(0, 1.7 * max(run.kinetic_energy.max(), equipartition))
    bottom.set_xlabel(f"step (fit: 1 ... {FIT_STEPS}, then sample)")
    bottom.set_ylabel("kinetic energy (loss units)")
    bottom.legend(fontsize=8, loc="upper center", ncol=2)
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000, help="sampling steps")
    parser.add_argument("--out", default=None, help="directory for the three CSV tables")
    parser.add_argument("--plot", help="write the loss and kinetic energy traces to this PNG "
                                       "(needs matplotlib)")
    args = parser.parse_args()

    files = {}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        files = {f"{name}_file": os.path.join(args.out, f"{name}.csv")
                 for name in ("run", "trajectory", "averages")}
    sim = tati.Simulation(dataset="two_clusters", hidden_dimension=[8], max_steps=FIT_STEPS,
                          every_nth=10, learning_rate=0.1, seed=1)
    fit = sim.fit()
    print(f"after fit: loss {sim.loss():.4f}, accuracy {sim.score():.3f}")

    burn_in = args.steps // 5
    sampler = tati.Simulation(dataset="two_clusters", hidden_dimension=[8], sampler="BAOAB",
                              step_width=0.02, friction_constant=1.0, inverse_temperature=BETA,
                              max_steps=args.steps, every_nth=EVERY_NTH, burn_in_steps=burn_in,
                              initial_parameters=sim.parameters, seed=1, **files)
    result = sampler.sample()
    run = result.run_info
    print(f"sampled {args.steps} steps: loss {run.loss.mean():.4f} on average "
          f"(min {run.loss.min():.4f}, max {run.loss.max():.4f}), accuracy {run.accuracy.mean():.3f}")
    readings = run[run.step > burn_in].kinetic_energy
    equipartition = sampler.num_parameters / (2 * BETA)
    print(f"average kinetic energy {result.averages.iloc[-1].average_kinetic_energy:.5f} over all steps "
          f"after burn-in; {readings.mean():.5f} +- {readings.std(ddof=1) / math.sqrt(len(readings)):.5f} "
          f"over {len(readings)} readings; equipartition N / (2 beta) = {equipartition:.5f} "
          f"for N = {sampler.num_parameters} parameters")
    if args.out:
        print("wrote", ", ".join(files.values()))
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("install tati[plots] (matplotlib) for the figure")
            return
        plot(args.plot, fit, result, burn_in, equipartition)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
