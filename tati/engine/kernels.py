"""What the loop and the recorder ask of a kernel, answered by its spec (tati/engine/contract.py
declares the contract and the four kinds; tati/engine/registry.py lists the specs).

A kernel object's spec is found by its class (or its nearest registered base class) in the
registry; what the registry does not list (Keras' own optimizers) is an optimizer of kind
GRADIENT. No isinstance, hasattr or getattr: a new kernel is known by its registry line alone
(tests/engine/test_architecture.py).
"""

from tati.engine.contract import FULL_BATCH, GRADIENT, LEGS, PROPOSAL, load_driver  # noqa: F401 (the kinds)
from tati.engine.registry import spec_of_kernel
from tati.recording.columns import OPTIMIZER_INFO


def kind_of(kernel):
    """The kernel's kind, by its spec."""
    spec = spec_of_kernel(kernel)
    return GRADIENT if spec is None else spec.kind


def driver_of(kernel):
    """The driver kernel class (engine/driver.py Kernel) that steps it, as its spec names it."""
    return load_driver(spec_of_kernel(kernel))


def is_sampler(kernel):
    """Whether the kernel samples (a step_width, an inverse temperature) rather than optimises."""
    spec = spec_of_kernel(kernel)
    return spec is not None and spec.samples


def has_walker_steps(kernel):
    """Whether the kernel is an optimizer with a step width per walker (its spec's walker_steps),
    which gives its rows' scaled gradients (`scaled_gradients`)."""
    spec = spec_of_kernel(kernel)
    return spec is not None and spec.walker_steps


def info_of(kernel):
    """The kernel's Info: its class's `info` (or, where options change its columns, an instance
    attribute) for a registered kernel, the optimizers' for Keras' own."""
    return OPTIMIZER_INFO if spec_of_kernel(kernel) is None else kernel.info
