"""The summary of a sample() or fit() call, which the tools print at the end of a run and
`Simulation.summary()` returns in Python: what ran, how long it took, where it ended, whether the
sampling looks right, and which files hold the tables. For example:

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

Its parts: header.py (what ran, where it ended), temperature.py, kernels.py (HMC, NUTS, RWMH),
walkers.py (outliers, R-hat and ESS), lines.py (the lines' layout).
"""

import numpy as np

from tati.diagnostics.summary.header import (final_line, followed_widths, header, langevin_mass_line, listed,
                                             model_line, timing)
from tati.diagnostics.summary.kernels import (NO_METRIC_HINT, disagreement_after_divergences, hmc_adaptation_lines,
                                              hmc_lines, kernel_lines, metric_missing)
from tati.diagnostics.summary.lines import wrapped
from tati.diagnostics.summary.temperature import temperature_lines
from tati.diagnostics.summary.walkers import FULL_BATCH, LONGER, convergence_lines, identified, outlier_lines
from tati.diagnostics.outliers import walker_outliers
from tati.engine.contract import LEGS
from tati.engine.registry import spec_of

FILES = (("run_file", "run info"), ("trajectory_file", "trajectory"), ("averages_file", "averages"),
         ("momenta_file", "momenta"))


class Summary(str):
    """The summary's text, which the interpreter and a notebook echo as lines, not as a quoted
    string."""

    def __repr__(self):
        return str(self)


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
    followed = followed_widths(simulation) if sampler else ()
    if measured is not None:
        width = followed[-1] if len(followed) else measured.width
    lines = [header(prog, o, steps, walkers, sampler, width), "  " + model_line(simulation)]
    if seconds is not None:
        lines.append(timing(seconds, steps, walkers, _first_call(o, run_info)))
    if getattr(result, "first_step", None) is not None:
        lines.append("  " + result.first_step.line())
    if getattr(result, "compilation", None) is not None:
        lines.append("  " + result.compilation.line())
    if run_info.empty:  # HMC writes rows at the ends of legs only; none ended in this call
        lines.append(f"  no leg ended in these {o['max_steps']} steps, so no row was written")
        return _joined(lines + [_files(o)])
    lines.append(final_line(run_info, walkers))
    if sampler and getattr(simulation, "warm_start", None) is not None:
        lines.append("  " + simulation.warm_start.line())
    lines += ["  " + line for line in getattr(simulation, "notes", ())]
    if measured is not None:
        lines.append("  " + measured.line())
    if len(followed):
        lines.append(f"  step_width measured again with each new mass: {listed(followed)} (the last is the run's)")
        frictions = simulation.sampler.followed_frictions()
        if len(frictions):
            lines.append(f"  friction_constant measured with each: {listed(frictions)}")
    if sampler and not legs and not proposal and getattr(getattr(simulation, "sampler", None), "adapt_mass", False):
        lines.append(langevin_mass_line(simulation.sampler))
    broken = nonfinite_line(run_info, "step_width" if sampler else "learning_rate")
    if broken is not None:
        return _joined(lines + ["  " + broken, _files(o)])
    no_metric = adapted = False
    if sampler:
        outliers = walker_outliers(result, simulation)  # with one walker only the warm start's check
        lines += temperature_lines(simulation, result, outliers)
        if proposal:
            lines += kernel_lines(o, run_info)
        elif legs:
            adapted = o["adapt_step_width"] and o["burn_in_steps"] > 0
            no_metric = o["burn_in_steps"] > 0 and metric_missing(simulation.sampler)
            lines += hmc_lines(run_info, NO_METRIC_HINT if no_metric else
                                "raise target_acceptance_rate" if adapted else "lower step_width")
            if o["burn_in_steps"] > 0:
                lines += hmc_adaptation_lines(o, simulation.sampler, run_info, walkers)
        lines += outlier_lines(outliers)
        if walkers >= 2:
            # an adapted or measured width is already the largest its bounds allow: only length helps
            measured = o.get("measure_step_width") is True
            diverged = disagreement_after_divergences(o, run_info) if proposal else None
            hint = (NO_METRIC_HINT if no_metric else diverged if diverged else
                    LONGER + FULL_BATCH if measured and o["batch_size"] is not None and o["likelihood"] != "none"
                    else LONGER if proposal or measured or adapted else None)
            report = getattr(simulation, "warm_start", None)
            if report is not None and report.ridge is not None:  # a longer run drifts further
                hint = report.ridge_hint()
            lines += convergence_lines(result.trajectory, walkers, o["burn_in_steps"], hint,
                                        identified(o, getattr(result, "parameter_groups", None)))
        else:  # the tests above see one mode's equilibrium as well as the whole target's
            lines.append("  mixing not checked with one walker: number_walkers 4 compares walkers (R-hat)")
    lines.append(_files(o))
    return _joined(lines)


def nonfinite_line(run_info, width="step_width"):
    """The line where rows have a NaN or infinite loss (on_nan=continue ran on where U is not
    defined: no average or test means anything), else None; `width` is the option to lower."""
    broken = ~np.isfinite(run_info["loss"].to_numpy(dtype=float))
    if not broken.any():
        return None
    first = run_info.loc[broken, ["step", "id"]].iloc[0]
    return (f"{broken.sum()} of {len(broken)} rows have a NaN or infinite loss, the first at step "
            f"{int(first['step'])} (walker {int(first['id'])}), so the averages are not judged: lower {width}")


def _joined(lines):
    """The summary's text: a line as long as WIDTH or longer (a measured width's, with a value per
    walker) goes on over the next lines."""
    return "\n".join(part for line in lines for part in wrapped(line))


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


def _files(o):
    written = [f"{label} to {o[name]}" for name, label in FILES if o[name]]
    if o.get("save_model"):
        written.append(f"checkpoint to {o['save_model']}")
    if o.get("summaries_path"):
        written.append(f"TensorBoard summaries to {o['summaries_path']}")
    if not written:
        return "  wrote no file (run_file, trajectory_file and averages_file write the tables as CSV)"
    return "  wrote " + ", ".join(written)
