"""Diffusion maps of the sampled parameters: the slow, non-linear directions of the landscape
(the reaction coordinates between basins), vanilla or reweighted to the target measure.

    found = diffusion_map(result, burn_in=1000, method="target_measure", inverse_temperature=10.0)
    found.coordinates     # id, step, loss, diffusion_coordinate1, ...
    found.eigen           # rank, eigenvalue, generator_eigenvalue, epsilon, method, points

Points: the trajectory's rows after burn-in, every `thin`-th row of each walker, and of those at
most `max_points`, evenly spaced over all walkers' rows (the kernel matrix has points^2 entries).

Kernel: K_ij = exp(-|x_i - x_j|^2 / (2 epsilon)) on the parameters, and the kernel density
q_i = sum_j K_ij. Each method weights the columns, w_j, and normalises the rows into a Markov
matrix P_ij = K_ij w_j / sum_l K_il w_l:

- vanilla (Coifman and Lafon 2006): w_j = q_j^-alpha. With alpha = 1/2 on points drawn from
  exp(-beta U), (P - I) 2 / epsilon approximates the generator Delta + grad log q . grad (the
  overdamped Langevin dynamics of the sampled density, times beta); with alpha = 1 the
  Laplace-Beltrami operator (the geometry of the points alone, whatever their density);
- target_measure (Banisch, Trstanova, Bittracher, Klus and Koltai 2020, "TMDmap"):
  w_j = pi(x_j)^(1/2) / q_j with pi proportional to exp(-beta loss_j). Then (P - I) 2 / epsilon
  approximates Delta + grad log pi . grad whatever density the points were drawn from (an
  unconverged run, a biased sampler, a different temperature), as long as they cover the region.

The eigenvectors psi_k of P with the largest eigenvalues 1 = lambda_0 > lambda_1 >= ... are
computed from the symmetric matrix S_ij = s_i K_ij s_j, s = sqrt(w / d), d_i = sum_l K_il w_l,
which has the same eigenvalues (psi = phi / sqrt(w d)): scipy.linalg.eigh for up to
DENSE_LIMIT points, scipy.sparse.linalg.eigsh beyond. psi_0 is constant; the diffusion
coordinates are psi_1 .. psi_k, normalised to mean 0 and variance 1 under P's stationary
distribution mu (proportional to w d), each with the sign that makes its largest-magnitude
entry positive. Multiply by lambda_k^t for the diffusion coordinates at time t.
generator_eigenvalue = 2 (lambda_k - 1) / epsilon is the eigenvalue of the approximated
generator: for the target measure of a 1-D Gaussian of variance s^2 those are -k / s^2.

Default epsilon: L^2, L the longest edge of the points' minimum spanning tree, the smallest
width at which a chain of kernel weights >= exp(-1/2) joins every point to every other (below
it a point or group apart gets an eigenvalue near 1 and a coordinate of its own). In many
dimensions every point is far from every other (in 30 dimensions the nearest neighbour of a
standard Gaussian's point is about as far as the cloud is wide): L^2 exceeds the cloud's
variance, the kernel of the median point reaches most of the cloud and P becomes nearly rank
one, its eigenvalues saying epsilon (-2 / epsilon) rather than the landscape. So where P at
L^2 has lambda_1 < 1/2, epsilon is instead the width at which the median point's kernel
density sum_{j != i} K_ij counts sqrt(n) points (its relative error about n^-1/4): the
smallest width that still averages over enough points. For a Gaussian cloud N(0, s^2 I) the
vanilla map is exact in the limit of many points: P moves x to a Gaussian of mean
tau^2 / (tau^2 + epsilon) x, 1/tau^2 = 1/s^2 - alpha/(s^2 + epsilon), so lambda_1 =
tau^2 / (tau^2 + epsilon) and the generator eigenvalue -2 / (tau^2 + epsilon), which tends to
-1/s^2 only for epsilon << s^2: lambda_1 is about the factor by which the generator
eigenvalues are shrunk. On 2000 points of a 30-dimensional standard Gaussian (exact
generator -1) L^2 = 40 gives lambda_1 0.036 and generator -0.048; the Berry-Giannakis-Harlim
rule (the epsilon of the steepest log-log growth of sum_ij K_ij, 4.2) leaves each point almost
alone, lambda_1 0.92, generator -0.040; the median squared pairwise distance, 59, is wider
than L^2; the counted width, 7.1, gives lambda_1 0.265 and generator -0.207 (the many-point
limit above: -0.245). No width gets near -1 there: 2000 points are too few for 30 dimensions.

Degenerate P: a warning when lambda_1 is 1 to 9 digits (the points fall apart into groups)
and when lambda_1 < 1/2 (nearly rank one: the generator eigenvalues are shrunk toward
-2 / epsilon by about lambda_1, however the landscape is).

No maintained library fits: pydiffmap (which has TMDmap) was last released in 2019, and
datafold (maintained) offers the vanilla map but, as far as its documentation shows, not the
target-measure reweighting, and brings scikit-learn along; this needs only scipy.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tati.analysis import select
from tati.errors import InputError

PURPOSE = "diffusion_map"
METHODS = ("vanilla", "target_measure")
DENSE_LIMIT = 200          # points up to which the dense eigensolver is the faster one


@dataclass
class DiffusionMap:
    coordinates: pd.DataFrame
    eigen: pd.DataFrame
    epsilon: float
    epsilon_rule: str   # "given", or how the default was found
    settings: str       # the method in words, for titles: "vanilla, alpha 0.5"


def diffusion_map(result, burn_in=None, method="vanilla", components=2, epsilon=None, alpha=0.5,
                  inverse_temperature=None, max_points=2000, thin=1, parameters=None):
    """DiffusionMap(coordinates, eigen, epsilon, epsilon_rule, settings) of the trajectory's
    parameters (see the module docstring)."""
    burn_in = select.run_burn_in(result, burn_in)
    inverse_temperature = select.run_inverse_temperature(result, inverse_temperature)
    _check(method, components, epsilon, alpha, inverse_temperature, max_points, thin)
    rows, names = points(result, burn_in, thin, max_points, parameters)
    values = rows[names].to_numpy(dtype=np.float64)
    if len(values) < components + 2:
        raise InputError(f"diffusion_map needs at least components + 2 = {components + 2} points, "
                         f"got {len(values)} (lower burn_in_steps or thin)")
    squared = squared_distances(values)
    if not squared.max() > 0:
        raise InputError("diffusion_map: every point is the same; the parameters do not move")
    loss = rows["loss"].to_numpy(dtype=np.float64)
    log_pi = -inverse_temperature * loss if method == "target_measure" else None
    rule = "given"
    if epsilon is None:
        epsilon, rule = default_epsilon(squared)
    eigenvalues, vectors = embed(squared, epsilon, components, alpha=alpha, log_target=log_pi)
    if rule != "given" and eigenvalues[1] < RANK_ONE:  # many dimensions: the gap is wider than the cloud
        epsilon, rule = counted_epsilon(squared, epsilon)
        eigenvalues, vectors = embed(squared, epsilon, components, alpha=alpha, log_target=log_pi)
    check_degenerate(eigenvalues, epsilon)
    coordinates = rows[["id", "step", "loss"]].reset_index(drop=True)
    for k in range(components):
        coordinates[f"diffusion_coordinate{k + 1}"] = vectors[:, k]
    eigen = pd.DataFrame({"rank": np.arange(components + 1), "eigenvalue": eigenvalues,
                          "generator_eigenvalue": 2.0 * (eigenvalues - 1.0) / epsilon,
                          "epsilon": epsilon, "method": method, "points": len(values)})
    settings = (f"vanilla, alpha {alpha:g}" if method == "vanilla"
                else f"target measure exp(-{inverse_temperature:g} loss)")
    return DiffusionMap(coordinates, eigen, float(epsilon), rule, settings)


def _check(method, components, epsilon, alpha, inverse_temperature, max_points, thin):
    if method not in METHODS:
        raise InputError(f"method '{method}' is unknown; choose one of {', '.join(METHODS)}")
    if not (isinstance(components, (int, np.integer)) and components >= 1):
        raise InputError(f"components must be an integer >= 1, got {components!r}")
    if epsilon is not None and not (np.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"epsilon must be > 0, got {epsilon!r}")
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"alpha must be between 0 and 1, got {alpha:g}")
    if not (np.isfinite(inverse_temperature) and inverse_temperature > 0):
        raise InputError(f"inverse_temperature must be > 0, got {inverse_temperature!r}")
    if not max_points >= 2:
        raise InputError(f"max_points must be >= 2, got {max_points!r}")
    if not thin >= 1:
        raise InputError(f"thin must be >= 1, got {thin!r}")


def points(result, burn_in=None, thin=1, max_points=2000, parameters=None):
    """(rows: DataFrame of id, step, loss and the parameters, parameter names) of the points the
    map is made of: after burn-in, every thin-th row per walker, at most max_points evenly spaced."""
    burn_in = select.run_burn_in(result, burn_in)
    names = select.parameter_names(result, PURPOSE)
    if parameters is not None:
        names = select.check_names(result, "trajectory", result.trajectory, select.names_list(parameters),
                                   "parameters", PURPOSE)
    kept = select.after_burn_in(result, "trajectory", result.trajectory, burn_in, PURPOSE)
    kept = kept[kept.groupby("id").cumcount() % thin == 0]
    if len(kept) > max_points:
        kept = kept.iloc[np.round(np.linspace(0, len(kept) - 1, max_points)).astype(int)]
    return kept[["id", "step", "loss", *names]], names


def squared_distances(values):
    """[n, n] matrix of |x_i - x_j|^2."""
    from scipy.spatial.distance import pdist, squareform
    return squareform(pdist(values, "sqeuclidean"))


RANK_ONE = 0.5     # lambda_1 below this: P nearly rank one (module docstring)


def default_epsilon(squared):
    """(epsilon, how it was found): the squared longest gap (module docstring)."""
    gap = longest_gap(squared)
    return gap ** 2, f"the squared longest edge {gap:.4g} of the points' minimum spanning tree"


def counted_epsilon(squared, gap_epsilon):
    """(epsilon, how it was found) where P at the squared longest gap is nearly rank one: the
    width at which the median point's kernel density counts sqrt(n) points (module docstring)."""
    n = len(squared)
    return counted_width(squared, math.sqrt(n)), (
        f"the median point's kernel density counts sqrt({n}) points; at the minimum spanning tree's "
        f"squared longest edge {gap_epsilon:.4g} P was nearly rank one")


def median_kernel_sum(squared, epsilon, rows=200):
    """The median over (up to `rows` evenly chosen) points of sum_{j != i} K_ij."""
    picked = squared[np.unique(np.linspace(0, len(squared) - 1, min(rows, len(squared))).astype(int))]
    return float(np.median(np.exp(-picked / (2.0 * epsilon)).sum(axis=1) - 1.0))


def counted_width(squared, count):
    """The epsilon at which median_kernel_sum is `count`: bisection on log epsilon (the sum
    grows with epsilon)."""
    low, high = math.log(squared[squared > 0].min()) - 5.0, math.log(squared.max()) + 5.0
    for _ in range(50):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if median_kernel_sum(squared, math.exp(middle)) < count else (low, middle)
    return math.exp(high)


def longest_gap(squared):
    """The longest edge of the minimum spanning tree of the points (Prim's algorithm on the
    squared distances): the distance the kernel has to bridge to join all points."""
    n = len(squared)
    joined = np.zeros(n, dtype=bool)
    joined[0] = True
    nearest = squared[0].copy()  # squared distance of each point to the joined ones
    longest = 0.0
    for _ in range(n - 1):
        j = int(np.argmin(np.where(joined, np.inf, nearest)))
        longest = max(longest, nearest[j])
        joined[j] = True
        np.minimum(nearest, squared[j], out=nearest)
    return math.sqrt(longest)


def embed(squared, epsilon, components, alpha=0.5, log_target=None):
    """(eigenvalues [components + 1], coordinates [n, components]) of the Markov matrix of the
    kernel on these squared distances (module docstring): vanilla with alpha, or reweighted to
    the target density exp(log_target) (given up to a constant) when log_target is given."""
    kernel = np.exp(-squared / (2.0 * epsilon))
    density = kernel.sum(axis=1)
    if log_target is None:
        log_w = -alpha * np.log(density)
    else:
        log_w = 0.5 * np.asarray(log_target, dtype=np.float64) - np.log(density)
    # A constant factor of w cancels in P; below exp's range a point has no weight anyway.
    log_w = np.maximum(log_w - log_w.max(), -700.0)
    w = np.exp(log_w)
    d = kernel @ w
    s = np.sqrt(w / d)
    kernel *= s[:, None]
    kernel *= s[None, :]
    eigenvalues, phi = _leading(kernel, components + 1)
    psi = phi / np.sqrt(w * d)[:, None]
    mu = w * d / np.sum(w * d)
    psi = psi[:, 1:]
    psi -= mu @ psi
    psi /= np.sqrt(mu @ psi ** 2)
    largest = psi[np.argmax(np.abs(psi), axis=0), np.arange(components)]
    return eigenvalues, psi * np.where(largest < 0, -1.0, 1.0)


def check_degenerate(eigenvalues, epsilon):
    """Warn where P is degenerate: its points apart in groups, or nearly rank one (module docstring)."""
    if eigenvalues[1] > 1.0 - 1e-9:
        warnings.warn(f"diffusion_map: epsilon {epsilon:.4g} is so small that the points fall apart "
                      f"into unconnected groups (eigenvalue 1 is {eigenvalues[1]:.10f}); give a larger epsilon")
    elif eigenvalues[1] < RANK_ONE:
        warnings.warn(f"diffusion_map: P is nearly rank one at epsilon {epsilon:.4g} (eigenvalue 1 is "
                      f"{eigenvalues[1]:.3g}): the generator eigenvalues are shrunk toward -2/epsilon = "
                      f"{-2.0 / epsilon:.3g} by about that factor; give a smaller epsilon, or too few points for "
                      "their dimension (fewer parameters)")


def _leading(symmetric, count):
    """The `count` largest eigenvalues (decreasing) and their unit eigenvectors as columns."""
    n = len(symmetric)
    if n <= DENSE_LIMIT or count >= n - 1:
        from scipy.linalg import eigh
        values, vectors = eigh(symmetric, subset_by_index=[n - count, n - 1])
    else:
        from scipy.sparse.linalg import ArpackNoConvergence, eigsh
        start = np.random.default_rng(0).random(n)  # fixed: the same points give the same map
        try:
            values, vectors = eigsh(symmetric, k=count, which="LA", v0=start)
        except ArpackNoConvergence:  # eigenvalues too close together for Lanczos: the slow, sure way
            from scipy.linalg import eigh
            values, vectors = eigh(symmetric, subset_by_index=[n - count, n - 1])
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


def plot(found, path):
    """Two panels: the first two diffusion coordinates (the first against the loss with one
    component) of every point, coloured by its loss; the eigenvalues of P by rank."""
    from matplotlib.ticker import MaxNLocator

    from tati.analysis import figures
    table, eigen = found.coordinates, found.eigen
    figure, axes = figures.new_figure(columns=2, height=4.2, width_ratios=[2.3, 1.0])
    ordered = table.sort_values("loss", kind="stable")  # the rare high-loss points on top
    loss = ordered["loss"].to_numpy(dtype=float)
    high = float(np.quantile(loss, 0.99))  # a few very high losses would wash out the colours
    x = ordered["diffusion_coordinate1"]
    y = ordered["diffusion_coordinate2"] if "diffusion_coordinate2" in table else ordered["loss"]
    dots = axes[0, 0].scatter(x, y, c=loss, cmap="viridis", vmin=float(loss.min()), vmax=high,
                              s=max(2.0, min(12.0, 6000.0 / len(table))), linewidths=0)
    figure.colorbar(dots, ax=axes[0, 0], label="loss", extend="max" if high < loss.max() else "neither")
    axes[0, 0].set_xlabel("diffusion coordinate 1")
    axes[0, 0].set_ylabel("diffusion coordinate 2" if "diffusion_coordinate2" in table else "loss")
    axes[0, 0].set_title(f"diffusion map, {found.settings}\n{len(table)} points, epsilon {found.epsilon:.3g}",
                         fontsize=10)
    ranks = eigen["rank"].to_numpy()
    axes[0, 1].plot(ranks, eigen["eigenvalue"], "o-", color="tab:blue", markersize=5, linewidth=1)
    axes[0, 1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0, 1].set_xlabel("rank (0: the constant)")
    axes[0, 1].set_ylabel("eigenvalue of P")
    axes[0, 1].set_title("eigenvalues", fontsize=10)
    for ax in axes[0]:
        ax.grid(alpha=0.3)
    figures.save(figure, path)


def summary(found):
    eigen = found.eigen
    lines = [f"  {int(eigen['points'].iloc[0])} points, {found.settings}; epsilon {found.epsilon:.4g} "
             f"({found.epsilon_rule})"]
    for _, row in eigen.iloc[1:6].iterrows():
        lines.append(f"  eigenvalue {int(row['rank'])}: {row['eigenvalue']:.6g} "
                     f"(generator {row['generator_eigenvalue']:.4g})")
    return lines
