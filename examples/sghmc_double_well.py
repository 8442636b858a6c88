"""SGHMC on a double well with noisy gradients: with and without the noise correction, HMC2 and NUTS.

    python examples/sghmc_double_well.py [--chains 200] [--steps 4000] [--seed 1] [--plot sghmc_double_well.png]

The experiment of the SGHMC notebook among the source documents (after Chen et al. 2014,
figure 2): U(theta) = -2 theta^2 + theta^4, target exp(-U) (beta = 1), and the gradient that
SGHMC sees is grad U(theta) + N(0, 4), i.e. gradient noise of variance V = 4. Step eps = 0.1,
friction C = 4, unit mass, the first 200 steps of each chain left out. Three SGHMC variants:

* corrected: B-hat = eps V / 2 = 0.2 (`noise_estimate`, V known, as in the source), so that
  the injected noise 2 eps (C - B-hat) plus the gradient noise's eps^2 V add up to 2 eps C;
* uncorrected: B-hat = 0, the same noisy gradients: the momentum gets eps^2 V too much noise
  per step and the chain runs hot, about (C + B-hat) / C = 1.05 times the temperature;
* estimated: `gradient_noise_estimator="adam_centered"`, V estimated online per chain.

The noisy gradient: the script drives the `tati.samplers.SGHMC` optimizer itself in a compiled
loop on one tf.Variable holding all chains (each element is an independent chain, SGHMC acting
elementwise), feeding it grad U(theta) plus noise drawn by tf.random.stateless_normal keyed by
(seed, step), so every variant sees the very same gradient noise (common random numbers) and a
run is reproducible. This is simpler than a tf.custom_gradient potential for a Simulation and
exactly the source's model of the noise. The exact samplers are the reference of a correct
sampler, with exact gradients and tati's default adaptation during their burn-in, from 0:
NUTS (`tati.Simulation(sampler="NUTS")`, one chain of 4000 transitions, the first 200 left
out, about 3 gradients each) and HMC2 (`sampler="HMC2"`, step width, leg length and metric
adapted; its steps are gradients, so it gets about NUTS's gradients: 4 walkers x 3000 steps,
the first 500 left out, a row at each leg's end). HMC2 runs 4 walkers because with one its
leg-length adaptation (ChEES) shrinks the legs to a single step (T of 0.014-0.022 after 1000
steps of burn-in, seeds 1-3, and 0.013-0.024 on a 1-D Gaussian), and it is measured with 4
(doc/samplers.md).

It prints, per sampler, the gradients it evaluated, the number of samples, their effective
number (samples over the integrated autocorrelation time, chains pooled), the total-variation
distance of the histogram (bins of width 0.1 on [-2.2, 2.2]) to the exact bin probabilities of
exp(-U) (normalised by quadrature), and the Monte Carlo bound that distance stays below with probability 0.999 when
the sampler is exact: E TV <= 1/2 sum_b sqrt(p_b (1 - p_b) / n_eff), plus sqrt(ln(1000) / (2 n_eff))
(McDiarmid: one of n_eff independent draws moves the histogram's TV by at most 1 / n_eff).
The figure shows the histograms as densities with the exact density drawn over them and,
below, each SGHMC histogram minus the exact bin density.
"""

import argparse
import math

import numpy as np
import tensorflow as tf
from scipy import integrate

import tati
from tati.diagnostics import independent_readings
from tati.samplers import SGHMC

STEP_WIDTH, FRICTION, VARIANCE, BURN_IN = 0.1, 4.0, 4.0, 200
HMC_WALKERS, HMC_BURN_IN = 4, 500  # HMC2's burn-in in steps (its adaptation needs at least 200)
EDGES = np.linspace(-2.2, 2.2, 45)
VARIANTS = {"corrected": dict(noise_estimate=0.5 * STEP_WIDTH * VARIANCE),
            "uncorrected": dict(noise_estimate=0.0),
            "estimated": dict(gradient_noise_estimator="adam_centered")}


def energy(theta):
    return -2.0 * theta ** 2 + theta ** 4


def gradient(theta):
    return -4.0 * theta + 4.0 * theta ** 3


def exact_density():
    """(normaliser Z of exp(-U), exact probabilities of the bins EDGES)."""
    weight = lambda t: math.exp(-energy(t))  # noqa: E731
    z = integrate.quad(weight, -np.inf, np.inf)[0]
    bins = np.array([integrate.quad(weight, a, b)[0] for a, b in zip(EDGES[:-1], EDGES[1:])]) / z
    return z, bins


def run_sghmc(variant, chains, steps, seed, burn_in=BURN_IN):
    """Positions [steps - burn_in, chains] of SGHMC chains started at 0, fed noisy gradients."""
    sampler = SGHMC(step_width=STEP_WIDTH, friction_constant=FRICTION, seed=seed, **VARIANTS[variant])
    theta = tf.Variable(tf.zeros([chains], tf.float64))
    scale = tf.constant(math.sqrt(VARIANCE), tf.float64)

    @tf.function
    def loop():
        kept = tf.TensorArray(tf.float64, size=steps - burn_in)
        for n in tf.range(steps):
            noise = tf.random.stateless_normal([chains], seed=[seed + 1000, n], dtype=tf.float64)
            sampler.apply([gradient(theta) + scale * noise], [theta])
            if n >= burn_in:
                kept = kept.write(n - burn_in, tf.convert_to_tensor(theta))
        return kept.stack()

    return loop().numpy()


def run_exact(sampler, steps, seed, burn_in=BURN_IN, walkers=1):
    """(positions after burn-in [rows, walkers], gradients evaluated) of an exact sampler (NUTS,
    HMC2) on exp(-U) with exact gradients, adapted by its defaults during burn-in. HMC2's walkers
    have rows at their own legs' ends: each keeps as many as the one with fewest."""
    simulation = tati.Simulation(potential=lambda q: tf.reduce_sum(energy(q)), initial_parameters=[0.0],
                                 sampler=sampler, burn_in_steps=burn_in, max_steps=steps, seed=seed,
                                 dtype="float64", number_walkers=walkers)
    result = simulation.sample()
    kept = result.trajectory[result.trajectory.step >= burn_in]
    positions = kept.pivot_table(index=kept.groupby("id").cumcount(), columns="id", values="param0").dropna()
    # NUTS counts its gradients; HMC2 takes one per step and walker
    run_info = result.run_info
    gradients = (int(run_info.groupby("id")["gradient_evaluations"].last().sum()) if sampler == "NUTS"
                 else walkers * steps)
    return positions.to_numpy(), gradients


def histogram(samples):
    return np.histogram(samples, EDGES)[0] / samples.size


def total_variation(samples, bins):
    """TV between the samples' histogram and the exact bin probabilities (mass outside EDGES too)."""
    h = histogram(samples)
    return 0.5 * (np.abs(h - bins).sum() + abs((1.0 - h.sum()) - (1.0 - bins.sum())))


def tv_bound(bins, effective, failure=1e-3):
    """Bound on TV of an exact sampler with `effective` independent draws, at probability 1 - failure."""
    mean = 0.5 * np.sqrt(bins * (1.0 - bins) / effective).sum()
    return mean + math.sqrt(math.log(1.0 / failure) / (2.0 * effective))


def plot(path, samples, z, bins):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 6.4), sharex=True, height_ratios=[3, 2])
    centres = 0.5 * (EDGES[:-1] + EDGES[1:])
    width = EDGES[1] - EDGES[0]
    styles = {"corrected": ("tab:blue", "-"), "uncorrected": ("tab:red", "-"),
              "estimated": ("tab:green", "--"), "HMC2": ("tab:purple", "-."), "NUTS": ("tab:gray", ":")}
    for name, x in samples.items():
        color, style = styles[name]
        density = histogram(x) / width
        top.step(centres, density, where="mid", color=color, linestyle=style, linewidth=1.6,
                 label=f"{name} ({x.size} samples)")
        if name in VARIANTS:  # the exact samplers' few samples would set the scale of the differences
            bottom.step(centres, density - bins / width, where="mid", color=color, linestyle=style, linewidth=1.6)
    grid = np.linspace(EDGES[0], EDGES[-1], 400)
    top.plot(grid, np.exp(-energy(grid)) / z, color="black", linewidth=2.2, label="exact exp(-U) / Z")
    bottom.axhline(0.0, color="black", linewidth=1.2)
    top.set_ylabel("density", fontsize=11)
    bottom.set_ylabel("histogram - exact\n(SGHMC only)", fontsize=10)
    bottom.set_xlabel("theta", fontsize=11)
    for ax in (top, bottom):
        ax.tick_params(labelsize=10)
    top.set_title("U = -2 theta^2 + theta^4, gradient noise N(0, 4), eps = 0.1, C = 4", fontsize=11)
    top.set_ylim(0.0, None)
    fig.legend(*top.get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=200, help="independent SGHMC chains (one variable)")
    parser.add_argument("--steps", type=int, default=4000, help="steps per chain, burn-in included")
    parser.add_argument("--nuts_steps", type=int, default=4000, help="NUTS steps (transitions), burn-in included")
    parser.add_argument("--hmc_steps", type=int, default=3000,
                        help=f"HMC2 steps (gradients) of each of its {HMC_WALKERS} walkers, "
                        f"burn-in ({HMC_BURN_IN}) included")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", default="sghmc_double_well.png", help="PNG file of the histograms")
    args = parser.parse_args(argv)

    z, bins = exact_density()
    samples = {name: run_sghmc(name, args.chains, args.steps, args.seed) for name in VARIANTS}
    gradients = {name: args.chains * args.steps for name in VARIANTS}
    samples["HMC2"], gradients["HMC2"] = run_exact("HMC2", args.hmc_steps, args.seed, HMC_BURN_IN, HMC_WALKERS)
    samples["NUTS"], gradients["NUTS"] = run_exact("NUTS", args.nuts_steps, args.seed)
    print(f"{'sampler':<12} {'gradients':>9} {'samples':>8} {'effective':>9} {'TV to exp(-U)':>13} "
          f"{'bound (0.999)':>13}")
    for name, x in samples.items():
        effective = independent_readings(x)
        print(f"{name:<12} {gradients[name]:>9} {x.size:>8} {effective:>9} {total_variation(x, bins):>13.4f} "
              f"{tv_bound(bins, effective):>13.4f}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure: pip install tati[plots]")
        return
    plot(args.plot, samples, z, bins)
    print("wrote", args.plot)


if __name__ == "__main__":
    main()
