"""Which columns each table has, by method. Their meanings are documented in doc/columns.md."""


def run_info_columns(sampler, accuracy):
    head = ["id", "step", "epoch"] + (["accuracy"] if accuracy else []) + ["loss", "time_per_nth_step"]
    if sampler:
        return head + ["total_energy", "kinetic_energy", "scaled_momentum", "scaled_gradient",
                       "virial", "scaled_noise"]
    return head + ["scaled_gradient", "virial"]


def trajectory_columns(parameter_names):
    return ["id", "step", "loss"] + list(parameter_names)


def averages_columns(sampler):
    if sampler:
        return ["id", "step", "epoch", "loss", "ensemble_average_loss", "average_kinetic_energy",
                "average_virials", "average_inertia"]
    return ["id", "step", "epoch", "loss", "average_virials"]


INTEGER_COLUMNS = ("id", "step", "epoch")
