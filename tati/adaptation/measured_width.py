"""The step width of the stochastic-gradient samplers (GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT),
set once from quantities measured at the walkers' start, not by feedback during the run.

Feedback on the kinetic temperature fails on a network (doc/benchmarks.md, h-sgadapt): the
momenta keep the heat of the descent, a thermostat removes it at about gamma h per step, so a
small h keeps the reading hot and the feedback shrinks h to nothing. Here, per walker, at its
start point, with temperature T = 1 / beta and mass M (the samplers' scalar mass; 1 for the others):

1. stability: lambda, the largest curvature of U in the metric (|eigenvalue| of H / M, by
   POWER_ITERATIONS power iterations of Hessian-vector products on the whole dataset). A
   splitting scheme is stable for h sqrt(lambda) < 2; h_s = STABILITY / sqrt(lambda), a factor 4
   inside, as the curvature where the walkers go may exceed the start's, and BAOAB's stiffest
   mode then keeps its kinetic temperature within h^2 lambda / 4 = 6% (its momentum variance is
   (1 - h^2 omega^2 / 4) / beta).
2. heat from the gradient noise: V, the mini-batch gradient's variance per parameter about the
   full one (the sample variance of NOISE_BATCHES batches of the run's batch size, averaged over
   the parameters: the kinetic temperature is that average). Each step kicks p by h times a
   noise of variance V; BAOAB's O step keeps alpha^2 = exp(-2 gamma h) of p's variance s and
   restores (1 - alpha^2) T, so in equilibrium s = alpha^2 (s + h^2 V / M) + (1 - alpha^2) T,
   s = T + alpha^2 h^2 V / (M (1 - alpha^2)) <= T + h^2 V / (M (1 - exp(-2 gamma h))), about
   T + h V / (2 gamma M) for small gamma h (SGHMC's Euler friction, 1 - gamma h instead of
   alpha, gives the same to first order). h_n solves h^2 V / (M (1 - exp(-2 gamma h))) = EXCESS T.
3. the walker's width min(h_s, h_n); the run's (one width: the sampler's step_width) the least
   over the walkers.
4. friction_constant auto: gamma is not given but measured with the width: the least friction at
   which every walker's noise allows the run's stability width h = min h_s, from
   1 - exp(-2 gamma h) = h^2 V / (M T EXCESS), so that the width is the stability bound's and no
   more friction than that damps the dynamics (a friction of 1 gave a noise-bound width of 0.01 on
   yacht, 10 over-damped it: doc/benchmarks.md). At least FRICTION_FLOOR (the option's default; a
   small noise would otherwise leave the thermostat nothing to do), at most FRICTION_CEILING / h
   (alpha = exp(-gamma h) of 1/e: where even that heats more, the noise bound sets a smaller width).

Pure numpy on the measurements except `measure`, which evaluates the model.
"""

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from tati.errors import SamplingError

STABILITY = 0.5  # c of h = c / sqrt(lambda_max): 4 times inside the stability bound 2
EXCESS = 0.05  # the kinetic temperature's excess from the gradient noise, relative to T
POWER_ITERATIONS = 20
FRICTION_FLOOR, FRICTION_CEILING = 1.0, 1.0  # friction auto: gamma >= 1 and gamma h <= 1
NOISE_BATCHES = 16  # V's per-parameter relative error sqrt(2 / 15) = 0.37, far less averaged over d


class MeasuredWidth(NamedTuple):
    """Per walker: the largest curvature, the mean gradient-noise variance, the two widths and
    the smaller; `width`, the least over the walkers, is the run's."""
    curvature: np.ndarray
    noise_variance: np.ndarray
    stable_width: np.ndarray
    noise_width: np.ndarray
    widths: np.ndarray
    friction: float = None  # friction_constant auto's measured gamma (None where given)

    @property
    def width(self):
        return float(np.min(self.widths))

    def line(self):
        """One line for the summary."""
        return (f"measured step_width {self.width:.4g} (per walker {_values(self.widths)}): "
                f"{STABILITY:g} / sqrt(largest curvature {_values(self.curvature)}) = {_values(self.stable_width)}, "
                f"gradient noise variance {_values(self.noise_variance)} allows {_values(self.noise_width)} "
                f"for {EXCESS:.0%} excess heat" + ("" if self.friction is None else
                                                   f" at the measured friction_constant {self.friction:.3g}"))


def power_iteration(hessian_vector, start, iterations=POWER_ITERATIONS):
    """Per row of start [W, d], the largest |eigenvalue| of the symmetric operator
    hessian_vector ([W, d] -> [W, d], row by row): |H v| of the normalised iterate v, which
    approaches it from below."""
    v = start / np.linalg.norm(start, axis=1, keepdims=True)
    estimate = np.zeros(len(start))
    for _ in range(iterations):
        w = hessian_vector(v)
        estimate = np.linalg.norm(w, axis=1)
        v = w / np.where(estimate > 0.0, estimate, 1.0)[:, None]
    return estimate


def noise_variance(gradients):
    """Per walker, the sample variance of K batch gradients [K, W, d] (divisor K - 1), averaged
    over the parameters: [W]."""
    return np.mean(np.var(gradients, axis=0, ddof=1), axis=1)


def excess_heat(width, variance, friction, temperature=1.0, mass=1.0):
    """The kinetic temperature's rise from gradient noise of variance V per parameter at step
    width h, relative to T: h^2 V / (M T (1 - exp(-2 gamma h)))."""
    return width ** 2 * variance / (mass * temperature * -np.expm1(-2.0 * friction * width))


def noise_width(variance, friction, temperature=1.0, mass=1.0, excess=EXCESS):
    """The width h at which excess_heat is `excess` (it rises with h), per walker; inf where V = 0."""
    variance = np.asarray(variance, float)
    low, high = np.full(variance.shape, -40.0), np.full(variance.shape, 40.0)  # log h
    for _ in range(100):
        middle = 0.5 * (low + high)
        hot = excess_heat(np.exp(middle), variance, friction, temperature, mass) > excess
        low, high = np.where(hot, low, middle), np.where(hot, middle, high)
    return np.where(variance > 0.0, np.exp(low), np.inf)


def friction_for(width, variance, temperature=1.0, mass=1.0, excess=EXCESS):
    """The least friction at which excess_heat at `width` is `excess`, per walker: from
    1 - exp(-2 gamma h) = h^2 V / (M T excess); inf where no friction holds it (the ratio >= 1)."""
    ratio = width ** 2 * np.asarray(variance, float) / (mass * temperature * excess)
    return np.where(ratio < 1.0, -np.log1p(-np.minimum(ratio, 1.0 - 1e-12)) / (2.0 * width), np.inf)


def measured_friction(curvature, variance, temperature=1.0, mass=1.0):
    """friction_constant auto (module docstring, 4.): the least friction at which every walker's noise
    allows the run's stability width, within [FRICTION_FLOOR, FRICTION_CEILING / h]."""
    width = np.min(STABILITY / np.sqrt(np.asarray(curvature, float) / mass))
    needed = float(np.max(friction_for(width, variance, temperature, mass)))
    return float(np.clip(needed, FRICTION_FLOOR, max(FRICTION_FLOOR, FRICTION_CEILING / width)))


def widths(curvature, variance, friction, temperature=1.0, mass=1.0):
    """MeasuredWidth of the curvatures (of H, not yet divided by the mass) and noise variances;
    friction None: measured (measured_friction), and kept in the MeasuredWidth."""
    curvature, variance = np.asarray(curvature, float), np.asarray(variance, float)
    measured = None if friction is not None else measured_friction(curvature, variance, temperature, mass)
    stable = STABILITY / np.sqrt(curvature / mass)
    noisy = noise_width(variance, friction if measured is None else measured, temperature, mass)
    return MeasuredWidth(curvature, variance, stable, noisy, np.minimum(stable, noisy), measured)


def measure(model, data, friction, temperature=1.0, mass=1.0, seed=0, scales_of=None):
    """MeasuredWidth of every walker at the model's parameters (friction None: measured too): curvature on the whole dataset,
    noise from NOISE_BATCHES extra batches of the run's batch size (none without mini-batches).
    scales_of (adapt_mass noise): per-parameter variances [W, d] -> the whitened metric's scales
    s [d]; curvature and noise are then those of s H s and s^2 V."""
    features, labels = data.all() if model.uses_data else (None, None)
    theta = tf.constant(model.flat_parameters().numpy(), model.dtype)

    @tf.function(autograph=False)
    def hessian_vector(tangent):
        with tf.autodiff.ForwardAccumulator(theta, tf.cast(tangent, model.dtype)) as accumulator:
            _, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
        return tf.cast(accumulator.jvp(gradient), tf.float64)

    @tf.function(autograph=False)
    def batch_gradient(k):
        return tf.cast(model.loss_and_gradient(*data.extra_batch(-1, k), theta=theta)[1], tf.float64)

    variances = np.zeros(theta.shape)
    if not getattr(data, "full", True):
        variances = np.var(np.stack([batch_gradient(tf.constant(k)).numpy() for k in range(NOISE_BATCHES)]),
                           axis=0, ddof=1)
    scales = np.ones(theta.shape[-1]) if scales_of is None else scales_of(variances)
    start = np.random.default_rng(seed).standard_normal(theta.shape)
    curvature = power_iteration(lambda v: scales * hessian_vector(tf.constant(scales * v)).numpy(), start)
    variance = np.mean(scales ** 2 * variances, axis=-1)
    if not np.all(np.isfinite(curvature)) or not np.all(np.isfinite(variance)):
        raise SamplingError("measure_step_width: the loss's curvature or gradient is not finite at the walkers' "
                            "start; give initial_parameters or a step_width")
    return widths(curvature, variance, friction, temperature, mass)


def _values(values):
    """Each walker's value, or their range where there are more than 4 walkers (one summary line)."""
    values = np.atleast_1d(values)
    if len(values) > 4:
        return f"{np.min(values):.3g} .. {np.max(values):.3g}"
    return ", ".join(f"{v:.3g}" for v in values)
