"""The warm start of the adapting samplers (NUTS, RWMH, HMC1, HMC2): every walker into the
typical set before burn-in adapts anything.

Burn-in adapts one step width and one metric from all walkers (tati/adaptation/). From
dispersed starts, as Stan's uniform(-2, 2) on the unconstrained space, the walkers see scales
that differ by orders of magnitude (on posteriordb's kidiq the log density at such starts spans
1478 to 104475): a width that serves the pooled walkers serves none of them, and a walker far out
can stay there for the whole run (HMC2 on kidiq: R-hat 42). So before the first sample() call:

1. L-BFGS from every walker's own start, on the whole dataset (at most ITERATIONS iterations,
   every walker its own problem, all walkers in one evaluation of the model), towards a mode of U;
   where a walker's line search fails (far out, where U is badly scaled), again from there with
   no memory, ROUNDS times in all. (TFP's lbfgs_minimize, with its Hager-Zhang line search, takes
   seconds to trace, more than the whole run of a small posterior, and gave up on half of
   kidiq's starts.)
2. a walker that ends far above the best, beta (U_w - U_best) > d/2 + 4 sqrt(d/2), is stuck (in a
   minor mode, or where the line search failed) and restarts at the best walker's point. At a
   mode, beta (U - U_mode) of the draws of a d-dimensional Gaussian posterior is Gamma(d/2), of
   mean d/2 and sd sqrt(d/2): a walker whose best point lies above most draws of the best
   walker's mode is in a region of negligible mass next to it.

3. a walker where L-BFGS ended at no mode, far below the first point of its path in the typical
   set (beta dU > d/2 + 4 sqrt(d/2) again), is taken back to that point. Where U has no minimum,
   as the centered hierarchical model in its funnel (eight schools: sum (theta_i - mu)^2 /
   (2 tau^2) + 8 log tau falls without bound as tau -> 0 with every theta_i -> mu), L-BFGS
   follows the funnel's neck down to tau = 1e-13 and settles there, where no sampler moves
   (NUTS: step width 3e-4, every walker frozen, R-hat 5.5). At a mode the Hessian is
   positive semi-definite; in the funnel it is indefinite (scaled to a unit diagonal, its lowest
   eigenvalue is about 1 - sqrt 2 at any tau; where every theta_i reaches mu exactly it is flat
   along log tau, down which the gradient still falls), so up to MODE_CHECK_PARAMETERS
   parameters (d gradients per walker) the end is checked. The typical set is where the configurational
   temperature |grad U|^2 / laplacian U (Rugh; Jepps, Ayton & Evans 2000) is the target's,
   1 / beta: far out it is hotter, at a mode 0. A network's walker that stops on a plateau or a
   saddle (an indefinite Hessian too) has not left the typical set far behind, and stays; one
   still descending at the cap, far below its entry, goes back, which costs nothing measured (a
   5-16-1 tanh network, 400 points, noise sd 0.3, NUTS 500 + 500, seeds 1-2: from the entries
   R-hat 1.005 / 1.002, 14 / 2 of 2000 divergent; left at the ends 1.003 / 1.007, 3 / 6).
4. a walker at a mode far below its entry to the typical set goes back there too if the mode is
   narrow: if its Laplace free energy beta U + 1/2 sum log H_ii (a region's -log mass; the
   diagonal at both points, so that on a Gaussian, whose Hessian is the same everywhere, it is
   beta U alone and never narrow) lies more than d/2 + 4 sqrt(d/2) above the entry's. Neal's
   funnel (v ~ N(0, 3), x_i ~ N(0, e^(v/2)), 10-D) has its mode at v = -40.5, x = 0: U falls 80
   to 96 from where the walkers entered the typical set, but the x_i's curvature grows by e^40.5,
   a volume of e^-171 to e^-183, so the mode holds e^-85 to e^-90 of the entry's mass. From
   there NUTS took 4 minutes (25% divergent, v -2.7 +- 2.1 against the exact 0 +- 3); from the
   entry, 5.5 s (3.6% divergent, v 0.83 +- 2.09, flagged), as without the warm start. The joint mode of a stochastic volatility model's latent
   states is such a spike too (each state's curvature e^5 its entry's, 50 states: NUTS from the
   mode R-hat 1.069, 3.7% divergent; from the entries 1.004, 1.1%). A mode of a network, of
   posteriordb's posteriors, of an ill-conditioned Gaussian reached from far out (U 88-142 below
   its entry, no volume lost) loses no more volume than depth (doc/benchmarks.md). The entry is
   looked for with laplacians estimated from LAPLACIAN_PROBES Hessian-vector products, at points
   geometrically further apart along the path; the Hessian's diagonal is taken there once.
5. above MODE_CHECK_PARAMETERS a potential's walkers (not a network's) are checked the same way
   from Hessian-vector products alone: the diagonal estimated from probes, whether the end is a
   mode from Lanczos. A centered hierarchical model of 300 groups followed its funnel's neck to
   log tau = -32 (NUTS froze there: step width 1.7e-13, R-hat 3e11), and a centered stochastic
   volatility model of 300 states to sigma 0.01 (R-hat 2.35, 7 minutes); from their entries, log
   tau 0.59 +- 0.51 (R-hat 1.49, flagged, 12 s) and sigma 0.39 +- 0.12 (R-hat 1.17, 20 s; the
   non-centered models: 0.04 +- 1.12 and 0.41 +- 0.11).

Pathfinder (Zhang, Carpenter, Gelman & Vehtari 2022) starts Stan's chains the same way, from
optimisation paths with the poor ones dropped. Walkers that are not stuck keep their own point
(a network's walkers their own minima), so R-hat still compares walkers from different starts;
the restarted ones are named in the summary and in a warning. The sampler's windows then adapt
from the typical set, as they do from a start at the mode.
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from tati.diagnostics.outliers import typical_set_width as threshold  # U above the best: a walker stuck
from tati.engine.registry import spec_of
from tati.errors import InputError
from tati.models.flat import finite_walkers

ITERATIONS, CORRECTION_PAIRS = 200, 10
# The Langevin samplers with adapt_mass noise take the same cap. Further towards the mode a
# heteroscedastic network fits some training points' noise variance down to its floor, a sharp
# mode the walkers then stay in: on bostonHousing (splits 0-2, BAOAB) the test log-likelihood read
# -2.29 / -2.40 / -2.32 from 200 iterations, -2.67 / -2.63 / -2.70 from 500 and -4.6 / -4.2 / -9.3
# from 2000; yacht, nearly noiseless, gains from going further (-0.07 / -0.19 from 200, +0.16 /
# +0.05 from 2000: doc/benchmarks.md).
# A walker stops once an iteration lowers beta U by less than DECREASE (the threshold for stuck is
# d/2 + 4 sqrt(d/2) of beta U); a line search halves its step at most BACKTRACKS times, and a
# walker whose searches failed ROUNDS times stops where it is.
DECREASE, BACKTRACKS, ARMIJO, ROUNDS = 1e-6, 40, 1e-4, 3
# Up to this many parameters the Hessian where a walker ends is checked for a mode (d gradients
# per walker; its trace costs 0.08 s, the quick start's first step is 1.7 s); a scaled Hessian's
# lowest eigenvalue above -MODE_TOLERANCE is a mode's (rounding: a flat direction reads 0 +- 1e-12).
# Every walker is checked: a vanishing gradient is no sign of a mode (in the funnel's neck the
# gradient fell from 1e11 to 7 over 10 iterations, where every theta_i reached mu exactly).
MODE_CHECK_PARAMETERS, MODE_TOLERANCE = 200, 1e-6
# A mode's scaled Hessian whose lowest eigenvalue is below FLAT is flat along its eigenvector: a ridge of
# modes (rounding leaves about 1e-16; a proper posterior's weakest direction, even at a prior's sd 100
# against a likelihood's 1, reads 1e-4).
FLAT = 1e-8
# Where a walker's path entered the typical set is looked for with laplacians estimated from this many
# probes (Hutchinson): each point costs 2 x 8 gradients, not d (on a stochastic volatility model of 100
# latent states, written with tf.scan, the exact search took 35 s against L-BFGS's 6).
LAPLACIAN_PROBES = 8
WARMER = 2.0  # times the target's temperature: an entry typical_points takes where none before the last is cool
# Above MODE_CHECK_PARAMETERS, up to CURVATURE_CHECK_PARAMETERS (the path's points kept: 16 x W x d), a
# potential's end is checked from Hessian-vector products alone: the diagonal estimated from DIAGONAL_PROBES
# probes (Bekas, Kokiopoulou & Saad 2007; each entry's error sqrt(sum_j!=i H_ij^2 / probes), the same probes
# at the entry and at the end, so that where the Hessian does not change no volume is lost) and up to
# EXACT_ENTRIES entries the probes leave unresolved taken exactly, and whether it is a mode from
# LANCZOS_STEPS steps of Lanczos (a negative eigenvalue at the low end of the scaled spectrum: on one of
# 0.01 .. 10, -0.03 in 3 of 3 tries, -0.01 in 2). A network's end is not checked: its L-BFGS stops at the cap on
# the way down (yacht, 452 parameters: 3 of 4 walkers at no mode, 340-460 below where their paths entered
# the typical set, at iterations 16-48), and its samplers are measured from there (doc/benchmarks.md).
CURVATURE_CHECK_PARAMETERS, DIAGONAL_PROBES, EXACT_ENTRIES, LANCZOS_STEPS = 20_000, 32, 64, 40


class WarmStart(NamedTuple):
    """What the warm start did: L-BFGS's iterations and which walkers converged, every walker's
    U at its start and at the end, the restarted walkers and the walker they restart from, the
    walkers that found no mode, and the walkers' new positions [W, d]."""
    positions: np.ndarray
    iterations: int
    converged: np.ndarray
    start_losses: np.ndarray
    losses: np.ndarray
    restarted: np.ndarray
    best: int
    threshold: float
    no_mode: np.ndarray  # walkers that fell far below the typical set at no mode, taken back to it
    narrow: np.ndarray  # walkers at a mode of far less mass than their entry to the typical set, taken back
    ridge: str = None  # the direction along which U is flat at the best walker's mode ("param0 - param1"), if any

    def ridge_hint(self):
        """The cure of walkers that disagree where the best walker's mode lies on a ridge."""
        return f"a ridge (U flat along {self.ridge}, above): {RIDGE_CURE}"

    def line(self):
        """One line for the summary."""
        kept = np.delete(self.losses, self.restarted)
        walkers = "the walker" if len(self.losses) == 1 else f"the {len(self.losses)} walkers"
        done = (f"warm start: L-BFGS took {walkers} from U {_range(self.start_losses)} "
                f"to {_range(kept)} in {self.iterations} iterations")
        if len(self.no_mode):
            # a funnel's neck (U falls without bound) and a network still descending at the cap look alike
            done += (f"; {_walkers(self.no_mode)} found no mode (the Hessian indefinite where L-BFGS stopped: a "
                     f"funnel's neck, a saddle or a slope) and start where their path entered the typical set")
        if len(self.narrow):
            done += (f"; {_walkers(self.narrow)} found a mode too narrow to hold the mass (its curvature "
                     f"outweighs its depth, as in a funnel's neck) and start where their path entered the "
                     f"typical set")
        if self.ridge is not None:
            done += (f"; U is flat along {self.ridge} at the mode (a ridge of modes: if the walkers drift "
                     f"apart along it, nothing bounds it and the posterior is improper: {RIDGE_CURE})")
        if not len(self.restarted):
            return done
        return (f"{done}; {_walkers(self.restarted)} stuck at U {_range(self.losses[self.restarted])} "
                f"(more than {self.threshold:.3g} above the best) restarted at walker {self.best}'s point")


def applies(options, walkers):
    """Whether the run starts warm: warm_start true, or auto for an adapting sampler (NUTS, RWMH,
    HMC1, HMC2) with two walkers or more and a burn-in, and for a Langevin sampler with adapt_mass
    noise and a burn-in (its mass and measured width are taken where the walkers start)."""
    choice = options.get("warm_start", False)
    if choice == "auto":
        if options.get("adapt_mass") == "noise" and not spec_of(options["sampler"]).metropolis:
            return options["burn_in_steps"] > 0
        return spec_of(options["sampler"]).metropolis and walkers > 1 and options["burn_in_steps"] > 0
    return bool(choice)


def warm_start(model, data, inverse_temperature, cap=None):
    """The walkers' points in the typical set (module docstring), as a WarmStart, after at most cap
    (ITERATIONS) L-BFGS iterations; the model's parameters stay as they are. In graph mode, so the
    walkers go through the vectorised map even where the loop compiles with XLA, which needs one call
    per walker (the horseshoe regression's warm start, 4 walkers: 1.22 s that way, 0.63 s this)."""
    vectorize, model.vectorize = model.vectorize, True
    try:
        return _warm_start(model, data, inverse_temperature, cap)
    finally:
        model.vectorize = vectorize


def _warm_start(model, data, inverse_temperature, cap):
    cap = ITERATIONS if cap is None else cap
    features, labels = data.all() if model.uses_data else (None, None)

    @tf.function(autograph=False)
    def value_and_gradients(theta):
        losses, gradient, _ = model.loss_and_gradient(features, labels, theta=tf.cast(theta, model.dtype))
        return tf.cast(losses, tf.float64), tf.cast(gradient, tf.float64)

    def evaluate(theta):
        losses, gradient = (value.numpy() for value in value_and_gradients(tf.constant(theta)))
        bad = ~finite_walkers(losses, gradient)
        return np.where(bad, np.inf, losses), np.where(bad[:, None], 0.0, gradient)

    start = model.flat_parameters().numpy().astype(np.float64)
    at_start = evaluate(start)
    if not np.isfinite(at_start[0]).any():
        raise InputError("U or its gradient is not finite at any walker's start: give "
                         "initial_parameters where it is")
    d = model.num_parameters
    exact = d <= MODE_CHECK_PARAMETERS
    path = [] if exact or (d <= CURVATURE_CHECK_PARAMETERS and not model.uses_data) else None
    position, losses, done, converged = minimise(evaluate, start, inverse_temperature, at_start, cap, path)
    limit = threshold(d, inverse_temperature)
    no_mode = narrow = np.zeros(len(losses), bool)
    if path is not None:
        products = _hessian_products(model, features, labels)
        if exact:
            hessians = _hessians(model, features, labels)
            end = hessians(position)
            mode = at_a_mode(end, path[-1][2], limit)
            diagonals = lambda theta: np.diagonal(hessians(theta), axis1=1, axis2=2)
            at_end = lambda: (np.diagonal(end, axis1=1, axis2=2), mode)
            curvature = (diagonals, _laplacians(products, hessians, d), at_end)
        else:
            diagonals = lambda theta: _probed_diagonals(products, theta)

            def at_end():
                diagonal = diagonals(position)
                return diagonal, _probed_mode(products, position, path[-1][2], diagonal, limit)
            curvature = (diagonals, _laplacians(products, None, d), at_end)
        no_mode, narrow = _take_back(path, curvature, position, losses, (limit, inverse_temperature))
    # A walker taken back to the typical set is neither the best point nor stuck.
    back = no_mode | narrow
    best = int(np.argmin(np.where(back, np.inf, losses))) if not back.all() else int(np.argmin(losses))
    restarted = np.flatnonzero(~back & (losses - losses[best] > limit))
    position[restarted] = position[best]
    ridge = None
    if exact and mode[best] and not back[best]:
        ridge = _combination(flat_direction(end[best]), model.parameter_names)
    return WarmStart(position, done, converged, at_start[0], losses, restarted, best, limit, np.flatnonzero(no_mode),
                     np.flatnonzero(narrow), ridge)


def _take_back(path, curvature, position, losses, scale):
    """(no_mode, narrow), masks of the walkers that fell more than `limit` below the first point of
    their path in the typical set, at no mode or at a narrow one (`narrow_modes`), moved back there
    (position and losses in place); a plateau's walker, and one at a mode that holds the mass, stays.
    `curvature`: (diagonals, laplacians, at_end) of U's Hessian, at_end() giving the walkers' Hessian
    diagonals where they ended and the mask of those at a mode; `scale`: (limit, beta)."""
    diagonals, laplacians, at_end = curvature
    limit, inverse_temperature = scale
    no_mode, narrow = np.zeros(len(losses), bool), np.zeros(len(losses), bool)
    fell = path[0][1] - losses > limit  # L-BFGS only descends: no more below the entry than below the start
    if fell.any():
        entry, entry_losses, found = typical_points(path, laplacians, fell, inverse_temperature)
        far = found & (entry_losses - losses > limit)
        if far.any():
            end_diagonals, mode = at_end()
            no_mode = far & ~mode
            if (far & mode).any():
                narrow = far & mode & narrow_modes(end_diagonals, diagonals(np.where(found[:, None], entry, position)),
                                                   inverse_temperature * (entry_losses - losses),
                                                   inverse_temperature * limit)
        back = no_mode | narrow
        position[back], losses[back] = entry[back], entry_losses[back]
    return no_mode, narrow


def _unit_scale(diagonal):
    """s = 1 / sqrt(H_ii) [..., d] (1 where H_ii <= 0): each parameter in its own units, as a diagonal
    metric adapts them."""
    return 1.0 / np.sqrt(np.where(diagonal > 0.0, diagonal, 1.0))


def _unit_diagonal(symmetric):
    """(S H S, s): symmetric Hessians [..., d, d] scaled to a unit diagonal by _unit_scale."""
    scale = _unit_scale(np.diagonal(symmetric, axis1=-2, axis2=-1))
    return symmetric * scale[..., :, None] * scale[..., None, :], scale


def flat_direction(hessian):
    """(direction [d], part [d]) along which a mode's Hessian [d, d], scaled to a unit diagonal, is flat
    (its lowest eigenvalue below FLAT), or None: a ridge of modes, as where U depends on param0 + param1
    alone, which no prior bounds. The direction is in the parameters' units, 1 at the parameter that
    takes the largest part in the scaled units; `part`: the parameters that take at least 5% of it there
    (in units of its own, 1e3 param1 takes as large a part as param0 when U depends on param0 + 1e3 param1)."""
    symmetric = 0.5 * (hessian + hessian.T)
    if not np.all(np.isfinite(symmetric)):
        return None
    scaled_hessian, scale = _unit_diagonal(symmetric)
    values, vectors = np.linalg.eigh(scaled_hessian)
    if values[0] >= FLAT:
        return None
    scaled = vectors[:, 0]
    largest = np.argmax(np.abs(scaled))
    direction = scale * scaled
    return direction / direction[largest], np.abs(scaled) >= 0.05 * np.abs(scaled[largest])


def _combination(found, names, terms=4):
    """A flat direction (flat_direction's pair) as its largest terms: "param0 - param1", "a - 0.001 b"."""
    if found is None:
        return None
    direction, part = found
    shown = [i for i in np.argsort(-np.abs(np.where(part, direction, 0.0)), kind="stable")[:terms] if part[i]]
    text = ""
    for i in sorted(shown):
        size = f"{abs(direction[i]):.2g} " if abs(abs(direction[i]) - 1.0) >= 0.005 else ""
        sign = "-" if direction[i] < 0 else "+"
        text += ("-" if sign == "-" else "") + size + names[i] if not text else f" {sign} {size}{names[i]}"
    return text + (" ..." if np.sum(part) > len(shown) else "")


def narrow_modes(diagonal, entry_diagonal, fall, limit):
    """Per walker, whether its mode (Hessian diagonal [W, d]) holds far less mass than the region where
    its path entered the typical set (`entry_diagonal`), `fall` (beta dU) above it: the Laplace free
    energy beta U + 1/2 sum log H_ii rises by more than `limit` (beta's units), the volume lost, 1/2
    sum log (H_ii / entry's H_ii) over the parameters curved at both points, outweighing the fall."""
    curved = (diagonal > 0.0) & (entry_diagonal > 0.0)
    ratio = np.where(curved, diagonal, 1.0) / np.where(curved, entry_diagonal, 1.0)
    volume_lost = 0.5 * np.sum(np.log(ratio), axis=1)
    return volume_lost - fall > limit


def _hessians(model, features, labels):
    """theta [W, d] -> every walker's Hessian of U [W, d, d], float64 (reverse over reverse mode)."""
    @tf.function(autograph=False)
    def hessians(theta):
        with tf.GradientTape() as tape:
            tape.watch(theta)
            _, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
        return tf.cast(tape.batch_jacobian(gradient, theta, experimental_use_pfor=False), tf.float64)
    return lambda theta: hessians(tf.constant(theta, model.dtype)).numpy()


def at_a_mode(hessians, gradients, limit):
    """Per walker, whether its Hessian [W, d, d] and gradient [W, d] are a mode's: the Hessian positive
    semi-definite up to rounding once scaled to a unit diagonal (each parameter in its own units, as a
    diagonal metric adapts them), and the fall a Newton step per parameter promises, sum g_i^2 /
    (2 H_ii), within `limit` (the typical set's width). In the funnel's neck, with every theta_i
    equal to mu in floating point, the Hessian is semi-definite but flat along log tau, where the
    gradient is 7: that fall is infinite."""
    symmetric = 0.5 * (hessians + np.swapaxes(hessians, 1, 2))
    finite = np.all(np.isfinite(symmetric), axis=(1, 2)) & np.all(np.isfinite(gradients), axis=1)
    symmetric = np.where(finite[:, None, None], symmetric, 0.0)
    diagonal = np.diagonal(symmetric, axis1=1, axis2=2)
    lowest = np.linalg.eigvalsh(_unit_diagonal(symmetric)[0])[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        fall = np.sum(np.where(gradients == 0.0, 0.0, np.square(gradients) / (2.0 * np.maximum(diagonal, 0.0))), axis=1)
    return finite & (lowest > -MODE_TOLERANCE) & (fall <= limit)


def _probed_mode(products, theta, gradients, diagonal, limit):
    """Per walker, whether it is at a mode, as at_a_mode from Hessian-vector products alone (`products`):
    LANCZOS_STEPS steps of Lanczos (full reorthogonalisation) on the Hessian scaled by the estimated
    `diagonal`, from the scaled gradient. A Ritz value is never below the lowest eigenvalue, and scaling
    by any diagonal keeps the eigenvalues' signs (Sylvester's law of inertia), so a walker with one below
    -MODE_TOLERANCE is at no mode however rough the diagonal; the fall a Newton step promises, g H^-1 g / 2,
    is scale-free too, and read from the same steps (Gauss quadrature: Golub & Meurant 2010): huge where
    the gradient has a part along a flat direction, as in the funnel's neck."""
    scale = _unit_scale(diagonal)
    finite = np.all(np.isfinite(gradients), axis=1)
    start = np.where(finite[:, None], scale * gradients, 0.0)
    size = np.linalg.norm(start, axis=1)
    start[size == 0.0] = np.random.default_rng(0).normal(size=start.shape)[size == 0.0]  # at rest: any direction
    basis, alphas, betas = [start / np.linalg.norm(start, axis=1, keepdims=True)], [], []
    steps = min(LANCZOS_STEPS, theta.shape[1])
    for step in range(steps):
        w = scale * products(theta, scale * basis[-1])
        alphas.append(np.sum(w * basis[-1], axis=1))
        for _ in range(2):
            for q in basis:
                w -= np.sum(w * q, axis=1, keepdims=True) * q
        if step == steps - 1:
            break
        betas.append(np.linalg.norm(w, axis=1))
        # Where the Krylov space is exhausted the next vector is 0: its Ritz values are 0, none below -MODE_TOLERANCE.
        exhausted = betas[-1] <= 1e-12 * np.abs(alphas[0])
        betas[-1][exhausted] = 0.0
        basis.append(np.where(exhausted[:, None], 0.0, w / np.maximum(betas[-1], 1e-300)[:, None]))
    alphas, betas = np.array(alphas).T, np.array(betas).T if betas else np.zeros((len(theta), 0))
    finite &= np.all(np.isfinite(alphas), axis=1) & np.all(np.isfinite(betas), axis=1)
    tridiagonal = np.zeros((len(theta), steps, steps))
    for walker in np.flatnonzero(finite):
        tridiagonal[walker] = np.diag(alphas[walker]) + np.diag(betas[walker], 1) + np.diag(betas[walker], -1)
    values, vectors = np.linalg.eigh(tridiagonal)
    # g H^-1 g = |S g|^2 e1 T^-1 e1, a curvature below MODE_TOLERANCE taken for flat (as at_a_mode's eigenvalues)
    fall = 0.5 * size ** 2 * np.sum(np.square(vectors[:, 0, :]) / np.maximum(values, MODE_TOLERANCE), axis=1)
    return finite & (values[:, 0] > -MODE_TOLERANCE) & (fall <= limit)


def _hessian_products(model, features, labels):
    """(theta [W, d], z [W, d]) -> every walker's H z [W, d], float64: a Hessian-vector product, of about
    the cost of two gradients (the walkers apart, all in one pass)."""
    @tf.function(autograph=False)
    def products(theta, probe):
        with tf.GradientTape() as tape:
            tape.watch(theta)
            _, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
            along = tf.reduce_sum(gradient * probe)
        return tf.cast(tape.gradient(along, theta), tf.float64)
    return lambda theta, probe: products(tf.constant(theta, model.dtype), tf.constant(probe, model.dtype)).numpy()


def _probes(shape, count):
    """`count` Rademacher probes [W, d] (seeds 0, 1, ...: the same at every point)."""
    return (np.random.default_rng(k).choice([-1.0, 1.0], size=shape) for k in range(count))


def _probed_diagonals(products, theta):
    """Each walker's Hessian diagonal [W, d]: the mean of z * H z over DIAGONAL_PROBES probes z (Bekas et al.
    2007), and exactly (one product with e_i each, up to EXACT_ENTRIES entries, those of most walkers first)
    where that estimate lies within 3 standard errors of 0: a row whose other entries outweigh its own, as log
    tau's in a funnel's neck (600 against 1e14 each), whose estimate says neither its sign nor its scale."""
    samples = np.array([z * products(theta, z) for z in _probes(theta.shape, DIAGONAL_PROBES)])
    diagonal = samples.mean(axis=0)
    unresolved = np.abs(diagonal) <= 3.0 * samples.std(axis=0, ddof=1) / np.sqrt(DIAGONAL_PROBES)
    columns = np.flatnonzero(unresolved.any(axis=0))
    for i in columns[np.argsort(-unresolved[:, columns].sum(axis=0), kind="stable")][:EXACT_ENTRIES]:
        unit = np.zeros_like(theta)
        unit[:, i] = 1.0
        diagonal[:, i] = products(theta, unit)[:, i]
    return diagonal


def _laplacians(products, hessians, d):
    """theta [W, d] -> every walker's laplacian of U [W]: Hutchinson's estimate from LAPLACIAN_PROBES
    Rademacher probes z, the mean of z . H z, where d is larger; the Hessian's trace where it is not."""
    if hessians is not None and d <= 2 * LAPLACIAN_PROBES:
        return lambda theta: np.trace(hessians(theta), axis1=1, axis2=2)
    return lambda theta: np.mean([np.sum(z * products(theta, z), axis=1)
                                  for z in _probes(theta.shape, LAPLACIAN_PROBES)], axis=0)


def typical_points(path, laplacians, walkers, inverse_temperature):
    """(positions, losses, found) of each of `walkers` (a mask) at the first point of its path [(x, f, g)
    per point kept, the start first] where beta |grad U|^2 <= laplacian U (its configurational temperature
    at most the target's). Where no point before the last is, the first before it at most WARMER times the
    target's, if any: the points kept lie apart, and a walker can pass the typical set between two of them
    (300 groups' funnel: 1.7 and 1.2 times the temperature at two points, cool again only deep in the neck)."""
    position, losses = np.zeros_like(path[0][0]), np.full(len(walkers), np.inf)
    warm_position, warm_losses = np.zeros_like(path[0][0]), np.full(len(walkers), np.inf)
    left, warm = walkers.copy(), np.zeros(len(walkers), bool)
    for k, (x, f, g) in enumerate(path):
        if not left.any():
            break
        laplacian = laplacians(x)
        cool = laplacian > 0.0
        heat = np.where(cool, inverse_temperature * np.sum(g * g, axis=1) / np.where(cool, laplacian, 1.0), np.inf)
        if k < len(path) - 1:
            first = left & ~warm & (heat <= WARMER)
            warm_position[first], warm_losses[first] = x[first], f[first]
            warm |= first
        typical = left & (heat <= 1.0)
        if k == len(path) - 1:
            typical &= ~warm
        position[typical], losses[typical] = x[typical], f[typical]
        left &= ~typical
    instead = left & warm
    position[instead], losses[instead] = warm_position[instead], warm_losses[instead]
    return position, losses, walkers & ~(left & ~warm)


def minimise(evaluate, start, inverse_temperature, at_start=None, cap=ITERATIONS, path=None):
    """(positions, losses, iterations, converged) of L-BFGS from every row of `start` [W, d]
    at once (Nocedal & Wright 2006, Algorithm 7.4, with a backtracking line search on Armijo's
    condition), `evaluate(theta)` giving every walker's loss (inf where not finite) and gradient
    (`at_start`: its value at `start`, where the caller has it).
    A walker stops once an iteration lowers beta U by less than DECREASE; where its line search
    fails its memory is cleared, and after ROUNDS failures it stops where it is. `path`, a list,
    gets (x, f, g) of the start, of iterations 1, 1.4, 2, ... geometrically further apart up to `cap` (where
    the path began, U falls fastest), and of the last."""
    x = start.copy()
    f, g = evaluate(x) if at_start is None else at_start
    kept = set(np.geomspace(1, cap, 16).astype(int)) if cap > 0 else set()
    if path is not None:
        path.append((x, f, g))
    walkers = len(x)
    s_memory, y_memory = [], []  # the last CORRECTION_PAIRS pairs [W, d], zero where a walker has none
    failures = np.zeros(walkers, int)
    active = np.isfinite(f)
    iteration = 0
    for iteration in range(1, cap + 1):
        if not active.any():
            break
        direction = -_two_loop(g, s_memory, y_memory)
        slope = np.sum(direction * g, axis=1)
        uphill = slope >= 0.0  # not a descent direction: the gradient's
        direction[uphill], slope[uphill] = -g[uphill], -np.sum(g[uphill] ** 2, axis=1)
        # Without memory, a first step of length at most 1 (the gradient of a far start is huge).
        first = ~np.any([np.any(s != 0.0, axis=1) for s in s_memory], axis=0) if s_memory else np.ones(walkers, bool)
        t = np.where(first, np.minimum(1.0, 1.0 / np.maximum(np.linalg.norm(g, axis=1), 1e-300)), 1.0)
        searching, new_x, new_f, new_g = active.copy(), x.copy(), f.copy(), g.copy()
        for _ in range(BACKTRACKS):
            trial = x + t[:, None] * direction
            trial_f, trial_g = evaluate(np.where(searching[:, None], trial, x))
            accepted = searching & (trial_f <= f + ARMIJO * t * slope)
            new_x[accepted], new_f[accepted], new_g[accepted] = trial[accepted], trial_f[accepted], trial_g[accepted]
            searching &= ~accepted
            if not searching.any():
                break
            t = np.where(searching, 0.5 * t, t)
        failed = searching  # no decrease along the direction: clear the memory, try the gradient next
        failures += failed
        s, y = new_x - x, new_g - g
        keep = (~failed & (np.sum(s * y, axis=1) > 1e-12 * np.linalg.norm(s, axis=1) * np.linalg.norm(y, axis=1)))
        s_memory.append(np.where(keep[:, None], s, 0.0))
        y_memory.append(np.where(keep[:, None], y, 0.0))
        for memory in (s_memory, y_memory):
            for pair in memory:
                pair[failed] = 0.0
            del memory[:-CORRECTION_PAIRS]
        decrease = inverse_temperature * (f - new_f)
        x, f, g = new_x, new_f, new_g
        if path is not None and iteration in kept:
            path.append((x, f, g))
        active &= ~(~failed & (decrease < DECREASE)) & (failures < ROUNDS)
    if path is not None and path[-1][0] is not x:
        path.append((x, f, g))
    converged = failures < ROUNDS
    return x, f, iteration, converged


def _two_loop(g, s_memory, y_memory):
    """H g by L-BFGS's two-loop recursion, per walker (rows); pairs of zeros are skipped."""
    q = g.copy()
    alphas = []
    for s, y in zip(reversed(s_memory), reversed(y_memory)):
        sy = np.sum(s * y, axis=1)
        rho = np.where(sy > 0.0, 1.0 / np.where(sy > 0.0, sy, 1.0), 0.0)
        alpha = rho * np.sum(s * q, axis=1)
        q -= alpha[:, None] * y
        alphas.append((alpha, rho, s, y))
    if s_memory:  # H_0 = gamma I with gamma = s.y / y.y of the newest pair a walker has
        gamma = np.ones(len(g))
        for s, y in zip(s_memory, y_memory):
            sy, yy = np.sum(s * y, axis=1), np.sum(y * y, axis=1)
            gamma = np.where(sy > 0.0, sy / np.where(yy > 0.0, yy, 1.0), gamma)
        q *= gamma[:, None]
    for alpha, rho, s, y in reversed(alphas):
        beta = rho * np.sum(y * q, axis=1)
        q += (alpha - beta)[:, None] * s
    return q


RIDGE_CURE = "give those parameters a prior, or fix one"


def _range(values):
    low, high = f"{np.min(values) + 0.0:.6g}", f"{np.max(values) + 0.0:.6g}"  # no -0
    return low if low == high else f"{low} .. {high}"


def _walkers(indices):
    return ("walker " if len(indices) == 1 else "walkers ") + ", ".join(str(i) for i in indices)
