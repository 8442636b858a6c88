"""Train a small network on two_clusters, then sample its loss manifold around the minimum.

    python examples/network_posterior.py [--steps 5000] [--out DIR]

fit() finds a minimum with gradient descent; sample() then explores exp(-beta U) from there
with BAOAB. At high inverse temperature the walker stays in the minimum's basin; the
average kinetic energy checks equipartition: N_dof / (2 beta).
"""

import argparse
import os

import tati


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--out", default=None, help="directory for the three CSV tables")
    args = parser.parse_args()

    files = {}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        files = {f"{name}_file": os.path.join(args.out, f"{name}.csv")
                 for name in ("run", "trajectory", "averages")}
    sim = tati.Simulation(dataset="two_clusters", hidden_dimension=[8], max_steps=1000,
                          every_nth=100, learning_rate=0.1, seed=1)
    sim.fit()
    print(f"after fit: loss {sim.loss():.4f}, accuracy {sim.score():.3f}")

    sampler = tati.Simulation(dataset="two_clusters", hidden_dimension=[8], sampler="BAOAB",
                              step_width=0.02, friction_constant=1.0, inverse_temperature=1000.0,
                              max_steps=args.steps, every_nth=50, burn_in_steps=args.steps // 5,
                              initial_parameters=sim.parameters, seed=1, **files)
    result = sampler.sample()
    last = result.averages.iloc[-1]
    print(f"sampled {args.steps} steps: loss {result.run_info.loss.mean():.4f} on average, "
          f"accuracy {result.run_info.accuracy.mean():.3f}")
    print(f"average kinetic energy {last.average_kinetic_energy:.5f}, equipartition "
          f"{sampler.num_parameters / 2000.0:.5f}")


if __name__ == "__main__":
    main()
