"""The summary's lines on the samplers that accept or reject: HMC's rejections, divergences and
what its burn-in adapted (width, leg length, metric); NUTS's and RWMH's acceptance, divergences
and tree depths, with Stan's warnings and their cures."""

import math

from tati.diagnostics.summary.lines import WIDTH
from tati.engine.registry import target_acceptance

# HMC rejecting more than half of its legs wastes most of its gradient evaluations (the optimal
# acceptance rate of HMC is about 0.65, Beskos et al. 2013).
REJECTION_MAX = 0.5
# NUTS and RWMH after burn-in (Stan's warnings): divergent transitions bias the draws, NUTS
# trajectories cut at max_tree_depth explore slowly, and a width adapted a thousand times
# below where it started means some direction of the posterior is that much narrower (and a
# thousand times above, that the target may not be normalisable).
DIVERGENT_MAX = 0.01
# Stan's advice for divergences: a higher adapt_delta, 0.95 say; where the target is that already, only
# reparameterising is left (a centered hierarchical model of 300 groups at 0.95: R-hat 2.01, 3 divergent,
# against 1.32 and 15 at 0.8: disagreement_after_divergences).
RAISED_TARGET = 0.95
MAX_DEPTH_MAX = 0.1
# After burn-in an adapted width gives about its target acceptance (dual averaging's mean iterate, a little
# above); below this fraction of it the walkers went where the width is far too large (NUTS with student_t
# on UCI's concrete, 200 burn-in steps: acceptance 0.34 against 0.8, every tree at max_tree_depth).
ACCEPTANCE_SHORTFALL = 0.5  # half
WIDTH_FLOOR = 1e-3
NO_METRIC_HINT = "raise burn_in_steps (the metric did not adapt)"
NO_BURN_IN_HINT = "give burn_in_steps (e.g. 1000), in which step_width adapts"


def hmc_lines(run_info, hint="lower step_width"):
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


def metric_missing(sampler):
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


def hmc_adaptation_lines(o, sampler, run_info, walkers):
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


def kernel_lines(o, run_info):
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
                cure_of_divergences(o) if adapted else
                NO_BURN_IN_HINT if o["adapt_step_width"] else
                "lower step_width"))
        if at_max > MAX_DEPTH_MAX:
            hints.append(f"    max_tree_depth reached in over {MAX_DEPTH_MAX:.0%}: raise burn_in_steps "
                         "(metric) or max_tree_depth")
    if adapted and after and acceptance < ACCEPTANCE_SHORTFALL * target:
        hints.append("    acceptance under half its target: the adapted width is too large now; raise burn_in_steps")
    if adapted:
        hints += _width_hints(width, o["step_width"])
    elif o["adapt_step_width"] and not any(NO_BURN_IN_HINT in hint for hint in hints):
        hints.append(f"    nothing adapted (burn_in_steps 0): {NO_BURN_IN_HINT}")
    return lines + hints


def cure_of_divergences(o):
    target = target_acceptance(o["sampler"], o["target_acceptance_rate"])
    raised = f", or raise target_acceptance_rate ({RAISED_TARGET:g})" if target < RAISED_TARGET else ""
    return "reparameterise" + raised


def disagreement_after_divergences(o, run_info):
    """The hint of walkers that disagree after divergent transitions (any: Stan warns at one), or None where
    none diverged after burn-in: they have met a region they cannot enter, and a longer run does not help (the
    centered hierarchical model of 300 groups from its warm start, 15 of 4000 divergent, R-hat 1.32 and log
    tau 0.63 +- 0.45 against the non-centered model's 0.04 +- 1.12, R-hat 1.004). Where kernel_lines gave
    the cure already (more than DIVERGENT_MAX), it is not repeated."""
    last = run_info.groupby("id").tail(1)
    after = int(last["step"].max()) - o["burn_in_steps"]
    if "divergences" not in last or o["burn_in_steps"] == 0 or after <= 0 or not last["divergences"].sum():
        return None
    if last["divergences"].sum() > DIVERGENT_MAX * after * len(last):
        return "the divergences' cure above, not a longer run"
    return f"divergences above (a funnel's neck?): {cure_of_divergences(o)}"


def _width_hints(width, start):
    """Stan's warning for a width that adapted a thousandfold down (or up)."""
    if width < WIDTH_FLOOR * start:
        return [f"    step_width shrank to {width / start:.1e} of its start: the posterior is far narrower "
                "in some direction"]
    if width > start / WIDTH_FLOOR:
        return [f"    step_width grew {width / start:.1e}-fold: exp(-beta U) may not confine theta "
                "(prior_standard_deviation)"]
    return []
