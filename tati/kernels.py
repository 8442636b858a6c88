"""The kernel contract: what the loop and the recorder ask of a sampler or optimizer.

A kernel is of one of four kinds, told by its type (`kind_of`), each with its compiled loop:

    GRADIENT     one gradient per step, computed by the loop and given to `apply(grads,
                 variables)`: the Langevin samplers (samplers/base.py SamplerBase) and every
                 optimizer, Keras' own or tati's; all are Keras 3 optimizers that also work in
                 `model.fit` (loop.make_chunk)
    LEGS         HMC1/HMC2 (samplers/hmc.py): where a walker's leg ends, `apply(grads,
                 variables, loss=...)` decides and starts the next leg; between, `integrate`
                 kicks and drifts with gradients at loop tensors (loop.make_metropolis_chunk)
    PROPOSAL     NUTS and RWMH (samplers/proposal.py): TFP's kernels, which evaluate the target
                 as often as they need through the model (loop_proposal.py)
    FULL_BATCH   L-BFGS for fit() (optimizers/lbfgs.py): TFP's minimiser on the whole dataset

Every model offers one `loss_and_gradient(features, labels, theta)` (models/flat.py), which
every kind evaluates through. A kernel's *state* is its variables (checkpointed by name,
checkpoint.py); its *info*, what its rows report, is its class's `info`, a
recording/columns.Info declared there: the run-info and averages columns follow from it
alone, and the compiled loops deliver those columns under their names.
"""

from tati.recording.columns import OPTIMIZER_INFO, Info

GRADIENT, LEGS, PROPOSAL, FULL_BATCH = "gradient", "legs", "proposal", "full_batch"


def kind_of(kernel):
    """The kernel's kind (above), by its type."""
    from tati.optimizers.lbfgs import LBFGS
    from tati.samplers import HamiltonianMonteCarlo
    from tati.samplers.proposal import ProposalKernel
    if isinstance(kernel, HamiltonianMonteCarlo):
        return LEGS
    if isinstance(kernel, ProposalKernel):
        return PROPOSAL
    if isinstance(kernel, LBFGS):
        return FULL_BATCH
    return GRADIENT


def is_sampler(kernel):
    """Whether the kernel samples (a step_width, an inverse temperature) rather than optimises."""
    from tati.samplers import SamplerBase
    from tati.samplers.proposal import ProposalKernel
    return isinstance(kernel, (SamplerBase, ProposalKernel))


def info_of(kernel):
    """The kernel's Info: its own (a class or, where options change its columns, an instance
    attribute), or the optimizers' for an optimizer that declares none (Keras' own)."""
    info = getattr(kernel, "info", None)
    return info if isinstance(info, Info) else OPTIMIZER_INFO

