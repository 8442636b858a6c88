"""The one-line warnings of a burn-in that cannot adapt what its sampler adapts: burn_in_steps 0
where HMC, NUTS or RWMH would adapt or a Langevin sampler would take its mass from the gradient
noise, and a given burn-in too short for the metric's windows
(tati/adaptation/windows.py). The Simulation warns them at the user's first sample() call."""

from tati.adaptation import windows
from tati.config.preflight import self_tuning
from tati.engine.contract import LEGS
from tati.engine.registry import samplers_taking, spec_of


def notes(o, given=False):
    """[a warning] where HMC, NUTS or RWMH would adapt (step_width, metric, leg length) but
    burn_in_steps is 0 (given: by default it is half of max_steps for them), in which nothing
    adapts: a NUTS run then keeps step_width 0.1 and may accept far from its target; or, where
    the metric adapts and burn_in_steps was `given`, too short for its windows (`_window_note`).
    None on resume, whose checkpoint holds what adapted."""
    if o["restore_model"] is not None:
        return []
    if o["burn_in_steps"] != 0:
        return _window_note(o) if given else []
    if not spec_of(o["sampler"]).metropolis:
        return _noise_mass_note(o)
    adapting = [name for name, option in (("step_width", "adapt_step_width"), ("metric", "adapt_mass"),
                                          ("hamiltonian_dynamics_time", "adapt_trajectory_length"))
                if o[option] and o["sampler"] in samplers_taking(option)]  # auto: on for these
    if not adapting:
        return []
    steps = max(1, min(1000, o["max_steps"] // 2))
    why = "Stan's warm-up" if steps == 1000 else "half of max_steps; Stan warms up for 1000"
    what = " and ".join([", ".join(adapting[:-1]), adapting[-1]] if len(adapting) > 1 else adapting)
    return [f"sampler {o['sampler']} adapts its {what} during burn-in only, and burn_in_steps is 0: nothing "
            f"adapts (the acceptance rate may be far from its target); give burn_in_steps {steps} "
            f"(--burn_in_steps {steps}: {why})"]


def _noise_mass_note(o):
    """[a warning] where a sampler of preflight.self_tuning() measures its step width on mini-batches with
    burn_in_steps 0: its mass would come from the gradient noise during burn-in (adapt_mass auto:
    noise, tati/config/preflight.py no_tuning; pSGLD's 1 / G would start from the measured gradients), so
    the width is measured for the unit mass, the noisiest direction's (4e-9 on yacht, where the walkers
    did not move; pSGLD, whose G then starts from V = 0: test log-likelihood -3.98 against -0.35)."""
    sampler = o["sampler"]
    if not (o["measure_step_width"] is True and o["adapt_mass"] == "auto" and o["batch_size"] is not None
            and sampler in self_tuning() and o["gradient_noise_estimator"] == "none"):
        return []
    steps = max(windows.MIN_METRIC_BURN_IN, o["max_steps"] // 2)
    return [f"sampler {sampler} takes its mass from the gradient noise during burn-in only, and burn_in_steps is 0: "
            f"its step_width is measured for the unit mass, the noisiest direction's (the walkers may hardly "
            f"move); give burn_in_steps {steps} (--burn_in_steps {steps})"]


def _metric_adapts(o):
    """Whether adapt_mass estimates a metric: true for the samplers taking it, auto for the
    Metropolis ones (tati/samplers/mass.py), not beside the ensemble's preconditioner."""
    sampler = o["sampler"]
    on = o["adapt_mass"] in (True, "noise") or (o["adapt_mass"] == "auto" and spec_of(sampler).metropolis)
    return on and sampler in samplers_taking("adapt_mass") and o["covariance_blending"] == 0


def _window_note(o):
    """[a warning] where burn_in_steps is too short for the metric's windows (Stan's reference
    manual, "automatic parameter tuning", says the same of its warm-up): HMC's windows, counted
    in legs, need MIN_LEG_METRIC_BURN_IN gradient evaluations; Stan's (NUTS, RWMH, the Langevin
    samplers) shrink to 15% / 75% / 10% below 75 + 25 + 50 steps and need MIN_METRIC_BURN_IN."""
    if not _metric_adapts(o):
        return []
    n, sampler = o["burn_in_steps"], o["sampler"]
    counted_in_legs = spec_of(sampler).kind == LEGS
    enough = windows.MIN_LEG_METRIC_BURN_IN if counted_in_legs else sum(
        (windows.INITIAL_BUFFER, windows.BASE_WINDOW, windows.TERMINAL_BUFFER))
    if n >= enough:
        return []
    advice = 2000 if counted_in_legs else 1000  # HMC2 was right from Stan's inits with 2000 (doc/benchmarks.md)
    unset = f", or leave it unset (half of max_steps: {o['max_steps'] // 2})" if o["max_steps"] // 2 >= advice else ""
    give = f"; give burn_in_steps {advice} (--burn_in_steps {advice}){unset}"
    if counted_in_legs:
        return [f"burn_in_steps {n} is fewer gradient evaluations than {sampler}'s metric windows need "
                f"({windows.MIN_LEG_METRIC_BURN_IN}): the metric stays 1{give}"]
    stans = (f"burn_in_steps {n} is shorter than Stan's windows ({windows.INITIAL_BUFFER} + "
             f"{windows.BASE_WINDOW} + {windows.TERMINAL_BUFFER})")
    if n < windows.MIN_METRIC_BURN_IN:
        return [f"{stans} and than the {windows.MIN_METRIC_BURN_IN} steps a metric window needs: the metric "
                f"stays 1{give}"]
    first, [end] = windows.metric_windows(n)
    return [f"{stans}: the metric adapts in one window of {end - first} steps (steps {first + 1}-{end}){give}"]
