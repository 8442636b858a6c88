"""Warm-up adaptation of a proposal kernel's step width and metric, during burn-in only.

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
scale these as 15% / 75% / 10%). At each window's end the variance of the window's draws,
pooled over walkers and shrunk towards 1e-3 as Stan does, becomes the squared scale s^2 of
each coordinate, and dual averaging restarts from the current width. The kernel then moves
z = theta / s, which is the same as giving the momenta the mass matrix diag(1 / s^2).

Everything here is a pure function of tensors; the kernel keeps the state in variables.
"""

import tensorflow as tf

GAMMA, T0, KAPPA = 0.1, 10.0, 0.75
INITIAL_BUFFER, TERMINAL_BUFFER, BASE_WINDOW = 75, 50, 25
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


def welford_update(state, draws):
    """Running count, mean and sum of squared deviations ([1 + 2d] float64) after adding the
    rows of `draws` [W, d] (Chan et al.'s pairwise combination)."""
    draws = tf.cast(draws, tf.float64)
    d = tf.shape(draws)[1]
    count, mean, m2 = state[0], state[1:1 + d], state[1 + d:]
    n = tf.cast(tf.shape(draws)[0], tf.float64)
    batch_mean = tf.reduce_mean(draws, axis=0)
    batch_m2 = tf.reduce_sum(tf.square(draws - batch_mean), axis=0)
    total = count + n
    delta = batch_mean - mean
    mean = mean + delta * n / total
    m2 = m2 + batch_m2 + tf.square(delta) * count * n / total
    return tf.concat([[total], mean, m2], 0)


def welford_scale(state):
    """The scale s = sqrt(variance) of the collected draws, shrunk towards VARIANCE_FLOOR."""
    count = state[0]
    d = (tf.shape(state)[0] - 1) // 2
    variance = state[1 + d:] / tf.maximum(count - 1.0, 1.0)
    shrunk = (count / (count + VARIANCE_SHRINK)) * variance + VARIANCE_FLOOR * (
        VARIANCE_SHRINK / (count + VARIANCE_SHRINK))
    return tf.sqrt(shrunk)
