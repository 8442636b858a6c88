"""Sampler names without TensorFlow, so that options are checked before it is imported.

Each sampler has a short name (the canonical one, used in tables, summaries and checkpoints) and
the original TATi's full name; both are accepted in any case, and so are the other spellings of
the original (ORIGINAL_NAMES; doc/migration.md).
"""

import difflib

from tati.errors import InputError

# short name -> (the original's full name, available in this version, proposal kernel with
# accept/reject)
SAMPLERS = {
    "SGLD": ("StochasticGradientLangevinDynamics", True, False),
    "GLA1": ("GeometricLangevinAlgorithm_1stOrder", True, False),
    "GLA2": ("GeometricLangevinAlgorithm_2ndOrder", True, False),
    "BAOAB": ("BAOAB", True, False),
    "CCAdL": ("CovarianceControlledAdaptiveLangevin", True, False),
    "SGHMC": ("StochasticGradientHamiltonianMonteCarlo", True, False),
    "HMC1": ("HamiltonianMonteCarlo_1stOrder", True, True),
    "HMC2": ("HamiltonianMonteCarlo_2ndOrder", True, True),
    "NUTS": ("NoUTurnSampler", True, True),
    "RWMH": ("RandomWalkMetropolisHastings", True, True),
    "SGNHT": ("StochasticGradientNoseHooverThermostat", True, False),
    "pSGLD": ("PreconditionedStochasticGradientLangevinDynamics", True, False),
}
PROPOSAL_KERNELS = ("NUTS", "RWMH")
# The original TATi's other spellings: its samplers' own names (GLA_1stOrder, ...) and CCAdL's
# full name there.
ORIGINAL_NAMES = {
    "GLA_1stOrder": "GLA1",
    "GLA_2ndOrder": "GLA2",
    "HMC_1stOrder": "HMC1",
    "HMC_2ndOrder": "HMC2",
    "CovarianceControlledAdaptiveLangevinThermostat": "CCAdL",
}
_BY_LOWER = {}
for _short, (_full, _, _) in SAMPLERS.items():
    _BY_LOWER[_short.lower()] = _short
    _BY_LOWER[_full.lower()] = _short
_BY_LOWER.update((_name.lower(), _short) for _name, _short in ORIGINAL_NAMES.items())


def sampler_names():
    """Short names of the samplers that are available."""
    return [short for short, (_, available, _) in SAMPLERS.items() if available]


def canonical_sampler(name, option="sampler"):
    """The short name for a short, full or original name in any case; InputError if unknown or
    not built."""
    short = _BY_LOWER.get(str(name).lower())
    if short is None:
        close = difflib.get_close_matches(str(name).lower(), list(_BY_LOWER), n=1)
        hint = f" (did you mean '{_BY_LOWER[close[0]]}'?)" if close else ""
        raise InputError(f"{option} '{name}' is unknown; choose one of {', '.join(sampler_names())}{hint}")
    if not SAMPLERS[short][1]:
        raise InputError(f"{option} '{name}' is not available in this version of tati; available: "
                         f"{', '.join(sampler_names())}")
    return short


def is_metropolis(short):
    """Whether the sampler of this short name accepts or rejects proposals (HMC)."""
    return SAMPLERS[short][2]


def is_proposal(short):
    """Whether the sampler of this short name is a TFP proposal kernel that evaluates the model
    itself (NUTS, RWMH) rather than a Keras optimizer given one gradient per step."""
    return short in PROPOSAL_KERNELS


def target_acceptance(short, value=None):
    """The acceptance rate the step width adapts to: `value` (the option target_acceptance_rate)
    or the sampler's default, 0.234 for RWMH (optimal as d -> infinity, Roberts, Gelman & Gilks
    1997) and 0.8 for NUTS, HMC1 and HMC2 (Stan's delta)."""
    if value is not None:
        return float(value)
    return 0.234 if short == "RWMH" else 0.8


# Accepted names of the Barzilai-Borwein optimizer (optimizers/barzilai_borwein.py), any case.
BARZILAI_BORWEIN_NAMES = ("barzilaiborweingradientdescent", "barzilaiborwein", "bb")


def canonical_optimizer(name):
    """A case-folded optimizer name with tati's GradientDescent, L-BFGS and Barzilai-Borwein
    aliases merged, for comparisons."""
    lower = str(name).lower()
    if lower in ("l-bfgs", "lbfgs"):
        return "l-bfgs"
    if lower in BARZILAI_BORWEIN_NAMES:
        return BARZILAI_BORWEIN_NAMES[0]
    return "gradientdescent" if lower in ("gradientdescent", "gd") else lower
