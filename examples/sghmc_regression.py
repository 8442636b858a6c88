"""SGHMC on a simulated polynomial regression with mini-batches: B-hat = 0 against the
gradient-noise estimators, checked by the exact posterior and by T_0.99.

    python examples/sghmc_regression.py [--walkers 100] [--steps 20000] [--plot sghmc_regression.png] [--quick]

The experiment of the SGHMC thesis chapter among the source documents (its section
"Estimating the variance"). Its simulated data come from a section that is not among the
documents, so the data here are this script's own: N = 1000 points, x uniform on [-1, 1],
y = a0 + a1 x + a2 x^2 + a3 x^3 + N(0, 3^2) with a = (1, 2, -1, 0.5). The features x, x^2, x^3
are computed with numpy and passed as `dataset=(X, Y)` to the built-in network without hidden
layers (`hidden_dimension=[]`, `output_activation="linear"`): a linear model whose weights are
a1, a2, a3 (columns weight0..weight2) and whose bias is a0. `likelihood="gaussian"` with
`noise_standard_deviation` 3 and `prior_standard_deviation` 10 make U the negative log
posterior (N / n times a batch's sum, N(0, 10^2) on every coefficient), so the exact posterior
is Gaussian in closed form: precision A = X1^T X1 / sigma^2 + I / 100, mean
A^-1 X1^T y / sigma^2 (X1 the features with a column of ones).

SGHMC with the source's learning rate eta = eps^2 / M = 4e-5 (unit mass M_0, so eps = 0.00632),
momentum decay alpha = eps C / M = 0.1 (C = 15.8; the source does not give its alpha),
`batch_size` 20 (50 steps per epoch), and
the momenta resampled from N(0, M) every 1000 steps (the source's choice, so that T_0.99 sees
the sampler's own momentum distribution): the script calls `sample()` for 1000 steps at a
time and then sets `sim.momenta` to fresh draws with the current diagonal mass
M = M_0 W (`sim.sampler.mass_weights`). Variants: `gradient_noise_estimator` none (B-hat = 0),
`batch` (the source's own: at each epoch's start the sample variance of the gradients of
K = `noise_estimation_batches` = 10 batches of 20 at fixed parameters, used for that epoch's
50 steps), `adam` and `adam_centered` (mass rescaled every 50 steps with m_est = 2, the
defaults). `--walkers` independent chains start at the posterior mean; the first
`--burn_in` steps (3000, twice the relaxation time of the slowest direction) are left out.

Printed:

* the marginals of a1 and a3: each variant's mean and standard deviation against the exact ones
  and against the standard deviations and kinetic temperature predicted for it (below);
* the gradient-noise variance: each estimator's V-hat (the run-info column
  `gradient_noise_variance`, the mean over the 4 parameters) against the observed variance of
  the mini-batch gradient at the same positions, computed exactly: a batch of n of the N points
  drawn without replacement gives N^2 (1 - n / N) S_k^2 / n for parameter k, S_k^2 the
  variance over the points of the per-point gradient (y_i - x1_i . a) x1_ik / sigma^2 (the
  source instead drew 100 random batches every 10 samples); and per parameter at the end,
  `sim.sampler.gradient_noise_variance` against the same exact variance;
* T_0.99: the fraction of readings of r^T M^-1 r (twice the run-info `kinetic_energy`, which
  includes the mass weights) below the 0.99 quantile of chi^2(4), with its 99% Clopper-Pearson
  interval (tati.diagnostics.momentum_chi_square), over readings every 20 steps thinned to
  about independent ones by their integrated autocorrelation time; and the kinetic temperature
  r^T M^-1 r / 4, whose exact value is 1.

What to expect. The gradient noise of this model is strongly correlated between the
coefficients: its covariance is about (N / n) times the posterior precision A, so it sits in
the stiff directions of the posterior. B-hat = 0 lets all of it through: the momenta run hot
(kinetic temperature about 1.46, T_0.99 well below 0.99), while the positions hardly notice in
the soft directions where a1 and a3 spread (the noise adds about eps (N / n) / (2 C) = 0.01 to
every variance). The estimators' V-hat is diagonal: it removes the right amount of noise from
each momentum, so the kinetic temperature and T_0.99 come out right, but in the soft directions
it removes noise that was never there, and the marginals come out about 12% too narrow. Both
columns "predicted" are this effect alone, from the linear SDE with the noise's full covariance
(`predicted`): the sampled standard deviations lie 2-5% below them. Most of the gap is that
mini-batches in tati are drawn without replacement within an epoch, so their errors also
cancel over the N / n = 50 steps of an epoch (with batches drawn independently, fed to tati's
SGHMC optimizer by a loop of its own, the gap is 1-2%). T_0.99 tests the momenta only, so it
cannot see the narrow marginals. `batch`'s V-hat is unbiased but scatters by sqrt(2 / (K - 1))
= 0.47 from epoch to epoch, the same for every walker (the same K batches): its per-parameter
ratios at the end are one such draw, and the mass rescaled with it leaves the bias a0 hot
(kinetic temperature about 1.07 at K = 10; doc/examples.md).
"""

import argparse
import math

import numpy as np
import pandas as pd
from scipy import stats

import tati
from tati.diagnostics import integrated_autocorrelation_time, momentum_chi_square

POINTS, NOISE, PRIOR_SD, COEFFICIENTS = 1000, 3.0, 10.0, (1.0, 2.0, -1.0, 0.5)
LEARNING_RATE, MOMENTUM_DECAY, BATCH, MASS = 4e-5, 0.1, 20, 1.0
STEP_WIDTH = math.sqrt(LEARNING_RATE * MASS)     # eta = eps^2 / M
FRICTION = MOMENTUM_DECAY * MASS / STEP_WIDTH    # alpha = eps C / M
RESAMPLE, EVERY = 1000, 20
ESTIMATORS = ("none", "batch", "adam", "adam_centered")
LABELS = {"none": "B-hat = 0", "batch": "batch", "adam": "adam", "adam_centered": "adam_centered"}
STYLES = {"none": "-", "batch": "-.", "adam": "-", "adam_centered": "--"}
COLORS = {"none": "tab:red", "batch": "tab:orange", "adam": "tab:blue", "adam_centered": "tab:green"}
SHOWN = {"a1": 0, "a3": 2}  # columns weight0 and weight2


def make_data(seed=0):
    """(X [N, 3] = x, x^2, x^3; Y [N, 1])."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, POINTS)
    features = np.stack([x, x ** 2, x ** 3], axis=1)
    a = np.asarray(COEFFICIENTS)
    labels = a[0] + features @ a[1:] + NOISE * rng.normal(size=POINTS)
    return features, labels[:, None]


def with_ones(features):
    """X1: the features and a column of ones, in tati's column order (weights, then the bias)."""
    return np.column_stack([features, np.ones(len(features))])


def exact_posterior(features, labels):
    """(mean [4], covariance [4, 4]) of (a1, a2, a3, a0)."""
    x1 = with_ones(features)
    precision = x1.T @ x1 / NOISE ** 2 + np.eye(4) / PRIOR_SD ** 2
    covariance = np.linalg.inv(precision)
    return covariance @ x1.T @ labels[:, 0] / NOISE ** 2, covariance


def observed_variance(features, labels, positions, block=500):
    """The exact variance of the mini-batch gradient of U at each position [R, 4] -> [R, 4]."""
    x1 = with_ones(features)
    result = []
    for start in range(0, len(positions), block):
        theta = positions[start:start + block]
        residuals = labels[:, 0][None] - theta @ x1.T                     # [r, N]
        per_point = residuals[:, :, None] * x1[None] / NOISE ** 2         # [r, N, 4]
        result.append(per_point.var(axis=1, ddof=1))
    spread = np.concatenate(result)
    return POINTS ** 2 * (1.0 - BATCH / POINTS) * spread / BATCH


def predicted(features, labels, mean, covariance, estimating, safety=2.0):
    """(sd of a1, sd of a3, kinetic temperature) in the stationary state of SGHMC's dynamics in
    continuous time on this Gaussian posterior, with white gradient noise of the full covariance
    B = eps V / 2 (V at the posterior mean): z = (theta, r) follows dz = F z dt + noise of
    covariance Q dt, F = [[0, M^-1], [-A, -C M^-1]], Q = [[0, 0], [0, 2 (C - B-hat) + 2 B]], and
    its covariance S solves F S + S F^T + Q = 0. B-hat = 0, or the diagonal of B as an ideal
    estimator gives it, with the mass rescaling W = max(1, m_est B_ii / C_0) (M = M_0 W,
    C = C_0 W). It leaves out the step's O(eps) error and the batches' correlation in time."""
    from scipy.linalg import solve_continuous_lyapunov
    x1 = with_ones(features)
    per_point = (labels[:, 0] - x1 @ mean)[:, None] * x1 / NOISE ** 2
    noise = 0.5 * STEP_WIDTH * POINTS ** 2 * (1.0 - BATCH / POINTS) / BATCH * np.cov(per_point.T)
    weights = np.maximum(1.0, safety * np.diag(noise) / FRICTION) if estimating else np.ones(4)
    b_hat = np.diag(np.minimum(np.diag(noise), FRICTION * weights / safety)) if estimating else 0.0
    mass, friction = np.diag(MASS * weights), np.diag(FRICTION * weights)
    drift = np.block([[np.zeros((4, 4)), np.linalg.inv(mass)],
                      [-np.linalg.inv(covariance), -friction @ np.linalg.inv(mass)]])
    diffusion = np.zeros((8, 8))
    diffusion[4:, 4:] = 2.0 * (friction - b_hat) + 2.0 * noise
    state = solve_continuous_lyapunov(drift, -diffusion)
    kinetic = float(np.trace(np.linalg.inv(mass) @ state[4:, 4:]) / 4.0)
    return math.sqrt(state[0, 0]), math.sqrt(state[2, 2]), kinetic


def run(estimator, features, labels, start, walkers, steps, burn_in, seed):
    """(trajectory, run info, V-hat per parameter at the end [W, 4], positions at the end)."""
    simulation = tati.Simulation(
        dataset=(features, labels), hidden_dimension=[], output_activation="linear", likelihood="gaussian",
        noise_standard_deviation=NOISE, prior_standard_deviation=PRIOR_SD, sampler="SGHMC",
        step_width=STEP_WIDTH, friction_constant=FRICTION, mass=MASS, batch_size=BATCH,
        gradient_noise_estimator=estimator, number_walkers=walkers, initial_parameters=list(start),
        max_steps=RESAMPLE, every_nth=EVERY, dtype="float64", seed=seed)
    rng = np.random.default_rng([seed, 7])
    trajectories, run_infos = [], []
    for _ in range(steps // RESAMPLE):
        result = simulation.sample()
        trajectories.append(result.trajectory)
        run_infos.append(result.run_info)
        weights = np.asarray(simulation.sampler.mass_weights)  # [W, 4]: M = M_0 W
        simulation.momenta = rng.standard_normal((walkers, 4)) * np.sqrt(MASS * weights)
    trajectory, run_info = pd.concat(trajectories), pd.concat(run_infos)
    noise_variance = np.asarray(simulation.sampler.gradient_noise_variance)
    return (trajectory[trajectory.step > burn_in], run_info[run_info.step > burn_in], noise_variance,
            np.asarray(simulation.parameters))


def temperature_test(run_info):
    """(T_0.99, (low, high), readings, kinetic temperature, the values r^T M^-1 r)."""
    energies = run_info.pivot(index="step", columns="id", values="kinetic_energy").to_numpy()  # [rows, W]
    stride = max(1, math.ceil(integrated_autocorrelation_time(energies)))
    values = 2.0 * energies[::stride].ravel()
    fraction, interval = momentum_chi_square(0.5 * values, 4, 1.0, 0.99, 0.99)
    return fraction, interval, len(values), float(values.mean() / 4.0), values


def plot(path, runs, mean, covariance, steps_axis):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10.0, 7.6))
    for ax, (name, k) in zip(axes[0], SHOWN.items()):
        sd = math.sqrt(covariance[k, k])
        edges = np.linspace(mean[k] - 4.5 * sd, mean[k] + 4.5 * sd, 46)
        for estimator, r in runs.items():
            values = r["trajectory"][f"weight{k}"].to_numpy()
            ax.hist(values, edges, density=True, histtype="step", linewidth=1.6, color=COLORS[estimator],
                    linestyle=STYLES[estimator], label=LABELS[estimator])
        grid = np.linspace(edges[0], edges[-1], 300)
        ax.plot(grid, stats.norm.pdf(grid, mean[k], sd), color="black", linewidth=2.0, label="exact posterior")
        ax.set_xlabel(name, fontsize=11)
        ax.set_ylabel("density", fontsize=10)
        ax.set_title(f"marginal of {name}", fontsize=11)
    variance_ax, chi_ax = axes[1]
    for estimator, r in runs.items():
        if estimator != "none":
            # batch: one estimate per epoch, shared by the walkers (the same K batches), so its
            # scatter does not average out: drawn thin and below the others
            batch = estimator == "batch"
            variance_ax.plot(steps_axis, r["estimated_by_step"], color=COLORS[estimator],
                             linewidth=0.8 if batch else 1.4, alpha=0.7 if batch else 1.0, zorder=1 if batch else 2,
                             label=f"V-hat, {estimator}", drawstyle="steps-post" if batch else "default")
    observed = np.mean([r["observed_by_step"] for r in runs.values()], axis=0)
    variance_ax.plot(steps_axis, observed, color="black", linewidth=1.6, linestyle="--",
                     label="observed (exact per batch)", zorder=3)
    variance_ax.set_yscale("log")
    low, high = variance_ax.get_ylim()
    variance_ax.set_ylim(low / 5.0, high)  # room for the legend below the curves
    variance_ax.set_xlabel("step", fontsize=10)
    variance_ax.set_ylabel("gradient variance\n(mean over parameters and walkers)", fontsize=10)
    variance_ax.set_title("estimated and observed mini-batch gradient variance", fontsize=11)
    edges = np.linspace(0.0, 20.0, 41)
    for estimator, r in runs.items():
        chi_ax.hist(r["T"][4], edges, density=True, histtype="step", linewidth=1.6, color=COLORS[estimator],
                    linestyle=STYLES[estimator],
                    label=f"{LABELS[estimator]}: T_0.99 = {r['T'][0]:.3f}")
    grid = np.linspace(0.0, 20.0, 300)
    chi_ax.plot(grid, stats.chi2.pdf(grid, 4), color="black", linewidth=2.0, label="chi^2(4)")
    chi_ax.axvline(stats.chi2.ppf(0.99, 4), ymax=0.45, color="gray", linestyle=":", linewidth=1.6,
                   label="0.99 quantile of chi^2(4)")
    chi_ax.set_xlabel("r^T M^-1 r", fontsize=10)
    chi_ax.set_ylabel("density", fontsize=10)
    chi_ax.set_title("momentum readings against chi^2(4)", fontsize=11)
    for ax in axes.ravel():
        ax.tick_params(labelsize=9)
        ax.legend(fontsize=8, frameon=False, **({"loc": "lower center", "ncol": 2} if ax is variance_ax else {}))
    fig.suptitle("polynomial regression, N = 1000, batches of 20, eta = 4e-5, alpha = 0.1", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walkers", type=int, default=100, help="independent SGHMC chains")
    parser.add_argument("--steps", type=int, default=20000, help="steps per chain, burn-in included "
                        f"(a multiple of {RESAMPLE}, the momentum resampling interval)")
    parser.add_argument("--burn_in", type=int, default=3000, help="steps left out at the start of each chain")
    parser.add_argument("--estimators", default=",".join(ESTIMATORS),
                        help="comma-separated gradient_noise_estimator values to run")
    parser.add_argument("--quick", action="store_true", help="a short run: 40 walkers, 6000 steps")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", default="sghmc_regression.png", help="PNG file of the figure")
    args = parser.parse_args(argv)
    if args.quick:
        args.walkers, args.steps = 40, 6000
    estimators = args.estimators.split(",")
    unknown = [e for e in estimators if e not in ESTIMATORS]
    if unknown or args.steps <= args.burn_in or args.steps % RESAMPLE:
        parser.error(f"--estimators takes {', '.join(ESTIMATORS)} (got {unknown})" if unknown else
                     f"--steps must be a multiple of {RESAMPLE} above --burn_in {args.burn_in}")

    features, labels = make_data()
    mean, covariance = exact_posterior(features, labels)
    runs = {}
    for estimator in estimators:
        trajectory, run_info, noise_variance, last = run(estimator, features, labels, mean, args.walkers,
                                                         args.steps, args.burn_in, args.seed)
        positions = trajectory[[f"weight{k}" for k in range(3)] + ["bias0"]].to_numpy()
        observed = observed_variance(features, labels, positions).mean(axis=1)
        steps = trajectory.step.to_numpy()
        r = runs[estimator] = dict(trajectory=trajectory, T=temperature_test(run_info))
        r["observed_by_step"] = np.bincount(np.unique(steps, return_inverse=True)[1], observed) / args.walkers
        if estimator != "none":
            estimated = run_info.pivot(index="step", columns="id", values="gradient_noise_variance").to_numpy()
            r["estimated_by_step"] = estimated.mean(axis=1)
            r["ratio"] = float(np.mean(estimated.mean(axis=1) / r["observed_by_step"]))
            r["ratio_end"] = (noise_variance / observed_variance(features, labels, last)).mean(axis=0)
    steps_axis = np.unique(next(iter(runs.values()))["trajectory"].step)

    print(f"{args.walkers} walkers x {args.steps} steps (the first {args.burn_in} left out), momenta resampled "
          f"every {RESAMPLE} steps")
    print(f"\n{'marginals':<22} {'mean a1':>8} {'sd a1':>6} {'predicted':>9}   {'mean a3':>8} {'sd a3':>6} "
          f"{'predicted':>9}   {'kinetic temperature predicted':>29}")
    print(f"{'exact':<22} {mean[0]:>8.3f} {math.sqrt(covariance[0, 0]):>6.3f} {'':>9}   {mean[2]:>8.3f} "
          f"{math.sqrt(covariance[2, 2]):>6.3f} {'':>9}   {1.0:>29.3f}")
    for estimator, r in runs.items():
        a1, a3 = (r["trajectory"][f"weight{k}"] for k in SHOWN.values())
        sd1, sd3, kinetic = predicted(features, labels, mean, covariance, estimator != "none")
        print(f"{LABELS[estimator]:<22} {a1.mean():>8.3f} {a1.std():>6.3f} {sd1:>9.3f}   {a3.mean():>8.3f} "
              f"{a3.std():>6.3f} {sd3:>9.3f}   {kinetic:>29.3f}")
    print("\ngradient-noise variance: V-hat / observed, mean over the run (V-hat: mean over the 4 parameters); "
          "at the end, per parameter (a1, a2, a3, a0)")
    for estimator, r in runs.items():
        if estimator == "none":
            print(f"{LABELS[estimator]:<22} not estimated (observed variance {r['observed_by_step'].mean():.4g})")
        else:
            ends = ", ".join(f"{v:.2f}" for v in r["ratio_end"])
            print(f"{LABELS[estimator]:<22} {r['ratio']:.3f}   at the end: {ends}")
    print(f"\n{'T_0.99':<22} {'readings':>8} {'T_0.99':>7} {'99% interval':>17} {'|T - 0.99|':>10} "
          f"{'kinetic temperature':>19}")
    for estimator, r in runs.items():
        fraction, (low, high), readings, temperature, _ = r["T"]
        print(f"{LABELS[estimator]:<22} {readings:>8} {fraction:>7.4f} {f'[{low:.4f}, {high:.4f}]':>17} "
              f"{abs(fraction - 0.99):>10.4f} {temperature:>19.3f}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure: pip install tati[plots]")
        return
    plot(args.plot, runs, mean, covariance, steps_axis)
    print("wrote", args.plot)


if __name__ == "__main__":
    main()
