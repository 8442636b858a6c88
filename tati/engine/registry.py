"""The one list of tati's samplers and optimizers (a Spec each, tati/engine/contract.py) and the
lookups every other list is derived from: the option table's sampler lists and help, the
preflight's rules, the summary, the kernels' kinds and the tests' parametrisations. No
TensorFlow: the kernel classes are named, and loaded only when a run builds one.

A new sampler is its module plus one line here (or, at run time, `register(Spec(...))`).
Keras' own optimizers are not listed: fit() accepts them by Keras' name
(tati/optimizers/__init__.py).
"""

import difflib

from tati.config.option_kinds import POSITIVE, Number, Option
from tati.engine.contract import FULL_BATCH, LEGS, PROPOSAL, Spec, kernel_path
from tati.errors import InputError
from tati.recording.columns import (HMC_INFO, LANGEVIN_INFO, NUTS_INFO, OPTIMIZER_INFO, RWMH_INFO, SGHMC_ESTIMATING_INFO,
                                    SGLD_INFO)
from tati.recording.columns import integer_columns as integer_columns_of

_LANGEVIN = ("friction_constant", "adapt_mass", "measure_step_width", "warm_start")
_ADAPTING = ("adapt_step_width", "target_acceptance_rate", "adapt_mass", "metric", "warm_start")
_HMC = ("hamiltonian_dynamics_time",) + _ADAPTING + ("adapt_trajectory_length",)
_SGHMC = ("friction_constant", "mass", "adapt_mass", "measure_step_width", "warm_start", "noise_estimate",
          "gradient_noise_estimator",
          "noise_estimation_batches", "noise_estimation_steps", "first_moment_decay", "second_moment_decay",
          "mass_rescaling_steps", "mass_safety_factor")
_LEGS = "tati.samplers.hmc_kernel:LegsKernel"
_PROPOSALS = "tati.samplers.proposal_kernel:ProposalSteps"
# pSGLD's own options (samplers/psgld.py), which join the option table from here.
_RMSPROP = (
    Option("rmsprop_decay", 0.99, Number(minimum=0, maximum=1), "sampler",
           "pSGLD: decay alpha < 1 of V, the running mean of the squared gradient, V = alpha V + "
           "(1 - alpha) g^2; its preconditioner G = 1 / (rmsprop_epsilon + sqrt(V)) averages over "
           "about 1 / (1 - alpha) steps. Nearer 1 (0.999) for small step widths: the dropped Gamma "
           "term biases the variance by about (1 - alpha) / 2 times the steps a parameter takes to "
           "decorrelate (doc/samplers.md)."),
    Option("rmsprop_epsilon", 1e-5, POSITIVE, "sampler",
           "pSGLD: lambda of G = 1 / (lambda + sqrt(V)), which bounds G by 1 / lambda where gradients vanish."),
)
_WHOLE_DATA = "evaluates the whole dataset at every step (a mini-batch would change the target within a step)"
# HMC's accept/reject compares H at a leg's two ends: taken from two mini-batches it compares two
# targets, and the chain is exact for neither (Chen, Fox and Guestrin 2014, the SGHMC paper).
_WHOLE_LEG = ("needs the whole dataset (its accept/reject compares the energy at a leg's two ends, which "
              "mini-batches would take from different targets)")

_SPECS = [
    Spec("SGLD", "StochasticGradientLangevinDynamics", "tati.samplers.sgld:SGLD",
         options=("adapt_mass", "measure_step_width", "warm_start"), infos=(SGLD_INFO,)),
    Spec("GLA1", "GeometricLangevinAlgorithm_1stOrder", "tati.samplers.gla:GLA1", options=_LANGEVIN,
         aliases=("GLA_1stOrder",), persistent_momenta=True, infos=(LANGEVIN_INFO,)),
    Spec("GLA2", "GeometricLangevinAlgorithm_2ndOrder", "tati.samplers.gla:GLA2", options=_LANGEVIN,
         aliases=("GLA_2ndOrder",), persistent_momenta=True, infos=(LANGEVIN_INFO,)),
    Spec("BAOAB", "BAOAB", "tati.samplers.baoab:BAOAB", options=_LANGEVIN, persistent_momenta=True,
         infos=(LANGEVIN_INFO,)),
    Spec("CCAdL", "CovarianceControlledAdaptiveLangevin", "tati.samplers.ccadl:CCAdL",
         options=("friction_constant", "sigma", "sigmaA", "adapt_mass", "measure_step_width", "warm_start"),
         aliases=("CovarianceControlledAdaptiveLangevinThermostat",), persistent_momenta=True, infos=(LANGEVIN_INFO,)),
    Spec("SGHMC", "StochasticGradientHamiltonianMonteCarlo", "tati.samplers.sghmc:SGHMC", options=_SGHMC,
         persistent_momenta=True, infos=(LANGEVIN_INFO, SGHMC_ESTIMATING_INFO)),
    Spec("SGNHT", "StochasticGradientNoseHooverThermostat", "tati.samplers.sgnht:SGNHT",
         options=("friction_constant", "mass", "adapt_mass", "measure_step_width", "warm_start"), persistent_momenta=True,
         infos=(LANGEVIN_INFO.adding("thermostat"),)),
    Spec("pSGLD", "PreconditionedStochasticGradientLangevinDynamics", "tati.samplers.psgld:PSGLD",
         options=_RMSPROP + ("adapt_mass", "measure_step_width", "warm_start"), infos=(SGLD_INFO,)),
    Spec("HMC1", "HamiltonianMonteCarlo_1stOrder", "tati.samplers.hmc:HMC1", kind=LEGS, driver=_LEGS, options=_HMC,
         aliases=("HMC_1stOrder",), metropolis=True, redraws_momenta=True, full_batch=True,
         why_full_batch=_WHOLE_LEG, target_acceptance=0.8, infos=(HMC_INFO,)),
    Spec("HMC2", "HamiltonianMonteCarlo_2ndOrder", "tati.samplers.hmc:HMC2", kind=LEGS, driver=_LEGS, options=_HMC,
         aliases=("HMC_2ndOrder",), metropolis=True, redraws_momenta=True, full_batch=True,
         why_full_batch=_WHOLE_LEG, target_acceptance=0.8, infos=(HMC_INFO,)),
    Spec("NUTS", "NoUTurnSampler", "tati.samplers.proposal:NUTS", kind=PROPOSAL, driver=_PROPOSALS,
         options=_ADAPTING + ("max_tree_depth",), metropolis=True, redraws_momenta=True, evaluates_target=True,
         full_batch=True, why_full_batch=_WHOLE_DATA, target_acceptance=0.8, infos=(NUTS_INFO,)),
    # 0.234: optimal as d -> infinity (Roberts, Gelman & Gilks 1997); 0.8 above: Stan's delta.
    # One evaluation a step, not NUTS's tree of them: XLA repays its compile only in long runs.
    Spec("RWMH", "RandomWalkMetropolisHastings", "tati.samplers.proposal:RWMH", kind=PROPOSAL, driver=_PROPOSALS,
         options=_ADAPTING, metropolis=True, evaluates_target=True, full_batch=True, why_full_batch=_WHOLE_DATA,
         target_acceptance=0.234, infos=(RWMH_INFO,), xla_steps=(50000, 50000, 50000)),
    Spec("GradientDescent", "GradientDescent", "tati.optimizers.gradient_descent:GradientDescent", samples=False,
         aliases=("GD",), infos=(OPTIMIZER_INFO,)),
    Spec("BarzilaiBorweinGradientDescent", "BarzilaiBorweinGradientDescent",
         "tati.optimizers.barzilai_borwein:BarzilaiBorweinGradientDescent", samples=False,
         aliases=("BarzilaiBorwein", "BB"), walker_steps=True, full_batch=True,
         why_full_batch="needs the whole dataset (its step compares the gradients of two steps, which "
                        "mini-batches make gradients of different functions)",
         summary_header="{steps} steps of {name} (first step learning_rate {first_learning_rate})",
         infos=(OPTIMIZER_INFO,)),
    Spec("L-BFGS", "L-BFGS", "tati.optimizers.lbfgs:LBFGS", kind=FULL_BATCH,
         driver="tati.optimizers.lbfgs:LBFGSKernel", samples=False, aliases=("LBFGS",),
         takes_learning_rate=False, full_batch=True, why_full_batch="minimises on the whole dataset (its line search needs one function)",
         summary_header="{steps} iterations of {name}{stopped}", infos=(OPTIMIZER_INFO,)),
]
_WATCHERS = []


def _index():
    """Every spelling (lower case) and every kernel path -> its spec."""
    global _BY_SPELLING, _BY_KERNEL
    _BY_SPELLING = {spelling.lower(): spec for spec in _SPECS for spelling in spec.spellings}
    _BY_KERNEL = {spec.kernel: spec for spec in _SPECS}


_index()


def register(spec):
    """Add a sampler or optimizer (tests add toys; a plug-in could add its own). ValueError if
    one of its spellings is taken."""
    taken = [spelling for spelling in spec.spellings if spelling.lower() in _BY_SPELLING]
    if taken:
        raise ValueError(f"register: the name '{taken[0]}' is already registered")
    _SPECS.append(spec)
    _index()
    for watcher in _WATCHERS:
        watcher(spec, True)


def unregister(name):
    """Remove what `register` added, by any of its spellings."""
    spec = spec_of(name, kinds="kernel")
    _SPECS.remove(spec)
    _index()
    for watcher in _WATCHERS:
        watcher(spec, False)


def watch(watcher):
    """Call watcher(spec, added) for every spec now and at every register/unregister (the option
    table merges the options that a spec declares)."""
    _WATCHERS.append(watcher)
    for spec in _SPECS:
        watcher(spec, True)


def specs(samples=None):
    """Every spec in the list's order; the samplers' (True) or the optimizers' (False) only."""
    return [spec for spec in _SPECS if samples is None or spec.samples == samples]


def sampler_names():
    """Short names of the samplers."""
    return [spec.name for spec in specs(samples=True)]


def optimizer_names():
    """Short names of tati's own optimizers (Keras' are accepted besides)."""
    return [spec.name for spec in specs(samples=False)]


def samplers_where(flag=None, **values):
    """Short names of the samplers whose spec has `flag` true (a field name) and the given field
    values: samplers_where("persistent_momenta"), samplers_where(kind=LEGS)."""
    return [spec.name for spec in specs(samples=True)
            if (flag is None or getattr(spec, flag)) and all(getattr(spec, k) == v for k, v in values.items())]


def samplers_taking(option):
    """Short names of the samplers that take this option (their spec lists it)."""
    return [spec.name for spec in specs(samples=True) if option in spec.option_names]


def find(name):
    """The spec of a name in any spelling and case, or None."""
    return _BY_SPELLING.get(str(name).lower())


def spec_of(name, option="sampler", kinds="sampler"):
    """The spec of a sampler (kinds="sampler"), an optimizer ("optimizer") or either ("kernel")
    named in any spelling and case; InputError naming `option`, with "did you mean", if none."""
    spec = find(name)
    samples = {"sampler": True, "optimizer": False}.get(kinds)
    if spec is not None and (samples is None or spec.samples == samples):
        return spec
    known = [s for s, found in _BY_SPELLING.items() if samples is None or found.samples == samples]
    close = difflib.get_close_matches(str(name).lower(), known, n=1)
    hint = f" (did you mean '{_BY_SPELLING[close[0]].name}'?)" if close else ""
    names = [s.name for s in specs(samples)]
    raise InputError(f"{option} '{name}' is unknown; choose one of {', '.join(names)}{hint}")


def canonical_sampler(name, option="sampler"):
    """The short name for a sampler's short, full or original name in any case; InputError if
    unknown."""
    return spec_of(name, option).name


def canonical_optimizer(name):
    """An optimizer name case-folded, tati's own by their short name (GradientDescent for GD,
    ...), for comparisons; Keras' names as given."""
    spec = find(name)
    return spec.name.lower() if spec is not None and not spec.samples else str(name).lower()


def optimizer_spec(name):
    """The spec of one of tati's optimizers by any spelling, or None (a Keras optimizer)."""
    spec = find(name)
    return spec if spec is not None and not spec.samples else None


def spec_of_kernel(kernel):
    """The spec of a kernel object, by its class or the nearest registered base class; None for
    what the registry does not list (Keras' own optimizers)."""
    for cls in type(kernel).__mro__:
        spec = _BY_KERNEL.get(kernel_path(cls))
        if spec is not None:
            return spec
    return None


def every_info():
    """Every Info a table can have: the optimizers' (Keras' own too) and every spec's."""
    return tuple(dict.fromkeys((OPTIMIZER_INFO,) + tuple(info for spec in _SPECS for info in spec.infos)))


def integer_columns():
    """Every column written as an integer, in every table that has it."""
    return integer_columns_of(every_info())


def target_acceptance(name, value=None):
    """The acceptance rate the step width adapts to: `value` (the option target_acceptance_rate)
    or the sampler's default (its spec's)."""
    if value is not None:
        return float(value)
    return spec_of(name).target_acceptance
