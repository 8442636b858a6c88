"""Warm-up adaptation of a proposal kernel's step width and metric, during burn-in only.

Initial step width (Hoffman & Gelman 2014, Algorithm 4): at the first step of burn-in, probes
of one step each from the chain's state with fresh momenta (or, for RWMH, one proposal) at the
user's width, doubled while the walkers' mean one-step acceptance min(1, exp(-beta dH)) stays
above 0.5 or halved while it stays below, until it crosses; dual averaging starts from the
width found (`initial_width_update`).

Step width: dual averaging (Nesterov 2009, as Hoffman & Gelman 2014, Algorithm 5, and Stan)
drives the mean acceptance statistic a_n towards the target delta:

    h_n = (1 - 1/(n + t0)) h_{n-1} + (delta - a_n) / (n + t0)
    log eps_n = mu - sqrt(n) / gamma * h_n
    log eps_bar_n = n^-kappa log eps_n + (1 - n^-kappa) log eps_bar_{n-1}

with mu = log(10 eps_0), gamma = 0.1, t0 = 10, kappa = 0.75, and a_n the acceptance
statistic averaged over the walkers. After burn-in the width is frozen at eps_bar, the average
of the iterates, which fluctuates less than the last one. Stan's gamma is 0.05; with it the
iterates swing further, partly beyond the width where acceptance falls off, so that the
frozen eps_bar accepted 0.86 instead of 0.8 on a Gaussian of condition number 1e4; with 0.1,
0.82 (doc/samplers.md).

Metric: a diagonal one, estimated in Stan's windows (an initial buffer of 75 steps where only
the width adapts, then windows of 25, 50, 100, ... steps, the last stretched to end 50 steps
before burn-in does, whose terminal buffer again adapts only the width; shorter burn-ins
scale these as 15% / 75% / 10%). At each window's end the variance of the window's draws
(NUTS, RWMH, the Langevin samplers; HMC's estimate is below), pooled over walkers and
shrunk towards 1e-3 times the last window's (`shrunk_scale`), becomes the squared scale s^2 of
each coordinate, and dual averaging restarts from the current width (HMC: divided by the
smallest growth of a scale, new s / old s; `dual_averaging_restart`). The kernel then moves
z = theta / s, which is the same as giving the momenta the mass matrix diag(1 / s^2).
HMC1/HMC2 count their burn-in in gradient evaluations, not in legs of unknown length: their
windows are counted in legs instead (`window_legs`), from 15% of the burn-in until 90% of it or
until 200 legs are left (estimated at the current leg length; not before the first window
closes), for the step width and leg length to settle in the metric's coordinates; the first
window closes after its 25 legs or at FIRST_WINDOW_END (30%) of the burn-in, whichever comes
first, if it holds MIN_METRIC_DRAWS draws; a window is taken only if at least
MIN_LEGS_AFTER_WINDOW legs of burn-in follow it, else the metric stays. HMC's windows collect
the legs' starts with their gradients and estimate each scale by the diagonal metric that
minimises the Fisher divergence (Seyboldt, Carlson & Carpenter, as nutpie; `fisher_scale`):

    s_i^4 = var(theta_i) / var(beta dU/dtheta_i),

exact for a Gaussian target with a diagonal covariance from any draws of distinct gradients,
also from draws still on their way from dispersed starts, which the variance of the draws is
not: on a linear regression with predictors on scales 1 and 1000 (tools/benchmark_adapted.py,
model 4) a burn-in of 10,000 steps holds about 18 legs before any metric (legs of about 1000
steps at the width the slope's sd of 7e-5 allows), and the chains were still far from the
posterior at its end (R-hat 1.9); with a first window of 3 legs by 30% of it and this estimate,
the slope's scale came out as its sd (the other two 7-9 times too small, from draws far off the
posterior and correlated with the slope; right after the next windows), and the walkers reached
the posterior by half of the burn-in. With metric="dense" HMC's windows take the regularised
covariance of the legs' starts instead (`dense_metric`, as NUTS's of its draws), from at
least d + 1 draws, and the restarts divide by the extreme singular values of L_old^-1 L_new
(`extreme_growths`), the dense counterparts of the smallest and largest growth.

Leg length of HMC (ChEES; Hoffman, Radul & Sountsov 2021, as TFP's
GradientBasedTrajectoryLengthAdaptation): the time T of a leg maximises

    ChEES(T) = 1/4 E[(|z' - E z|^2 - |z - E z|^2)^2],

z the leg's start and z' its proposal (in the metric's coordinates), a change of the squared
distance from the centre, which rewards legs that decorrelate second moments, not only means.
Its gradient in log T, estimated from the walkers' legs of times t_w, acceptance
probabilities a_w and end momenta p'_w (dz/dt = p in these coordinates), is

    g = sum_w a_w t_w (|z'_w - m|^2 - |z_w - m|^2) (z'_w - m) . p'_w / sum_w a_w,

m a moving average of the walkers' mean leg start over the last 50 legs or so (not the
walkers' mean of this leg's starts, as TFP's, which contains each walker's own start and,
with few walkers, pushes T towards anti-correlated legs). log T climbs g by Adam without
momentum (rate 0.05, squared-gradient decay 0.95; TFP's rate is 0.025, for burn-ins of
thousands of legs); after burn-in T is frozen at the average of its iterates, weighted as the
step width's. At each metric window T starts again, divided by the largest growth of a scale
and at most the user's `hamiltonian_dynamics_time` (`chees_restart`).

Everything here is a pure function of tensors; the kernel keeps the state in variables.
"""

import tensorflow as tf

GAMMA, T0, KAPPA = 0.1, 10.0, 0.75
INITIAL_BUFFER, TERMINAL_BUFFER, BASE_WINDOW = 75, 50, 25
# HMC's metric windows: from 15% of its burn-in (in gradient evaluations) until 90% of it or
# until the legs of the burn-in left (at the current leg length) are TERMINAL_LEGS, enough for
# the width's average to settle after the last window (with 50 it accepted visibly above its
# target on the Gaussian of condition number 1e4); a burn-in of fewer evaluations than
# MIN_LEG_METRIC_BURN_IN, or a last window of fewer than MIN_METRIC_DRAWS draws, leaves the
# metric as it is.
LEG_METRIC_START, LEG_METRIC_END, MIN_LEG_METRIC_BURN_IN = 0.15, 0.9, 200
# The first window closes by FIRST_WINDOW_END of the burn-in even with fewer than its 25 legs;
# MIN_METRIC_DRAWS draws (2 legs of 4 walkers) give each scale within about 20% on a Gaussian
# (s^4 is a ratio of two variances of 7 degrees of freedom each).
FIRST_WINDOW_END = 0.3
TERMINAL_LEGS, MIN_METRIC_DRAWS = 200, 8
# A window's metric is taken only if at least this many legs of burn-in follow it (at the
# restarted width and leg length), for dual averaging to try the restarted width: the last
# window of a short burn-in with long legs could otherwise close with no leg left, and the
# width be frozen at its restart, a guess (on the 1-D network of examples/bayesian_regression_1d.py
# with 500 burn-in steps, legs of 80 steps: acceptance 0.27 after burn-in).
MIN_LEGS_AFTER_WINDOW = 20
# TFP's rate is 0.025; a burn-in of HMC counted in gradient evaluations holds few legs.
CHEES_RATE, CHEES_SQUARED_DECAY, MAX_LEG_STEPS = 0.05, 0.95, 1000
CENTRE_LEGS = 50
# Fewer burn-in steps than this leave the metric at 1 (a window needs some draws).
MIN_METRIC_BURN_IN = 20
VARIANCE_SHRINK, VARIANCE_FLOOR = 5.0, 1e-3

# The dual averaging state, one float64 vector: count n, h_n, log eps_n, log eps_bar_n, mu.
DUAL_AVERAGING = ("count", "h", "log_step", "log_step_bar", "mu")


def dual_averaging_start(step_width):
    """The state at the start of an adaptation (or after a metric window) from width eps_0."""
    log_step = tf.math.log(tf.cast(step_width, tf.float64))
    return tf.stack([tf.constant(0.0, tf.float64), tf.constant(0.0, tf.float64), log_step, log_step,
                     log_step + tf.math.log(tf.constant(10.0, tf.float64))])


def dual_averaging_update(state, acceptance, target):
    """The state after one step with mean acceptance statistic `acceptance` (a NaN counts as 0)."""
    count, h, _, log_step_bar, mu = tf.unstack(state)
    acceptance = tf.where(tf.math.is_finite(acceptance), tf.cast(acceptance, tf.float64), 0.0)
    count = count + 1.0
    h = (1.0 - 1.0 / (count + T0)) * h + (target - acceptance) / (count + T0)
    log_step = mu - tf.sqrt(count) / GAMMA * h
    weight = count ** -KAPPA
    log_step_bar = weight * log_step + (1.0 - weight) * log_step_bar
    return tf.stack([count, h, log_step, log_step_bar, mu])


def dual_averaging_restart(state, restart, growth=1.0):
    """The state restarted where `restart` (a boolean tensor), as after a metric window: the
    width's scale has changed, so the old averages no longer apply. It starts again from the
    current width divided by `growth`, the smallest factor by which a parameter's scale grew
    (new / old): a width that fitted the old coordinates fits the new ones where that
    parameter set it; where scales shrank (growth < 1) the width grows with them, and dual
    averaging, which starts by trying widths up to ten times its start, finds it either way."""
    start = tf.exp(state[2]) / tf.cast(growth, tf.float64)
    return tf.where(restart, dual_averaging_start(start), state)


# The initial width's search (Hoffman & Gelman 2014, Algorithm 4): the state, one float64
# vector: probes made, direction (+1 doubling, -1 halving, 0 before the first probe), log of the
# width of the next probe (or the found width), 1 once found.
INITIAL_WIDTH = ("probes", "direction", "log_width", "found")
# The one-step acceptance the search crosses (the algorithm's 0.5); at most MAX_PROBES probes
# (a factor 2^30, about 1e9, from the start), then the last width is taken.
PROBE_ACCEPTANCE, MAX_PROBES = 0.5, 30


def initial_width_start(step_width):
    """The search's state before its first probe, from the user's width."""
    zero = tf.constant(0.0, tf.float64)
    return tf.stack([zero, zero, tf.math.log(tf.cast(step_width, tf.float64)), zero])


def initial_width_update(state, acceptance, go_on=True):
    """The state after a probe at width exp(log_width) with mean one-step acceptance
    `acceptance` (a NaN counts as 0): the first probe sets the direction (doubling if it
    accepted more than PROBE_ACCEPTANCE, else halving); the width doubles or halves while the
    acceptance stays on that side, and is found at the first probe that crosses (Algorithm 4,
    which returns that probe's width), after MAX_PROBES probes, or where `go_on` is false."""
    probes, direction, log_width, found = tf.unstack(state)
    acceptance = tf.where(tf.math.is_finite(acceptance), tf.cast(acceptance, tf.float64), 0.0)
    one = tf.ones_like(direction)
    direction = tf.where(tf.equal(probes, 0.0), tf.where(acceptance > PROBE_ACCEPTANCE, one, -one), direction)
    probes = probes + 1.0
    same_side = direction * (acceptance - PROBE_ACCEPTANCE) > 0.0
    again = same_side & (probes < MAX_PROBES) & go_on
    log_width = log_width + tf.where(again, direction * tf.math.log(tf.constant(2.0, tf.float64)), 0.0)
    return tf.stack([probes, direction, log_width, tf.where(again, found, one)])


def adapted_width(state, final):
    """The width to use: the current iterate during burn-in, the averaged one after (`final`,
    a boolean tensor)."""
    return tf.exp(tf.where(final, state[3], state[2]))


def metric_windows(burn_in_steps):
    """(first, ends): the metric's draws are collected at steps first < step <= ends[-1], in
    windows ending at the steps `ends` (1-based step numbers); ends is empty for short burn-ins."""
    n = int(burn_in_steps)
    if n < MIN_METRIC_BURN_IN:
        return 0, []
    initial, terminal, window = INITIAL_BUFFER, TERMINAL_BUFFER, BASE_WINDOW
    if initial + terminal + window > n:
        initial, terminal = int(0.15 * n), int(0.1 * n)
        window = n - initial - terminal
    ends, start = [], initial
    while True:
        end = start + window
        if end + 2 * window > n - terminal:  # the next window would not fit: stretch this one
            ends.append(n - terminal)
            return initial, ends
        ends.append(end)
        start, window = end, 2 * window


def window_legs(index):
    """Legs in HMC's metric window number `index` (a float tensor): 25, 50, 100, ..."""
    return BASE_WINDOW * tf.pow(tf.constant(2.0, tf.float64), index)


# The leg-length state, one float64 vector: count n, log T_n, log T_bar_n, the squared
# gradient's moving average v, and the count of leg starts in the centre.
CHEES = ("count", "log_time", "log_time_bar", "squared_gradient", "centre_count")


def chees_start(time):
    log_time = tf.math.log(tf.cast(time, tf.float64))
    zero = tf.constant(0.0, tf.float64)
    return tf.stack([zero, log_time, log_time, zero, zero])


def chees_update(state, gradient, largest_time):
    """The state after one ascent step along the ChEES gradient g in log T (finite), T kept at
    most `largest_time`."""
    count, log_time, log_time_bar, squared, centre_count = tf.unstack(state)
    count = count + 1.0
    squared = CHEES_SQUARED_DECAY * squared + (1.0 - CHEES_SQUARED_DECAY) * tf.square(gradient)
    unbiased = squared / (1.0 - tf.pow(tf.constant(CHEES_SQUARED_DECAY, tf.float64), count))
    step = CHEES_RATE * gradient / (tf.sqrt(unbiased) + 1e-300)
    log_time = tf.minimum(log_time + tf.where(unbiased > 0, step, 0.0), tf.math.log(largest_time))
    weight = count ** -KAPPA
    log_time_bar = weight * log_time + (1.0 - weight) * log_time_bar
    return tf.stack([count, log_time, log_time_bar, squared, centre_count])


def chees_restart(state, restart, shrink, longest=float("inf")):
    """Start again where `restart` (after a metric window) from T divided by `shrink`, the
    largest factor by which a parameter's scale grew: the widest direction, which sets T, is
    that much narrower in the new coordinates; and from at most `longest` (the user's T). The
    criterion is periodic in T for a Gaussian (in z, with period pi), so ascent from a T that
    fitted the old coordinates could stop at a later maximum (legs of one and a half turns and
    more, as good as the first but longer); in the new metric every parameter's scale is about
    1, so the first maximum lies near pi / 2 and ascent from at most the user's T (1 by default)
    climbs to it (on the logistic regression of tools/benchmark_adapted.py, with seed 1, T
    settled at 8.7 without this bound)."""
    count, log_time, log_time_bar, squared, centre_count = tf.unstack(state)
    zero = tf.zeros_like(count)
    log_start = tf.minimum(log_time - tf.math.log(tf.cast(shrink, tf.float64)),
                           tf.math.log(tf.cast(longest, tf.float64)))
    return tf.where(restart, tf.stack([zero, log_start, log_start, zero, centre_count]), state)


def fisher_scale(m2, gradient_m2, previous):
    """The scale s = (var theta / var beta grad U)^(1/4) from the sums of squared deviations of
    a window's draws `m2` and of their gradients times beta `gradient_m2` (same count): the
    diagonal metric that minimises the Fisher divergence (Seyboldt, Carlson & Carpenter; nutpie).
    For a Gaussian of diagonal covariance, beta grad U = Sigma^-1 (theta - mu), so the ratio is
    sigma^4 from any draws; for a correlated one it lies between the marginal and the conditional
    variance. `previous` where either variance is 0 (a parameter that did not move, or one the
    loss does not depend on) or the ratio is not finite."""
    ratio = m2 / gradient_m2
    known = tf.math.is_finite(ratio) & (ratio > 0.0)
    return tf.where(known, tf.sqrt(tf.sqrt(tf.where(known, ratio, 1.0))), tf.cast(previous, ratio.dtype))


def welford_combine(count, mean, m2, draws):
    """(count, mean, m2) after adding the rows of `draws` [n, ...] (float64) to a running count,
    mean and sum of squared deviations (Chan et al.'s pairwise combination)."""
    n = tf.cast(tf.shape(draws)[0], tf.float64)
    batch_mean = tf.reduce_mean(draws, axis=0)
    batch_m2 = tf.reduce_sum(tf.square(draws - batch_mean), axis=0)
    total = count + n
    delta = batch_mean - mean
    return total, mean + delta * n / total, m2 + batch_m2 + tf.square(delta) * count * n / total


def shrunk_scale(count, m2, previous):
    """The scale s = sqrt(variance) of the collected draws, shrunk towards VARIANCE_FLOOR times
    the previous window's variance `previous`^2 (1 at first, where this is Stan's rule). Stan
    shrinks towards 1e-3 itself, which holds a parameter of standard deviation 1e-4 (a
    coefficient of a predictor on a scale of 1000) at a scale 20 times too wide after a window
    of some thousand draws; relative to the last window, each window narrows it a thousandfold
    more until the draws' variance dominates."""
    variance = m2 / tf.maximum(count - 1.0, 1.0)
    shrunk = (count / (count + VARIANCE_SHRINK)) * variance + VARIANCE_FLOOR * tf.square(previous) * (
        VARIANCE_SHRINK / (count + VARIANCE_SHRINK))
    return tf.sqrt(shrunk)


def welford_update(state, draws):
    """Running count, mean and sum of squared deviations ([1 + 2d] float64) after adding the
    rows of `draws` [W, d] (Chan et al.'s pairwise combination)."""
    draws = tf.cast(draws, tf.float64)
    d = tf.shape(draws)[1]
    total, mean, m2 = welford_combine(state[0], state[1:1 + d], state[1 + d:], draws)
    return tf.concat([[total], mean, m2], 0)


def welford_scale(state, previous):
    """The scale s = sqrt(variance) of the collected draws, shrunk (`shrunk_scale`)."""
    d = (tf.shape(state)[0] - 1) // 2
    return shrunk_scale(state[0], state[1 + d:], previous)


# A dense metric (NUTS, RWMH, HMC1, HMC2 with metric="dense"): the draws' covariance in the same
# windows (HMC: of its legs' starts, in its windows counted in legs).
# Its Welford state, one float64 vector: count, mean [d], sum of outer products of deviations [d, d].
def dense_welford_update(state, draws):
    """The state after adding the rows of `draws` [W, d] (Chan et al.'s pairwise combination)."""
    draws = tf.cast(draws, tf.float64)
    d = tf.shape(draws)[1]
    count, mean, m2 = state[0], state[1:1 + d], tf.reshape(state[1 + d:], [d, d])
    n = tf.cast(tf.shape(draws)[0], tf.float64)
    batch_mean = tf.reduce_mean(draws, axis=0)
    centred = draws - batch_mean
    total = count + n
    delta = batch_mean - mean
    m2 = m2 + tf.matmul(centred, centred, transpose_a=True) + delta[:, None] * delta[None, :] * count * n / total
    return tf.concat([[total], mean + delta * n / total, tf.reshape(m2, [-1])], 0)


# HMC's restarts after a dense metric's window take the extreme singular values of
# L_old^-1 L_new from this many power iterations: an SVD would cost seconds of XLA compilation
# in every run for a number the restarts need only roughly.
POWER_ITERATIONS = 30


def extreme_growths(previous, cholesky):
    """(smallest, largest) singular value of M = L_old^-1 L_new (`previous` L_old and `cholesky`
    L_new, float64 [d, d] lower triangular): the least and the most a direction of the new
    coordinates z_new is stretched in the old ones (q = c_old + L_old z_old = c_new + L_new
    z_new), the dense metric's counterpart of the smallest and largest growth new s / old s
    (for diagonal factors they are the same). The largest by power iteration on M^T M from a
    fixed start, |M v| after POWER_ITERATIONS steps v <- M^T M v / |M^T M v|; the smallest as
    1 / the largest of M^-1 = L_new^-1 L_old. Each estimate approaches its value from inside."""
    d = tf.shape(cholesky)[0]
    start = tf.linspace(tf.constant(1.0, tf.float64), 2.0, d)  # not orthogonal to any axis

    def largest(matrix):
        def power_step(i, v):
            w = tf.linalg.matvec(matrix, tf.linalg.matvec(matrix, v), transpose_a=True)
            return i + 1, w / tf.norm(w)
        _, v = tf.while_loop(lambda i, v: i < POWER_ITERATIONS, power_step, (0, start / tf.norm(start)))
        return tf.norm(tf.linalg.matvec(matrix, v))

    stretch = tf.linalg.triangular_solve(previous, cholesky, lower=True)
    shrink = tf.linalg.triangular_solve(cholesky, previous, lower=True)
    return 1.0 / largest(shrink), largest(stretch)


def dense_metric(state, previous_cholesky):
    """(centre, L): the collected draws' mean and the Cholesky factor of their covariance C,
    regularised as Stan's, (n / (n + 5)) C + 1e-3 (5 / (n + 5)) D, with D the previous metric's
    variances (diag(L_prev L_prev^T) of its factor `previous_cholesky`, 1 at first, where this
    is Stan's rule) as the diagonal metric's shrinkage is relative to the last window's."""
    previous_variance = tf.reduce_sum(tf.square(previous_cholesky), axis=1)
    d = tf.shape(previous_variance)[0]
    count, mean, m2 = state[0], state[1:1 + d], tf.reshape(state[1 + d:], [d, d])
    covariance = m2 / tf.maximum(count - 1.0, 1.0)
    weight = VARIANCE_SHRINK / (count + VARIANCE_SHRINK)
    shrunk = (1.0 - weight) * covariance + tf.linalg.diag(VARIANCE_FLOOR * weight * previous_variance)
    return mean, tf.linalg.cholesky(0.5 * (shrunk + tf.transpose(shrunk)))
