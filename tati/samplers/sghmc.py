"""Stochastic Gradient Hamiltonian Monte Carlo (Chen, Fox and Guestrin 2014).

Chen et al.'s update with step eps, mass M, friction C and gradient-noise estimate B-hat:

    theta^{n+1} = theta^n + eps M^{-1} r^n
    r^{n+1} = r^n - eps grad U~(theta^{n+1}) - eps C M^{-1} r^n + N(0, 2 (C - B-hat) eps)

Each call receives grad U~ at the current theta, so it performs the momentum update first and
then the position update (the same scheme, cyclically shifted):

    r <- (1 - eps C / M) r - eps grad U~(theta^n) + sqrt(2 eps (C / beta - B-hat)) G
    theta^{n+1} = theta^n + eps r / M

Mapping onto the Langevin parameters: eps = step_width, C = friction_constant (friction per
unit time for unit mass), M = mass, beta = inverse_temperature (Chen et al. have beta = 1),
B-hat = eps V-hat / 2 for gradient noise of variance V-hat. The friction step is Euler's, so
eps C / M < 2 is needed for stability. Target: exp(-beta (U(theta) + r^T M^{-1} r / 2)), with
O(eps) bias. Reported momentum: r^n, the momentum the call starts from; kinetic energy
r^T M^{-1} r / 2. With the ensemble preconditioner B (ensemble.py) the kick uses B^T grad U
and the drift B M^{-1} r.

B-hat comes from `gradient_noise_estimator`:

* `none`: B-hat = `noise_estimate`, a constant below C / beta (0 by default: Chen et al.'s
  choice, the injected noise alone is the thermostat);
* `batch` (the source document's): at the first step of each epoch, before its update, the
  gradients g_1 ... g_K of K = `noise_estimation_batches` batches at the current parameters,
      g-bar = (1/K) sum_k g_k,   V-hat = (1 / (K - 1)) sum_k (g_k - g-bar)^2   (per parameter),
  kept for the steps up to the next estimate. The gradient step (engine/gradient.py) sees
  `noise_batches` = K > 0 and calls `estimate_noise` with a gradient function over batches of
  their own (data/pipeline.py `extra_batch`: batch_size distinct points keyed by (seed, step, k)), so
  V-hat is unbiased for one training batch's gradient variance, independent of the number of
  walkers, and neither the chain nor the training batches move. Relative error: that of a
  sample variance of K draws, sqrt(2 / (K - 1)) for normal gradients. Without mini-batches
  (full batch, potential) it estimates at step 1 and every `noise_estimation_steps` steps.
  In a loop of one's own (or Keras' fit) call `estimate_noise` oneself: else V-hat stays 0.
* `adam`: per parameter, exponentially decaying moments of the gradient g_t as in Adam, with
  decays b1 = `first_moment_decay`, b2 = `second_moment_decay` and Adam's bias correction,
      m_t = b1 m + (1 - b1) g_t,   v_t = b2 v + (1 - b2) g_t^2,
      V-hat = (v_t / (1 - b2^t) - (m_t / (1 - b1^t))^2) / (1 - S_t),
  S_t = sum of the squared weights of the corrected mean = (1 - b1)(1 + b1^t) / ((1 + b1)(1 - b1^t)).
  Dividing by 1 - S_t makes V-hat unbiased for independent gradients of constant mean and
  variance (v - m^2 alone is low by the variance of the short-window mean, 5% at b1 = 0.9);
* `adam_centered`: the second moment of g_t centred with the previous (corrected) mean,
      v_t = b2 v + (1 - b2) (g_t - m_{t-1} / (1 - b1^{t-1}))^2 / (1 + S_{t-1}),   V-hat = v_t / (1 - b2^{t-1}),
  which follows a drifting mean gradient (as theta moves) rather than counting its drift as
  noise; 1 + S_{t-1} likewise makes it unbiased. Both give V-hat = 0 at the first step.

The state (V-hat, and the adam estimators' m and v) is in optimizer variables, so a checkpoint
restores it.

All of them treat the gradient noise as independent from step to step. tati's mini-batches
partition a permutation of the data each epoch, so at fixed parameters one epoch's B noises sum
to zero (lag-k autocovariance -V (B - k) / (B (B - 1))); through the momentum's memory
a = 1 - eps C / M they heat by h eps^2 V per step, h = 1 - 2 sum_{k<B} (B - k) a^k / (B (B - 1)),
not eps^2 V, and B-hat = eps V-hat / 2 over-corrects unless a is small: measured and
explained in doc/samplers.md (SGHMC).

A diagonal mass adapted during burn-in (`adapt_mass`, without an estimator: samplers/mass.py, as
for BAOAB): the momentum is kept in whitened coordinates r', each parameter has a scale s
(the mass M diag(1 / s^2)), and the step reads

    r' <- (1 - eps C / M) r' - eps s grad U~(theta^n) + sqrt(2 eps C / beta) G
    theta^{n+1} = theta^n + eps s r' / M

the unit-scale step of z = theta / s. With adapt_mass="noise" s^-2 = max(V_i B / N, floor), from
the gradient noise of batches that cover the data: each coordinate's noise heat eps V_i s_i^2 / 2
is then even, and one width serves all (with measure_step_width the width is measured again with
each new mass, counting the Euler friction's own heat, about eps C / (2 M): `euler_friction`,
tati/adaptation/measured_width.py). The noise estimators' mass rescaling is the other answer to
the same noise; the two are not combined.

Mass rescaling (only with an estimator, every `mass_rescaling_steps` steps, 0 = never) keeps
the friction bound of the source document (the SGHMC thesis chapter among the source
documents). In its notation (Chen et al.'s SGD-with-momentum form, v = eps M^{-1} r):
eta = eps^2 M^{-1}, alpha = eps C M^{-1}, beta-hat = eps B-hat M^{-1} = eta V-hat / 2. It keeps
alpha fixed and sets M = M_0 W with W diagonal,

    W_ii = max(1, m_est eta_0 V-hat_ii / (2 alpha)),    eta = eta_0 W^{-1},

m_est = `mass_safety_factor`, so that m_est beta-hat <= alpha. In tati's terms eps stays the
step width, the mass and the friction become M_0 W and C_0 W (their ratio, the momentum decay,
is unchanged), and W_ii = max(W_ii, m_est beta B-hat_ii / C_0), from W = 1, with B-hat =
eps V-hat / 2; the bound reads m_est beta B-hat <= C (at beta = 1 exactly the source's).
Unlike the source, W never falls: a smaller mass is a larger step eps / (M_0 W) in that
coordinate, and adam's V-hat reads 0 at a single large gradient (its short mean squared, weight
(1 - b1)^2, overtakes its long second moment, weight 1 - b2); set from that reading, W fell
from 442 to 1 in a stiff coordinate of issue #41's yacht network and blew the walker up
(doc/samplers.md, SGHMC). At a rescaling the
momentum is multiplied by sqrt(W_new / W_old), which maps N(0, M_old / beta) onto
N(0, M_new / beta): a momentum in equilibrium stays in equilibrium. Between rescalings an
estimate above the bound is clamped at it, B-hat = min(eps V-hat / 2, C / (m_est beta)), and
no extra noise (or friction) makes up for the excess; so the bound holds at every step, and
the injected noise 2 eps (C / beta - B-hat) is never negative. With m_est = 1 this is the
source's clamp at alpha.
"""

import math

import keras
import tensorflow as tf

from tati.errors import InputError
from tati.config.options import default
from tati.config.preflight import mass_and_estimator
from tati.recording.columns import LANGEVIN_INFO, SGHMC_ESTIMATING_INFO
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase, parameter_property
from tati.samplers.mass import AdaptedMass

ESTIMATORS = ("none", "batch", "adam", "adam_centered")


@keras.saving.register_keras_serializable(package="tati")
class SGHMC(AdaptedMass, SamplerBase):
    """SGHMC; `step_width` eps, `friction_constant` C, `mass` M, `noise_estimate` B-hat (or a
    `gradient_noise_estimator` with mass rescaling, see the module docstring; `batch` takes
    `noise_estimation_batches` K and `noise_estimation_steps`); without an estimator `adapt_mass`
    with `adaptation_steps` adapts a diagonal mass during them (samplers/mass.py)."""

    fixed_friction = True
    euler_friction = True  # r <- (1 - eps C / M) r: its own heat counts in the measured width
    parameters = ("inverse_temperature", "friction_constant", "mass", "noise_estimate",
                  "gradient_noise_estimator", "first_moment_decay", "second_moment_decay",
                  "mass_rescaling_steps", "mass_safety_factor", "noise_estimation_batches",
                  "noise_estimation_steps")
    # Structure (fixed at construction, Python constants); the other parameters are variables.
    _STRUCTURE = ("gradient_noise_estimator", "mass_rescaling_steps", "noise_estimation_batches",
                  "noise_estimation_steps")
    friction_per_mass = True  # the momentum decays by 1 - eps C / M
    friction_constant = parameter_property("friction_constant", "C, the friction (for mass M).")
    mass = parameter_property("mass", "M, the scalar mass of the momenta (M_0 with mass rescaling).")
    noise_estimate = parameter_property("noise_estimate", "B-hat, the constant gradient-noise estimate.")
    first_moment_decay = parameter_property("first_moment_decay", "b1 of the adam estimators.")
    second_moment_decay = parameter_property("second_moment_decay", "b2 of the adam estimators.")
    mass_safety_factor = parameter_property("mass_safety_factor", "m_est: m_est beta B-hat <= C.")

    def __init__(self, step_width=default("step_width"), friction_constant=default("friction_constant"),
                 inverse_temperature=default("inverse_temperature"), mass=default("mass"),
                 noise_estimate=default("noise_estimate"),
                 gradient_noise_estimator=default("gradient_noise_estimator"),
                 first_moment_decay=default("first_moment_decay"),
                 second_moment_decay=default("second_moment_decay"),
                 mass_rescaling_steps=default("mass_rescaling_steps"),
                 mass_safety_factor=default("mass_safety_factor"),
                 noise_estimation_batches=default("noise_estimation_batches"),
                 noise_estimation_steps=default("noise_estimation_steps"),
                 seed=default("seed"), adapt_mass=default("adapt_mass"), adaptation_steps=0,
                 noise_mass_sizes=(1.0, 1.0), name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(
            kwargs, friction_constant=friction_constant, inverse_temperature=inverse_temperature,
            mass=mass, noise_estimate=noise_estimate, gradient_noise_estimator=gradient_noise_estimator,
            first_moment_decay=first_moment_decay, second_moment_decay=second_moment_decay,
            mass_rescaling_steps=mass_rescaling_steps, mass_safety_factor=mass_safety_factor,
            noise_estimation_batches=noise_estimation_batches, noise_estimation_steps=noise_estimation_steps))
        values = self._parameter_values
        for name in self._STRUCTURE:
            setattr(self, name, values.pop(name))
        self._init_mass(adapt_mass, adaptation_steps, noise_mass_sizes)
        if self.adapt_mass and self.estimating:
            raise InputError(mass_and_estimator(adapt_mass, self.gradient_noise_estimator))
        limit = values["friction_constant"] / values["inverse_temperature"]
        if values["noise_estimate"] > 0 and values["noise_estimate"] >= limit:
            raise InputError(f"noise_estimate {values['noise_estimate']} must be below "
                             "friction_constant / inverse_temperature")
        for option in ("first_moment_decay", "second_moment_decay"):
            if values[option] >= 1:
                raise InputError(f"{option} must be < 1, got {values[option]!r}")
        if self.estimating:
            if values["noise_estimate"] > 0:
                raise InputError(f"noise_estimate {values['noise_estimate']} is a constant B-hat; it cannot be "
                                 f"combined with gradient_noise_estimator '{self.gradient_noise_estimator}'")
            if values["friction_constant"] == 0:
                raise InputError(f"gradient_noise_estimator '{self.gradient_noise_estimator}' needs "
                                 "friction_constant > 0: the noise it accounts for replaces part of C / beta")

    @property
    def info(self):
        """With a gradient_noise_estimator, the mean V-hat over each walker's parameters is a column."""
        return SGHMC_ESTIMATING_INFO if self.estimating else LANGEVIN_INFO

    def row_info(self, loss, per_walker):
        row = super().row_info(loss, per_walker)
        if self.estimating:
            row["gradient_noise_variance"] = per_walker(self._noise_variances) / sum(
                math.prod(v.shape) // (self._walkers or 1) for v in self._noise_variances)
        return row

    @property
    def estimating(self):
        return self.gradient_noise_estimator != "none"

    @property
    def rescaling(self):
        return self.estimating and self.mass_rescaling_steps > 0

    @property
    def noise_evaluations(self):
        """The batch estimator's (or the noise mass's) gradient evaluations so far, per walker (float64)."""
        return tf.convert_to_tensor(self._noise_evaluations)

    @property
    def noise_batches(self):
        """K, the gradients `estimate_noise` wants (the batch estimator; the noise mass's least
        count), else 0: a compiled loop that sees K > 0 calls it at the start of each epoch
        (engine/gradient.py)."""
        if self.noise_mass:
            return AdaptedMass.noise_batches.fget(self)
        return self.noise_estimation_batches if self.gradient_noise_estimator == "batch" else 0

    @property
    def noise_covers(self):
        """The noise mass's batches cover the data; the batch estimator's are random (extra_batch)."""
        return self.noise_mass

    def initial_momentum_scale(self):
        return math.sqrt(self._parameter_values["mass"] / self._parameter_values["inverse_temperature"])

    # -- state ---------------------------------------------------------------------------------
    def build(self, variables):
        if self.built:
            return
        super().build(variables)

        def slots(name, value):
            return [self.add_variable_from_reference(
                v, name=name, initializer=lambda shape, dtype: tf.fill(shape, tf.cast(value, dtype)))
                for v in variables] if self.estimating else []

        moments = self.gradient_noise_estimator.startswith("adam")
        self._first_moments = slots("gradient_mean", 0.0) if moments else []
        self._second_moments = slots("gradient_second_moment", 0.0) if moments else []
        self._noise_variances = slots("gradient_noise_variance", 0.0)
        if self.gradient_noise_estimator == "batch":  # its gradient evaluations so far, per walker (the noise mass's: mass.py)
            self._noise_evaluations = self.add_variable((), dtype="float64", name="noise_evaluations",
                                                        initializer="zeros")
        self._mass_weights = slots("mass_weight", 1.0) if self.rescaling else []

    def _walker_state(self):
        return self._first_moments + self._second_moments + self._noise_variances + self._mass_weights

    def _each(self, slots, fill):
        """The slots' values, one per variable (a single tensor for a single variable)."""
        if not self.built:
            raise ValueError("the sampler is not built yet (it has no state before its first step)")
        values = [tf.convert_to_tensor(s) for s in slots] if slots else [
            tf.fill(tf.shape(v), tf.cast(fill(), v.dtype)) for v in self._trainable_variables]
        return values[0] if len(values) == 1 else values

    @property
    def gradient_noise_variance(self):
        """V-hat, the estimated variance of each gradient component, shaped like the parameters
        ([W, d] for a Simulation's walkers); without an estimator 2 noise_estimate / eps."""
        return self._each(self._noise_variances, lambda: 2.0 * tf.cast(
            self._parameter_variables["noise_estimate"], tf.float64) / tf.cast(self.learning_rate, tf.float64))

    @property
    def mass_weights(self):
        """W of M = M_0 W, per parameter (ones without mass rescaling)."""
        return self._each(self._mass_weights, lambda: 1.0)

    @property
    def noise_term(self):
        """B-hat as the last step used it, per parameter (after clamping)."""
        if not self.estimating:
            return self._each([], lambda: self._parameter_variables["noise_estimate"])
        b_hats = []
        for index, variable in enumerate(self._trainable_variables):
            weight = self._mass_weights[index] if self.rescaling else 1.0
            b_hats.append(self._clamped_b_hat(self._noise_variances[index], weight, variable.dtype,
                                              tf.cast(self.learning_rate, variable.dtype)))
        return b_hats[0] if len(b_hats) == 1 else b_hats

    # -- the step ------------------------------------------------------------------------------
    def _clamped_b_hat(self, noise_variance, weight, dtype, eps):
        """min(eps V-hat / 2, C_0 W / (m_est beta)): the friction bound m_est beta B-hat <= C."""
        bound = (self._parameter("friction_constant", dtype) * weight
                 / (self._parameter("mass_safety_factor", dtype) * self._parameter("inverse_temperature", dtype)))
        return tf.minimum(0.5 * eps * noise_variance, bound)

    def estimate_noise(self, gradients_of, *mass_arguments):
        """With adapt_mass noise, the mass's measurement (AdaptedMass.estimate_noise, which takes
        `mass_arguments`); else the batch estimator: V-hat = the sample variance (divisor K - 1) of the gradients
        gradients_of(k), k = 0 ... K - 1 (a list of tensors, one per variable, at the current
        parameters), stored in the state and used by the steps until the next estimate.
        Welford's running mean and sum of squares, in a while loop: one gradient at a time in
        memory, no cancellation when the mean is large against the spread. Nothing else moves:
        no iteration, no noise, no position or momentum."""
        if self.noise_mass:
            return AdaptedMass.estimate_noise(self, gradients_of, *mass_arguments)
        if self.gradient_noise_estimator != "batch" or not self.built:
            raise ValueError("estimate_noise needs a built SGHMC with gradient_noise_estimator 'batch' "
                             "or adapt_mass 'noise'")
        count = self.noise_estimation_batches

        def add(k, means, squares):
            gradients = [tf.convert_to_tensor(g) for g in gradients_of(k)]
            new_means = [m + (g - m) / tf.cast(k + 1, m.dtype) for g, m in zip(gradients, means)]
            squares = [s + (g - m) * (g - n) for s, g, m, n in zip(squares, gradients, means, new_means)]
            return k + 1, new_means, squares

        zeros = [tf.zeros_like(v) for v in self._noise_variances]
        _, _, squares = tf.while_loop(lambda k, *_: k < count, add, (tf.constant(0), zeros, zeros))
        for variance, square in zip(self._noise_variances, squares):
            variance.assign(square / tf.cast(count - 1, square.dtype))
        self._noise_evaluations.assign_add(float(count))

    def _moment_scalars(self, dtype):
        """The adam estimators' scalars of this step, the same for every variable: 1 - b1 and
        1 - b2, and adam's bias corrections and unbiasing factors (float64, then in dtype)."""
        b1 = tf.cast(self._parameter_variables["first_moment_decay"], tf.float64)
        b2 = tf.cast(self._parameter_variables["second_moment_decay"], tf.float64)
        t = tf.cast(self.iterations, tf.float64) + 1.0  # gradients seen, this one included

        def weights_sq(n):  # S_n: sum of squared weights of the bias-corrected mean of n gradients
            return (1.0 - b1) * (1.0 + b1 ** n) / ((1.0 + b1) * (1.0 - b1 ** n))

        c1, c2 = tf.cast(1.0 - b1, dtype), tf.cast(1.0 - b2, dtype)
        if self.gradient_noise_estimator == "adam":
            scale = tf.where(t > 1.0, 1.0 / (1.0 - weights_sq(tf.maximum(t, 2.0))), 0.0)
            return c1, c2, tf.cast(1.0 - b2 ** t, dtype), tf.cast(1.0 - b1 ** t, dtype), tf.cast(scale, dtype)
        previous = tf.maximum(t - 1.0, 1.0)  # adam_centered: needs a previous mean
        return (c1, c2, tf.cast(1.0 - b1 ** previous, dtype), tf.cast(1.0 + weights_sq(previous), dtype), t > 1.0,
                tf.cast(1.0 - b2 ** previous, dtype))

    def _estimate(self, gradient, index, dtype):
        """Update the moments with this gradient; returns the new V-hat (also stored)."""
        first, second = self._first_moments[index], self._second_moments[index]
        m, v = tf.convert_to_tensor(first), tf.convert_to_tensor(second)
        scalars = self._once(("moments", tf.as_dtype(dtype)), lambda: self._moment_scalars(dtype))
        c1, c2 = scalars[:2]
        m_new = m + c1 * (gradient - m)
        if self.gradient_noise_estimator == "adam":
            corrected_v, corrected_m, scale = scalars[2:]
            v_new = v + c2 * (tf.square(gradient) - v)
            excess = tf.maximum(v_new / corrected_v - tf.square(m_new / corrected_m), 0.0)
            variance = excess * scale
        else:  # adam_centered: starts at the second gradient
            corrected_m, unbias, started, corrected_v = scalars[2:]
            centred = gradient - m / corrected_m
            update = tf.square(centred) / unbias
            v_new = tf.where(started, v + c2 * (update - v), v)
            variance = tf.where(started, v_new / corrected_v, tf.zeros_like(v))
        first.assign(m_new)
        second.assign(v_new)
        self._noise_variances[index].assign(variance)
        return variance

    def update_step(self, gradient, variable, learning_rate):
        eps = self._step_width(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        friction = self._parameter("friction_constant", variable.dtype)
        mass = self._parameter("mass", variable.dtype)
        momentum = self._momentum(variable)
        q, r = tf.convert_to_tensor(variable), tf.convert_to_tensor(momentum)
        if not self.estimating:  # the constant B-hat, unchanged from before the estimators
            b_hat = self._parameter("noise_estimate", variable.dtype)
            noise = tf.sqrt(2.0 * eps * tf.maximum(friction / beta - b_hat, 0.0)) * self._normal(variable)
            r_new = splitting.kick(splitting.ornstein_uhlenbeck(r, 1.0 - eps * friction / mass, noise),
                                   self._scaled_force(gradient, variable), eps)
            variable.assign(splitting.drift(q, self._scaled_velocity(r_new, variable) / mass, eps))
            momentum.assign(r_new)
            self._report(self._inertia_position(q, variable), r, noise, mass)
            return
        index = self._get_variable_index(variable)
        if self.gradient_noise_estimator == "batch":  # the last estimate_noise's V-hat
            noise_variance = tf.convert_to_tensor(self._noise_variances[index])
        else:
            noise_variance = self._estimate(gradient, index, variable.dtype)
        weight = 1.0
        if self.rescaling:
            weights = self._mass_weights[index]
            old = tf.convert_to_tensor(weights)
            due = tf.equal((self.iterations + 1) % self.mass_rescaling_steps, 0)
            # W only grows: a smaller mass is a larger step in that coordinate, and one reading of
            # V-hat that dips (adam's v - m^2 at 0 under a large mean gradient) must not undo the
            # mass that kept a stiff coordinate stable (issue #41: W 442 -> 1 blew a walker up).
            wanted = tf.maximum(old, tf.math.divide_no_nan(
                self._parameter("mass_safety_factor", variable.dtype) * beta * 0.5 * eps * noise_variance, friction))
            weight = tf.where(due, wanted, old)
            r = r * tf.sqrt(weight / old)  # N(0, M_old / beta) -> N(0, M_new / beta)
            weights.assign(weight)
        b_hat = self._clamped_b_hat(noise_variance, weight, variable.dtype, eps)
        noise = tf.sqrt(2.0 * eps * tf.maximum(friction * weight / beta - b_hat, 0.0)) * self._normal(variable)
        # alpha = eps C / M is unchanged by the weights; the drift uses M = M_0 W.
        r_new = splitting.kick(splitting.ornstein_uhlenbeck(r, 1.0 - eps * friction / mass, noise),
                               self._force(gradient), eps)
        variable.assign(splitting.drift(q, self._velocity(r_new / (mass * weight)), eps))
        momentum.assign(r_new)
        # _report takes a scalar mass: r / sqrt(W) with M_0 gives r^T M^{-1} r / 2.
        self._report(q, r if not self.rescaling else r / tf.sqrt(weight), noise, mass)

    # -- serialization -------------------------------------------------------------------------
    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._STRUCTURE})
        return config
