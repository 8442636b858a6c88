"""Which columns each table has. Their meanings are documented in doc/columns.md.

Every table starts with the same columns; the rest of a run-info and an averages row is what
its kernel reports: its `Info`, declared here (this module imports no TensorFlow, so tools
that read tables back know every column without it) and named by the kernel's class as its
`info` (tati/engine/kernels.py). The compiled loops deliver a kernel's run-info columns under these
names, so a new sampler adds columns by declaring them, without touching the loop's callers,
the recorder or the readers of tables.
"""

import difflib
import re
from typing import NamedTuple

from tati.errors import InputError


class Info(NamedTuple):
    """What a kernel reports at each row, one number per walker.

    run_info: its run-info columns, after `id, step, epoch, [accuracy], loss, time_per_nth_step`;
    averages: its averages columns, after `id, step, epoch, loss`: the running averages
        (ensemble_average_loss, average_kinetic_energy, average_virials, average_inertia) or a
        run-info column of the same name;
    integers: its columns that count (written as integers).
    """
    run_info: tuple
    averages: tuple
    integers: tuple = ()

    def adding(self, *columns):
        """This info with more run-info columns (floats) after its own."""
        return self._replace(run_info=self.run_info + columns)


# The running averages' columns, in the order of recording/averages.py's values().
RUNNING_AVERAGES = ("ensemble_average_loss", "average_kinetic_energy", "average_virials", "average_inertia")

# An optimizer of fit() (Keras' and tati's own, L-BFGS).
OPTIMIZER_INFO = Info(run_info=("scaled_gradient", "virial"), averages=("average_virials",))

# The Langevin samplers with momenta (GLA1/2, BAOAB, CCAdL, SGHMC; samplers/base.py row_info); a
# sampler that reports more declares its info in its registry line (SGNHT's thermostat).
LANGEVIN_INFO = Info(run_info=("total_energy", "kinetic_energy", "scaled_momentum", "scaled_gradient", "virial",
                               "scaled_noise", "gradient_evaluations"),
                     averages=("ensemble_average_loss", "average_kinetic_energy", "average_virials",
                               "average_inertia"),
                     integers=("gradient_evaluations",))

# SGLD, which has no momenta.
SGLD_INFO = Info(run_info=("scaled_gradient", "virial", "scaled_noise", "gradient_evaluations"),
                 averages=("ensemble_average_loss", "average_virials"), integers=("gradient_evaluations",))

# SGHMC with a gradient_noise_estimator: the mean V-hat over each walker's parameters too.
SGHMC_ESTIMATING_INFO = LANGEVIN_INFO.adding("gradient_noise_variance")


# HMC1/HMC2: the chain's state at evaluations (samplers/hmc_kernel.py leg_row).
HMC_INFO = Info(run_info=("total_energy", "old_total_energy", "kinetic_energy", "scaled_momentum", "scaled_gradient",
                          "virial", "average_rejection_rate", "divergences", "step_width", "gradient_evaluations"),
                averages=("ensemble_average_loss", "average_kinetic_energy", "average_virials",
                          "average_rejection_rate"),
                integers=("divergences", "gradient_evaluations"))

# The proposal kernels (samplers/proposal_kernel.py): one row per transition.
NUTS_INFO = Info(run_info=("total_energy", "kinetic_energy", "virial", "step_width", "tree_depth", "leapfrog_steps",
                           "gradient_evaluations", "average_rejection_rate", "divergences"),
                 averages=("ensemble_average_loss", "average_kinetic_energy", "average_virials",
                           "average_rejection_rate"),
                 integers=("divergences", "tree_depth", "leapfrog_steps", "gradient_evaluations"))
RWMH_INFO = Info(run_info=("step_width", "average_rejection_rate"),
                 averages=("ensemble_average_loss", "average_rejection_rate"))



def head(accuracy):
    return ["id", "step", "epoch"] + (["accuracy"] if accuracy else []) + ["loss", "time_per_nth_step"]


def run_info_columns(info, accuracy):
    return head(accuracy) + list(info.run_info)


def averages_columns(info):
    return ["id", "step", "epoch", "loss"] + list(info.averages)


def trajectory_columns(parameter_names):
    return ["id", "step", "loss"] + list(parameter_names)


def check_parameter_columns(columns, names, what):
    """InputError unless a table's parameter columns are exactly the model's `names`: a
    trajectory of another network must not pass for one of this network. Its parameter columns
    are those after `loss` where it has one (a trajectory table), else those named like the
    built-in network's and potentials' (weight3, bias0, param1)."""
    columns = [str(c) for c in columns]
    after_loss = columns[columns.index("loss") + 1:] if "loss" in columns else []
    theirs = after_loss or [c for c in columns if re.fullmatch(r"(weight|bias|param)[0-9]+", c)]
    sizes = f" (it has {len(theirs)} parameter columns, this model {len(names)})"
    foreign = [c for c in theirs if c not in names]
    if foreign:
        raise InputError(f"{what} has the column '{foreign[0]}', which is not a parameter of this model{sizes}: "
                         "give the options of the model that wrote it")
    missing = [name for name in names if name not in columns]
    if missing:
        close = difflib.get_close_matches(missing[0], columns, n=1) if not theirs else []
        raise InputError(f"{what} has no column '{missing[0]}', a parameter of this model"
                         + (sizes if theirs else "") + (f" (did you mean '{close[0]}'?)" if close else ""))


# The momenta table (record_momenta): a momentum and a gradient column per parameter, named
# after its trajectory column with these prefixes.
MOMENTUM_PREFIX, GRADIENT_PREFIX = "momentum_", "gradient_"


def momenta_columns(parameter_names):
    names = list(parameter_names)
    return ["id", "step"] + [MOMENTUM_PREFIX + n for n in names] + [GRADIENT_PREFIX + n for n in names]


def integer_columns(infos):
    """Columns written as integers, in every table that has them: the common ones and those of
    the kernels' `infos` (every kernel's: tati/engine/registry.py every_info)."""
    return ("id", "step", "epoch") + tuple(dict.fromkeys(name for info in infos for name in info.integers))
