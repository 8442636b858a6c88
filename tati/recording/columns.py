"""Which columns each table has, by method. Their meanings are documented in doc/columns.md.

`sampler`: a sampler rather than an optimizer; `momentum`: the sampler keeps momenta (all
but SGLD); `accuracy`: a network with a built-in loss; `metropolis`: HMC, whose rows show the
chain's state at evaluation steps.
"""


def run_info_columns(sampler, accuracy, momentum=True, metropolis=False):
    head = ["id", "step", "epoch"] + (["accuracy"] if accuracy else []) + ["loss", "time_per_nth_step"]
    if metropolis:
        return head + ["total_energy", "old_total_energy", "kinetic_energy", "scaled_momentum",
                       "scaled_gradient", "virial", "average_rejection_rate", "divergences"]
    if sampler and momentum:
        return head + ["total_energy", "kinetic_energy", "scaled_momentum", "scaled_gradient",
                       "virial", "scaled_noise"]
    return head + ["scaled_gradient", "virial"] + (["scaled_noise"] if sampler else [])


def trajectory_columns(parameter_names):
    return ["id", "step", "loss"] + list(parameter_names)


def averages_columns(sampler, momentum=True, metropolis=False):
    if metropolis:
        return ["id", "step", "epoch", "loss", "ensemble_average_loss", "average_kinetic_energy",
                "average_virials", "average_rejection_rate"]
    if sampler and momentum:
        return ["id", "step", "epoch", "loss", "ensemble_average_loss", "average_kinetic_energy",
                "average_virials", "average_inertia"]
    return ["id", "step", "epoch", "loss"] + (["ensemble_average_loss"] if sampler else []) + ["average_virials"]


INTEGER_COLUMNS = ("id", "step", "epoch", "divergences")
