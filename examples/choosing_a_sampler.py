"""Choosing a sampler: BAOAB, HMC2, NUTS and RWMH on the same badly scaled posterior.

    python examples/choosing_a_sampler.py [--draws 2000] [--burn-in 1000] [--steps-per-draw 10] [--plot sampler.png]

The target is a 10-D Gaussian whose standard deviations run from 0.1 to 10 (log-spaced), as a
posterior with badly scaled parameters is. Every sampler gets 4 walkers started at 1 and
nothing but burn_in_steps and max_steps, except what it cannot adapt: BAOAB a step width stable
for the narrowest direction (h = 0.05 < 2 x 0.1). HMC2's step width, leg length and metric, and
NUTS's and RWMH's width and metric adapt during burn-in. One step is one gradient for BAOAB
and HMC2, one transition (several gradients) for NUTS, one loss evaluation for RWMH: BAOAB and
HMC2 take --steps-per-draw times the burn-in and draws of the others, for budgets of gradients
alike.

Printed per sampler: the cost (gradient or loss evaluations after burn-in, seconds), the
smallest ESS over the 10 parameters (cross-walker, tati.diagnostics.convergence), ESS per 1000
evaluations and per second, and the largest error of the sampled standard deviations. The
plot shows ESS per 1000 evaluations and each parameter's sampled standard deviation against
the exact one.
"""

import argparse
import time

import numpy as np
import pandas as pd
import tensorflow as tf

import tati

D = 10
SCALES = np.logspace(-1, 1, D)
SAMPLERS = {
    "BAOAB": dict(sampler="BAOAB", step_width=0.05, friction_constant=1.0),
    "HMC2": dict(sampler="HMC2"),
    "NUTS": dict(sampler="NUTS"),
    "RWMH": dict(sampler="RWMH"),
}


def potential(theta):
    return 0.5 * tf.reduce_sum(tf.square(theta / SCALES), axis=-1)


def run(name, options, burn_in, draws, seed):
    """(row of the table, sampled standard deviations) of one sampler: a first call of `draws`
    steps holds the burn-in and compiles the loop (not timed), the second is measured."""
    sim = tati.Simulation(potential=potential, potential_batched=True, initial_parameters=np.ones(D),
                          number_walkers=4, dtype="float64", burn_in_steps=burn_in, max_steps=draws,
                          seed=seed, **options)
    first = sim.sample().run_info
    start = time.perf_counter()
    result = sim.sample()
    seconds = time.perf_counter() - start
    table = result.convergence()
    if "gradient_evaluations" in result.run_info:  # NUTS: cumulative per walker
        count = lambda frame: float(frame.groupby("id").tail(1)["gradient_evaluations"].sum())  # noqa: E731
        evaluations = count(result.run_info) - count(first)
    else:  # one gradient (BAOAB) or one loss evaluation (RWMH) per step and walker
        evaluations = 4.0 * draws
    ess = float(table["ess"].min())
    errors = np.abs(table["sd"].to_numpy() / SCALES - 1.0)
    return {"sampler": name, "evaluations": evaluations, "seconds": seconds, "min ESS": ess,
            "ESS per 1000 evaluations": 1000.0 * ess / evaluations, "ESS/s": ess / seconds,
            "largest sd error": float(errors.max())}, table["sd"].to_numpy()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--burn-in", type=int, default=1000)
    parser.add_argument("--steps-per-draw", type=int, default=10,
                        help="BAOAB's and HMC2's steps (gradients) per draw of NUTS and RWMH")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", help="PNG file for the figure (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.burn_in > args.draws:
        parser.error("--burn-in must be at most --draws (the first call of --draws steps holds it)")
    rows, sds = [], {}
    for name, options in SAMPLERS.items():
        factor = args.steps_per_draw if name in ("BAOAB", "HMC2") else 1
        row, sds[name] = run(name, options, factor * args.burn_in, factor * args.draws, args.seed)
        rows.append(row)
    table = pd.DataFrame(rows).set_index("sampler")
    with pd.option_context("display.float_format", "{:.3g}".format, "display.width", 160,
                           "display.max_columns", None):
        print(table)
    if args.plot:
        plot(table, sds, args.plot)


def plot(table, sds, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure: pip install tati[plots]")
        return
    figure, (bars, scales) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(table.index)
    bars.bar(names, table["ESS per 1000 evaluations"], color="tab:blue")
    bars.set_yscale("log")
    bars.set_ylabel("min ESS per 1000 evaluations")
    bars.set_title("independent draws per 1000 gradients\n(RWMH: per 1000 loss evaluations)")
    for name, marker in zip(names, "osD^"):
        scales.plot(SCALES, sds[name], marker, label=name, alpha=0.8)
    scales.plot(SCALES, SCALES, "k-", label="exact")
    scales.set_xscale("log")
    scales.set_yscale("log")
    scales.set_xlabel("exact standard deviation")
    scales.set_ylabel("sampled standard deviation")
    scales.set_title("each of the 10 parameters")
    scales.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
