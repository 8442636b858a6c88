"""Samplers: Keras 3 optimizers that sample exp(-beta U) instead of minimising U, and the
proposal kernels NUTS and RWMH from TensorFlow Probability (samplers/proposal.py).

Every sampler of the registry (tati/engine/registry.py) is an attribute by its short name
(`tati.samplers.BAOAB`), and by its class's name where that differs (`tati.samplers.PSGLD`); `get_sampler(name)` accepts the original TATi's full names and the
short ones, case-insensitively.
"""

from tati.engine.contract import load_kernel
from tati.engine.registry import sampler_names, spec_of, specs
from tati.samplers.base import SamplerBase

# Loaded now, so that Keras knows their serialisable classes once tati.samplers is imported.
_LOADED = [load_kernel(spec) for spec in specs(samples=True)]


def get_sampler(name):
    """The sampler class for a short or full name (any case); InputError if unknown."""
    return load_kernel(spec_of(name))


def __getattr__(name):
    """A sampler's class by its short name or its class's name (tati.samplers.pSGLD, .PSGLD)."""
    for spec in specs(samples=True):
        if name in (spec.name, spec.kernel.rsplit(":", 1)[1]):
            return load_kernel(spec)
    raise AttributeError(f"module 'tati.samplers' has no attribute '{name}'")


def __dir__():
    return sorted(list(globals()) + sampler_names())


__all__ = ["SamplerBase", "get_sampler", "sampler_names"] + sampler_names()
