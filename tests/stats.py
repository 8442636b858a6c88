"""Statistical helpers for tests: seeds and critical values from a stated false-failure budget.

Statistical tests use fixed default seeds. Set TATI_TEST_SEED to an integer to shift every
seed: that is how their false-failure rate can be measured over many runs.
"""

import os

import numpy as np
import pandas as pd
from scipy import stats

SEED_OFFSET = int(os.environ.get("TATI_TEST_SEED", "0"))


def seed(base):
    """The seed a test uses: its fixed default, shifted by TATI_TEST_SEED."""
    return base + SEED_OFFSET


def t_critical(alpha, dof, tests=1):
    """Two-sided Student-t critical value for false-failure rate alpha split over `tests` (Bonferroni)."""
    return stats.t.ppf(1.0 - alpha / (2.0 * tests), dof)


def z_critical(alpha, tests=1):
    """Two-sided normal critical value for false-failure rate alpha split over `tests` (Bonferroni)."""
    return stats.norm.ppf(1.0 - alpha / (2.0 * tests))


def chain_mean_and_error(values_per_chain):
    """Mean over independent chains of per-chain estimates, its standard error and the dof."""
    values = np.asarray(values_per_chain, dtype=np.float64)
    return values.mean(), values.std(ddof=1) / np.sqrt(len(values)), len(values) - 1


def read_csv(path):
    """A CSV table read back with exact floats (pandas 3 does that by default, 2 on request)."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return pd.read_csv(path)
    return pd.read_csv(path, float_precision="round_trip")


def for_sampler(name, **options):
    """The options without those of other samplers than `name` (the option table's declaration),
    which the Simulation refuses: for tests that give one set of options to several samplers."""
    from tati.engine.registry import canonical_sampler
    from tati.config.options import BY_NAME, takes
    short = canonical_sampler(name)
    return {name: value for name, value in options.items() if name not in BY_NAME or takes(name, short)}


def dkwm_distance(samples):
    """sup |F_n - F| against the logistic CDF (1 + tanh q) / 2."""
    x = np.sort(samples)
    cdf = 0.5 * (1.0 + np.tanh(x))
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))


def dkwm_bound(n, alpha=1e-6):
    return np.sqrt(np.log(2.0 / alpha) / (2.0 * n))


def mcse_deviations(chains, exact):
    """|estimate - exact| / MCSE for each column of statistics [draws, walkers, k] against the
    exact means, the MCSE from tfp's ESS over the walkers (as Stan's)."""
    from tati.diagnostics.convergence import _quiet_tfp
    with _quiet_tfp() as tfp:
        if chains.shape[1] > 1:
            ess = tfp.mcmc.effective_sample_size(chains, filter_beyond_positive_pairs=True, cross_chain_dims=1).numpy()
        else:
            ess = tfp.mcmc.effective_sample_size(chains[:, 0], filter_beyond_positive_pairs=True).numpy()
    pooled = chains.reshape(-1, chains.shape[-1])
    error = pooled.std(axis=0, ddof=1) / np.sqrt(ess)
    return np.abs(pooled.mean(axis=0) - exact) / error


def first_and_second_moments(trajectory, columns, burn_in):
    """[draws, walkers, d + d (d + 1) / 2]: each draw's coordinates and their products x_i x_j, i <= j."""
    kept = trajectory[trajectory.step > burn_in].sort_values(["step", "id"])
    walkers = kept["id"].nunique()
    x = kept[columns].to_numpy().reshape(-1, walkers, len(columns))
    i, j = np.triu_indices(len(columns))
    return np.concatenate([x, x[..., i] * x[..., j]], axis=-1), (i, j)
