"""The warm start of the adapting samplers (NUTS, RWMH, HMC1, HMC2): every walker into the
typical set before burn-in adapts anything.

Burn-in adapts one step width and one metric from all walkers (samplers/adaptation.py). From
dispersed starts, as Stan's uniform(-2, 2) on the unconstrained space, the walkers see scales
that differ by orders of magnitude (on posteriordb's kidiq the log density at such starts spans
1478 to 104475): a width that serves the pooled walkers serves none of them, and a walker far out
can stay there for the whole run (HMC2 on kidiq: R-hat 42). So before the first sample() call:

1. L-BFGS from every walker's own start, on the whole dataset (at most ITERATIONS iterations,
   tfp.optimizer.lbfgs_minimize, every walker its own problem), towards a mode of U; where a
   walker's line search failed (far out, where U is badly scaled), again from there with no
   memory, ROUNDS times in all;
2. a walker that ends far above the best, beta (U_w - U_best) > d/2 + 4 sqrt(d/2), is stuck (in a
   minor mode, or where the line search failed) and restarts at the best walker's point. At a
   mode, beta (U - U_mode) of the draws of a d-dimensional Gaussian posterior is Gamma(d/2), of
   mean d/2 and sd sqrt(d/2): a walker whose best point lies above most draws of the best
   walker's mode is in a region of negligible mass next to it.

Pathfinder (Zhang, Carpenter, Gelman & Vehtari 2022) starts Stan's chains the same way, from
optimisation paths with the poor ones dropped. Walkers that are not stuck keep their own point
(a network's walkers their own minima), so R-hat still compares walkers from different starts;
the restarted ones are named in the summary and in a warning. The sampler's windows then adapt
from the typical set, as they do from a start at the mode.
"""

import math
from typing import NamedTuple

import numpy as np
import tensorflow as tf

ITERATIONS, CORRECTION_PAIRS, TOLERANCE = 200, 10, 1e-8
# L-BFGS runs again from where a walker's line search failed, at most this many times in all.
ROUNDS = 3
TAIL_SDS = 4.0


class WarmStart(NamedTuple):
    """What the warm start did: L-BFGS's iterations and which walkers converged, every walker's
    U at its start and at the end, the restarted walkers and the walker they restart from, and
    the walkers' new positions [W, d]."""
    positions: np.ndarray
    iterations: int
    converged: np.ndarray
    start_losses: np.ndarray
    losses: np.ndarray
    restarted: np.ndarray
    best: int
    threshold: float

    def line(self):
        """One line for the summary."""
        kept = np.delete(self.losses, self.restarted)
        done = (f"warm start: L-BFGS took the {len(self.losses)} walkers from U {_range(self.start_losses)} "
                f"to {_range(kept)} in {self.iterations} iterations")
        if not len(self.restarted):
            return done
        return (f"{done}; {_walkers(self.restarted)} stuck at U {_range(self.losses[self.restarted])} "
                f"(more than {self.threshold:.3g} above the best) restarted at walker {self.best}'s point")


def applies(options, walkers):
    """Whether the run starts warm: warm_start true, or auto with two walkers or more and a burn-in."""
    choice = options.get("warm_start", False)
    if choice == "auto":
        return walkers > 1 and options["burn_in_steps"] > 0
    return bool(choice)


def threshold(dimension, inverse_temperature):
    """U above the best walker's at which a walker counts as stuck: (d/2 + 4 sqrt(d/2)) / beta."""
    half = 0.5 * dimension
    return (half + TAIL_SDS * math.sqrt(half)) / inverse_temperature


def warm_start(model, data, inverse_temperature):
    """The walkers' points in the typical set (module docstring), as a WarmStart; the model's
    parameters stay as they are."""
    import tensorflow_probability as tfp
    features, labels = data.all() if model.uses_data else (None, None)

    def value_and_gradients(theta):
        losses, gradient, _ = model.loss_and_gradient(features, labels, theta=theta)
        return losses, gradient

    @tf.function(autograph=False)
    def minimise(start):
        return tfp.optimizer.lbfgs_minimize(value_and_gradients, start, max_iterations=ITERATIONS,
                                            num_correction_pairs=CORRECTION_PAIRS, tolerance=TOLERANCE,
                                            stopping_condition=tfp.optimizer.converged_all)

    start = model.flat_parameters()
    start_losses = value_and_gradients(start)[0].numpy().astype(np.float64)
    result, iterations = minimise(start), 0
    for _ in range(ROUNDS - 1):  # a failed line search again, from where it stopped, with no memory
        iterations += int(result.num_iterations.numpy())
        if np.all(result.converged.numpy()):
            break
        result = minimise(result.position)
    iterations += int(result.num_iterations.numpy())
    position = result.position.numpy()
    losses = result.objective_value.numpy().astype(np.float64)
    losses = np.where(np.isfinite(losses), losses, np.inf)
    best = int(np.argmin(losses))
    limit = threshold(model.num_parameters, inverse_temperature)
    restarted = np.flatnonzero(losses - losses[best] > limit)
    position[restarted] = position[best]
    return WarmStart(position, iterations, result.converged.numpy(), start_losses, losses, restarted,
                     best, limit)


def _range(values):
    low, high = f"{np.min(values) + 0.0:.6g}", f"{np.max(values) + 0.0:.6g}"  # no -0
    return low if low == high else f"{low} .. {high}"


def _walkers(indices):
    return ("walker " if len(indices) == 1 else "walkers ") + ", ".join(str(i) for i in indices)
