"""A Bayesian network on a 1-D heteroscedastic regression: MAP, a deep ensemble, SWAG, RWMH,
HMC and NUTS side by side, and the prior-width sweep (the essay among the source documents,
001_ed9d4b16a3fef3fd.txt: a network that outputs a mean and a variance, a Gaussian prior on
every parameter, posterior predictive bands).

    python examples/bayesian_regression_1d.py [--quick] [--methods MAP,ensemble,SWAG,RWMH,HMC2,NUTS]
        [--sweep 0.01,0.1,1,10] [--plot bands.png] [--sweep-plot sweep.png]

Data (seeded): 40 points x in [-1, -0.5] and [0.5, 1], y = sin(3x) + noise whose standard
deviation grows from 0.05 to 0.25 along x; held-out points from the same law. Model: a 1-10-2
tanh network whose outputs are the mean and the raw variance (likelihood
heteroscedastic_gaussian), prior N(0, s^2) on every parameter (s = 1), in Bayesian units
(inverse_temperature 1 samples the posterior).

- MAP: gradient descent with the essay's exponentially decaying learning rate;
- deep ensemble: the same from 6 independent initialisations (6 walkers of fit());
- SWAG: SGD from the MAP with mini-batches of 10 and a constant rate, rank 20 (tati.bayes.swag);
- RWMH, HMC2, NUTS: 4 walkers (NUTS 2), step widths and metric adapted during burn-in.

Printed: per method, the 95% band's width averaged over the data's x range and at x = -2, 0
(the gap) and 2, their ratio far / near ("widening"), and the held-out log predictive density
per point; for the ensemble, how its band and standard deviation compare with its mean
member's and its widest member's, at x = -2, 0, 2 and averaged outside the data (the mixture
adds the members' disagreement to their mean noise, which beats the widest member only where
they disagree more than their noises differ; here they learn nearly the same function, as the
essay found, and the figure's ensemble panel draws their means). A network alone (MAP) knows
only its noise: its band hardly widens away from the data; the posterior's does.
"""

import argparse
import time

import numpy as np
import pandas as pd

import tati
from tati.bayes.swag import swag

GRID = np.linspace(-2.0, 2.0, 81)[:, None]
FAR = [-2.0, 0.0, 2.0]  # beyond both ends of the data and in the gap between its clusters


def data(n, seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-1.0, -0.5, n // 2), rng.uniform(0.5, 1.0, n - n // 2)])
    noise = 0.05 + 0.1 * (x + 1.0)
    y = np.sin(3.0 * x) + noise * rng.standard_normal(n)
    return x[:, None], y[:, None]


def model_options(train, prior):
    return dict(dataset=train, hidden_dimension=[10], hidden_activation="tanh", output_dimension=2,
                output_activation="linear", likelihood="heteroscedastic_gaussian",
                prior_standard_deviation=prior, dtype="float64", seed=1)


def last_rows(result):
    return result.trajectory.groupby("id").tail(1)


def run_method(name, train, prior, quick):
    """(Simulation, the parameter draws as trajectory rows) of one method."""
    options = model_options(train, prior)
    fit = dict(optimizer="GradientDescent", learning_rate=1e-3, learning_rate_decay_rate=0.1,
               learning_rate_decay_steps=3000, max_steps=3000, every_nth=100)
    if name in ("MAP", "ensemble"):
        sim = tati.Simulation(**options, **fit, number_walkers=6 if name == "ensemble" else 1)
        return sim, last_rows(sim.fit())
    if name == "SWAG":
        sim = tati.Simulation(**options, **fit)
        sim.fit()
        sgd = tati.Simulation(**options, optimizer="GradientDescent", learning_rate=2e-4, batch_size=10,
                              max_steps=1000 if quick else 4000, every_nth=20,
                              initial_parameters=sim.parameters)
        return sgd, swag(sgd.fit().trajectory, rank=20, burn_in=200).sample(500, seed=2)
    steps = {"RWMH": (5000, 20000, 10), "HMC2": (2000, 8000, 1), "NUTS": (300, 600, 1)}[name]
    burn_in, total, every = [max(1, s // 4) for s in steps[:2]] + [steps[2]] if quick else steps
    walkers = 2 if name == "NUTS" else 4
    extra = dict(hamiltonian_dynamics_time=0.5, step_width=0.01) if name == "HMC2" else {}
    sim = tati.Simulation(**options, sampler=name, number_walkers=walkers, burn_in_steps=burn_in,
                          max_steps=total, every_nth=every, **extra)
    result = sim.sample()
    return sim, result.trajectory[result.trajectory.step > burn_in]


def band_widths(table, x):
    width = (table["upper_0"] - table["lower_0"]).to_numpy()
    near = np.mean(width[(np.abs(x) > 0.5) & (np.abs(x) < 1.0)])
    far = [float(np.interp(v, x, width)) for v in FAR]
    return near, far


def compare(methods, prior, quick, seed):
    train, test = data(40, seed), data(200, seed + 1)
    x = GRID[:, 0]
    rows, bands, members = [], {}, {}
    for name in methods:
        start = time.perf_counter()
        sim, draws = run_method(name, train, prior, quick)
        table, _ = sim.predictive(GRID, trajectory=draws, burn_in=-1)
        _, lpd = sim.predictive(test[0], test[1], trajectory=draws, burn_in=-1)
        near, far = band_widths(table, x)
        bands[name] = table
        rows.append({"method": name, "draws": len(draws), "width near data": near,
                     **{f"width at {v:g}": w for v, w in zip(FAR, far)},
                     "widening": float(np.mean(far) / near), "test lpd per point": lpd / len(test[0]),
                     "seconds": time.perf_counter() - start})
        if name == "ensemble":
            own = [sim.predictive(GRID, trajectory=draws[draws.id == k], burn_in=-1)[0]
                   for k in sorted(draws.id.unique())]
            ensemble_spread(table, own, x)
            members[name] = [member["mean_0"].to_numpy() for member in own]
    return pd.DataFrame(rows).set_index("method"), bands, members, train


def ensemble_spread(table, members, x):
    """Print the ensemble's spread against its members': the 95% band and the standard
    deviation, at x = -2, 0, 2 (pointwise, then their mean) and averaged over x outside the data.

    A member is one Gaussian N(mu_i, v_i), its band 2 z sqrt(v_i) (z = 1.96); the ensemble is
    their equal mixture, of variance mean(v_i) + var(mu_i): never below its mean member's, but
    above its widest member's only where the members' means disagree by more than their
    variances differ (var(mu_i) > max(v_i) - mean(v_i))."""
    z = 1.959963984540054
    width = (table["upper_0"] - table["lower_0"]).to_numpy()
    own = np.array([(m["upper_0"] - m["lower_0"]).to_numpy() for m in members])
    mu = np.array([m["mean_0"].to_numpy() for m in members])
    own_sd = own / (2.0 * z)
    sd = np.sqrt(np.mean(own_sd ** 2, axis=0) + mu.var(axis=0))
    far = np.isin(x, FAR)
    outside = (np.abs(x) < 0.5) | (np.abs(x) > 1.0)
    print(f"ensemble band over its members' mean band away from the data: "
          f"{float(np.mean(width[far] / own.mean(axis=0)[far])):.4g} (over its widest member's: "
          f"{float(np.mean(width[far] / own.max(axis=0)[far])):.4g})")
    print(f"ensemble sd over its members' mean sd away from the data: "
          f"{float(np.mean(sd[far] / own_sd.mean(axis=0)[far])):.4g} (over its widest member's: "
          f"{float(np.mean(sd[far] / own_sd.max(axis=0)[far])):.4g})")
    print("ensemble over its widest member at x = " + ", ".join(f"{v:g}" for v in FAR) + ": band "
          + ", ".join(f"{r:.3f}" for r in width[far] / own.max(axis=0)[far]) + "; sd "
          + ", ".join(f"{r:.3f}" for r in sd[far] / own_sd.max(axis=0)[far]))
    print(f"ensemble band averaged over x outside the data over the widest member's average: "
          f"{width[outside].mean() / own[:, outside].mean(axis=1).max():.4g} (sd: "
          f"{sd[outside].mean() / own_sd[:, outside].mean(axis=1).max():.4g}); wider than the widest "
          f"member at {np.mean(width[outside] > own.max(axis=0)[outside]):.0%} of those x")


def sweep(priors, quick, seed):
    train = data(40, seed)
    bands = {}
    for prior in priors:
        sim, draws = run_method("NUTS", train, prior, quick)
        bands[prior] = sim.predictive(GRID, trajectory=draws, burn_in=-1)[0]
    return bands, train


def draw(bands, train, path, title, members=None):
    """One panel per band table; `members`: per panel name, its networks' mean curves, drawn thin
    (the ensemble's members, as in the essay's figure of its six networks)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("install tati[plots] (matplotlib) for the figure")
        return
    x = GRID[:, 0]
    columns = 3 if len(bands) > 4 else len(bands)
    rows = -(-len(bands) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), sharex=True, sharey=True,
                                squeeze=False)
    for axis, (name, table) in zip(axes.ravel(), bands.items()):
        axis.fill_between(x, table["lower_0"], table["upper_0"], color="tab:blue", alpha=0.25, label="95% band")
        axis.plot(x, table["mean_0"], color="tab:blue", label="predictive mean")
        axis.plot(x, np.sin(3.0 * x), color="black", lw=0.8, ls="--", label="sin(3x) (truth)")
        axis.scatter(train[0][:, 0], train[1][:, 0], s=8, color="tab:red", zorder=3, label="data")
        curves = (members or {}).get(name, [])
        lines = [axis.plot(x, mean, color="tab:orange", lw=0.8)[0] for mean in curves]
        if lines:
            axis.legend(lines[:1], [f"its {len(lines)} members' means"], loc="lower left", fontsize=8)
        axis.set_title(title(name))
        axis.set_ylim(-3.5, 3.5)
        axis.grid(alpha=0.3)
    for axis in axes[-1]:
        axis.set_xlabel("x")
    for axis in axes[:, 0]:
        axis.set_ylabel("y")
    for axis in axes.ravel()[len(bands):]:
        axis.set_visible(False)
    axes[0, 0].legend(loc="lower left", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the sampling steps")
    parser.add_argument("--methods", default="MAP,ensemble,SWAG,RWMH,HMC2,NUTS")
    parser.add_argument("--prior", type=float, default=1.0, help="prior standard deviation s")
    parser.add_argument("--sweep", default="0.01,0.1,1,10", help="prior widths of the NUTS sweep ('' for none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--sweep-plot", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    table, bands, members, train = compare(args.methods.split(","), args.prior, args.quick, args.seed)
    with pd.option_context("display.width", 200, "display.max_columns", None, "display.precision", 3):
        print(table)
    for name in table.index:
        print(f"widening {name}: {table.loc[name, 'widening']:.4g}")
    if args.plot:
        draw(bands, train, args.plot, lambda name: name, members)
    if args.sweep:
        priors = [float(s) for s in args.sweep.split(",")]
        sweep_bands, train = sweep(priors, args.quick, args.seed)
        if args.sweep_plot:
            draw(sweep_bands, train, args.sweep_plot, lambda s: f"NUTS, prior N(0, {s:g}^2)")
    print(f"took {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
