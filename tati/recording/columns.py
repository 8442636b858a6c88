"""Which columns each table has, by method. Their meanings are documented in doc/columns.md.

`sampler`: a sampler rather than an optimizer; `momentum`: the sampler keeps momenta (all
but SGLD); `accuracy`: a network with a built-in loss; `metropolis`: HMC, whose rows show the
chain's state at evaluation steps. The proposal kernels (NUTS, RWMH) list their own columns.
"""


def run_info_columns(sampler, accuracy, momentum=True, metropolis=False, noise_estimate=False):
    """`noise_estimate`: SGHMC with a gradient_noise_estimator, whose mean V-hat is a column."""
    head = ["id", "step", "epoch"] + (["accuracy"] if accuracy else []) + ["loss", "time_per_nth_step"]
    if noise_estimate:
        return run_info_columns(sampler, accuracy, momentum) + ["gradient_noise_variance"]
    if metropolis:
        return head + ["total_energy", "old_total_energy", "kinetic_energy", "scaled_momentum",
                       "scaled_gradient", "virial", "average_rejection_rate", "divergences", "step_width",
                       "gradient_evaluations"]
    if sampler and momentum:
        return head + ["total_energy", "kinetic_energy", "scaled_momentum", "scaled_gradient",
                       "virial", "scaled_noise", "gradient_evaluations"]
    return head + ["scaled_gradient", "virial"] + (["scaled_noise", "gradient_evaluations"] if sampler else [])


def trajectory_columns(parameter_names):
    return ["id", "step", "loss"] + list(parameter_names)


# The momenta table (record_momenta): a momentum and a gradient column per parameter, named
# after its trajectory column with these prefixes.
MOMENTUM_PREFIX, GRADIENT_PREFIX = "momentum_", "gradient_"


def momenta_columns(parameter_names):
    names = list(parameter_names)
    return ["id", "step"] + [MOMENTUM_PREFIX + n for n in names] + [GRADIENT_PREFIX + n for n in names]


def averages_columns(sampler, momentum=True, metropolis=False):
    if metropolis:
        return ["id", "step", "epoch", "loss", "ensemble_average_loss", "average_kinetic_energy",
                "average_virials", "average_rejection_rate"]
    if sampler and momentum:
        return ["id", "step", "epoch", "loss", "ensemble_average_loss", "average_kinetic_energy",
                "average_virials", "average_inertia"]
    return ["id", "step", "epoch", "loss"] + (["ensemble_average_loss"] if sampler else []) + ["average_virials"]


# The proposal kernels (NUTS, RWMH; samplers/proposal.py): one row per transition.
PROPOSAL_RUN_INFO = {
    "NUTS": ("total_energy", "kinetic_energy", "virial", "step_width", "tree_depth", "leapfrog_steps",
             "gradient_evaluations", "average_rejection_rate", "divergences"),
    "RWMH": ("step_width", "average_rejection_rate"),
}
PROPOSAL_AVERAGES = {
    "NUTS": ("average_kinetic_energy", "average_virials", "average_rejection_rate"),
    "RWMH": ("average_rejection_rate",),
}


def proposal_run_info_columns(sampler, accuracy):
    return (["id", "step", "epoch"] + (["accuracy"] if accuracy else []) + ["loss", "time_per_nth_step"]
            + list(PROPOSAL_RUN_INFO[sampler]))


def proposal_averages_columns(sampler):
    return ["id", "step", "epoch", "loss", "ensemble_average_loss"] + list(PROPOSAL_AVERAGES[sampler])


INTEGER_COLUMNS = ("id", "step", "epoch", "divergences", "tree_depth", "leapfrog_steps", "gradient_evaluations")
