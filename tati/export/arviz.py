"""A run as ArviZ's InferenceData, the common format of MCMC diagnostics and plots.

    idata = result.to_inference_data(burn_in=1000)     # a sample() Result or a load_run one
    arviz.summary(idata)                                # mean, sd, HDI, MCSE, ESS, R-hat

* posterior: one variable per parameter column (param0, weight0, bias0, ...), dimensions
  (chain, draw); the chains are the walkers (coordinate `chain` = the walker ids) and the draws
  are each walker's trajectory rows with step > burn_in, the last ones, as many as every walker
  has (HMC's walkers have rows at different steps), as in `Result.convergence`.
* sample_stats: the `step` of each draw, the trajectory's `loss`, and the run-info columns at
  the draw's step (without id and step), under ArviZ's names where one means exactly the same:
  `step_width` -> `step_size`, `leapfrog_steps` -> `n_steps`, `tree_depth` as it is, and
  `diverging`, whether the walker's count `divergences` (HMC, NUTS) rose since its previous
  row: with every_nth = 1 whether this very transition diverged, else whether one since the
  previous row did. Every other column keeps tati's name (see doc/columns.md).
* With `inverse_temperature` beta given, also `lp` = -beta loss, the log density up to a
  constant, and for NUTS `energy` = beta total_energy, the Hamiltonian in the units of Stan's
  energy (for az.bfmi and az.plot_energy). The tables do not record beta, so these need it.
* With `log_likelihood` a Simulation (the one that ran, or one of the same model and data: a run
  read back has none), log_likelihood: `y`, each draw's log p(y_j | x_j, theta) of every data
  point j, dimensions (chain, draw, point), for az.loo and az.waic (PyMC's
  compute_log_likelihood, Stan's log_lik; `tati.bayes.predictive.pointwise_log_likelihood`), and
  observed_data: `y`, the labels (point; several label columns: point, y_dim_1).
* With `posterior_predictive` a Simulation (as log_likelihood), posterior_predictive: `y`, one
  replicate of the data per draw, y~_j ~ p(y | x_j, theta) at each data point j, drawn with the
  simulation's `seed` (`tati.bayes.predictive.posterior_predictive_draws`), in the labels' shape and
  coding, and observed_data, for the posterior predictive check az.plot_ppc (PyMC's
  sample_posterior_predictive).
* With `predictions` the features of new points [points, the run's feature columns] (and
  posterior_predictive's Simulation, whose model and labels' coding draw them), predictions: `y`,
  a replicate per draw at each new point, drawn with a generator of the seed apart from
  posterior_predictive's, and predictions_constant_data: `x`, the features (PyMC's
  sample_posterior_predictive with predictions=True; held-out labels have no group of their own).

The divergence count starts at 0 with the run, and NUTS starts it again after burn-in (at its
first trajectory row); a Result of a later sample() call of a run begins with the earlier
calls' count, so its first draw of each walker may be flagged wrongly: export the whole run
(tati.load_run) for exact flags there.
"""

import importlib.util
import warnings

import numpy as np
import pandas as pd

from tati.errors import InputError
from tati.export import MissingExtra

# tati's run-info column -> ArviZ's sample_stats name, only where the meaning is the same.
RENAMED = {"step_width": "step_size", "leapfrog_steps": "n_steps", "tree_depth": "tree_depth"}


def import_arviz(what="to_inference_data"):
    """The arviz module, imported without its notice about a coming refactor; MissingExtra
    (an InputError and an ImportError) naming the extra if it is not installed."""
    if importlib.util.find_spec("arviz") is None:
        raise MissingExtra(f"{what} needs arviz: pip install tati[arviz]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


def to_inference_data(result, burn_in=0, inverse_temperature=None, log_likelihood=None, posterior_predictive=None,
                      predictions=None):
    """An arviz.InferenceData with groups posterior and sample_stats, and log_likelihood or
    posterior_predictive (with observed_data) with a Simulation given, and predictions (with
    predictions_constant_data) at new points' features; see the module docstring. InputError if
    the result has no trajectory or too few rows after burn_in."""
    az = import_arviz()
    from tati.diagnostics.convergence import equal_rows
    trajectory = result.trajectory
    if trajectory is None or not {"id", "step", "loss"} <= set(trajectory.columns):
        raise InputError("to_inference_data needs the trajectory table (id, step, loss and the parameters)")
    names = list(trajectory.columns[list(trajectory.columns).index("loss") + 1:])
    if not names:
        raise InputError("to_inference_data: the trajectory has no parameter columns after loss")
    if inverse_temperature is not None and not (isinstance(inverse_temperature, (int, float, np.number))
                                                and inverse_temperature > 0):
        raise InputError(f"inverse_temperature must be a positive number, got {inverse_temperature!r}")
    if predictions is not None and posterior_predictive is None:
        raise InputError("predictions are drawn with posterior_predictive's Simulation (its model and its labels' "
                         "coding): give posterior_predictive=sim too")
    draws = equal_rows(trajectory, burn_in).sort_values(["id", "step"], kind="stable")
    if draws.empty:
        raise InputError(f"to_inference_data: no trajectory rows with step > burn_in {burn_in}")
    walkers = np.unique(draws["id"].to_numpy())
    shape = (len(walkers), len(draws) // len(walkers))

    def chains(values):
        return np.asarray(values).reshape(shape)

    posterior = {name: chains(draws[name].to_numpy(dtype=np.float64)) for name in names}
    stats = {"step": chains(draws["step"].to_numpy(dtype=np.int64)),
             "loss": chains(draws["loss"].to_numpy(dtype=np.float64))}
    run_info = _run_info_at(result.run_info, draws, trajectory)
    for column in run_info.columns:
        if column not in ("id", "step", "loss"):
            stats[RENAMED.get(column, column)] = chains(run_info[column].to_numpy())
    if inverse_temperature is not None:
        stats["lp"] = -inverse_temperature * stats["loss"]
        if "tree_depth" in run_info and "total_energy" in run_info:  # NUTS
            stats["energy"] = inverse_temperature * stats["total_energy"]
    groups = {}
    for name, simulation in (("log_likelihood", log_likelihood), ("posterior_predictive", posterior_predictive)):
        if simulation is not None:
            values, labels = _per_point(name, simulation, draws)
            groups.update({name: {"y": values.reshape(shape + values.shape[1:])}, "observed_data": {"y": labels},
                           "dims": {"y": ["point"]}})
    if predictions is not None:
        groups.update(_predictions(posterior_predictive, predictions, draws, shape))
    idata = az.from_dict(posterior=posterior, sample_stats=stats, coords={"chain": walkers}, **groups)
    for group in idata.groups():
        idata[group].attrs.update(inference_library="tati", inference_library_version=_version())
    return idata


def _per_point(group, simulation, draws):
    """([draws, points] or [draws, points, columns]: the group's values at each draw and data point of the
    simulation, its labels: [points], or [points, columns] for several), or InputError where it is not a
    Simulation with a network and a likelihood, or its model's parameters are not the trajectory's columns."""
    from tati.bayes.predictive import pointwise_log_likelihood, posterior_predictive_draws
    if not all(hasattr(simulation, name) for name in ("options", "model", "data")):
        raise InputError(f"{group} takes the Simulation that ran (or one of the same model and data), "
                         f"not {type(simulation).__name__}")
    if group == "log_likelihood":
        values = pointwise_log_likelihood(simulation, draws)
    else:
        values = posterior_predictive_draws(simulation, draws, simulation.options["seed"])
    labels = simulation.data.all()[1].numpy()
    if group == "posterior_predictive" and labels.shape[1] == 1:
        values = values[..., 0]
    return values, labels[:, 0] if labels.shape[1] == 1 else labels


def _predictions(simulation, features, draws, shape):
    """The groups predictions (`y`: a replicate per draw at each new point, drawn by the simulation's
    model in its labels' coding, with a generator of its seed apart from posterior_predictive's) and
    predictions_constant_data (`x`: the features), with their dims."""
    from tati.bayes.predictive import posterior_predictive_draws
    values = posterior_predictive_draws(simulation, draws, (simulation.options["seed"], 1), features=features)
    values = values[..., 0] if values.shape[-1] == 1 else values
    return {"predictions": {"y": values.reshape(shape + values.shape[1:])},
            "predictions_constant_data": {"x": np.asarray(features, dtype=np.float64)},
            # ArviZ 0.23 names predictions_constant_data's dims by `dims`, not `pred_dims`: both
            "pred_dims": {"y": ["point"], "x": ["point"]}, "dims": {"y": ["point"], "x": ["point"]}}


def _run_info_at(run_info, draws, trajectory):
    """The run-info rows at the draws' (id, step), in the draws' order, with `diverging` where
    the table counts divergences; rows the run-info table lacks (an interrupted run's tables may
    end at different rows) are NaN."""
    if run_info is None or run_info.empty or not {"id", "step"} <= set(run_info.columns):
        return pd.DataFrame(index=range(len(draws)))
    table = run_info.sort_values(["id", "step"], kind="stable")
    if "divergences" in table:
        table = table.assign(diverging=_diverging(table, trajectory))
    table = table.drop_duplicates(["id", "step"], keep="last")
    merged = draws[["id", "step"]].merge(table, on=["id", "step"], how="left")
    if "diverging" in merged:
        merged["diverging"] = merged["diverging"].astype("boolean").fillna(False).astype(bool)
    return merged


def _diverging(table, trajectory):
    """Whether each row's count of divergences rose since the walker's previous row (a table
    sorted by id and step). The count starts at 0 at the walker's first row, and for NUTS (it
    has tree_depth) again at the walker's first trajectory row, the first step after burn-in."""
    count = table["divergences"].to_numpy(dtype=np.float64)
    previous = np.array(table.groupby("id")["divergences"].shift(1).fillna(0), dtype=np.float64)
    if "tree_depth" in table:
        first = trajectory.groupby("id")["step"].min()
        restart = table["step"].to_numpy() == table["id"].map(first).to_numpy()
        previous[restart] = 0
    return count > previous


def _version():
    from tati import __version__
    return __version__
