"""The summary the tools print at the end of a run: what ran, how long it took, where it ended,
whether the sampling looks right, and which files hold the tables. For example:

    tati-sample: 5000 steps of BAOAB (step_width 0.05) at inverse temperature 1
      model: network 2-8-1 (33 parameters: hidden layer of 8 relu, output 1 tanh) on two_clusters
      took 6.59 s: 759 steps per second (includes compiling the loop)
      first step after 1.37 s (tracing 0.612 s, compiling 0.301 s)
      loop: graph mode (auto: 5000 gradient steps on a network; XLA pays from 10000)
      final loss 2, accuracy 0.5000
      average kinetic energy 16.41 +- 0.23 (equipartition d/(2 beta) = 16.5: consistent)
      average virial -0.005605 (theta . grad U / 2; equals d/(2 beta) only if U confines theta)
      wrote run info to run.csv, trajectory to trajectory.csv, averages to averages.csv

The error bars are batch means over the run-info rows after burn-in, pooled over walkers
(tati/diagnostics/equipartition.py); with several walkers a line names each walker hot, cold
or far out from the others (tati/diagnostics/outliers.py); the R-hat and ESS line comes from
tati/diagnostics/convergence.py, the only part that imports TensorFlow (Probability).
"""

import math

import numpy as np

from tati.engine.clock import duration
from tati.diagnostics.data_scale import NOTE_ABOVE, did_not_hold, measured_cure, noted as data_noted
from tati.diagnostics.equipartition import equipartition_verdict, table_batch_means
from tati.diagnostics.momentum import momentum_test
from tati.diagnostics.outliers import walker_outliers
from tati.engine.contract import LEGS, Spec
from tati.engine.registry import optimizer_spec, spec_of, target_acceptance

# Stan's rule (Vehtari et al. 2021, "Rank-normalization, folding, and localization"): use the
# draws when R-hat < 1.01 and the bulk ESS is above 100 per chain. Our ESS is of all walkers
# together (tfp's cross-chain estimate), so its bound is 100 times the number of walkers.
R_HAT_MAX = 1.01
ESS_PER_WALKER = 100
# HMC rejecting more than half of its legs wastes most of its gradient evaluations (the optimal
# acceptance rate of HMC is about 0.65, Beskos et al. 2013).
REJECTION_MAX = 0.5
# NUTS and RWMH after burn-in (Stan's warnings): divergent transitions bias the draws, NUTS
# trajectories cut at max_tree_depth explore slowly, and a width adapted a thousand times
# below where it started means some direction of the posterior is that much narrower (and a
# thousand times above, that the target may not be normalisable).
DIVERGENT_MAX = 0.01
MAX_DEPTH_MAX = 0.1
WIDTH_FLOOR = 1e-3
WIDTH = 100  # every line is shorter
MIN_MOMENTUM_READINGS = 100
LAYER_NAME = 20  # longer layer names are cut at the front
FILES = (("run_file", "run info"), ("trajectory_file", "trajectory"), ("averages_file", "averages"),
         ("momenta_file", "momenta"))


def summarise(prog, simulation, result, sampler, seconds=None):
    """The summary lines of a sample() (sampler=True) or fit() (sampler=False) call that gave
    `result`, as one string; `seconds` is the call's wall time (no timing line if None)."""
    o = simulation.options
    walkers = simulation.num_walkers
    run_info = result.run_info
    spec = spec_of(o["sampler"])  # its flags say which lines apply (tati/engine/contract.py)
    proposal = sampler and spec.evaluates_target
    legs = sampler and spec.kind == LEGS
    steps = _steps(o, run_info, legs)
    width = _adapted_width(o, run_info) if sampler else None
    measured = getattr(simulation, "measured_width", None) if sampler else None
    followed = _followed_widths(simulation) if sampler else ()
    if measured is not None:
        width = followed[-1] if len(followed) else measured.width
    lines = [_header(prog, o, steps, walkers, sampler, width), "  " + _model(simulation)]
    if seconds is not None:
        lines.append(_timing(seconds, steps, walkers, _first_call(o, run_info)))
    if getattr(result, "first_step", None) is not None:
        lines.append("  " + result.first_step.line())
    if getattr(result, "compilation", None) is not None:
        lines.append("  " + result.compilation.line())
    if run_info.empty:  # HMC writes rows at the ends of legs only; none ended in this call
        lines.append(f"  no leg ended in these {o['max_steps']} steps, so no row was written")
        return "\n".join(lines + [_files(o)])
    lines.append(_final(run_info, walkers))
    if sampler and getattr(simulation, "warm_start", None) is not None:
        lines.append("  " + simulation.warm_start.line())
    lines += ["  " + line for line in getattr(simulation, "notes", ())]
    if measured is not None:
        lines.append("  " + measured.line())
    if len(followed):
        lines.append(f"  step_width measured again with each new mass: {_listed(followed)} (the last is the run's)")
        frictions = simulation.sampler.followed_frictions()
        if len(frictions):
            lines.append(f"  friction_constant measured with each: {_listed(frictions)}")
    if sampler and not legs and not proposal and getattr(getattr(simulation, "sampler", None), "adapt_mass", False):
        lines.append(_langevin_mass_line(simulation.sampler))
    broken = ~np.isfinite(run_info["loss"].to_numpy(dtype=float))
    if broken.any():  # on_nan=continue ran on where U is not defined: no average or test means anything
        first = run_info.loc[broken, ["step", "id"]].iloc[0]
        lines.append(f"  {broken.sum()} of {len(broken)} rows have a NaN or infinite loss, the first at step "
                     f"{int(first['step'])} (walker {int(first['id'])}), so the averages are not judged: "
                     f"lower {'step_width' if sampler else 'learning_rate'}")
        return "\n".join(lines + [_files(o)])
    no_metric = False
    if sampler:
        outliers = walker_outliers(result, simulation)  # [] with one walker
        lines += _temperature_lines(simulation, result, outliers)
        if proposal:
            lines += _kernel_lines(o, run_info)
        elif legs:
            adapted = o["adapt_step_width"] and o["burn_in_steps"] > 0
            no_metric = o["burn_in_steps"] > 0 and _metric_missing(simulation.sampler)
            lines += _hmc_lines(run_info, NO_METRIC_HINT if no_metric else
                                "raise target_acceptance_rate" if adapted else "lower step_width")
            if o["burn_in_steps"] > 0:
                lines += _hmc_adaptation_lines(o, simulation.sampler, run_info, walkers)
        if walkers >= 2:
            lines += _outlier_lines(outliers)
            # an adapted or measured width is already the largest its bounds allow: only length helps
            measured = o.get("measure_step_width") is True
            hint = ("run longer (max_steps, burn_in_steps)" if proposal or measured else
                    NO_METRIC_HINT if no_metric else None)
            lines += _convergence_lines(result.trajectory, walkers, o["burn_in_steps"], hint,
                                        _identified(o, getattr(result, "parameter_groups", None)))
        else:  # the tests above see one mode's equilibrium as well as the whole target's
            lines.append("  mixing not checked with one walker: number_walkers 4 compares walkers (R-hat)")
    lines.append(_files(o))
    return "\n".join(lines)


# -- what ran -----------------------------------------------------------------------------------
def _steps(o, run_info, legs):
    """The steps this call made: max_steps, unless the rows show fewer (they end at the call's
    last step, except those of a sampler with legs, which end at evaluations)."""
    if not legs and not run_info.empty:
        return min(o["max_steps"], int(run_info["step"].max()))
    return o["max_steps"]


def _first_call(o, run_info):
    """Whether the rows start a run, whose first chunk includes tracing and compiling the loop:
    a row at step 1 (HMC's initial state) or within the first every_nth steps."""
    return not run_info.empty and int(run_info["step"].min()) <= o["every_nth"]


def _adapted_width(o, run_info):
    """The step width that burn-in adapted (HMC, NUTS, RWMH with adapt_step_width and
    burn_in_steps), as of the call's last row; None where it did not adapt or no row shows it."""
    adapts = spec_of(o["sampler"]).metropolis and o["adapt_step_width"] and o["burn_in_steps"] > 0
    if not adapts or "step_width" not in run_info or run_info.empty:
        return None
    return float(run_info["step_width"].iloc[-1])


def _header(prog, o, steps, walkers, sampler, width=None):
    """The first line: what ran; `width` the step width burn-in adapted, if any."""
    tail = f", {walkers} walkers" if walkers > 1 else ""
    if sampler:
        return _sampler_header(prog, o, steps, tail, width)
    return f"{prog}: {_optimizer_header(o, steps)}{tail}"


def _optimizer_header(o, steps):
    """What fit() ran, as its spec's summary_header says (a Keras optimizer: the default's)."""
    spec = optimizer_spec(o["optimizer"])
    header = Spec.summary_header if spec is None else spec.summary_header
    rate = o["learning_rate"]
    return header.format(steps=steps, name=o["optimizer"] if spec is None else spec.name, optimizer=o["optimizer"],
                         learning_rate=_schedule(o), first_learning_rate=f"{rate:g}" if isinstance(rate, float) else "",
                         stopped=" (converged or stopped early)" if steps < o["max_steps"] else "")


def _sampler_header(prog, o, steps, tail, width):
    """An adapted width with its start where the line has room (the lines below give it too)."""
    def line(shown):
        beta = o["inverse_temperature"]
        return f"{prog}: {steps} steps of {o['sampler']} ({shown}) at inverse temperature {beta:g}{tail}"
    if width is None:
        return line(f"step_width {o['step_width']:g}")
    if o.get("measure_step_width") is True:  # set once from the start (tati/adaptation/measured_width.py)
        return line(f"step_width {width:.3g}, measured")
    full = line(f"step_width {width:.3g}, adapted from {o['step_width']:g}")
    return full if len(full) < WIDTH else line(f"step_width {width:.3g}, adapted")


def _schedule(o):
    """fit()'s learning rate as the header shows it: the number, with its schedule if any."""
    if not isinstance(o["learning_rate"], float):  # a Keras schedule given in Python
        return f"from a {type(o['learning_rate']).__name__}"
    rate = f"{o['learning_rate']:g}"
    if o["learning_rate_decay_rate"] is not None:
        return f"{rate}, times {o['learning_rate_decay_rate']:g} every {o['learning_rate_decay_steps']} steps"
    if o["learning_rate_cycle_steps"] is not None:
        low = o["learning_rate_cycle_minimum"]
        low = f"{low:g}" if low is not None else f"{o['learning_rate'] / 10:g}"
        return f"{rate} down to {low} in cycles of {o['learning_rate_cycle_steps']} steps"
    return rate


def _model(simulation):
    o = simulation.options
    d = simulation.num_parameters
    if o["potential"] is not None:
        return f"model: potential U(theta) of {_count(d)}"
    if o["model"] is not None:
        return f"model: Keras model ({_count(d)})"
    inputs = getattr(simulation, "network_inputs", o["input_dimension"])  # input_columns' terms
    widths = [inputs, *o["hidden_dimension"], o["output_dimension"]]
    total = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    count = _count(d) if d == total else f"{d} free of {total} parameters"
    hidden = o["hidden_dimension"]
    layers = ([f"hidden layer{'s' if len(hidden) > 1 else ''} of {', '.join(map(str, hidden))} "
               f"{o['hidden_activation']}"] if hidden else []) + [f"output {widths[-1]} {o['output_activation']}"]
    line = f"model: network {'-'.join(map(str, widths))} ({count}: {', '.join(layers)})"
    data = _data(o)
    return line + f" on {data}" if data and len(line) + len(data) < 92 else line


def _count(d):
    return f"{d} parameter{'s' if d != 1 else ''}"


def _data(o):
    if o["batch_data_files"]:
        return ", ".join(o["batch_data_files"])
    if isinstance(o["dataset"], tuple):
        return f"{len(o['dataset'][0])} given points"
    return o["dataset"] or "two_clusters"


def _timing(seconds, steps, walkers, compiled):
    rate = steps / seconds if seconds > 0 else math.inf
    notes = ([f"each step moves all {walkers} walkers"] if walkers > 1 else []) + (
        ["includes compiling the loop"] if compiled else [])
    rate = f"{rate:.0f}" if rate >= 100 else f"{rate:.3g}"
    return f"  took {duration(seconds)}: {rate} steps per second" + (f" ({'; '.join(notes)})" if notes else "")


# -- where it ended -------------------------------------------------------------------------------
def _final(run_info, walkers):
    last = run_info.groupby("id").tail(1)
    text = f"  final loss {last['loss'].mean():.6g}"
    if "accuracy" in last:
        text += f", accuracy {last['accuracy'].mean():.4f}"
    if walkers > 1:
        text += (f" (mean of the {len(last)} walkers; loss {last['loss'].min():.4g} "
                 f"to {last['loss'].max():.4g})")
    return text


# -- is the temperature right? --------------------------------------------------------------------
def _temperature_lines(simulation, result, outliers):
    """The average kinetic energy and virial against equipartition, with batch-means error bars
    from the run-info rows after burn-in; not judged where one of the `outliers` (walker_outliers)
    blew up."""
    o = simulation.options
    averages, run_info = result.averages, result.run_info
    expected = simulation.num_parameters / (2.0 * o["inverse_temperature"])
    burn_in = o["burn_in_steps"]
    if averages.empty:
        return [f"  no averages yet: every row was within burn_in_steps {burn_in}"]
    # The averages table's last row per walker: the average over every step after burn-in of
    # the whole run (earlier calls included), its walkers' mean compared. Its error bar comes
    # from this call's rows, every every_nth step: if anything too large for that average.
    last = averages.groupby("id").tail(1)
    lines = []
    noted = data_noted(simulation)  # a note on the data names why a measured width did not hold
    # HMC and NUTS draw fresh momenta at every leg (or step): equipartitioned by construction,
    # they would pass these tests whatever the chain does
    spec = spec_of(o["sampler"])
    persist = spec.persistent_momenta
    # a walker that blew up spans every error bar: "consistent" or "warm" would mean nothing (the
    # walker lines say why)
    blown = sorted({x.walker for x in outliers if x.kind == "blew up"})  # only walkers whose momenta persist
    which = f"walker{'s' if len(blown) > 1 else ''} {', '.join(map(str, blown))} blew up"
    if "average_kinetic_energy" in last and spec.redraws_momenta:
        lines.append(f"  momenta not judged: {o['sampler']} draws them afresh every "
                     f"{'step' if spec.evaluates_target else 'leg'} (equipartitioned by construction)")
    elif "average_kinetic_energy" in last and persist:  # not SGLD, which has no momenta
        value, stats = last["average_kinetic_energy"].mean(), table_batch_means(run_info, "kinetic_energy", burn_in)
        reference = f"equipartition d/(2 beta) = {expected:.4g}"
        if blown:
            lines.append(f"  average kinetic energy {value:.4g} ({reference}: not judged, {which})")
        else:
            lines += (_warm_line("average kinetic energy", value, stats, expected, reference, _noise_heat(o))
                      or _judged("average kinetic energy", value, stats, expected, reference,
                                 _kinetic_hint(o, noted), run_info, burn_in))
    if "average_virials" in last:  # not RWMH, which takes no gradients
        lines += _virial_lines(o, last, run_info, expected, burn_in)
    if persist and "kinetic_energy" in run_info and (run_info["step"] > burn_in).any():
        lines += [f"  momentum test not judged: {which}"] if blown else _momentum_lines(
            result, o, simulation.num_parameters, noted)
        if getattr(result, "momenta", None) is not None and not result.momenta.empty:  # record_momenta
            lines += _layer_lines(result, o, noted)
    return lines


def _noise_heat(o):
    """The kinetic temperature's relative excess that measure_step_width's width allows from the
    mini-batch gradient noise (tati/adaptation/measured_width.py); 0 where it did not measure."""
    if o.get("measure_step_width") is not True or o.get("batch_size") is None:
        return 0.0
    from tati.adaptation.measured_width import EXCESS
    return EXCESS


def _warm_line(name, value, stats, expected, reference, heat):
    """The kinetic energy's line where it reads above equipartition but within `heat`, the noise heat
    the measured step width allows (within SIGMAS standard errors of expected (1 + heat)): it says
    so instead of "lower step_width", which the measurement chose. None otherwise."""
    if not heat or stats is None or equipartition_verdict(value, stats[1], expected) == "consistent" \
            or value < expected or equipartition_verdict(max(value, expected * (1 + heat)), stats[1],
                                                         expected * (1 + heat)) != "consistent":
        return None
    return [f"  {name} {_plus_minus(value, stats[1])} ({reference}: {value / expected - 1:.1%} above)",
            f"    {_warm(heat)}"]


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


def _kinetic_hint(o, noted=False):
    """The likely causes of a kinetic energy off equipartition, and what fixes each."""
    measured = _measured_hint(o, noted)
    if measured is not None:
        return measured
    if _noise_estimator_helps(o):  # mini-batch gradients heat SGHMC unless it estimates their noise
        return "step_width too large, gradient_noise_estimator unset, or the run too short (burn_in_steps)"
    return "step_width may be too large, or the run too short (burn_in_steps)"


def _noise_estimator_helps(o):
    """SGHMC's gradient-noise estimate corrects the heat of mini-batch gradients only: with the
    whole dataset (or a potential) it estimates zero."""
    return "gradient_noise_estimator" in spec_of(o["sampler"]).option_names and o["batch_size"] is not None


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
        if measured is None and _noise_estimator_helps(o):
            hint += ", or set gradient_noise_estimator"
    else:
        hint = "momenta too cold (too many inside): run longer (burn_in_steps)"
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
    lines = [f"  momenta per layer, {readings} readings, 99% intervals (config. T = q . grad U / d, "
             "1/beta if U confines)",
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
            ", or set gradient_noise_estimator" if _noise_estimator_helps(o) else "")))
    elif "cold" in verdicts:
        lines.append("    momenta too cold in some layer: run longer (burn_in_steps)")
    elif "warm" in verdicts:
        lines.append(f"    {_warm(heat)}")
    return lines


def _verdict(value, low, high):
    """"ok" if value lies in [low, high], "hot" above (too few momenta inside the quantile, or a
    kinetic temperature above its interval), "cold" below."""
    return "ok" if low <= value <= high else "hot" if value > high else "cold"


def _virial_lines(o, last, run_info, expected, burn_in):
    """The virial, mean of 1/2 theta . grad U: by the virial theorem it equals d/(2 beta) when
    exp(-beta U) confines theta (a potential, or walls on every parameter); a network's loss
    alone does not, so there it is shown without a verdict."""
    value = last["average_virials"].mean()
    confined = o["potential"] is not None or (
        o["prior_lower_boundary"] is not None and o["prior_upper_boundary"] is not None)
    what = "theta . grad U / 2"
    if not confined:
        return [f"  average virial {value:.4g} ({what}; equals d/(2 beta) only if U confines theta)"]
    return _judged("average virial", value, table_batch_means(run_info, "virial", burn_in), expected,
                   f"{what}; virial theorem: d/(2 beta) = {expected:.4g}",
                   "step_width may be too large, the run too short, or U not confining",
                   run_info, burn_in)


def _judged(name, value, stats, expected, reference, hint, run_info, burn_in):
    """'  name value +- error (reference: verdict)', and the hint on the next line if the verdict
    is not 'consistent'; the verdict moves to the hint's line when the first would be too long."""
    if stats is None:
        return [f"  {name} {value:.4g} ({reference})", _too_few(run_info, burn_in)]
    head = f"  {name} {_plus_minus(value, stats[1])} ({reference}"
    verdict = equipartition_verdict(value, stats[1], expected)
    if verdict == "consistent":
        return [f"{head}: {verdict})"]
    if len(head) + len(verdict) + 3 < WIDTH:
        return [f"{head}: {verdict})", f"    {hint}"]
    if len(verdict) + len(hint) + 6 < WIDTH:
        return [f"{head})", f"    {verdict}: {hint}"]
    return [f"{head})", f"    {verdict}:", f"    {hint}"]


def _too_few(run_info, burn_in):
    rows = int((run_info["step"] > burn_in).sum())
    return f"    only {rows} rows after burn-in: too few for an error bar (run longer)"


def _plus_minus(value, error):
    """'16.3 +- 0.4': the error to two significant digits, the value to the same decimals."""
    if not (error > 0 and math.isfinite(error)):
        return f"{value:.4g} +- {error:g}"
    decimals = max(0, 1 - math.floor(math.log10(error)))
    return f"{value:.{decimals}f} +- {error:.{decimals}f}"


# -- HMC --------------------------------------------------------------------------------------------
def _hmc_lines(run_info, hint="lower step_width"):
    """Rejection rate (mean over walkers of their last row) and divergences (the column counts
    each walker's divergent legs so far, so the sum of the last rows); the hint on a line of its
    own if it does not fit."""
    last = run_info.groupby("id").tail(1)
    rate = float(last["average_rejection_rate"].mean())
    divergent = int(last["divergences"].sum())
    text = f"  rejected {rate:.0%} of HMC proposals, {divergent} divergent (energy error > 1000/beta)"
    # A walker that rejects most legs hardly moves, though the mean over the walkers may pass.
    high = last[last["average_rejection_rate"] > REJECTION_MAX] if rate <= REJECTION_MAX else last.iloc[:0]
    if not (rate > REJECTION_MAX or divergent > 0 or len(high)):
        return [text + ": ok"]
    if len(high):
        names = ", ".join(str(int(i)) for i in high["id"])
        rates = ", ".join(f"{r:.0%}" for r in high["average_rejection_rate"])
        its = "its" if len(high) == 1 else "their"
        return [text + ":", f"    walker{'s' if len(high) > 1 else ''} {names} rejected {rates} of {its} "
                f"proposals: {hint}"]
    return [f"{text}: {hint}"] if len(text) + len(hint) + 2 < WIDTH else [text + ":", f"    {hint}"]


NO_METRIC_HINT = "raise burn_in_steps (the metric did not adapt)"
NO_BURN_IN_HINT = "give burn_in_steps (e.g. 1000), in which step_width adapts"


def _metric_missing(sampler):
    """Whether HMC was to adapt its metric in its burn-in and closed no window."""
    return getattr(sampler, "adapt_mass", False) and not int(sampler.metric_windows())


def _burn_in_for_metric(o, run_info, walkers, draws):
    """(legs per walker in this call's burn-in, a burn_in_steps that would hold enough of them),
    or None if the call's rows do not show the burn-in. A walker has a row every every_nth legs.
    The metric needs a first window of `draws` draws over all walkers (MIN_METRIC_DRAWS; d + 1
    for the dense one) and then
    MIN_LEGS_AFTER_WINDOW legs, all between LEG_METRIC_START and LEG_METRIC_END of burn-in,
    twice that for the legs at the restarted (smaller) width, as the legs run now."""
    from tati.adaptation import windows
    burn_in = o["burn_in_steps"]
    if run_info.empty or int(run_info["step"].min()) > o["every_nth"]:
        return None
    legs = int(round(float((run_info["step"] <= burn_in).sum()) / walkers * o["every_nth"]))
    needed = 2.0 * (windows.MIN_LEGS_AFTER_WINDOW + math.ceil(draws / walkers)) / (
        windows.LEG_METRIC_END - windows.LEG_METRIC_START)
    steps = burn_in * needed / max(legs, 1)
    scale = 10.0 ** max(math.floor(math.log10(steps)) - 1, 0)  # two significant digits, up
    return legs, int(math.ceil(steps / scale) * scale)


def _listed(values):
    return ", ".join(f"{v:.3g}" for v in values)


def _followed_widths(simulation):
    """The widths measured with each of a noise mass's measurements (samplers/mass.py), if any."""
    sampler = getattr(simulation, "_sampler", None)
    return sampler.followed_widths() if hasattr(sampler, "followed_widths") else ()


def _langevin_mass_line(sampler):
    """The Langevin samplers' adapted diagonal mass M = 1 / s^2 (samplers/mass.py)."""
    masses = 1.0 / sampler.metric_scales() ** 2
    times = int(sampler.metric_windows())
    span = f"masses {masses.min():.3g} ... {masses.max():.3g} (median {np.median(masses):.3g})"
    if getattr(sampler, "noise_mass", False):
        return f"  mass from the gradient noise, measured {times} time{'s' if times != 1 else ''}: {span}"
    return f"  mass adapted in {times} window{'s' if times != 1 else ''}: {span}"


def _hmc_adaptation_lines(o, sampler, run_info, walkers):
    """What HMC's burn-in adapted: the step width, the leg length and the metric's scales."""
    lines = []
    if sampler.adapt_step_width:
        width = float(sampler.learning_rate.numpy())
        target = target_acceptance(o["sampler"], o["target_acceptance_rate"])
        lines.append(f"  step_width adapted to {width:.3g} (started at {o['step_width']:g}; target "
                     f"acceptance {target:g})")
        lines += _width_hints(width, o["step_width"])
    if sampler.adapt_trajectory_length:
        time = float(sampler.hamiltonian_dynamics_time)
        lines.append(f"  hamiltonian_dynamics_time adapted to {time:.3g} (started at {o['hamiltonian_dynamics_time']:g})")
        # ChEES's gradient is one noisy number per leg: with too few walkers x parameters T collapses to a
        # fraction of one step (0.01-0.03 at width 1); adapted well it is 1.3-1.8 at width 0.8-1.2
        if time < 0.5 * float(sampler.learning_rate.numpy()):
            lines += ["    legs of about one step: adapting them is too noisy with so few walkers x parameters;",
                      f"    use number_walkers >= {max(4, 2 * walkers)}, or hamiltonian_dynamics_time with "
                      "adapt_trajectory_length false"]
    if sampler.adapt_mass:
        scales = sampler.metric_scales()
        windows = int(sampler.metric_windows())
        if windows:
            lines.append(f"  metric adapted in {windows} window{'s' if windows > 1 else ''}: parameter scales "
                         f"{scales.min():.3g} ... {scales.max():.3g}")
        else:
            found = _burn_in_for_metric(o, run_info, walkers, sampler.min_metric_draws)
            lines.append("  metric not adapted: too few legs in burn-in" + (
                f" (about {found[0]} per walker; try burn_in_steps {found[1]})" if found else " (raise burn_in_steps)"))
    return lines


# -- NUTS, RWMH ------------------------------------------------------------------------------------
def _kernel_lines(o, run_info):
    """Acceptance against its target, the (adapted) step width, divergences and, for NUTS, tree
    depths; then a line with a hint for each of Stan's warnings that applies. The counts of
    the last rows cover the steps after burn-in (during burn-in, the steps so far)."""
    last = run_info.groupby("id").tail(1)
    burn_in = o["burn_in_steps"]
    after = max(int(last["step"].max()) - burn_in, 0)
    transitions = after * len(last) if after else int(last["step"].max()) * len(last)
    span = "after burn-in" if after else "so far (all in burn-in)"
    target = target_acceptance(o["sampler"], o["target_acceptance_rate"])
    acceptance = 1.0 - float(last["average_rejection_rate"].mean())
    width = float(last["step_width"].iloc[-1])
    adapted = o["adapt_step_width"] and burn_in > 0
    lines = [f"  acceptance {acceptance:.2f} (target {target:g}{', adapted' if adapted else ''}), "
             f"step_width {width:.3g}" + (f" (started at {o['step_width']:g})" if adapted else "")]
    hints = []
    if "divergences" in last:
        divergent = int(last["divergences"].sum())
        kept = run_info[run_info["step"] > burn_in] if after else run_info
        at_max = float((kept["tree_depth"] >= o["max_tree_depth"]).mean()) if len(kept) else 0.0
        lines.append(f"  {divergent} of {transitions} transitions {span} divergent; max_tree_depth "
                     f"{o['max_tree_depth']} reached in {at_max:.0%} of rows")
        if divergent > DIVERGENT_MAX * transitions:
            hints.append(f"    more than {DIVERGENT_MAX:.0%} divergent: the draws may be biased; " + (
                "raise target_acceptance_rate (0.95) or reparameterise" if adapted else
                NO_BURN_IN_HINT if o["adapt_step_width"] else
                "lower step_width"))
        if at_max > MAX_DEPTH_MAX:
            hints.append(f"    max_tree_depth reached in over {MAX_DEPTH_MAX:.0%}: raise burn_in_steps "
                         "(metric) or max_tree_depth")
    if adapted:
        hints += _width_hints(width, o["step_width"])
    elif o["adapt_step_width"] and not any(NO_BURN_IN_HINT in hint for hint in hints):
        hints.append(f"    nothing adapted (burn_in_steps 0): {NO_BURN_IN_HINT}")
    return lines + hints


def _width_hints(width, start):
    """Stan's warning for a width that adapted a thousandfold down (or up)."""
    if width < WIDTH_FLOOR * start:
        return [f"    step_width shrank to {width / start:.1e} of its start: the posterior is far narrower "
                "in some direction"]
    if width > start / WIDTH_FLOOR:
        return [f"    step_width grew {width / start:.1e}-fold: exp(-beta U) may not confine theta "
                "(prior_standard_deviation)"]
    return []


# -- do the walkers agree? ------------------------------------------------------------------------
def _outlier_lines(outliers):
    """A line per walker hot, cold or far out after burn-in (walker_outliers,
    tati/diagnostics/outliers.py), its fix after a colon, or on a line of its own where it does not fit."""
    lines = []
    for outlier in outliers:
        text = "  " + outlier.text()
        fits = len(text) + len(outlier.fix) + 2 < WIDTH
        lines += [f"{text}: {outlier.fix}"] if fits else [text, f"    {outlier.fix}"]
    return lines


def _identified(o, groups):
    """The trajectory columns whose R-hat judges a network with hidden layers: its weights are
    not identified (hidden units can swap places and flip signs, so walkers in equally good
    modes disagree forever), the loss and the output layer's biases are. None (every parameter)
    for potentials and models without a hidden layer. `groups`: the parameter groups by path
    (layer/variable, the last layer last)."""
    if o["potential"] is not None or not groups:
        return None
    layers = list(dict.fromkeys(path.rsplit("/", 1)[0] for path in groups))
    if len(layers) < 2:
        return None
    biases = [column for path, columns in groups.items() if path.rsplit("/", 1)[0] == layers[-1]
              and path.rsplit("/", 1)[-1].startswith("bias") for column in columns]
    return ["loss"] + biases


def _convergence_lines(trajectory, walkers, burn_in, hint=None, columns=None):
    """The R-hat/ESS line and its verdict, or one line saying there are too few rows. `columns`:
    the identified quantities a network is judged on (_identified), or None for every parameter."""
    found = _convergence(trajectory, walkers, burn_in, columns)
    if found is None:
        return [f"  walkers not compared (R-hat, ESS): too few rows after burn_in_steps {burn_in}, "
                "or no parameter moved"]
    r_hat, ess = found
    line = (f"  R-hat max {r_hat.max():.3f} ({r_hat.idxmax()}), ESS min {ess.min():.0f} "
            f"({ess.idxmin()}) over {walkers} walkers")
    if columns is not None:
        line += f" ({'loss, output biases' if len(columns) > 1 else 'loss'})"
    note = [] if columns is None else [
        "    weights not compared: hidden units can swap places and flip signs (not identified)"]
    need = ESS_PER_WALKER * walkers
    faults = ([f"R-hat > {R_HAT_MAX} (walkers disagree)"] if r_hat.max() > R_HAT_MAX else []) + (
        [f"ESS < {need} (too few independent draws)"] if ess.min() < need else [])
    hint = hint or "run longer (max_steps), or raise step_width"
    if faults:
        verdict = f"    not converged: {', '.join(faults)}"
        found = [f"{verdict}: {hint}"] if len(verdict) + len(hint) + 2 < WIDTH else [verdict, f"    {hint}"]
        return [line] + found + note
    return [line, f"    ok: R-hat (between- over within-walker spread) < {R_HAT_MAX}, "
                  f"ESS (independent draws) > {need}"] + note


def _convergence(trajectory, walkers, burn_in, columns=None):
    """(r_hat, ess) Series by parameter and the loss (or by the `columns` given), or None if
    burn-in leaves too few rows or nothing moved.
    Walkers whose rows are not equally many (HMC writes rows at each walker's own evaluation
    steps) are compared over their last rows, as many as the shortest has."""
    from tati.diagnostics.convergence import MIN_ROWS, convergence, equal_rows
    rows = equal_rows(trajectory, burn_in)
    counts = rows.groupby("id").size()
    if len(counts) < walkers or counts.min() < MIN_ROWS:
        return None
    if columns is None:  # every parameter and the log density, which sees every parameter at once
        names = list(rows.columns)
        columns = ["loss"] + names[names.index("loss") + 1:]
    table = convergence(rows, columns=columns)
    r_hat, ess = table["r_hat"].dropna(), table["ess"].dropna()
    if r_hat.empty or ess.empty:  # no parameter moved
        return None
    return r_hat, ess


def _convergence_line(trajectory, walkers, burn_in):
    """[one line]: the worst R-hat and the smallest ESS over all parameters, whichever parameters
    they belong to; [] if burn-in leaves too few rows to tell."""
    found = _convergence_lines(trajectory, walkers, burn_in)
    return found[:1] if found[0].startswith("  R-hat") else []


# -- files --------------------------------------------------------------------------------------------
def _files(o):
    written = [f"{label} to {o[name]}" for name, label in FILES if o[name]]
    if o.get("save_model"):
        written.append(f"checkpoint to {o['save_model']}")
    if o.get("summaries_path"):
        written.append(f"TensorBoard summaries to {o['summaries_path']}")
    if not written:
        return "  wrote no file: give --run_file, --trajectory_file or --averages_file to keep the tables"
    return "  wrote " + ", ".join(written)
