"""Convergence across walkers: split R-hat and effective sample size of each parameter.

Walkers started apart that sample the same target must agree; R-hat compares the variance
between walkers (and between the halves of each walker's trajectory) with the variance within
them, and is near 1 only when they agree. The effective sample size (ESS) says how many
independent draws the correlated rows are worth. Both come from tfp.mcmc, which implements the
standard estimators (Gelman and Rubin, split chains; Geyer's initial positive sequence); they
are not reimplemented here.

    table = convergence(result.trajectory, burn_in=1000)   # or result.convergence(1000)
    table.loc["param0", "r_hat"], table["ess"].min()
"""

import contextlib
import warnings

import numpy as np
import pandas as pd

from tati.errors import InputError

# Split R-hat halves each walker's rows; ESS needs a few lags. Below this there is nothing to say.
MIN_ROWS = 4


def convergence(trajectory, burn_in=0, columns=None):
    """DataFrame indexed by parameter name with columns

    * r_hat: split R-hat over walkers, the square root of tfp.mcmc.potential_scale_reduction
      (split_chains=True), which is the ratio of the variance estimates; the root is what Stan
      and ArviZ report and compare with 1.01; NaN with one walker;
    * ess: effective sample size of all walkers together (tfp.mcmc.effective_sample_size with
      cross_chain_dims, Geyer's positive-pair truncation), i.e. about the sum of the walkers'
      ESS when they agree, and much smaller when they do not; with one walker that walker's ESS;
    * mean, sd: over all walkers' rows (sd with ddof 1).

    `trajectory` is a trajectory table (columns id, step, loss, then the parameters) of one run;
    rows with step <= burn_in are left out (burn_in counts steps, like `burn_in_steps`). Every
    walker must have the same number of rows. The estimates treat the rows as consecutive
    draws, so thinning by `every_nth` is fine; a parameter that never changes gets NaN.
    `columns` names the columns to compare instead of every parameter: a network's weights are
    not identified (hidden units can swap places and flip signs), its loss and output biases are.
    """
    chains, names = _chains(trajectory, burn_in, columns)
    walkers = chains.shape[1]
    with _quiet_tfp() as tfp:
        if walkers >= 2:
            # tfp gives Brooks and Gelman's ratio of variances; R-hat (Stan, ArviZ) is its root.
            r_hat = np.sqrt(tfp.mcmc.potential_scale_reduction(chains, split_chains=True).numpy())
            ess = tfp.mcmc.effective_sample_size(chains, filter_beyond_positive_pairs=True,
                                                 cross_chain_dims=1).numpy()
        else:
            r_hat = np.full(len(names), np.nan)
            ess = tfp.mcmc.effective_sample_size(chains[:, 0], filter_beyond_positive_pairs=True).numpy()
    pooled = chains.reshape(-1, len(names))
    return pd.DataFrame({"r_hat": r_hat, "ess": ess, "mean": pooled.mean(axis=0),
                         "sd": pooled.std(axis=0, ddof=1)},
                        index=pd.Index(names, name="parameter"))


def _chains(trajectory, burn_in, chosen=None):
    """([rows, walkers, parameters] float64 array ordered by step, parameter names), of the
    `chosen` columns if given."""
    columns = list(trajectory.columns)
    if "id" not in columns or "step" not in columns or "loss" not in columns:
        raise InputError("convergence needs a trajectory table with columns id, step, loss and the parameters")
    names = columns[columns.index("loss") + 1:] if chosen is None else list(chosen)
    missing = [name for name in names if name not in columns]
    if missing:
        raise InputError(f"convergence: the trajectory has no column {', '.join(missing)}")
    if not names:
        raise InputError("convergence: the trajectory has no parameter columns after loss")
    kept = trajectory[trajectory["step"] > burn_in].sort_values(["id", "step"], kind="stable")
    counts = kept.groupby("id").size()
    if counts.nunique() > 1:
        raise InputError(f"convergence: walkers have different numbers of rows after burn_in "
                         f"({counts.min()} to {counts.max()}); give one run's trajectory")
    walkers = len(counts)
    rows = int(counts.iloc[0]) if walkers else 0
    if rows < MIN_ROWS:
        raise InputError(f"convergence needs at least {MIN_ROWS} rows per walker after burn_in "
                         f"{burn_in}, got {rows}")
    values = kept[names].to_numpy(dtype=np.float64).reshape(walkers, rows, len(names))
    return np.ascontiguousarray(values.transpose(1, 0, 2)), names


def equal_rows(trajectory, burn_in=0):
    """The rows with step > burn_in, each walker's last ones, as many as the walker with the
    fewest has: HMC writes rows at each walker's own evaluations, so its walkers' counts differ."""
    kept = trajectory[trajectory["step"] > burn_in].sort_values(["id", "step"], kind="stable")
    if kept.empty:  # convergence() then says that burn_in leaves too few rows
        return kept
    return kept.groupby("id").tail(kept.groupby("id").size().min())


@contextlib.contextmanager
def _quiet_tfp():
    """tensorflow_probability, imported and called without its noise on stderr: the import
    warns about TensorFloat-32 on GPUs and about its own use of distutils, and the FFT
    autocorrelation logs a warning about casting its complex result to real (it keeps the real
    part, as it should)."""
    import tensorflow as tf
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="TensorFloat-32")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        import tensorflow_probability as tfp
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        yield tfp
    finally:
        logger.setLevel(level)
