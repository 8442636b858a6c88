"""Order of accuracy of the Langevin samplers: the error of <q^2> against the step width.

    python examples/order_of_accuracy.py [--chains 250000] [--time 60] [--plot order.png]
    python examples/order_of_accuracy.py --quick        # smoke run: small, imprecise, ~25 s

About 2-2.5 minutes on two cores by default. Target: U(q) = 2 log cosh q, whose density
exp(-U) is the logistic distribution with scale 1/2, so <q^2> = pi^2 / 12 exactly and exact
draws are q = log(u / (1 - u)) / 2. Each sampler runs as a plain Keras optimizer on one
variable holding many independent chains, started at exact draws (momenta from N(0, 1));
after a burn-in of 10 time units, <q^2> is averaged over `time` time units. The standard
error (se) comes from the spread across the chains.

The order p: the error of a sampler of order p is a h^p + b h^(p+1) + ... At the step widths
where Monte Carlo resolves the error the second term is not negligible (b h / a is about -0.2
for GLA1 and +0.2 for SGLD at h = 0.2), so a straight line through log|error| against log h
has a biased slope, many of its standard errors away from the order: 0.81 +- 0.01 for GLA1 and
1.10 +- 0.01 for SGLD over h = 0.025 ... 0.2, 2.07 +- 0.02 for GLA2 over h = 0.1 ... 0.4
(`fitted_slope`, kept for tests/samplers/test_order.py). Over h = 0.05 ... 0.6 GLA1's error even turns
back towards zero above h = 0.4 (the h^2 term cancels the h term), which gave the old slope
0.36 (the fit below gives 1.02 +- 0.01 on those same old numbers). The example fits error =
h^p (a + b h) instead (`fitted_order`: weighted least squares, p on a grid, a and b linear)
and prints p with its standard error from the chi^2 profile. Only fits whose correction stays
below the leading term, |b| h <= |a|, count (otherwise p - 1 with a tiny leading term mimics
the data). A fit needs the error resolved, |error| >= 5 se, at 3 step widths or more;
otherwise the example says why there is no slope instead of printing one (the old version
printed nan for BAOAB).

Expected (doc/samplers.md): order 1 for SGLD and GLA1, 2 for GLA2 and BAOAB. BAOAB's error on
this target is so small (about 1e-4 at h = 0.1, 1.6e-3 at h = 0.4, 35 times below GLA2's)
that Monte Carlo does not resolve it at this budget; its exact value for the discrete chain
is computed without Monte Carlo (`baoab_exact_error`: the transfer operator of one BAOAB step
on a (q, p) grid, as in tests/baoab_stationary.py) and printed and drawn beside the
measurement.

Positions are float32 by default (--dtype): 3-4 times faster than float64 here, and the
rounding (1e-7 per step) is far below the errors measured (at h = 0.8 float32 BAOAB gives
-0.00466 +- 0.00009 against the exact -0.00464).
"""

import argparse
import math
import time as clock

import numpy as np
import tensorflow as tf

from tati.samplers import BAOAB, GLA1, GLA2, SGLD

EXACT = math.pi ** 2 / 12
RESOLVED = 5.0      # an error is resolved when |error| >= RESOLVED standard errors
MIN_RESOLVED = 3    # a fit of h^p (a + b h) needs this many resolved step widths


def measure_error(sampler, h, chains, time, seed, dtype="float64"):
    """(error of <q^2>, its standard error) for one sampler instance with step width h."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(size=chains)
    q = tf.Variable((0.5 * np.log(u / (1.0 - u))).astype(dtype))
    sampler.build([q])
    if sampler.has_momentum:
        sampler.momenta[0].assign(rng.normal(size=chains).astype(dtype))
    total = tf.Variable(tf.zeros(chains, tf.float64))

    @tf.function
    def run(steps, accumulate):
        for _ in tf.range(steps):
            if accumulate:
                total.assign_add(tf.cast(q * q, tf.float64))
            sampler.apply_gradients([(2.0 * tf.tanh(q), q)])

    run(tf.constant(int(round(10.0 / h))), False)
    steps = int(round(time / h))
    run(tf.constant(steps), True)
    per_chain = total.numpy() / steps
    return per_chain.mean() - EXACT, per_chain.std(ddof=1) / math.sqrt(chains)


def fitted_slope(step_widths, errors, standard_errors):
    """(slope, its standard error, step widths used) of a straight line through log|error|
    against log h (weighted least squares) over the errors >= 10 standard errors.
    A pure power law: biased by the next order at finite h (see `fitted_order`)."""
    h, e, s = (np.asarray(x, dtype=float) for x in (step_widths, errors, standard_errors))
    use = np.abs(e) >= 10 * s
    if use.sum() < 2:
        return float("nan"), float("nan"), h[use]
    x, y, w = np.log(h[use]), np.log(np.abs(e[use])), (np.abs(e[use]) / s[use]) ** 2
    design = np.stack([np.ones_like(x), x], axis=1)
    covariance = np.linalg.inv(design.T @ (w[:, None] * design))
    slope = (covariance @ design.T @ (w * y))[1]
    return slope, math.sqrt(covariance[1, 1]), h[use]


def fitted_order(step_widths, errors, standard_errors, orders=np.arange(0.2, 5.0, 0.001)):
    """Fit error = h^p (a + b h), weighted by the standard errors, over all step widths.

    For each p on the grid `orders` the model is linear in a and b (least squares); p is where
    chi^2 is smallest among the fits that are asymptotic expansions, |b| h_max <= |a| (the
    correction never outweighs the leading term: otherwise a fit with p one lower and a tiny
    leading term can mimic the data). Its standard error is the larger distance from p to the
    ends of the connected interval around it where chi^2 <= its minimum + 1 (the profile over
    a and b; the larger side, as the condition can cut the interval on one side).
    Returns a dict (order, se, a, b, chi2, dof), or None when fewer than MIN_RESOLVED errors
    are resolved (|error| >= RESOLVED se) or no fit is an asymptotic expansion."""
    h, e, s = (np.asarray(x, dtype=float) for x in (step_widths, errors, standard_errors))
    if (np.abs(e) >= RESOLVED * s).sum() < MIN_RESOLVED:
        return None
    lead = h[None, :] ** orders[:, None] / s           # [orders, step widths]
    corr, y = lead * h, e / s
    aa, ab, bb = (lead * lead).sum(1), (lead * corr).sum(1), (corr * corr).sum(1)
    ay, by = (lead * y).sum(1), (corr * y).sum(1)
    a, b = (bb * ay - ab * by) / (aa * bb - ab * ab), (aa * by - ab * ay) / (aa * bb - ab * ab)
    chi2 = ((a[:, None] * lead + b[:, None] * corr - y) ** 2).sum(1)
    chi2[np.abs(b) * h.max() > np.abs(a)] = np.inf
    best = int(np.argmin(chi2))
    if not np.isfinite(chi2[best]):
        return None
    low = high = best
    while low > 0 and chi2[low - 1] <= chi2[best] + 1:
        low -= 1
    while high < len(orders) - 1 and chi2[high + 1] <= chi2[best] + 1:
        high += 1
    return dict(order=orders[best], se=max(orders[high] - orders[best], orders[best] - orders[low]),
                a=a[best], b=b[best], chi2=chi2[best], dof=len(h) - 3)


def baoab_exact_error(h, gamma, dq=0.2, nq=128, dp=0.2, np_=80, tol=1e-12):
    """Exact <q^2>_h - pi^2 / 12 of the discrete BAOAB chain (unit mass, beta = 1), no Monte Carlo.

    The density on a periodic (q, p) grid is pushed through B A O A B until it stops changing:
    B and A shift every grid line by a constant (exactly, by FFT phase factors), O is the
    Gaussian kernel along p (trapezoid rule). Accurate to about 1e-8 on this grid
    (tests/baoab_stationary.py checks the same method against finer grids and exact answers)."""
    q = dq * (np.arange(nq) - nq // 2)
    p = dp * (np.arange(np_) - np_ // 2)
    alpha = math.exp(-gamma * h)
    variance = 1.0 - alpha * alpha
    ou = dp * np.exp(-(p[None, :] - alpha * p[:, None]) ** 2 / (2 * variance)) / math.sqrt(2 * math.pi * variance)

    def shift(f, shifts, spacing, axis):   # g(x) = f(x - s) along axis, one s per line
        k = 2.0 * np.pi * np.fft.rfftfreq(f.shape[axis], spacing)
        phase = np.exp(-1j * (np.outer(k, shifts) if axis == 0 else np.outer(shifts, k)))
        return np.fft.irfft(np.fft.rfft(f, axis=axis) * phase, n=f.shape[axis], axis=axis)

    kick, drift = -0.5 * h * 2.0 * np.tanh(q), 0.5 * h * p
    rho = np.exp(-2.0 * np.log(np.cosh(q))[:, None] - 0.5 * p[None, :] ** 2)
    last = math.inf
    for _ in range(20000):
        rho = shift(shift(rho, kick, dp, 1), drift, dq, 0)      # B, A
        rho = shift(shift(rho @ ou, drift, dq, 0), kick, dp, 1)  # O, A, B
        rho /= rho.sum()
        value = ((q * q)[:, None] * rho).sum()
        if abs(value - last) < tol:
            return value - EXACT
        last = value
    raise RuntimeError(f"no convergence at h={h}, gamma={gamma}")


# name: (sampler factory, documented order, step widths, chains as a multiple of --chains)
SAMPLERS = {
    "SGLD": (lambda h, seed: SGLD(step_width=h, seed=seed), 1, (0.025, 0.05, 0.1, 0.2), 1),
    "GLA1": (lambda h, seed: GLA1(step_width=h, friction_constant=1.0, seed=seed), 1,
             (0.025, 0.05, 0.1, 0.2), 1),
    "GLA2": (lambda h, seed: GLA2(step_width=h, friction_constant=1.0, seed=seed), 2,
             (0.1, 0.15, 0.2, 0.3, 0.4), 4),
    "BAOAB": (lambda h, seed: BAOAB(step_width=h, friction_constant=1.0, seed=seed), 2,
              (0.1, 0.15, 0.2, 0.3, 0.4), 2),
}


def se_range(standard_errors):
    low, high = f"{min(standard_errors):.5f}", f"{max(standard_errors):.5f}"
    return low if low == high else f"{low} ... {high}"


def summary(name, order, step_widths, errors, standard_errors, exact=None):
    """The line that states the fitted order, or why there is none."""
    fit = fitted_order(step_widths, errors, standard_errors)
    if fit is not None:
        return fit, (f"{name}: slope (order) {fit['order']:.2f} +- {fit['se']:.2f}, expected {order} "
                     f"(fit of error = h^p (a + b h) over h = {step_widths[0]:g} ... "
                     f"{step_widths[-1]:g}, chi^2 {fit['chi2']:.1f} for {fit['dof']} dof)")
    resolved = [h for h, e, s in zip(step_widths, errors, standard_errors) if abs(e) >= RESOLVED * s]
    if len(resolved) >= MIN_RESOLVED:
        line = (f"{name}: no slope: no fit error = h^p (a + b h) with |b| h <= |a| (correction below "
                f"the leading term) matches the errors")
    elif resolved:
        line = (f"{name}: no slope: the error is resolved (|error| >= {RESOLVED:g} se) only at h = "
                + ", ".join(f"{h:g}" for h in resolved) + f"; a fit needs {MIN_RESOLVED} step widths")
    else:
        line = (f"{name}: no slope: the error is below the Monte Carlo resolution at every step width "
                f"(|error| < {RESOLVED:g} se, se {se_range(standard_errors)})")
    if exact is not None:
        slope = fitted_order(step_widths, exact, [1e-8] * len(exact))
        slope = "undefined" if slope is None else f"{slope['order']:.2f}"
        z = max(abs(e - x) / s for e, x, s in zip(errors, exact, standard_errors))
        line += (f".\n  The exact error of the discrete chain (transfer operator, last column) has slope "
                 f"{slope}, expected {order};\n  the measured errors agree with it "
                 f"(|measured - exact| <= {z:.1f} se)")
    return None, line


def plot(path, results):
    """Log-log plot of |error| against h: measurements, fits, BAOAB's exact values, slopes 1 and 2."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    fig, ax = plt.subplots(figsize=(8.4, 4.6))
    colors = dict(zip(SAMPLERS, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
    handles, all_h, low, high = [], [], [], []
    for name, r in results.items():
        h, e, s = (np.asarray(r[k]) for k in ("h", "errors", "se"))
        all_h += list(h)
        color = colors[name]
        seen = np.abs(e) >= 2 * s      # |error| - se > 0: the error bar fits a log axis
        ax.errorbar(h[seen], np.abs(e[seen]), yerr=s[seen], fmt="o", color=color, capsize=3, markersize=5)
        low += list(np.abs(e[seen]) - s[seen])
        high += list(np.abs(e[seen]) + s[seen])
        if (~seen).any():   # not resolved from zero: the upper limit |error| < |measured| + 2 se
            top = np.abs(e[~seen]) + 2 * s[~seen]
            ax.errorbar(h[~seen], top, yerr=0.4 * top, uplims=True, fmt="_", color=color,
                        markersize=12, markeredgewidth=2)
            low += list(0.5 * top)
            high += list(top)
        fit = r["fit"]
        if fit is not None:
            hh = np.geomspace(h[0], h[-1], 50)
            ax.plot(hh, np.abs(hh ** fit["order"] * (fit["a"] + fit["b"] * hh)), "-", color=color, lw=1)
            label = f"{name}: order {fit['order']:.2f} +- {fit['se']:.2f} (expected {SAMPLERS[name][1]})"
        else:
            label = f"{name}: no slope (expected {SAMPLERS[name][1]})"
        handles.append(Line2D([], [], color=color, marker="o", lw=1, label=label))
        if r["exact"] is not None:
            ax.plot(h, np.abs(r["exact"]), "--", color=color, lw=1.5)
            handles.append(Line2D([], [], color=color, ls="--", lw=1.5,
                                  label=f"{name}: exact error of the discrete chain"))
            low += list(np.abs(r["exact"]))
    handles += [Line2D([], [], color="0.3", marker="o", ls="none", label="measured |error| +- se"),
                Line2D([], [], color="0.3", marker="_", markersize=12, markeredgewidth=2, ls="none",
                       label="not resolved (|error| < 2 se):\nupper limit |error| + 2 se"),
                Line2D([], [], color="0.3", lw=1, label="fit h^p (a + b h)")]
    # reference slopes: short segments in the empty lower left corner
    h0 = min(all_h)
    bottom = 10 ** math.floor(math.log10(min(low) / 1.5))
    for slope, y0 in ((1, 30 * bottom), (2, 3 * bottom)):
        hh = np.array([h0, 2.2 * h0])
        ax.plot(hh, y0 * (hh / h0) ** slope, color="0.3", lw=2)
        ax.annotate(f"slope {slope}", (hh[-1], y0 * 2.2 ** slope), xytext=(4, -4),
                    textcoords="offset points", fontsize=9, color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = sorted(set(all_h))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(min(ticks) / 1.3, max(ticks) * 1.3)
    ax.set_ylim(bottom, 10 ** math.ceil(math.log10(max(high) * 1.5)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("step width h (time units)")
    ax.set_ylabel(r"$|\langle q^2\rangle_h - \pi^2/12|$  (error of $\langle q^2\rangle$)")
    ax.set_title(r"Error of $\langle q^2\rangle$ on $U(q) = 2\,\log\,\cosh\,q$ against the step width",
                 fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=250000,
                        help="chains per step width for SGLD and GLA1 (GLA2: 4 times, BAOAB: 2 times as many)")
    parser.add_argument("--time", type=float, default=60.0, help="averaging time per step width")
    parser.add_argument("--samplers", default=",".join(SAMPLERS),
                        help="comma-separated subset of " + ", ".join(SAMPLERS))
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--no-exact", dest="exact", action="store_false",
                        help="skip BAOAB's exact values (about 10 s)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: --chains 20000 --time 20 (slopes imprecise or undefined)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plot", help="write the log-log plot to this PNG (needs matplotlib)")
    args = parser.parse_args()
    if args.quick:
        args.chains, args.time = 20000, 20.0
    names = [n.strip() for n in args.samplers.split(",")]
    unknown = [n for n in names if n not in SAMPLERS]
    if unknown:
        parser.error(f"unknown sampler {unknown[0]!r}; choose from {', '.join(SAMPLERS)}")

    print(f"error of <q^2> on U(q) = 2 log cosh q (exact pi^2/12 = {EXACT:.6f}), {args.dtype}, "
          f"{args.time:g} time units per step width")
    results = {}
    for name in names:
        make, order, step_widths, factor = SAMPLERS[name]
        chains = factor * args.chains
        start = clock.time()
        errors, standard_errors = [], []
        for h in step_widths:
            e, s = measure_error(make(h, args.seed), h, chains, args.time, seed=args.seed + 1,
                                 dtype=args.dtype)
            errors.append(e)
            standard_errors.append(s)
        exact = None
        if name == "BAOAB" and args.exact:
            exact = [baoab_exact_error(h, 1.0) for h in step_widths]
        print(f"\n{name} (friction 1)" if name != "SGLD" else f"\n{name}", f"{chains} chains, "
              f"{clock.time() - start:.0f} s")
        print("       h      error        se  |error|/se" + ("   exact (discrete chain)" if exact else ""))
        for i, h in enumerate(step_widths):
            print(f"  {h:6g}  {errors[i]:+.5f}  {standard_errors[i]:.5f}  {abs(errors[i]) / standard_errors[i]:8.1f}"
                  + (f"   {exact[i]:+.5f}" if exact else ""))
        fit, line = summary(name, order, step_widths, errors, standard_errors, exact)
        print(line, flush=True)
        results[name] = dict(h=step_widths, errors=errors, se=standard_errors, fit=fit, exact=exact)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("install tati[plots] (matplotlib) for the figure")
            return
        plot(args.plot, results)
        print("wrote", args.plot)


if __name__ == "__main__":
    main()
