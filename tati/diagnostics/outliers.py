"""Walkers that went wrong: one walker of several far from the others or from its temperature,
after burn-in (issue #41: one SGHMC walker of four at 11.6 times its equipartition energy and
loss 2388 while the run ended with exit status 0). Two checks, each walker by id:

* hot or cold (the Langevin samplers, whose momenta persist: their spec's persistent_momenta): the
  walker's average kinetic energy after burn-in against equipartition d / (2 beta). In
  equilibrium the mean of n independent readings of 2 beta K lies in a chi-square(n d) interval
  (temperature.kinetic_temperature_interval); n is the walker's rows over their integrated
  autocorrelation time, estimated from all walkers' standardised readings together (a walker's
  own estimate from a short run is too small). The interval's level is 1 - FALSE_ALARMS / W,
  Bonferroni over the W walkers: a run of healthy walkers is flagged by it alone with
  probability FALSE_ALARMS (measured: 1.3e-3 of 3000 runs of 4 walkers x 400 independent
  readings). A walker is flagged only when it is also off by more than a factor FACTOR: a bias
  every walker shares (BAOAB's kinetic energy at a large step) is the run's line's to report,
  and the factor keeps short correlated runs, whose correlation time is underestimated, from
  crying wolf (no flag in 500 runs each of autoregressive readings, rho 0.9 to 0.99, d 1 to 10).
  It needs MIN_INDEPENDENT independent readings of the walker after burn-in.
* blew up (the same samplers, a walker not hot or cold on average): its largest kinetic energy
  after burn-in above PEAK_FACTOR times the chi-square(d) quantile 2 beta K stays below at level
  1 - FALSE_ALARMS / n, n the run's readings after burn-in (all walkers): Bonferroni over single
  readings holds however they are correlated, so it needs no correlation time, and a healthy
  run reaches the quantile with probability FALSE_ALARMS. The bound scales with the walkers'
  median kinetic energy over equipartition where that is above 1: a temperature they share is
  the run's line's to report. The factor 10 leaves out the excursions of a few times
  equipartition that heavy-tailed mini-batch gradients give a healthy SGHMC walker (yacht: up
  to 6.4 times, its loss unharmed) and keeps a walker thrown out by an order of magnitude,
  whose energy then decays by friction (issue #41: SGHMC's walker 1 at 65 times equipartition
  one step after a mass rescaling and 1240 times later, a mean of 40 times but 29 independent
  readings in 200 rows, too few for the check above, and a median of 0.96 times).
* far out (every sampler): the walker's median loss after burn-in above the other walkers'
  UPPER quantile (the median over the others of each one's quantile, so that a second walker far
  out does not hide the first) by more than the typical set's width (d/2 + 4 sqrt(d/2)) / beta,
  the warm start's rule for a stuck walker (tati/adaptation/warm_start.py threshold), and by more than
  SPREADS of the others' spreads (interquartile range / 1.349, which mini-batch noise widens).
  Walkers that sample one distribution have their medians below each other's 99% quantiles; a
  margin of the typical set's whole width on top is not a statistical test but the meaning of
  "far": a walker in a region of negligible mass beside the others', stuck in a minor mode or
  thrown out by too large a step. Which of the two: a walker whose loss was among the others' (at
  or below their median of the same row, which one other walker's spike does not lift: on
  wine-quality-red's split 3 another walker's spikes, counted by their highest, placed the leaving
  at step 3410 of 3600, not at 380) in at least MIN_ROWS rows, burn-in included, and above
  them in every row since, left them at the first of those rows (wine-quality-red split 8, BAOAB
  with its defaults at 16 times the epochs: one walker's loss went from about 1,650 with the
  others to 10,111 in the last window of burn-in and was still relaxing, at 3,900, when the run
  ended); one never among them is stuck where it started.
* left the mode (every sampler after a warm start, any number of walkers; a walker not far out from
  the others): the walker's median loss
  after burn-in above the warm start's best loss by more than LOSS_RISE typical-set widths. A
  posterior's typical set lies about d / (2 beta) above its mode; a walker ten such widths above it
  has left the posterior (a 784-100-10 network on 20,000 points: the warm start's mode at loss 405,
  every walker at 7e9 from step 30 on, accuracy at chance, and only the temperatures' lines, 6% off,
  said anything: the softmax saturated at a memorising mode has almost no curvature, and the width
  and mass measured there did not hold where the walkers went).

    found = walker_outliers(result, simulation)   # [] when nothing is wrong
    for outlier in found:
        print(outlier.line())   # 'walker 2 hot: kinetic energy 191 +- 3 ...: lower step_width'

No TensorFlow here.
"""

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from tati.diagnostics.data_scale import NOTE_ABOVE, did_not_hold, measured_cure, noted as data_noted
from tati.diagnostics.momentum import integrated_autocorrelation_time
from tati.diagnostics.temperature import kinetic_temperature_interval
from tati.engine.registry import spec_of

FALSE_ALARMS = 1e-3
FACTOR = 2.0
PEAK_FACTOR = 10.0
UPPER = 0.99
SPREADS = 5.0
TAIL_SDS = 4.0  # also the warm start's threshold for a stuck walker (tati/adaptation/warm_start.py)
MIN_ROWS = 10  # a walker's loss rows after burn-in, fewer: not compared
MIN_INDEPENDENT = 50  # a walker's independent kinetic energies after burn-in, fewer: not judged
IQR_PER_SD = 1.349  # interquartile range of a normal distribution in standard deviations
LOSS_RISE = 10.0  # typical-set widths above the warm start's best loss: the walker left the posterior
# A walker blown up at a measured friction (friction_constant auto, the O step's): FRICTION_CURE times it,
# rounded up, is the cure beside a larger batch, the gradient noise's heat falling as 1 / friction. A
# 64-100-100-10 network on digits blew up at its measured 2.18 and at batch_size 128, and held at 10;
# on wine-quality-red a larger batch held where 4 times the friction did not, or overdamped a split
# whose summary then said "not converged" (doc/benchmarks.md).
FRICTION_CURE = 4.0


class Outlier(NamedTuple):
    """One finding: the walker's id; kind "hot", "cold", "blew up" (kinetic energy), "far out" or
    "left the mode" (loss); value its average kinetic energy, its largest (blew up, at `step`) or
    its median loss after burn-in (far out: `step` the one at which it left the others, 0 if it
    never was among them; left the mode: the one from which it stayed above the bound); reference
    equipartition d / (2 beta), the other walkers' UPPER quantile of the loss or the warm start's
    best loss; error the standard error of value (kinetic energy: its readings' sd over the root
    of their independent count), the bound it exceeded (blew up, left the mode) or the margin it
    exceeded (far out); fix the likely cause and the option to change."""
    walker: int
    kind: str
    value: float
    reference: float
    error: float
    fix: str = ""
    step: int = 0

    def text(self):
        """What is wrong, without the fix."""
        if self.kind == "far out":
            return (f"walker {self.walker} far out: median loss {self.value:.4g} after burn-in; "
                    f"the others' stay below {self.reference:.4g}"
                    + (f"; it left them at step {self.step}" if self.step else ""))
        if self.kind == "left the mode":
            return (f"walker {self.walker} blew up: median loss {self.value:.4g} after burn-in, above "
                    f"{self.error:.4g}, {LOSS_RISE:g} typical-set widths over the warm start's {self.reference:.4g}"
                    + (f"; it rose above at step {self.step}" if self.step else ""))
        if self.kind == "blew up":
            return (f"walker {self.walker} blew up: kinetic energy {self.value:.4g} at step {self.step}, "
                    f"{self.value / self.reference:.3g} times equipartition {self.reference:.4g}")
        return (f"walker {self.walker} {self.kind}: kinetic energy {_plus_minus(self.value, self.error)} after "
                f"burn-in, {self.value / self.reference:.3g} times equipartition {self.reference:.4g}")

    def line(self):
        return f"{self.text()}: {self.fix}" if self.fix else self.text()


def _plus_minus(value, error):
    """'59.9 +- 1.2' as the summary writes it: the error to two significant digits."""
    if not (error > 0 and math.isfinite(error)):
        return f"{value:.4g} +- {error:g}"
    decimals = max(0, 1 - math.floor(math.log10(error)))
    return f"{value:.{decimals}f} +- {error:.{decimals}f}"


def typical_set_width(dimension, inverse_temperature):
    """(d/2 + 4 sqrt(d/2)) / beta: how far above a mode's U the typical set of a d-dimensional
    Gaussian reaches (beta dU is Gamma(d/2), mean d/2, sd sqrt(d/2)); the warm start's threshold."""
    half = 0.5 * dimension
    return (half + TAIL_SDS * math.sqrt(half)) / inverse_temperature


def _after_burn_in(run_info, column, burn_in):
    """{walker id: its readings of `column` with step > burn_in, in step order}."""
    kept = run_info[run_info["step"] > burn_in].sort_values(["id", "step"], kind="stable")
    return {int(walker): group[column].to_numpy(dtype=np.float64) for walker, group in kept.groupby("id")}


def kinetic_outliers(run_info, dimension, inverse_temperature=1.0, burn_in=0, false_alarms=FALSE_ALARMS):
    """The walkers of a run-info table whose average kinetic energy after burn_in is off
    equipartition by more than FACTOR and outside its interval (module docstring), as
    Outliers "hot" or "cold"; [] without a kinetic_energy column."""
    if "kinetic_energy" not in run_info:
        return []
    expected = dimension / (2.0 * inverse_temperature)
    series = _after_burn_in(run_info, "kinetic_energy", burn_in)
    if not series or min(len(readings) for readings in series.values()) < MIN_INDEPENDENT:
        return []
    time = _correlation_time(series.values())
    level = 1.0 - false_alarms / len(series)
    found = []
    for walker, readings in series.items():
        independent = int(len(readings) / time)
        if independent < MIN_INDEPENDENT:
            continue
        mean = float(readings.mean())
        low, high = (0.5 * dimension * temperature for temperature in  # K = d T / 2
                     kinetic_temperature_interval(dimension, independent, inverse_temperature, level))
        far = mean > FACTOR * expected or mean < expected / FACTOR
        if far and not low <= mean <= high:
            error = float(readings.std(ddof=1)) / math.sqrt(independent)
            found.append(Outlier(walker, "hot" if mean > expected else "cold", mean, expected, error))
    return found


def peak_outliers(run_info, dimension, inverse_temperature=1.0, burn_in=0, false_alarms=FALSE_ALARMS):
    """The walkers whose largest kinetic energy after burn_in exceeds PEAK_FACTOR times the level
    1 - false_alarms / (all their readings) quantile of chi-square(d) / (2 beta) (module
    docstring), as Outliers "blew up" (error: that bound); [] without a kinetic_energy column."""
    if "kinetic_energy" not in run_info:
        return []
    series = _after_burn_in(run_info, "kinetic_energy", burn_in)
    readings = sum(len(values) for values in series.values())
    if not readings:
        return []
    expected = dimension / (2.0 * inverse_temperature)
    # a temperature every walker shares (mini-batch heat) is the run's line's: it scales the bound
    shared = max(1.0, float(np.median([np.nanmedian(values) for values in series.values()])) / expected)
    bound = PEAK_FACTOR * shared * stats.chi2.isf(false_alarms / readings, dimension) / (2.0 * inverse_temperature)
    steps = _after_burn_in(run_info, "step", burn_in)
    found = []
    for walker, values in series.items():
        top = int(np.argmax(np.where(np.isnan(values), np.inf, values)))
        if not values[top] <= bound:  # a NaN is above any bound
            found.append(Outlier(walker, "blew up", float(values[top]), expected, bound, step=int(steps[walker][top])))
    return found


def _correlation_time(series):
    """The integrated autocorrelation time of the walkers' readings (in rows), each walker's
    standardised and their autocorrelations pooled: walkers in equilibrium share it, and one
    walker's own estimate from a short run comes out too small (and its interval too narrow)."""
    shortest = min(len(readings) for readings in series)
    columns = [readings[-shortest:] for readings in series]
    standard = np.stack([(x - x.mean()) / x.std() if x.std() > 0 else 0.0 * x for x in columns], axis=1)
    return integrated_autocorrelation_time(standard)


def loss_outliers(run_info, dimension, inverse_temperature=1.0, burn_in=0):
    """The walkers of a run-info (or trajectory) table whose median loss after burn_in lies far
    above the other walkers' losses (module docstring), as Outliers "far out"; [] with fewer
    than two walkers or fewer than MIN_ROWS rows of a walker after burn-in."""
    losses = _after_burn_in(run_info, "loss", burn_in)
    if len(losses) < 2 or min(len(values) for values in losses.values()) < MIN_ROWS:
        return []
    median = {walker: float(np.median(values)) for walker, values in losses.items()}
    upper = {walker: float(np.quantile(values, UPPER)) for walker, values in losses.items()}
    spread = {walker: float(np.subtract(*np.quantile(values, [0.75, 0.25]))) / IQR_PER_SD
              for walker, values in losses.items()}
    width = typical_set_width(dimension, inverse_temperature)
    found = []
    for walker in losses:
        others = [other for other in losses if other != walker]
        top = float(np.median([upper[other] for other in others]))
        margin = max(width, SPREADS * float(np.median([spread[other] for other in others])))
        if median[walker] > top + margin:
            found.append(Outlier(walker, "far out", median[walker], top, margin))
    if found:  # every row, burn-in included, once for all the walkers found
        by_step = run_info.pivot_table(index="step", columns="id", values="loss")
        found = [outlier._replace(step=_left_at(by_step, outlier.walker)) for outlier in found]
    return found


def _left_at(by_step, walker):
    """The step at which the walker's loss rose above the other walkers' for good, where it was
    among them (at or below their median of the same row) in at least MIN_ROWS rows; 0 where it
    never was, or still is at the last row. by_step: the losses [steps, walker ids]."""
    among = (by_step[walker] <= by_step.drop(columns=walker).median(axis=1)).to_numpy()
    if among.sum() < MIN_ROWS or among[-1]:
        return 0
    return int(by_step.index[np.flatnonzero(among)[-1] + 1])


def mode_outliers(run_info, dimension, best, inverse_temperature=1.0, burn_in=0):
    """The walkers whose median loss after burn_in lies LOSS_RISE typical-set widths above `best`,
    the warm start's best loss (module docstring), as Outliers "left the mode" with the step from
    which their loss stayed above that bound (burn-in included)."""
    bound = best + LOSS_RISE * typical_set_width(dimension, inverse_temperature)
    losses = _after_burn_in(run_info, "loss", burn_in)
    found = [Outlier(walker, "left the mode", float(np.median(values)), best, bound)
             for walker, values in losses.items() if len(values) and np.median(values) > bound]
    by_step = run_info.pivot_table(index="step", columns="id", values="loss") if found else None
    return [outlier._replace(step=_above_from(by_step[outlier.walker], bound)) for outlier in found]


def _above_from(series, bound):
    """The first step of the last stretch of rows in which the series stays above bound; 0 where
    its last row is below it (a walker whose median is above came back at the end: sample() ended
    in an IndexError there, its run lost, on standardised digits)."""
    below = np.flatnonzero(~(series.to_numpy() > bound))
    if len(below) and below[-1] == len(series) - 1:
        return 0
    return int(series.index[below[-1] + 1 if len(below) else 0])


def walker_outliers(result, simulation, false_alarms=FALSE_ALARMS):
    """The checks on a sample() call's `result` (its run info) from `simulation` (its options,
    num_parameters, num_walkers, warm_start), each Outlier with the option that fixes it; [] without
    rows. With one walker only the warm start's check (the run's own kinetic energy line judges the
    rest)."""
    o = simulation.options
    run_info = result.run_info
    report = getattr(simulation, "warm_start", None)
    if run_info.empty:
        return []
    table = (run_info, simulation.num_parameters, o["inverse_temperature"], o["burn_in_steps"])
    found = []
    if simulation.num_walkers >= 2 and spec_of(o["sampler"]).persistent_momenta:
        found = kinetic_outliers(*table, false_alarms)
        found += [peak for peak in peak_outliers(*table, false_alarms)
                  if peak.walker not in {outlier.walker for outlier in found}]
    off = {outlier.walker for outlier in found}
    far = loss_outliers(*table) if simulation.num_walkers >= 2 else []
    found += far
    if report is not None:  # a walker far out from the others is that walker's fault, not the mode's
        found += [outlier for outlier in mode_outliers(run_info, simulation.num_parameters, float(np.min(report.losses)),
                                                       o["inverse_temperature"], o["burn_in_steps"])
                  if outlier.walker not in {x.walker for x in far}]
    warm = report is not None
    noted = data_noted(simulation)
    friction = friction_cure(simulation)
    return [outlier._replace(fix=_fix(outlier, o, outlier.walker in off, warm, noted, friction)) for outlier in found]


def friction_cure(simulation):
    """'friction_constant F' where the run measured its friction (friction_constant auto, on mini-batches)
    and it is its O step's (the sampler's fixed_friction: GLA1, GLA2, BAOAB, SGHMC): F = FRICTION_CURE
    times the friction it ended with, rounded up to 1, 2 or 5 times a power of 10; else None."""
    o, sampler = simulation.options, getattr(simulation, "sampler_made", None)
    if o.get("friction_constant") != "auto" or o.get("batch_size") is None or not getattr(sampler, "fixed_friction",
                                                                                           False):
        return None  # without mini-batches no noise heats the walkers: the width alone is at fault
    wanted = FRICTION_CURE * float(np.asarray(sampler.friction_constant))
    if not wanted > 0 or not math.isfinite(wanted):
        return None
    power = 10.0 ** math.floor(math.log10(wanted))
    return f"friction_constant {next(m * power for m in (1, 2, 5, 10) if m * power >= wanted * (1 - 1e-12)):g}"


def noise_estimator_helps(o):
    """Whether setting SGHMC's gradient_noise_estimator could cool a hot run: it corrects the heat of
    mini-batch gradients only (with the whole dataset, or a potential, it estimates zero), and only
    where none is set."""
    return ("gradient_noise_estimator" in spec_of(o["sampler"]).option_names and o["batch_size"] is not None
            and o.get("gradient_noise_estimator", "none") == "none")


def _fix(outlier, o, off, warm, noted=False, friction=None):
    """The likely cause's remedy: a walker hot, cold or far out at the wrong temperature moves
    with too large a step, as does one far out that left the others (a Langevin sampler's: a kick
    too large where it went); one far out at the right temperature is stuck where it started (or
    in a minor mode): for the adapting samplers the warm start, else another start or a longer
    burn-in. A measured width (measure_step_width) did not hold: the cure keeps it measured
    (data_scale.measured_cure), unless a note on the data (diagnostics/data_scale.py) names what
    made it too large; `friction` (friction_cure) is a second cure where the run measured its friction."""
    lower = "lower step_width"
    if outlier.kind == "left the mode":  # measured at a mode sharper than where the walkers went
        return ("warm_start false (the width and mass were measured at its mode), or "
                f"{friction or 'a smaller step_width'}" if o.get("measure_step_width") is True else lower)
    if o.get("measure_step_width") is True:  # the user gave none: a measured width was too large here
        lower = did_not_hold(measured_cure(o, friction), NOTE_ABOVE if noted else None)
    elif noise_estimator_helps(o):
        lower += ", or set gradient_noise_estimator"  # mini-batch gradients heat it; with one set, only the step
    left = outlier.kind == "far out" and outlier.step and spec_of(o["sampler"]).persistent_momenta
    if outlier.kind in ("hot", "blew up") or (outlier.kind == "far out" and off) or left:
        return lower
    if outlier.kind == "cold":
        return "lower step_width, or raise burn_in_steps"
    if spec_of(o["sampler"]).metropolis and not warm:
        return "stuck (in a minor mode?): warm_start true restarts it at the best walker's point"
    return "stuck (in a minor mode?): start it elsewhere (initial_parameters), or raise burn_in_steps"
