"""Eight schools, centered and non-centered: a hierarchical model's funnel, run as a Stan user runs it.

    python examples/eight_schools.py [--burn-in 1000] [--draws 1000] [--seed 1] [--plot schools.png]

Rubin's (1981) eight schools: the effects theta_i of a coaching programme in eight schools,
measured as y_i with standard errors sigma_i; theta_i ~ N(mu, tau), mu ~ N(0, 5), tau ~
HalfCauchy(5), sampled on (mu, log tau, ...). Centered, the parameters are theta_i themselves: as
tau -> 0 with every theta_i -> mu the density grows without bound, a funnel whose neck no sampler
enters at one step width. Non-centered, theta_i = mu + tau eta_i with eta_i ~ N(0, 1): no
funnel, NUTS is exact. Both run NUTS with 4 walkers from Stan's inits (uniform(-2, 2)) and
nothing tuned. The warm start finds no mode in the centered model (U falls without bound) and
starts the walkers where their paths entered the typical set (doc/samplers.md).

Printed per model: the warm start's line, divergent transitions after burn-in, the largest
R-hat, and the posterior mean and sd of mu and log tau. The centered one misses log tau's lower
tail and says so with its divergences; the plot shows theta_1 against log tau of both.
"""

import argparse
import warnings

import tati  # before TensorFlow, which it keeps quiet

import numpy as np
import tensorflow as tf

Y = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]
SIGMA = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]


def energy(mu, log_tau, theta):
    """-log p(mu, log tau, theta | y) up to a constant, with the Jacobian of tau = exp(log tau)."""
    y, sigma = tf.constant(Y, tf.float64), tf.constant(SIGMA, tf.float64)
    tau = tf.exp(log_tau)
    prior = 0.5 * tf.square(mu / 5.0) + tf.math.log1p(tf.square(tau / 5.0)) - log_tau
    return prior + tf.reduce_sum(0.5 * tf.square((y - theta) / sigma))


def centered(x):
    mu, log_tau, theta = x[0], x[1], x[2:]
    spread = tf.reduce_sum(0.5 * tf.square((theta - mu) / tf.exp(log_tau)))
    return energy(mu, log_tau, theta) + spread + 8.0 * log_tau  # 8 log tau: theta's normalisation


def noncentered(x):
    mu, log_tau, eta = x[0], x[1], x[2:]
    return energy(mu, log_tau, mu + tf.exp(log_tau) * eta) + tf.reduce_sum(0.5 * tf.square(eta))


def run(potential, burn_in, draws, seed):
    """(simulation, draws after burn-in as a DataFrame with mu, log_tau and theta_1)."""
    starts = np.random.default_rng(seed).uniform(-2.0, 2.0, (4, 10))
    sim = tati.Simulation(potential=potential, initial_parameters=starts, dtype="float64", sampler="NUTS",
                          number_walkers=4, burn_in_steps=burn_in, max_steps=burn_in + draws, seed=seed)
    result = sim.sample()
    kept = result.trajectory.query(f"step > {burn_in}")
    frame = kept[["id", "param0", "param1"]].rename(columns={"param0": "mu", "param1": "log_tau"})
    eta = kept["param2"]  # theta_1 itself, or its eta_1
    frame["theta_1"] = eta if potential is centered else kept["param0"] + np.exp(kept["param1"]) * eta
    return sim, result, frame


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burn-in", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000, help="steps per walker after burn-in")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", help="PNG file for the figure (needs matplotlib)")
    args = parser.parse_args(argv)
    frames = {}
    for name, potential in (("centered", centered), ("non-centered", noncentered)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the warm start's line is printed below
            sim, result, frames[name] = run(potential, args.burn_in, args.draws, args.seed)
        last = result.run_info.groupby("id").tail(1)
        divergent = int(last["divergences"].sum())
        r_hat = result.convergence()["r_hat"].max()
        draws = frames[name]
        print(f"{name}:")
        print(f"  {sim.warm_start.line()}")
        print(f"  divergent transitions after burn-in: {divergent} of {len(draws)} "
              f"({100.0 * divergent / len(draws):.1f}%)")
        print(f"  largest R-hat: {r_hat:.3f}")
        for column in ("mu", "log_tau"):
            print(f"  {column}: mean {draws[column].mean():.2f}, sd {draws[column].std():.2f}")
    if args.plot:
        plot(frames, args.plot)


def plot(frames, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure: pip install tati[plots]")
        return
    figure, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for axis, (name, draws) in zip(axes, frames.items()):
        axis.scatter(draws["theta_1"], draws["log_tau"], s=4, alpha=0.4)
        axis.set_title(f"{name}: NUTS, 4 walkers")
        axis.set_xlabel("theta_1")
    axes[0].set_ylabel("log tau")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
