"""The loop's interface: what a compiled chunk runs (`Loop`) and `compile_chunk`, which makes
the loop's kernel a kernel of the driver, the one its spec names (`Spec.driver`,
tati/engine/registry.py), and compiles the driver's chunk (tati/engine/driver.py):

    one gradient per step    tati/engine/gradient.py GradientKernel (the default)
    HMC's legs               samplers/hmc_kernel.py LegsKernel
    NUTS and RWMH            samplers/proposal_kernel.py ProposalSteps
    L-BFGS                   optimizers/lbfgs.py LBFGSKernel
"""

from dataclasses import dataclass

from tati.engine.driver import compile_driver
from tati.engine.kernels import driver_of


@dataclass(frozen=True)
class Loop:
    """What a compiled chunk runs: the model and its data, the kernel (None: the bare loop of
    one gradient per step, no update), the run's step counter and running averages, and how
    the run goes: the burn-in's steps (whose averages are not kept), whether rows carry the
    accuracy, the ensemble preconditioner (samplers/ensemble.py), a row every every_nth
    steps, XLA, stopping at the first non-finite step (`check_finite`) and rows with the
    momenta and gradients (`record_momenta`; tati/engine/gradient.py)."""
    model: object
    data: object
    kernel: object
    step: object
    averages: object
    burn_in_steps: int = 0
    has_accuracy: bool = False
    ensemble: object = None
    every_nth: int = 1
    jit_compile: bool = False
    check_finite: bool = False
    record_momenta: bool = False


def steps_dtype(kernel):
    """The dtype of a chunk's step count n: its driver kernel's (int32 for HMC's legs, a loop
    counter beside the legs' step counts; int64 for the others)."""
    return driver_of(kernel).steps_dtype


def compile_chunk(loop):
    """The compiled chunk of the loop's kernel, stepped by the driver kernel its spec names:
    chunk(n) runs up to n steps and returns their rows as a block (tati/engine/rows.py)."""
    return compile_driver(driver_of(loop.kernel)(loop))
