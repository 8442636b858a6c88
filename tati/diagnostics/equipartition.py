"""The error bar of a time average, and whether it agrees with equipartition.

In equilibrium at inverse temperature beta the kinetic energy of d degrees of freedom,
T = 1/2 |p|^2 (any mass), is beta^-1 chi^2(d) / 2: mean d / (2 beta), variance d / (2 beta^2).
The virial 1/2 q . grad U has the same mean for a density exp(-beta U) that confines q
(doc/columns.md). A run's readings of either are correlated in time, so the standard error of
their average is not sd / sqrt(n); here it comes from batch means:

* each walker's readings after burn-in, in step order, are cut into batches of b consecutive
  readings, b = n // floor(sqrt(n)) with n the shortest walker's count, so that this walker
  has floor(sqrt(n)) batches (Flegal and Jones 2010); a walker's earliest readings that do not
  fill a batch are dropped;
* once b is well beyond the correlation time of the readings, the batch means are nearly
  independent draws of one distribution; the batches of all walkers are pooled (walkers are
  independent), and the standard error of the grand mean is sd(batch means) / sqrt(batches).
  A walker whose level differs from the others' widens that sd, as it should.

The estimate is too small when b is not far beyond the correlation time (a stiff oscillator's
kinetic energy at friction 1, 800 rows: batches of 28 against a correlation time of 50 read a
healthy run hot in 2 seeds of 30). Batches of 5 correlation times were tried and not kept: a
run 3.4 times too hot, whose readings drift, then read "consistent" (29.2 +- 8.0 against 8.5,
doc/benchmarks.md). The kinetic energy's error bar is instead at least the one equilibrium
would give, sqrt(d / (2 beta^2) tau / n) with tau the readings' correlation time
(`equilibrium_error`): the variance in equilibrium is known, so a drift, which widens the batch
means' spread, does not widen this floor, and a slow equilibrium, which batches too short make
look precise, is held to its own. The readings of a table are every `every_nth` step, so for
the average over every step (the averages table) it is, if anything, too large.

    mean, error, batches = batch_means(kinetic_by_walker)
    equipartition_verdict(16.3, 0.4, 16.5)   # 'consistent'

No TensorFlow here.
"""

import math

import numpy as np

# Fewer readings (all walkers together) or batches than these give no error bar: with fewer than
# 10 batches the estimated error is itself uncertain by more than a quarter.
MIN_READINGS = 20
MIN_BATCHES = 10
# A deviation of more than this many standard errors is reported. For a normal estimate that is
# a false alarm in 0.3% of honest runs (about 1% with the fewest batches, Student-t with 9 dof).
SIGMAS = 3.0
WINDOW = 5  # Sokal's window (as emcee's): the smallest M with M >= WINDOW tau(M)


def integrated_autocorrelation_time(series):
    """tau = 1 + 2 sum rho_k of a series ([n] or [n, chains], chains independent and pooled): the
    larger of two standard sums, each of which stops early on its own kind of series. Geyer's
    initial positive sequence (pairs of lags while their sum is positive), whose theory is a
    reversible chain's, stops at the first trough where rho swings: a stiff mode's kinetic energy at
    low friction swings at twice its frequency while it decays over 1 / gamma (tau 4 for 50).
    Sokal's window (the smallest M with M >= WINDOW tau(M)) stops at a few times the fast part's tau,
    before a slow tail (a network's kinetic energy, coupled to its positions: 260 readings against
    Geyer's 136). The larger undercounts neither."""
    x = np.asarray(series, dtype=np.float64)
    x = x.reshape(len(x), -1)
    n = len(x)
    if n < 4:
        return 1.0
    x = x - x.mean(axis=0)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(x, size, axis=0)
    covariance = np.fft.irfft(spectrum * np.conj(spectrum), size, axis=0)[:n].mean(axis=1) / n
    if covariance[0] <= 0:
        return 1.0
    rho = covariance / covariance[0]
    pairs = rho[:n - n % 2].reshape(-1, 2).sum(axis=1)
    stop = np.nonzero(pairs <= 0)[0]
    geyer = -1.0 + 2.0 * float(pairs[:stop[0] if len(stop) else len(pairs)].sum())
    taus = 2.0 * np.cumsum(rho) - 1.0  # tau(M) = 1 + 2 sum_{k=1}^{M} rho_k
    short = np.arange(len(taus)) < WINDOW * taus
    sokal = float(taus[np.argmin(short) if not short.all() else len(taus) - 1])
    return max(1.0, geyer, sokal)


def batch_means(series):
    """(mean, standard_error, batches) of the readings `series` (one 1-D sequence per walker,
    each in step order), pooled over walkers by batch means (see the module docstring);
    None if there are fewer than MIN_READINGS readings or MIN_BATCHES batches."""
    series = _finite(series)
    if not series or sum(len(s) for s in series) < MIN_READINGS:
        return None
    shortest = min(len(s) for s in series)
    size = shortest // math.isqrt(shortest)  # about sqrt(n) batches of about sqrt(n) readings
    means = np.concatenate([s[len(s) % size:].reshape(-1, size).mean(axis=1) for s in series])
    if len(means) < MIN_BATCHES:
        return None
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(len(means))), len(means)


def _finite(series):
    """Each walker's readings as a float64 vector without its non-finite ones; walkers left
    without a reading dropped."""
    finite = (s[np.isfinite(s)] for s in (np.asarray(s, dtype=np.float64).ravel() for s in series))
    return [s for s in finite if len(s)]


def walker_series(table, column, burn_in=0):
    """`column` of a run-info table (columns id, step, column) over the rows with step > burn_in,
    one series per walker in step order; none if the column is missing."""
    if column not in table or table.empty:
        return []
    kept = table[table["step"] > burn_in].sort_values(["id", "step"], kind="stable")
    return [group[column].to_numpy() for _, group in kept.groupby("id")]


def table_batch_means(table, column, burn_in=0):
    """batch_means of `column` of a run-info table over the rows with step > burn_in (walker_series);
    None as batch_means, or if the column is missing."""
    return batch_means(walker_series(table, column, burn_in))


def equilibrium_error(series, variance):
    """The standard error of the mean of the readings `series` (one 1-D sequence per walker) were
    they in equilibrium with `variance` per reading: sqrt(variance tau / n), n the readings, tau
    their correlation time (the walkers' last readings, as many as the shortest has, as chains)."""
    series = _finite(series)
    if not series:
        return 0.0
    shortest = min(len(s) for s in series)
    tau = integrated_autocorrelation_time(np.stack([s[len(s) - shortest:] for s in series], axis=1))
    return math.sqrt(variance * tau / sum(len(s) for s in series))


def deviation(value, error, expected):
    """(value - expected) in standard errors; inf if error is 0 and value differs."""
    if error > 0:
        return (value - expected) / error
    return 0.0 if value == expected else math.copysign(math.inf, value - expected)


def equipartition_verdict(value, error, expected):
    """'consistent' if `value` is within SIGMAS standard errors `error` of `expected`, else
    'off by X standard errors'."""
    z = deviation(value, error, expected)
    if abs(z) <= SIGMAS:
        return "consistent"
    return f"off by {abs(z):.1f} standard errors" if math.isfinite(z) else "off"


def kinetic_energy_moments(dof, inverse_temperature=1.0):
    """(mean, variance) of the kinetic energy of `dof` degrees of freedom in equilibrium."""
    return dof / (2.0 * inverse_temperature), dof / (2.0 * inverse_temperature ** 2)
