"""The step width of the stochastic-gradient samplers (SGLD, pSGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT),
set from quantities measured at the walkers' start (with a noise mass, again with each new mass:
3. below), not by feedback on the run's temperature.

Feedback on the kinetic temperature fails on a network (doc/benchmarks.md, h-sgadapt): the
momenta keep the heat of the descent, a thermostat removes it at about gamma h per step, so a
small h keeps the reading hot and the feedback shrinks h to nothing. Here, per walker, at its
start point, with temperature T = 1 / beta and mass M (the samplers' scalar mass; 1 for the others):

1. stability: lambda, the largest curvature of U in the metric (|eigenvalue| of H / M, by
   POWER_ITERATIONS power iterations of Hessian-vector products). A splitting scheme is stable
   for h sqrt(lambda) < 2; h_s = STABILITY / sqrt(lambda), a factor 4 inside, as the curvature
   where the walkers go may exceed the start's, and BAOAB's stiffest mode then keeps its kinetic
   temperature within h^2 lambda / 4 = 6% (its momentum variance is (1 - h^2 omega^2 / 4) / beta).
   With mini-batches a step's force is the batch's gradient, so the step's map has the batch's
   Hessian H_b = (N / B) sum over its points of H_i, and lambda is the largest over the batches
   of one epoch (a permutation of the data of its own, `Batches.covering_batch`, so every
   point is in one batch): where a few points dominate a direction, H_b's largest eigenvalue
   exceeds the whole dataset's, up to N / B times. At the warm start's mode it was 5.4-6.3 times
   on bostonHousing (split 0, where a point's fitted noise variance sits at its floor) and
   1.9-3.1 times on yacht; with the whole dataset's curvature the width was at h sqrt(lambda_b)
   = 1.3 on boston, and every one of its 20 splits blew up. At most CURVATURE_BATCHES of them, the
   epoch's first (a random CURVATURE_BATCHES x batch_size of the points): each costs POWER_ITERATIONS
   Hessian-vector products, and on 60,000 points in batches of 128 (469 an epoch; a 784-100-10
   network, 2 walkers) one measurement took 60 s with all of them (15 s with 64), at each of the
   mass's measurements, and a run of 2 epochs 206 s (64 s, the start's measurement no longer
   repeated in the loop either: samplers/mass.py measured_at_start). Up to 64 batches (the
   five UCI datasets: 9-45) every one counts; beyond, a point that dominates a direction is missed
   with probability 1 - 64 B / N, which the factor 4 in h_s (16 in lambda) covers unless its batch's
   curvature is above 16 times the others' largest (a synthetic 20-64-64-2 network on 20,000 points:
   the largest of 157 batches 1.17 times their median, the first 32's the largest).
2. heat from the gradient noise: V, the mini-batch gradient's variance per parameter about the
   full one (the sample variance of the gradients of max(NOISE_BATCHES, batches per epoch)
   batches of the run's batch size that cover the data, `noise_batch_count`: a few points can
   carry the noise, as a training point whose fitted noise variance sits at its floor does, and
   16 random batches of wine's 45 missed such points, whose batches then kicked walkers out on 11
   of 20 splits; averaged over the parameters: the kinetic temperature is that average). Each step kicks p by h times a
   noise of variance V; BAOAB's O step keeps alpha^2 = exp(-2 gamma h) of p's variance s and
   restores (1 - alpha^2) T, so in equilibrium s = alpha^2 (s + h^2 V / M) + (1 - alpha^2) T,
   s = T + alpha^2 h^2 V / (M (1 - alpha^2)) <= T + h^2 V / (M (1 - exp(-2 gamma h))), about
   T + h V / (2 gamma M) for small gamma h. h_n solves h^2 V / (M (1 - exp(-2 gamma h))) = EXCESS T.
   SGHMC's friction step is Euler's and takes the kick with it (`euler`): p <- (1 - a) p - h g + noise,
   a = gamma h, keeps (1 - a)^2 of p's variance and its noise restores 2 a T, not (1 - (1 - a)^2) T,
   so the friction heats by itself: in equilibrium s = (1 - a)^2 s + h^2 V / M + 2 a T,
   s = T (1 + (a^2 + r) / (a (2 - a))) with r = h^2 V / (M T), an excess of about a / 2 + r / (2 a),
   which no friction brings below sqrt(r). That heat counts within EXCESS (on yacht split 0 SGHMC
   at the widths and frictions of the O step's rule, a = 0.068, read 6.2% hot and failed its
   momentum test; BAOAB read 1.7%).
3. the walker's width min(h_s, h_n); the run's (one width: the sampler's step_width) the least
   over the walkers. With adapt_mass noise the metric changes at each of the mass's measurements
   (at step 0, one epoch later, then after each of Stan's windows) and the width is measured again in
   the new one, in the compiled loop (`graph_width`, on the batches of that step): as the walkers
   leave a sharp start the mass falls and the width grows (bostonHousing split 0: 0.0014 at the
   start, 0.0050 after the last window).
4. friction_constant auto: gamma is not given but measured with the width: the least friction at
   which every walker's noise allows the run's stability width h = min h_s, from
   1 - exp(-2 gamma h) = h^2 V / (M T EXCESS), so that the width is the stability bound's and no
   more friction than that damps the dynamics (a friction of 1 gave a noise-bound width of 0.01 on
   yacht, 10 over-damped it: doc/benchmarks.md). At least FRICTION_FLOOR (the option's default; a
   small noise would otherwise leave the thermostat nothing to do), at most FRICTION_CEILING / h
   (alpha = exp(-gamma h) of 1/e: where even that heats more, the noise bound sets a smaller width).
   SGHMC's Euler friction heats as it grows (2.), so its least friction is the smaller root a of
   (1 + E) a^2 - 2 E a + r = 0 (E = EXCESS), which exists for r <= E^2 / (1 + E); where the noise is
   larger, the friction of a = E / (1 + E) at the width where r = E^2 / (1 + E), the widest any
   friction allows.
   Where the friction is the O step's own (GLA1, GLA2, BAOAB, SGHMC) it is measured again with each
   new width (3., `graph_friction`), never lowered, and the width is that of the friction kept
   (samplers/mass.py): the start is often a mode fitted closely, with little noise, and the typical
   set's noise then heats the walkers or, the width following it alone, shrinks the width (digits,
   64-50-10 network: friction 1 at the start, 6.96 after the first window; width 0.0035 -> 0.0069,
   kinetic temperature 1.073 -> 1.024).

5. SGLD (`overdamped`: no momenta, no friction): q <- q - h s^2 grad U + sqrt(2 h T) s G in the metric
   s. Along a mode of curvature lambda (of s H s) its variance is T / (lambda (1 - h lambda / 2)), so
   h_s = OVERDAMPED_STABILITY / lambda keeps the stiffest mode within 5% (stable up to h lambda = 2:
   a factor 20 inside, as BAOAB's 16 in lambda); a step's gradient noise adds h^2 V to the
   position's variance beside the thermal 2 h T, an excess of h V / (2 T): h_n = 2 EXCESS T / V. It is
   bound by the curvature where the underdamped samplers are bound by its square root: BAOAB's
   positions move like SGLD's at h^2 / 2 per step once gamma h is about 1, here 0.125 / lambda.
   pSGLD takes the same rules in its metric s = sqrt(G), G RMSprop's 1 / (lambda + sqrt(V)) of each
   walker when measured (samplers/psgld.py).

Numpy on the measurements (`widths`, called by `measure`, which evaluates the model), and the
same rules on tensors for the compiled loop (`graph_width`, `graph_overdamped_width`, `batch_curvature`).
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from tati.adaptation.width_rules import EXCESS, OVERDAMPED_STABILITY, STABILITY  # noqa: F401  (read as mw.X)
from tati.errors import SamplingError

POWER_ITERATIONS = 20
FRICTION_FLOOR, FRICTION_CEILING = 1.0, 1.0  # friction auto: gamma >= 1 and gamma h <= 1
NOISE_BATCHES = 16  # V's per-parameter relative error sqrt(2 / 15) = 0.37, far less averaged over d
CURVATURE_BATCHES = 64  # the most batches whose largest curvature is taken (1.)


class MeasuredWidth(NamedTuple):
    """Per walker: the largest curvature (of the largest batch's, `batches` > 1), the mean
    gradient-noise variance, the two widths and the smaller; `width`, the least over the
    walkers, is the run's."""
    curvature: np.ndarray
    noise_variance: np.ndarray
    stable_width: np.ndarray
    noise_width: np.ndarray
    widths: np.ndarray
    friction: float = None  # friction_constant auto's measured gamma (None where given)
    batches: int = 1  # the batches whose largest curvature is taken (1: the whole dataset)
    euler: bool = False  # the heat is that of SGHMC's Euler friction step (module docstring, 2.)
    overdamped: bool = False  # SGLD's rules (module docstring, 5.)

    @property
    def width(self):
        return float(np.min(self.widths))

    def line(self):
        """One line for the summary."""
        if self.overdamped:
            return (f"measured step_width {self.width:.4g} (per walker {_values(self.widths)}): "
                    f"{OVERDAMPED_STABILITY:g} / largest curvature{_of_batches(self.batches)} "
                    f"{_values(self.curvature)} = {_values(self.stable_width)}, gradient noise variance "
                    f"{_values(self.noise_variance)} allows {_values(self.noise_width)} for {EXCESS:.0%} excess heat")
        return (f"measured step_width {self.width:.4g} (per walker {_values(self.widths)}): "
                f"{STABILITY:g} / sqrt(largest curvature{_of_batches(self.batches)} {_values(self.curvature)}) = "
                f"{_values(self.stable_width)}, "
                f"gradient noise variance {_values(self.noise_variance)} allows {_values(self.noise_width)} "
                f"for {EXCESS:.0%} excess heat" + (" (with its Euler friction's own)" if self.euler else "")
                + ("" if self.friction is None else f" at the measured friction_constant {self.friction:.3g}"))


def noise_variance(gradients, scales=1.0):
    """Per walker, the sample variance of K batch gradients [K, W, d] (divisor K - 1), in the
    metric of the scales s [d] (s^2 V), averaged over the parameters: [W]."""
    return np.mean(np.square(scales) * np.var(gradients, axis=0, ddof=1), axis=-1)


def excess_heat(width, variance, friction, temperature=1.0, mass=1.0, euler=False):
    """The kinetic temperature's rise from gradient noise of variance V per parameter at step
    width h, relative to T: h^2 V / (M T (1 - exp(-2 gamma h))); euler (SGHMC's friction step),
    (a^2 + r) / (a (2 - a)) with a = gamma h and r = h^2 V / (M T), its friction's own heat
    included; numpy or tensors (the graph's bisection, graph_noise_width, takes it too)."""
    ratio = width ** 2 * variance / (mass * temperature)
    if euler:
        a, ratio = (tf.cast(tf.convert_to_tensor(x, dtype_hint=tf.float64), tf.float64)
                    for x in (friction * width, ratio))
        return tf.where(a < 1.0, (a * a + ratio) / (a * (2.0 - a)), np.inf)  # a >= 1 reverses p: too hot
    return ratio / -tf.math.expm1(-2.0 * friction * width)


def noise_width(variance, friction, temperature=1.0, mass=1.0, excess=EXCESS, euler=False):
    """The width h at which excess_heat is `excess` (it rises with h), per walker; inf where V = 0
    (graph_noise_width's bisection of log h, on numpy)."""
    variance = tf.constant(np.asarray(variance, float), tf.float64)
    return graph_noise_width(variance, friction, temperature, mass, excess, euler).numpy()


def measured_friction(curvature, variance, temperature=1.0, mass=1.0, euler=False):
    """friction_constant auto (module docstring, 4.): the least friction at which every walker's noise
    allows the run's stability width, within [FRICTION_FLOOR, FRICTION_CEILING / h] (graph_friction)."""
    width = np.min(STABILITY / np.sqrt(np.asarray(curvature, float) / mass))
    return float(graph_friction(tf.constant(width, tf.float64), tf.constant(np.asarray(variance, float), tf.float64),
                                temperature, mass, euler=euler))


def graph_friction(width, variance, temperature=1.0, mass=1.0, excess=EXCESS, euler=False):
    """The least friction at which excess_heat at `width` is at most `excess` for every walker's noise
    variance [W], from 1 - exp(-2 gamma h) = h^2 V / (M T excess) (none holds it where that ratio is
    1 or more); euler, from the smaller root of (1 + E) a^2 - 2 E a + r (module docstring, 4.; where
    there is none, a = E / (1 + E) at the widest width any friction allows); within
    [FRICTION_FLOOR, FRICTION_CEILING / h]; float64 tensors."""
    ratio = width ** 2 * variance / (mass * temperature)
    if euler:
        discriminant = excess * excess - (1.0 + excess) * ratio
        root = (excess - tf.sqrt(tf.maximum(discriminant, 0.0))) / (1.0 + excess)
        widest = tf.sqrt(excess * excess / (1.0 + excess) * mass * temperature / variance)
        needed = tf.where(discriminant >= 0.0, root / width, excess / (1.0 + excess) / widest)
    else:
        ratio = ratio / excess
        needed = tf.where(ratio < 1.0, -tf.math.log1p(-tf.minimum(ratio, 1.0 - 1e-12)) / (2.0 * width),
                          tf.constant(np.inf, tf.float64))
    ceiling = tf.maximum(tf.constant(FRICTION_FLOOR, tf.float64), FRICTION_CEILING / width)
    return tf.minimum(tf.maximum(tf.reduce_max(needed), FRICTION_FLOOR), ceiling)


def overdamped_noise_width(variance, temperature=1.0, mass=1.0, excess=EXCESS):
    """SGLD's width at which its gradient noise heats by `excess` (module docstring, 5.): 2 excess T M / V,
    inf where V = 0; float64 tensors [W]."""
    safe = tf.where(variance > 0.0, variance, tf.ones_like(variance))
    return tf.where(variance > 0.0, 2.0 * excess * temperature * mass / safe, tf.constant(np.inf, safe.dtype))


def widths(curvature, variance, friction, temperature=1.0, mass=1.0, batches=1, euler=False, overdamped=False):
    """MeasuredWidth of the curvatures (of H, not yet divided by the mass) and noise variances;
    friction None: measured (measured_friction), and kept in the MeasuredWidth; euler: SGHMC's heat;
    overdamped: SGLD's rules, without friction (module docstring, 5.)."""
    curvature, variance = np.asarray(curvature, float), np.asarray(variance, float)
    if overdamped:
        stable = OVERDAMPED_STABILITY / (curvature / mass)
        noisy = overdamped_noise_width(tf.constant(variance, tf.float64), temperature, mass).numpy()
        return MeasuredWidth(curvature, variance, stable, noisy, np.minimum(stable, noisy), None, batches,
                             overdamped=True)
    measured = None if friction is not None else measured_friction(curvature, variance, temperature, mass, euler)
    stable = STABILITY / np.sqrt(curvature / mass)
    noisy = noise_width(variance, friction if measured is None else measured, temperature, mass, euler=euler)
    return MeasuredWidth(curvature, variance, stable, noisy, np.minimum(stable, noisy), measured, batches, euler)


def measure(model, data, friction, temperature=1.0, mass=1.0, seed=0, scales_of=None, scheme="exact"):
    """MeasuredWidth of every walker at the model's parameters (friction None: measured too):
    curvature on one epoch's batches (`batch_curvature`; the whole dataset without mini-batches),
    noise from noise_batch_count batches of the run's batch size (none without mini-batches), the
    covering batches of step 0, which the noise mass's first measurement in the run takes too.
    scales_of (adapt_mass noise): the batch gradients [K, W, d] -> the metric's scales s, [d] or
    each walker's [W, d]; curvature and noise are then those of s H s and s^2 V. scheme: "exact" (the O step's
    friction), "euler" (SGHMC's friction step's heat) or "overdamped" (SGLD's rules)."""
    theta = tf.constant(model.flat_parameters().numpy(), model.dtype)

    @tf.function(autograph=False)
    def batch_gradient(k):
        return tf.cast(model.loss_and_gradient(*data.covering_batch(0, k), theta=theta)[1], tf.float64)

    gradients = np.zeros((2,) + tuple(theta.shape))  # no noise without mini-batches
    if not getattr(data, "full", True):
        gradients = np.stack([batch_gradient(tf.constant(k)).numpy() for k in range(noise_batch_count(data))])
    scales = np.ones(theta.shape[-1]) if scales_of is None else scales_of(gradients)
    start = np.random.default_rng(seed).standard_normal(theta.shape)
    batches = curvature_batches(data)
    hessian_vector = hessian_vector_on(model, data, lambda: theta, 0)
    s = tf.constant(scales, tf.float64)

    @tf.function(autograph=False)  # one trace, a call per batch (one call per trace warns of retracing)
    def largest(b):
        return graph_power_iteration(lambda v: s * hessian_vector(b, s * v), tf.constant(start))

    curvature = np.max([largest(tf.constant(b)).numpy() for b in range(batches)], axis=0)
    variance = noise_variance(gradients, scales)
    if not np.all(np.isfinite(curvature)) or not np.all(np.isfinite(variance)):
        raise SamplingError("measure_step_width: the loss's curvature or gradient is not finite at the walkers' "
                            "start; give initial_parameters or a step_width")
    return widths(curvature, variance, friction, temperature, mass, batches, scheme == "euler",
                  scheme == "overdamped")


def noise_batch_count(data):
    """The batches whose gradients' variance is the noise: NOISE_BATCHES, or one epoch's if more."""
    return max(NOISE_BATCHES, 1 if getattr(data, "full", True) else int(data.batches_per_epoch))


def curvature_batches(data):
    """The batches whose largest curvature sets the stable width: an epoch's first, at most
    CURVATURE_BATCHES (1 without mini-batches)."""
    return 1 if getattr(data, "full", True) else min(int(data.batches_per_epoch), CURVATURE_BATCHES)


def hessian_vector_on(model, data, parameters, step):
    """(b, tangent [W, d]) -> each walker's Hessian of U on curvature batch b (keyed by step) times
    its row, float64: forward over reverse mode at parameters() (a tensor [W, d]), or reverse over
    reverse, the gradient of grad U . tangent, where the model asks for it (hessian_by_reverse_mode)."""
    def product(b, tangent):
        theta = parameters()
        features, labels = data.covering_batch(step, b) if model.uses_data else (None, None)
        tangent = tf.cast(tangent, theta.dtype)
        if model.hessian_by_reverse_mode:
            with tf.GradientTape() as tape:
                tape.watch(theta)
                _, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
                along = tf.reduce_sum(gradient * tf.stop_gradient(tangent))
            return tf.cast(tape.gradient(along, theta), tf.float64)
        with tf.autodiff.ForwardAccumulator(theta, tangent) as accumulator:
            _, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
        return tf.cast(accumulator.jvp(gradient), tf.float64)
    return product


def batch_curvature(hessian_vector, batches, start, iterations=POWER_ITERATIONS):
    """Per walker, the largest over b < batches of the largest |eigenvalue| of v -> hessian_vector(b, v)
    (graph_power_iteration from the same start [W, d] for each), float64 [W]."""
    def body(b, best):
        found = graph_power_iteration(lambda v: hessian_vector(b, v), start, iterations)
        finite = tf.math.is_finite(best) & tf.math.is_finite(found)  # a non-finite one stays (tf.maximum drops NaN)
        return b + 1, tf.where(finite, tf.maximum(best, found), tf.where(tf.math.is_finite(best), found, best))

    return tf.while_loop(lambda b, _: b < batches, body,
                         (tf.constant(0), tf.zeros(tf.shape(start)[:1], tf.float64)))[1]


def graph_power_iteration(hessian_vector, start, iterations=POWER_ITERATIONS):
    """Per row of start [W, d] (float64), the largest |eigenvalue| of the symmetric operator
    hessian_vector ([W, d] -> [W, d], row by row): |H v| of the normalised iterate v, which
    approaches it from below."""
    def body(i, v, estimate):
        w = hessian_vector(v)
        estimate = tf.norm(w, axis=1)
        return i + 1, w / tf.where(estimate > 0.0, estimate, 1.0)[:, None], estimate

    v = start / tf.norm(start, axis=1, keepdims=True)
    _, _, estimate = tf.while_loop(lambda i, *_: i < iterations, body,
                                   (tf.constant(0), v, tf.zeros(tf.shape(start)[:1], tf.float64)))
    return estimate


def graph_noise_width(variance, friction, temperature=1.0, mass=1.0, excess=EXCESS, euler=False):
    """noise_width in the graph (float64 [W]), by the same bisection of log h."""
    def body(i, low, high):
        middle = 0.5 * (low + high)
        hot = excess_heat(tf.exp(middle), variance, friction, temperature, mass, euler) > excess
        return i + 1, tf.where(hot, low, middle), tf.where(hot, middle, high)

    bounds = (tf.fill(tf.shape(variance), -40.0), tf.fill(tf.shape(variance), 40.0))
    _, low, _ = tf.while_loop(lambda i, *_: i < 100, body, (tf.constant(0),) + tuple(
        tf.cast(b, tf.float64) for b in bounds))
    return tf.where(variance > 0.0, tf.exp(low), tf.constant(np.inf, tf.float64))


class Friction(NamedTuple):
    """The O step's friction as graph_width takes it: the rate gamma (a float64 tensor), whether it is
    `measured` again (friction_constant auto; gamma, an earlier measurement, is then kept if higher),
    and whether the step is Euler's (SGHMC, module docstring 2.)."""
    gamma: object
    measured: bool = False
    euler: bool = False


def graph_width(hessian_vector, batches, noise_variance, start, friction, temperature=1.0, mass=1.0):
    """In the compiled loop: the run's width, min over walkers of min(h_s, h_n) (module docstring,
    1.-3.), and the friction rate it holds at, from hessian_vector ((b, v [W, d]) -> the curvature in
    the metric on batch b < batches), the walkers' mean noise variance in the metric [W], a start
    [W, d] of the power iteration (float64) and the Friction. Measured: by graph_friction at the
    least stability width (4.), kept at friction.gamma if that is higher, within FRICTION_CEILING / h
    of the measured friction's width h; the width is then the kept friction's, at most
    FRICTION_CEILING / gamma. NaN where a curvature or variance is not finite."""
    euler = friction.euler
    curvature = batch_curvature(hessian_vector, batches, start)
    stable = STABILITY / tf.sqrt(curvature / mass)

    def width_at(friction):
        return tf.reduce_min(tf.minimum(stable, graph_noise_width(noise_variance, friction, temperature, mass,
                                                                  euler=euler)))

    gamma = tf.cast(friction.gamma, tf.float64)
    if friction.measured:
        measured = graph_friction(tf.reduce_min(stable), noise_variance, temperature, mass, euler=euler)
        ceiling = tf.maximum(FRICTION_CEILING / width_at(measured), FRICTION_FLOOR)
        gamma = tf.minimum(tf.maximum(measured, gamma), ceiling)
        width = tf.minimum(width_at(gamma), FRICTION_CEILING / gamma)
    else:
        width = width_at(gamma)
    finite = tf.reduce_all(tf.math.is_finite(curvature)) & tf.reduce_all(tf.math.is_finite(noise_variance))
    nan = tf.constant(np.nan, tf.float64)
    return tf.where(finite, width, nan), tf.where(finite, gamma, nan)


def graph_overdamped_width(hessian_vector, batches, noise_variance, start, temperature=1.0, mass=1.0):
    """graph_width's SGLD rule (module docstring, 5.): min over walkers of min(h_s, h_n), NaN where a
    curvature or variance is not finite."""
    curvature = batch_curvature(hessian_vector, batches, start)
    stable = OVERDAMPED_STABILITY / (curvature / mass)
    width = tf.reduce_min(tf.minimum(stable, overdamped_noise_width(noise_variance, temperature, mass)))
    finite = tf.reduce_all(tf.math.is_finite(curvature)) & tf.reduce_all(tf.math.is_finite(noise_variance))
    return tf.where(finite, width, tf.constant(np.nan, tf.float64))


def _of_batches(batches):
    return f" of {batches} batches" if batches > 1 else ""


def _values(values):
    """Each walker's value, or their range where there are more than 4 walkers (one summary line)."""
    values = np.atleast_1d(values)
    if len(values) > 4:
        return f"{np.min(values):.3g} .. {np.max(values):.3g}"
    return ", ".join(f"{v:.3g}" for v in values)
