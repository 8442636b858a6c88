"""SGHMC with mini-batches on the posterior of a two-component Gaussian mixture, against NUTS.

    python examples/sghmc_mixture.py [--points 10000] [--steps 5000] [--seed 1] [--plot sghmc_mixture.png] [--quick]

The mixture experiment of the SGHMC notebook among the source documents: data from
1/2 N(mu1, 1) + 1/2 N(mu2, 1), priors N(0, 10) (variance 10) on mu1 and mu2, and the joint
posterior of (mu1, mu2). The notebook gives neither the means nor the data size; its project's
code draws `--points` = 10,000 points from each component with mu = (-3, 3) and runs SGHMC with
batches of 1000, learning rate eta = 0.01 / 10,000 and momentum decay alpha = 0.1. Here in
tati's terms (unit mass M): step eps = sqrt(eta) = 0.001, friction C = alpha / eps = 100,
`batch_size` 1000, 4 walkers started at the true means, the first `--burn_in` 500 steps left
out (`--quick` uses 2000 points per component with eta, C and the batch scaled alike). Two
SGHMC variants: B-hat = 0 (Chen et al.'s default; the project's guess V = 1 gives
B-hat = eps V / 2 = 0.0005 against C = 100, the same) and `gradient_noise_estimator=
"adam_centered"` (V estimated online, mass rescaled). NUTS (`sampler="NUTS"`, the whole data
every step, exact) is the reference sampler, and the exact posterior, normalised on a grid,
is drawn over every panel.

How the potential gets the data: a `potential=` callable sees only theta, never a batch, so a
data-dependent potential with mini-batches goes through a Keras model (`model=`) with a
callable `loss=`: a layer whose only weight is the vector (mu1, mu2), returned for every data
point, and a loss that turns a batch of n labels (the data x) into the batch's estimate of the
negative log-likelihood, N / n times its sum (the built-in `likelihood` option covers Gaussian,
Bernoulli and categorical likelihoods, not mixtures). `prior_standard_deviation` sqrt(10) adds
|mu|^2 / 20, the N(0, 10) prior (tati's Gaussian prior acts on a model's weights, and the
means are its weights: columns weight0 = mu1 and weight1 = mu2). NUTS takes the same model and
loss without `batch_size`, so each of its steps sees all the data.

The posterior is symmetric under swapping mu1 and mu2; its mirror mode near (3, -3) lies
beyond a ridge more than 10,000 units of log-density below the modes, which no sampler crosses,
so everything here is the mode with mu1 < mu2, where all chains start.

What to expect. The means agree; the widths do not. Each step's gradient noise has variance
V of about 2 x 10^5 per mean (at the default size), so B = eps V / 2 is about C: with batches
drawn independently, B-hat = 0 would run at twice the temperature (standard deviations
sqrt(2) = 1.41 times the exact ones) and `adam_centered`, whose V-hat is right, would be exact
(measured so, within 1%, by a loop that feeds tati's SGHMC optimizer batches drawn with
replacement). But tati draws the batches of an epoch without replacement, so their errors sum
to nearly zero over the N / n = 20 steps of an epoch, about the time the dynamics take to
forget: the noise heats far less than its per-step variance says. B-hat = 0 then comes out only
about 12% too wide, and the estimator, removing the per-step variance, about 24% too narrow.

It prints, per sampler, the samples kept, their effective number (tati.diagnostics.
independent_readings, chains pooled; the smaller of the two means'), the posterior means with
their Monte Carlo standard errors (sd / sqrt(effective)), the standard deviations and the
correlation, with the exact values from the grid; and for each SGHMC variant the distance of
its means from NUTS's in combined standard errors, sqrt(mcse_SGHMC^2 + mcse_NUTS^2).
"""

import argparse
import math

import numpy as np
import tensorflow as tf

import tati
from tati.diagnostics import independent_readings

MEANS, PRIOR_VARIANCE = (-3.0, 3.0), 10.0
MOMENTUM_DECAY, WALKERS = 0.1, 4
VARIANTS = {"SGHMC, B-hat = 0": dict(noise_estimate=0.0),
            "SGHMC, adam_centered": dict(gradient_noise_estimator="adam_centered")}
LOG_NORMAL = math.log(2.0) + 0.5 * math.log(2.0 * math.pi)  # -log of 1/2 N(x; mu, 1) at x = mu


def make_data(points, seed=1111):
    """`points` draws from each component, shuffled: [2 points] values."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(MEANS[0], 1.0, points), rng.normal(MEANS[1], 1.0, points)])
    return rng.permutation(x)


def make_model():
    """A Keras model whose only weight is (mu1, mu2), returned for every data point."""
    import keras

    class Means(keras.layers.Layer):
        def build(self, input_shape):
            self.means = self.add_weight(shape=(2,), initializer=keras.initializers.Constant(MEANS), name="means")

        def call(self, features):
            return keras.ops.zeros_like(features[:, :1]) + self.means

    return keras.Sequential([keras.Input((1,), dtype="float64"), Means(dtype="float64")])


def mixture_loss(size):
    """(labels x [n, 1], outputs (mu1, mu2) per point [n, 2]) -> N / n x the batch's negative
    log-likelihood under 1/2 N(mu1, 1) + 1/2 N(mu2, 1)."""
    def loss(labels, outputs):
        logs = tf.reduce_logsumexp(-0.5 * tf.square(labels - outputs), axis=1) - LOG_NORMAL
        return -tf.cast(size, labels.dtype) / tf.cast(tf.shape(labels)[0], labels.dtype) * tf.reduce_sum(logs)
    return loss


def common_options(x, burn_in, seed):
    return dict(model=make_model(), loss=mixture_loss(len(x)), dataset=(x[:, None], x[:, None]),
                prior_standard_deviation=math.sqrt(PRIOR_VARIANCE), dtype="float64", seed=seed,
                burn_in_steps=burn_in)


def kept(result, burn_in):
    """(mu1, mu2) after burn-in: [steps, walkers, 2]."""
    frame = result.trajectory
    frame = frame[frame.step > burn_in]
    return np.stack([frame.pivot(index="step", columns="id", values=c).to_numpy()
                     for c in ("weight0", "weight1")], axis=-1)


def sghmc_settings(points):
    """(step eps, friction C, batch size) for `points` per component, as the project's code
    scales them: eta = 0.01 / points = eps^2 / M (M = 1), alpha = eps C / M = 0.1, batches of
    points / 10; the dynamics in units of the posterior's width are then the same for any size."""
    step = math.sqrt(0.01 / points)
    return step, MOMENTUM_DECAY / step, max(1, points // 10)


def run_sghmc(variant, x, steps, burn_in, seed):
    step, friction, batch = sghmc_settings(len(x) // 2)
    simulation = tati.Simulation(sampler="SGHMC", step_width=step, friction_constant=friction,
                                 batch_size=batch, number_walkers=WALKERS, max_steps=steps,
                                 **VARIANTS[variant], **common_options(x, burn_in, seed))
    return kept(simulation.sample(), burn_in)


def run_nuts(x, steps, burn_in, seed):
    # the first step about half the posterior's width; NUTS adapts it during burn-in
    simulation = tati.Simulation(sampler="NUTS", step_width=0.7 / math.sqrt(len(x)), max_steps=steps,
                                 **common_options(x, burn_in, seed))
    return kept(simulation.sample(), burn_in)


def exact_posterior(x, cells=101):
    """(grid axes, normalised density on the grid) of the mode with mu1 < mu2, +-5 standard
    deviations of the component means around the data's means of either sign."""
    centre = np.array([x[x < 0].mean(), x[x >= 0].mean()])
    half = 5.0 / math.sqrt(0.5 * len(x))
    axes = [np.linspace(c - half, c + half, cells) for c in centre]
    m1, m2 = np.meshgrid(*axes, indexing="ij")
    m1, m2 = m1.ravel(), m2.ravel()
    log_density = -(m1 ** 2 + m2 ** 2) / (2.0 * PRIOR_VARIANCE)
    for start in range(0, len(x), 2000):  # sum over the data in blocks: [grid, block]
        block = x[start:start + 2000]
        log_density += np.logaddexp(-0.5 * (block - m1[:, None]) ** 2, -0.5 * (block - m2[:, None]) ** 2).sum(axis=1)
    density = np.exp(log_density - log_density.max()).reshape(cells, cells)
    return axes, density / density.sum()


def exact_moments(axes, density):
    """(means [2], standard deviations [2], correlation) of the grid density."""
    m1, m2 = np.meshgrid(*axes, indexing="ij")
    mean = np.array([(density * m1).sum(), (density * m2).sum()])
    d1, d2 = m1 - mean[0], m2 - mean[1]
    sd = np.sqrt([(density * d1 ** 2).sum(), (density * d2 ** 2).sum()])
    return mean, sd, float((density * d1 * d2).sum() / (sd[0] * sd[1]))


def moments(samples):
    """(means, Monte Carlo standard errors, standard deviations, correlation, effective samples)."""
    flat = samples.reshape(-1, 2)
    effective = np.array([independent_readings(samples[..., k]) for k in range(2)])
    sd = flat.std(axis=0, ddof=1)
    return flat.mean(axis=0), sd / np.sqrt(effective), sd, float(np.corrcoef(flat.T)[0, 1]), int(effective.min())


def enclosing_levels(density, masses=(0.99, 0.9, 0.5)):
    """Density levels whose upper sets hold the given probability masses (increasing levels)."""
    ordered = np.sort(density.ravel())[::-1]
    cumulative = np.cumsum(ordered)
    return [float(ordered[np.searchsorted(cumulative, m)]) for m in masses]


def plot(path, samples, axes, density):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, panels = plt.subplots(1, len(samples), figsize=(4.0 * len(samples), 4.8), sharex=True, sharey=True)
    edges = [np.linspace(a[0], a[-1], 41) for a in axes]
    levels = enclosing_levels(density)
    for ax, (name, s) in zip(panels, samples.items()):
        flat = s.reshape(-1, 2)
        counts = np.histogram2d(flat[:, 0], flat[:, 1], bins=edges)[0]
        ax.pcolormesh(edges[0], edges[1], counts.T / counts.sum(), cmap="Blues", shading="flat")
        ax.contour(axes[0], axes[1], density.T, levels=levels, colors="black", linewidths=1.2)
        ax.set_title(f"{name}\n({flat.shape[0]} samples)", fontsize=10)
        ax.set_xlabel("mu1", fontsize=10)
        ax.tick_params(labelsize=8)
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
        ax.set_aspect("equal")
    panels[0].set_ylabel("mu2", fontsize=10)
    fig.suptitle("posterior of (mu1, mu2), data 1/2 N(-3, 1) + 1/2 N(3, 1): samples (shading), "
                 "exact 50/90/99% regions (black)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=110, bbox_inches="tight")  # equal aspects: tight_layout alone cuts the x labels
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10000, help="data points per component")
    parser.add_argument("--steps", type=int, default=5000, help="SGHMC steps, burn-in included")
    parser.add_argument("--nuts_steps", type=int, default=2500, help="NUTS steps, burn-in included")
    parser.add_argument("--burn_in", type=int, default=500, help="steps left out at the start of each chain")
    parser.add_argument("--quick", action="store_true",
                        help="a short run: 2000 points per component, 1500 SGHMC and 500 NUTS steps, 200 burn-in")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", default="sghmc_mixture.png", help="PNG file of the densities")
    args = parser.parse_args(argv)
    if args.quick:
        args.points, args.steps, args.nuts_steps, args.burn_in = 2000, 1500, 500, 200

    x = make_data(args.points)
    samples = {"NUTS": run_nuts(x, args.nuts_steps, args.burn_in, args.seed)}
    samples.update({name: run_sghmc(name, x, args.steps, args.burn_in, args.seed) for name in VARIANTS})
    axes, density = exact_posterior(x)
    mean, sd, correlation = exact_moments(axes, density)
    print(f"{'sampler':<22} {'samples':>7} {'effective':>9} {'mean mu1 +- mcse':>20} {'mean mu2 +- mcse':>19} "
          f"{'sd mu1':>7} {'sd mu2':>7} {'corr':>6}")
    print(f"{'exact (grid)':<22} {'':>7} {'':>9} {mean[0]:>20.5f} {mean[1]:>19.5f} {sd[0]:>7.5f} {sd[1]:>7.5f} "
          f"{correlation:>6.3f}")
    summary = {}
    for name, s in samples.items():
        m, e, d, c, effective = summary[name] = moments(s)
        print(f"{name:<22} {s.shape[0] * s.shape[1]:>7} {effective:>9} {m[0]:>11.5f} +- {e[0]:.5f} "
              f"{m[1]:>10.5f} +- {e[1]:.5f} {d[0]:>7.5f} {d[1]:>7.5f} {c:>6.3f}")
    reference, reference_error = summary["NUTS"][0], summary["NUTS"][1]
    for name in VARIANTS:
        m, e = summary[name][:2]
        z = np.abs(m - reference) / np.sqrt(e ** 2 + reference_error ** 2)
        print(f"{name}: |mean - NUTS's| / combined mcse = {z[0]:.2f} (mu1), {z[1]:.2f} (mu2); "
              f"sd / exact sd = {summary[name][2][0] / sd[0]:.3f}, {summary[name][2][1] / sd[1]:.3f}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure: pip install tati[plots]")
        return
    plot(args.plot, samples, axes, density)
    print("wrote", args.plot)


if __name__ == "__main__":
    main()
