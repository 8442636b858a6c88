"""A run read back as ArviZ's InferenceData in a NetCDF file (tati-analyse inference_data), for
ArviZ's summaries and plots outside Python's session that ran it:

    tati-analyse inference_data --directory run --output run.nc
    idata = arviz.from_netcdf("run.nc")                 # az.summary(idata), az.plot_trace(idata)

The groups are tati/export/arviz.py's: posterior (walkers as chains, the trajectory's rows after
burn-in as draws) and sample_stats (the run-info columns at the draws' steps; with the run's
inverse_temperature also lp and NUTS's energy). The pointwise log-likelihood and the posterior
predictive need the model and its data, which the files do not hold: Result.to_inference_data, or
tati-predictive --inference_data with the run's options.
"""

import os

from tati.analysis import select
from tati.errors import InputError

PURPOSE = "inference_data"


def inference_data(result, burn_in, inverse_temperature=None):
    """arviz.InferenceData of the run's tables (a RunTables or Result) after burn_in."""
    from tati.export.arviz import to_inference_data
    select.parameter_names(result, PURPOSE)  # the trajectory with id, step, loss and parameters, or one line
    select.after_burn_in(result, "trajectory", result.trajectory, burn_in, PURPOSE)
    return to_inference_data(result, burn_in, inverse_temperature)


def write(idata, path):
    """The NetCDF file, written beside its name first so that a failed write leaves no partial file."""
    partial = f"{path}.partial"
    try:
        idata.to_netcdf(partial)
        os.replace(partial, path)
    except OSError as error:
        raise InputError(f"cannot write '{path}': {error.strerror or error}") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def summary(idata):
    """The lines tati-analyse prints: the groups, chains and draws, and how to read the file."""
    posterior = idata.posterior
    chains = posterior.sizes["chain"]
    return [f"  groups {', '.join(idata.groups())}: {chains} {_noun(chains, 'chain')} ({_noun(chains, 'walker')}) "
            f"of {_count(posterior.sizes['draw'], 'draw')}, {_count(len(posterior.data_vars), 'parameter')}; "
            f"{_count(len(idata.sample_stats.data_vars), 'sample stat')}",
            "  read it with arviz.from_netcdf(file)"]


def _noun(number, noun):
    return noun if number == 1 else noun + "s"


def _count(number, noun):
    return f"{number} {_noun(number, noun)}"
