"""Samplers: Keras 3 optimizers that sample exp(-beta U) instead of minimising U.

`get_sampler(name)` accepts the original TATi's full names and the short ones,
case-insensitively.
"""

import difflib

from tati.errors import InputError
from tati.samplers.baoab import BAOAB
from tati.samplers.base import SamplerBase
from tati.samplers.ccadl import CCAdL
from tati.samplers.gla import GLA1, GLA2
from tati.samplers.hmc import HMC1, HMC2, HamiltonianMonteCarlo
from tati.samplers.sghmc import SGHMC
from tati.samplers.sgld import SGLD

# short name -> (the original's full name, class or None while not built yet)
_SAMPLERS = {
    "SGLD": ("StochasticGradientLangevinDynamics", SGLD),
    "GLA1": ("GeometricLangevinAlgorithm_1stOrder", GLA1),
    "GLA2": ("GeometricLangevinAlgorithm_2ndOrder", GLA2),
    "BAOAB": ("BAOAB", BAOAB),
    "CCAdL": ("CovarianceControlledAdaptiveLangevin", CCAdL),
    "SGHMC": ("StochasticGradientHamiltonianMonteCarlo", SGHMC),
    "HMC1": ("HamiltonianMonteCarlo_1stOrder", HMC1),
    "HMC2": ("HamiltonianMonteCarlo_2ndOrder", HMC2),
    "NUTS": ("NoUTurnSampler", None),
    "RWMH": ("RandomWalkMetropolisHastings", None),
}
_BY_LOWER = {}
for _short, (_full, _cls) in _SAMPLERS.items():
    _BY_LOWER[_short.lower()] = _short
    _BY_LOWER[_full.lower()] = _short


def sampler_names():
    """Short names of the samplers that are available."""
    return [short for short, (_, cls) in _SAMPLERS.items() if cls is not None]


def get_sampler(name):
    """The sampler class for a short or full name (any case); InputError if unknown or not built."""
    short = _BY_LOWER.get(str(name).lower())
    if short is None:
        close = difflib.get_close_matches(str(name).lower(), list(_BY_LOWER), n=1)
        hint = f" (did you mean '{_BY_LOWER[close[0]]}'?)" if close else ""
        raise InputError(f"sampler '{name}' is unknown; choose one of "
                         f"{', '.join(sampler_names())}{hint}")
    cls = _SAMPLERS[short][1]
    if cls is None:
        raise InputError(f"sampler '{name}' is not available in this version of tati; available: "
                         f"{', '.join(sampler_names())}")
    return cls


__all__ = ["BAOAB", "CCAdL", "GLA1", "GLA2", "HMC1", "HMC2", "HamiltonianMonteCarlo", "SGHMC", "SGLD", "SamplerBase", "get_sampler",
           "sampler_names"]
