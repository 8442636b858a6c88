"""Samplers: Keras 3 optimizers that sample exp(-beta U) instead of minimising U, and the
proposal kernels NUTS and RWMH from TensorFlow Probability (samplers/proposal.py).

`get_sampler(name)` accepts the original TATi's full names and the short ones,
case-insensitively.
"""

from tati.names import canonical_sampler, sampler_names
from tati.samplers.baoab import BAOAB
from tati.samplers.base import SamplerBase
from tati.samplers.ccadl import CCAdL
from tati.samplers.gla import GLA1, GLA2
from tati.samplers.hmc import HMC1, HMC2, HamiltonianMonteCarlo
from tati.samplers.proposal import NUTS, RWMH
from tati.samplers.psgld import PSGLD
from tati.samplers.sghmc import SGHMC
from tati.samplers.sgld import SGLD
from tati.samplers.sgnht import SGNHT

_CLASSES = {"SGLD": SGLD, "GLA1": GLA1, "GLA2": GLA2, "BAOAB": BAOAB, "CCAdL": CCAdL, "SGHMC": SGHMC,
            "HMC1": HMC1, "HMC2": HMC2, "NUTS": NUTS, "RWMH": RWMH,
            "SGNHT": SGNHT, "pSGLD": PSGLD}


def get_sampler(name):
    """The sampler class for a short or full name (any case); InputError if unknown or not built."""
    return _CLASSES[canonical_sampler(name)]


__all__ = ["BAOAB", "CCAdL", "GLA1", "GLA2", "HMC1", "HMC2", "HamiltonianMonteCarlo", "NUTS", "PSGLD", "RWMH", "SGHMC",
           "SGLD", "SGNHT", "SamplerBase", "get_sampler", "sampler_names"]
