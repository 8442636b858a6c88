"""Is the temperature right? The summary's lines on the average kinetic energy and virial against
equipartition (batch-means error bars, tati/diagnostics/equipartition.py), the momentum test
T_0.99 and its per-layer table, each with the likely cause and the option that cures it where
it fails; "warm" where the heat is within what the measured step width allows."""

import math
from typing import NamedTuple

from tati.adaptation.width_rules import EXCESS
from tati.diagnostics.summary.lines import WIDTH
from tati.diagnostics.data_scale import NOTE_ABOVE, did_not_hold, measured_cure, noted as data_noted
from tati.diagnostics.equipartition import (batch_means, equilibrium_error, equipartition_verdict,
                                             kinetic_energy_moments, table_batch_means, walker_series)
from tati.diagnostics.momentum import momentum_test
from tati.diagnostics.outliers import noise_estimator_helps
from tati.engine.registry import spec_of

MIN_MOMENTUM_READINGS = 100
KINETIC, VIRIAL = "average kinetic energy", "average virial"
VIRIAL_IS = "theta . grad U / 2"
# A virial whose error bar is more than this fraction of d/(2 beta) is not judged: 3 standard errors
# would pass it at 60% off (heteroscedastic regression's readings: yacht's error was 40-55%).
TOO_NOISY = 0.2  # (one off by more than 3 standard errors is judged all the same)
LAYER_NAME = 20  # longer layer names are cut at the front
# where the user gave the width, for a reading hot or cold (BAOAB's stiff modes read cold at too wide a step)
GIVEN_WIDTH_HINT = "step_width may be too large, or the run too short (burn_in_steps)"


def temperature_lines(simulation, result, outliers):
    """The average kinetic energy and virial against d/(2 beta), with batch-means error bars from
    the run-info rows after burn-in (readings), then the momentum tests; not judged where one of
    the `outliers` (walker_outliers) blew up."""
    o = simulation.options
    averages, run_info = result.averages, result.run_info
    burn_in = o["burn_in_steps"]
    if averages.empty:
        return [f"  no averages yet: every row was within burn_in_steps {burn_in}"]
    last = averages.groupby("id").tail(1)
    lines = []
    noted = data_noted(simulation)  # a note on the data names why a measured width did not hold
    # HMC and NUTS draw fresh momenta at every leg (or step): equipartitioned by construction,
    # they would pass these tests whatever the chain does
    spec = spec_of(o["sampler"])
    persist = spec.persistent_momenta
    blown = _blown(outliers)
    if "average_kinetic_energy" in last and spec.redraws_momenta:
        lines.append(f"  momenta not judged: {o['sampler']} draws them afresh every "
                     f"{'step' if spec.evaluates_target else 'leg'} (equipartitioned by construction)")
    judged = {reading.name: reading for reading in readings(simulation, result, outliers)}
    if KINETIC in judged:  # not SGLD, which has no momenta
        lines += _reading_lines(judged[KINETIC], run_info, burn_in)
    if VIRIAL in judged:
        lines += _reading_lines(judged[VIRIAL], run_info, burn_in)
    elif "average_virials" in last:  # not RWMH, which takes no gradients
        lines.append(f"  {VIRIAL} {last['average_virials'].mean():.4g} ({VIRIAL_IS}; equals d/(2 beta) only if U "
                     "confines theta)")
    if persist and "kinetic_energy" in run_info and (run_info["step"] > burn_in).any():
        lines += [f"  momentum test not judged: {blown}"] if blown else _momentum_lines(
            result, o, simulation.num_parameters, noted)
        if getattr(result, "momenta", None) is not None and not result.momenta.empty:  # record_momenta
            lines += _layer_lines(result, o, noted)
    return lines


def _blown(outliers):
    """"walker 1 blew up" ("walkers 1, 3 ..."), or "" where none did: a walker that blew up spans
    every error bar, so "consistent" or "warm" would mean nothing (the walker lines say why)."""
    blown = sorted({x.walker for x in outliers if x.kind == "blew up"})  # only walkers whose momenta persist
    return f"walker{'s' if len(blown) > 1 else ''} {', '.join(map(str, blown))} blew up" if blown else ""


def _noise_heat(o):
    """The kinetic temperature's relative excess that measure_step_width's width allows from the
    mini-batch gradient noise (tati/adaptation/measured_width.py); 0 where it did not measure."""
    if o.get("measure_step_width") is not True or o.get("batch_size") is None:
        return 0.0
    return EXCESS


def _warm(heat):
    return f"warm: within the {heat:.0%} heat from the gradient noise that the measured step_width allows"


def _warm_fraction(dof, heat, quantile=0.99):
    """T_0.99 of chi-square(dof) momenta at temperature 1 + heat: the least the allowed noise heat gives."""
    from scipy import stats
    return float(stats.chi2.cdf(stats.chi2.ppf(quantile, dof) / (1.0 + heat), dof))


def _measured_hint(o, noted):
    """Where the width was measured (the user gave none), what to do when it did not hold: the
    note on the data, if there is one, names the cause; else a smaller width or a longer burn-in.
    None where the user gave the width."""
    if o.get("measure_step_width") is not True:
        return None
    return did_not_hold(measured_cure(o, "more burn_in_steps"), NOTE_ABOVE if noted else None)


def _kinetic_hint(o, noted=False, cold=False):
    """The likely causes of a kinetic energy off equipartition, and what fixes each. Below it (cold)
    the gradient noise, which only heats, is not the cause (_cold_cure): BAOAB's stiff modes' momenta
    read cold at too wide a step (variance 1 - h^2 omega^2 / 4), or the run is too short."""
    if cold:
        return "too cold: " + _cold_cure(o)
    measured = _measured_hint(o, noted)
    if measured is not None:
        return measured
    if noise_estimator_helps(o):  # mini-batch gradients heat SGHMC unless it estimates their noise
        return "step_width too large, gradient_noise_estimator unset, or the run too short (burn_in_steps)"
    return GIVEN_WIDTH_HINT


def _cold_cure(o):
    """What to do where the momenta read cold: a measured width sits at a quarter of the stability
    bound, so only a longer run helps; a given one may be too wide for BAOAB's stiff modes."""
    if o.get("measure_step_width") is True:
        return "run longer (burn_in_steps)"
    return GIVEN_WIDTH_HINT


def _momentum_lines(result, o, dof, noted=False):
    """T_0.99 of the momenta from the kinetic energies (chi-square(d) of 2 beta K), with its
    99% Clopper-Pearson interval over the independent readings; none below 100 readings, where
    one reading in a hundred is expected outside and the test has no power."""
    test = momentum_test(result.run_info, dof, o["inverse_temperature"], o["burn_in_steps"])
    if test["readings"] < MIN_MOMENTUM_READINGS:  # the line about too few rows is already there
        return []
    head = (f"  momentum test T_0.99 {test['fraction']:.4f} in [{test['low']:.4f}, {test['high']:.4f}] "
            f"({test['readings']} readings of chi-square({dof}))")
    if test["low"] <= 0.99 <= test["high"]:
        return [f"{head}: consistent"]
    heat = _noise_heat(o)
    if heat and _warm_fraction(dof, heat) <= test["high"] < 0.99:
        return [head, f"    {_warm(heat)}"]
    if test["high"] < 0.99:
        measured = _measured_hint(o, noted)
        hint = "momenta too hot (too few inside): " + (measured or "lower step_width")
        if measured is None and noise_estimator_helps(o):
            hint += ", or set gradient_noise_estimator"
    else:
        hint = "momenta too cold: " + _cold_cure(o)  # too many inside T_0.99
    return [head, f"    {hint}"]


def _layer_lines(result, o, noted=False):
    """The momentum diagnostics per weight and bias tensor (record_momenta), a row each and one
    for the whole vector: T_0.99 and the kinetic temperature with their 99% intervals and a
    verdict, the configurational temperature q . grad U / d with its standard error (no
    verdict: it is 1 / beta only where exp(-beta U) confines theta)."""
    table = result.layer_temperatures(o["inverse_temperature"], o["burn_in_steps"])
    readings = int(table["readings"].iloc[0])
    if readings < MIN_MOMENTUM_READINGS:
        return [f"  momenta per layer: only {readings} independent readings after burn-in (run longer)"]
    width = min(LAYER_NAME, max(len(str(name)) for name in table.index))
    lines = [f"  momenta per layer, {readings} readings, at 99% (config. T = q . grad U / d, 1/beta if U confines)",
             f"    {'':<{width}} {'dof':>5}  {'T_0.99':<29}{'kinetic T':<26}config. T"]
    verdicts, heat = set(), _noise_heat(o)
    for name, row in table.iterrows():
        name = str(name) if len(str(name)) <= width else "..." + str(name)[3 - width:]
        fraction = _verdict(0.99, row["low"], row["high"])  # the fraction's interval holds 0.99?
        kinetic = _verdict(row["kinetic_temperature"], row["kinetic_low"], row["kinetic_high"])  # at 1/beta
        if heat:  # hot by no more than the measured width allows: warm
            beta = o["inverse_temperature"]
            fraction = "warm" if fraction == "hot" and row["high"] >= _warm_fraction(row["dof"], heat) else fraction
            kinetic = "warm" if kinetic == "hot" and row["kinetic_temperature"] <= row["kinetic_high"] + heat / beta \
                else kinetic
        verdicts |= {fraction, kinetic}
        t = f"{row['fraction']:.4f} [{row['low']:.4f}, {row['high']:.4f}] {fraction}"
        k = f"{row['kinetic_temperature']:.3f} [{row['kinetic_low']:.3f}, {row['kinetic_high']:.3f}] {kinetic}"
        c = _plus_minus(row["configurational_temperature"], row["configurational_error"])
        lines.append(f"    {name:<{width}} {int(row['dof']):>5}  {t:<29}{k:<26}{c}")
    if "hot" in verdicts:
        measured = _measured_hint(o, noted)
        lines.append("    momenta too hot in some layer: " + (measured or "lower step_width" + (
            ", or set gradient_noise_estimator" if noise_estimator_helps(o) else "")))
    elif "cold" in verdicts:
        lines.append("    momenta too cold in some layer: " + _cold_cure(o))
    elif "warm" in verdicts:
        lines.append(f"    {_warm(heat)}")
    return lines


def _verdict(value, low, high):
    """"ok" if value lies in [low, high], "hot" above (too few momenta inside the quantile, or a
    kinetic temperature above its interval), "cold" below."""
    return "ok" if low <= value <= high else "hot" if value > high else "cold"


class Reading(NamedTuple):
    """An average after burn-in, the kinetic energy's or the virial's, against d/(2 beta): the
    summary's line and Python's warning read the same verdict."""
    name: str  # KINETIC or VIRIAL
    value: float
    stats: object  # batch_means' (mean, error, batches); None: too few rows for an error bar
    expected: float
    reference: str  # what the value is compared with, as the line says it
    hint: str  # the cure where it is off
    heat: float  # the relative excess a measured width allows (_noise_heat)
    skipped: str = ""  # why it is not judged ("walker 1 blew up"); "" where it is

    @property
    def noisy(self):
        """A virial within SIGMAS standard errors of d/(2 beta) whose error bar is above TOO_NOISY of
        it: "consistent" would say nothing (a virial off by more is off, however wide its bar). The
        kinetic energy's readings are chi-square: a wide error bar there is the walkers
        disagreeing, which is a finding."""
        return (self.name == VIRIAL and self.stats is not None and self.stats[1] > TOO_NOISY * self.expected
                and equipartition_verdict(self.value, self.stats[1], self.expected) == "consistent")

    @property
    def verdict(self):
        """None where not judged (skipped, no error bar, too noisy); "consistent" within SIGMAS standard
        errors of d/(2 beta); "warm" above it but within SIGMAS of d/(2 beta) (1 + heat), the noise
        heat the measured width allows (which a smaller width would give up); else "hot" or "cold"."""
        if self.skipped or self.stats is None or self.noisy:
            return None
        error, warmest = self.stats[1], self.expected * (1 + self.heat)
        if equipartition_verdict(self.value, error, self.expected) == "consistent":
            return "consistent"
        if self.heat and self.value > self.expected and \
                equipartition_verdict(max(self.value, warmest), error, warmest) == "consistent":
            return "warm"
        return "hot" if self.value > self.expected else "cold"

    def warning(self):
        """Python's one line for a hot reading."""
        return (f"the {self.name} reads hot, {self.value / self.expected:.2f} times d/(2 beta) "
                f"({equipartition_verdict(self.value, self.stats[1], self.expected)}): {self.hint}")


def readings(simulation, result, outliers):
    """The Readings the summary judges: the kinetic energy where momenta persist (the Langevin
    samplers), the virial where exp(-beta U) confines theta (confines); skipped where one of the
    `outliers` blew up, whose readings span every error bar."""
    o, averages, run_info = simulation.options, result.averages, result.run_info
    if averages.empty:
        return []
    expected = simulation.num_parameters / (2.0 * o["inverse_temperature"])
    burn_in, heat, noted = o["burn_in_steps"], _noise_heat(o), data_noted(simulation)
    # The averages table's last row per walker: the average over every step after burn-in of
    # the whole run (earlier calls included), its walkers' mean compared. Its error bar comes
    # from this call's rows, every every_nth step: if anything too large for that average.
    last = averages.groupby("id").tail(1)
    skipped = _blown(outliers)
    found = []
    if "average_kinetic_energy" in last and spec_of(o["sampler"]).persistent_momenta:
        value = last["average_kinetic_energy"].mean()
        series = walker_series(run_info, "kinetic_energy", burn_in)
        stats = batch_means(series)
        if stats is not None:  # at least equilibrium's error bar: batches shorter than tau understate it
            variance = kinetic_energy_moments(simulation.num_parameters, o["inverse_temperature"])[1]
            stats = (stats[0], max(stats[1], equilibrium_error(series, variance)), stats[2])
        found.append(Reading(KINETIC, value, stats, expected,
                             f"equipartition d/(2 beta) = {expected:.4g}",
                             _kinetic_hint(o, noted, cold=value < expected), heat, skipped))
    if "average_virials" in last and confines(o):
        value = last["average_virials"].mean()
        found.append(Reading(VIRIAL, value, table_batch_means(run_info, "virial", burn_in), expected,
                             f"{VIRIAL_IS}; virial theorem: d/(2 beta) = {expected:.4g}",
                             _virial_hint(o, noted, cold=value < expected, outward=value < 0.0), heat, skipped))
    return found


def hot_readings(simulation, result, outliers):
    """The Readings that read hot (not warm): Python's warning names them. Cold ones are left to
    the summary: BAOAB's kinetic energy reads cold at a wide step with its positions exact (the
    README's Gaussian), and a virial reads cold while the positions still spread (run longer)."""
    return [reading for reading in readings(simulation, result, outliers) if reading.verdict == "hot"]


def _reading_lines(reading, run_info, burn_in):
    """A Reading's line, with its verdict, and the hint where it is off."""
    r = reading
    if r.skipped:
        return [f"  {r.name} {r.value:.4g} ({r.reference}: not judged, {r.skipped})"]
    if r.stats is None:
        return [f"  {r.name} {r.value:.4g} ({r.reference})", _too_few(run_info, burn_in)]
    head = f"  {r.name} {_plus_minus(r.value, r.stats[1])} ({r.reference}"
    if r.noisy:
        return [f"{head})", f"    too noisy to judge: its error bar is {r.stats[1] / r.expected:.0%} of d/(2 beta)"]
    if r.verdict == "warm":  # says so instead of "lower step_width", which the measurement chose
        return [f"{head}: {r.value / r.expected - 1:.1%} above)", f"    {_warm(r.heat)}"]
    verdict = equipartition_verdict(r.value, r.stats[1], r.expected)
    if verdict == "consistent":
        return [f"{head}: {verdict})"]
    if len(head) + len(verdict) + 3 < WIDTH:
        return [f"{head}: {verdict})", f"    {r.hint}"]
    if len(verdict) + len(r.hint) + 6 < WIDTH:
        return [f"{head})", f"    {verdict}: {r.hint}"]
    return [f"{head})", f"    {verdict}:", f"    {r.hint}"]


def confines(o):
    """Whether exp(-beta U) confines theta, so that the virial theorem holds: a potential, walls on every
    parameter, or a likelihood with prior_standard_deviation (the Gaussian prior then covers every
    parameter, and the data's negative log-likelihood is bounded below). A network's loss alone
    does not (its weights can grow along flat directions). A mini-batch's reading is unbiased."""
    walls = o["prior_lower_boundary"] is not None and o["prior_upper_boundary"] is not None
    posterior = o.get("likelihood", "none") != "none" and o.get("prior_standard_deviation") is not None
    return o["potential"] is not None or walls or posterior


def _virial_hint(o, noted, cold, outward=False):
    """The cure of a virial off d/(2 beta). A Metropolis-corrected chain is exact at any width, so
    only its length can be at fault; a Langevin sampler's width or its gradient noise heats it, and
    a cold one has not yet spread from its start. A user's potential may also not confine; one
    whose virial is negative (off, below 0) falls outward: the average of theta . grad U is
    d / beta for any normalisable exp(-beta U) (integration by parts), so U is likely log p."""
    if outward and o["potential"] is not None:
        return "negative, U falls outward (no distribution): potential returns U = -log p, not log p"
    if spec_of(o["sampler"]).metropolis:
        hint = "run longer (max_steps, burn_in_steps)"
    elif cold:
        hint = "too cold: run longer (burn_in_steps)" + (
            "" if o.get("measure_step_width") is True else ", or raise step_width")
    else:
        hint = _kinetic_hint(o, noted)
    return hint + (", or U not confining" if o["potential"] is not None else "")


def _too_few(run_info, burn_in):
    rows = int((run_info["step"] > burn_in).sum())
    return f"    only {rows} row{'' if rows == 1 else 's'} after burn-in: too few for an error bar (run longer)"


def _plus_minus(value, error):
    """'16.3 +- 0.4': the error to two significant digits, the value to the same decimals."""
    if not (error > 0 and math.isfinite(error)):
        return f"{value:.4g} +- {error:g}"
    decimals = max(0, 1 - math.floor(math.log10(error)))
    return f"{value:.{decimals}f} +- {error:.{decimals}f}"
