"""What the loop and the recorder ask of a kernel, answered by its spec (tati/engine/contract.py
declares the contract and the four kinds; tati/engine/registry.py lists the specs).

A kernel object's spec is found by its class (or its nearest registered base class) in the
registry; what the registry does not list (Keras' own optimizers) is an optimizer of kind
GRADIENT. No isinstance: a new kernel is known by its registry line alone.
"""

from tati.engine.contract import FULL_BATCH, GRADIENT, LEGS, PROPOSAL  # noqa: F401 (the kinds, for the loops)
from tati.engine.registry import spec_of_kernel
from tati.recording.columns import OPTIMIZER_INFO, Info


def kind_of(kernel):
    """The kernel's kind, by its spec."""
    spec = spec_of_kernel(kernel)
    return GRADIENT if spec is None else spec.kind


def is_sampler(kernel):
    """Whether the kernel samples (a step_width, an inverse temperature) rather than optimises."""
    spec = spec_of_kernel(kernel)
    return spec is not None and spec.samples


def info_of(kernel):
    """The kernel's Info: its own (a class or, where options change its columns, an instance
    attribute), or the optimizers' for an optimizer that declares none (Keras' own)."""
    info = getattr(kernel, "info", None)
    return info if isinstance(info, Info) else OPTIMIZER_INFO
