"""Discretisation order of the Langevin samplers: error of <q^2> against step width.

    python examples/order_of_accuracy.py [--chains 200000] [--time 60] [--plot order.png]

Target: U(q) = 2 log cosh q, whose density exp(-U) is the logistic distribution with scale
1/2, so <q^2> = pi^2 / 12 exactly and exact draws are q = log(u / (1 - u)) / 2. Each sampler
runs as a plain Keras optimizer on one variable holding `chains` independent chains, started
at exact draws (momenta from N(0, 1)); after a burn-in of 10 time units, <q^2> is averaged
over `time` time units. The standard error comes from the spread across chains. A slope is
fitted (weighted least squares of log|error| on log h) only over the step widths whose error
is at least 10 times its standard error.

The samplers reference expects slope 1 for SGLD and GLA1 and 2 for GLA2 and BAOAB, and a
much smaller error for BAOAB at high friction.
"""

import argparse
import math

import numpy as np
import tensorflow as tf

from tati.samplers import BAOAB, GLA1, GLA2, SGLD

EXACT = math.pi ** 2 / 12


def measure_error(sampler, h, chains, time, seed):
    """(error of <q^2>, its standard error) for one sampler instance with step width h."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=chains)
    q = tf.Variable(0.5 * np.log(u / (1.0 - u)))
    sampler.build([q])
    if sampler.has_momentum:
        sampler.momenta[0].assign(rng.normal(size=chains))
    total = tf.Variable(tf.zeros(chains, tf.float64))

    @tf.function
    def run(steps, accumulate):
        for _ in tf.range(steps):
            if accumulate:
                total.assign_add(q * q)
            sampler.apply_gradients([(2.0 * tf.tanh(q), q)])

    run(tf.constant(int(round(10.0 / h))), False)
    steps = int(round(time / h))
    run(tf.constant(steps), True)
    per_chain = total.numpy() / steps
    return per_chain.mean() - EXACT, per_chain.std(ddof=1) / math.sqrt(chains)


def fitted_slope(step_widths, errors, standard_errors):
    """(slope, its standard error, step widths used) over errors >= 10 standard errors."""
    h, e, s = (np.asarray(x, dtype=float) for x in (step_widths, errors, standard_errors))
    use = np.abs(e) >= 10 * s
    if use.sum() < 2:
        return float("nan"), float("nan"), h[use]
    x, y, w = np.log(h[use]), np.log(np.abs(e[use])), (np.abs(e[use]) / s[use]) ** 2
    design = np.stack([np.ones_like(x), x], axis=1)
    covariance = np.linalg.inv(design.T @ (w[:, None] * design))
    slope = (covariance @ design.T @ (w * y))[1]
    return slope, math.sqrt(covariance[1, 1]), h[use]


SAMPLERS = {
    "SGLD": lambda h, seed: SGLD(step_width=h, seed=seed),
    "GLA1": lambda h, seed: GLA1(step_width=h, friction_constant=1.0, seed=seed),
    "GLA2": lambda h, seed: GLA2(step_width=h, friction_constant=1.0, seed=seed),
    "BAOAB": lambda h, seed: BAOAB(step_width=h, friction_constant=1.0, seed=seed),
    "BAOAB, friction 20": lambda h, seed: BAOAB(step_width=h, friction_constant=20.0, seed=seed),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=200000)
    parser.add_argument("--time", type=float, default=60.0, help="averaging time per step width")
    parser.add_argument("--step_widths", default="0.05,0.1,0.2,0.4,0.6")
    parser.add_argument("--plot", help="write the log-log plot to this PNG (needs matplotlib)")
    args = parser.parse_args()
    step_widths = [float(h) for h in args.step_widths.split(",")]

    results = {}
    for name, make in SAMPLERS.items():
        errors = [measure_error(make(h, 1), h, args.chains, args.time, seed=2) for h in step_widths]
        e, s = zip(*errors)
        slope, slope_error, used = fitted_slope(step_widths, e, s)
        results[name] = (e, s)
        print(f"{name:20s} errors " + " ".join(f"{x:+.5f}({y:.5f})" for x, y in errors)
              + f"  slope {slope:.2f} +- {slope_error:.2f} over h = {list(used)}", flush=True)
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
            return
        plt.figure(figsize=(5, 4))
        for name, (e, s) in results.items():
            plt.errorbar(step_widths, np.abs(e), yerr=s, marker="o", capsize=2, label=name)
        plt.xscale("log")
        plt.yscale("log")
        plt.xlabel("step width h")
        plt.ylabel("|error of <q^2>|")
        plt.title("U(q) = 2 log cosh q")
        plt.legend(fontsize=8)
        plt.tight_layout()
        plt.savefig(args.plot, dpi=100)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
