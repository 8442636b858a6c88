"""SWAG (Maddox et al. 2019, "A Simple Baseline for Bayesian Uncertainty in Deep Learning"): a
Gaussian over the parameters from the iterates of SGD with a constant or cyclic learning rate.

    result = sim.fit()                                   # every_nth sets the snapshot frequency
    posterior = swag(result.trajectory, rank=20, burn_in=500)
    table, lpd = sim.predictive(x_test, y_test, trajectory=posterior.sample(1000, seed=1))

The snapshots are a trajectory's rows after `burn_in`, in step order. As in the paper's
Algorithm 1, each snapshot theta_i updates the running first and second moments and appends a
deviation column, keeping the last K = `rank`:

    mean_i    = (n mean_{i-1} + theta_i) / (n + 1)          n = the snapshots before theta_i
    second_i  = (n second_{i-1} + theta_i^2) / (n + 1)
    variance  = max(second - mean^2, 0)                      (0 where rounding makes it negative)
    D         = [theta_i - mean_i for the last K snapshots]  (d x K)

and a draw is theta = mean + variance^(1/2) z1 / sqrt(2) + D z2 / sqrt(2 (K - 1)), z1 ~ N(0, I_d),
z2 ~ N(0, I_K): a Gaussian of covariance (diag(variance) + D D^T / (K - 1)) / 2.

Walkers: each walker gets its own SWAG, and `sample(n)` draws n parameter vectors from each,
so the draws are the equal mixture of the walkers' Gaussians (MultiSWAG, Wilson and Izmailov
2020). Pooling them instead would put one Gaussian across the walkers' different basins, whose
mean is none of the solutions. With one walker the arrays have no walker axis, as
`Simulation.parameters`.
"""

import math
from collections import deque

import numpy as np
import pandas as pd

from tati.errors import InputError

NOT_PARAMETERS = ("id", "step", "loss")


class SWAG:
    """The SWAG Gaussians of one or several walkers; see the module docstring."""

    def __init__(self, names, walkers, mean, second, deviations, snapshots, last_step):
        self.parameter_names = list(names)
        self.walkers = list(walkers)            # the trajectory's ids
        self._mean, self._second = mean, second  # [W, d]
        self._deviations = deviations           # [W, d, K]
        self.snapshots = snapshots              # [W] snapshots per walker
        self.last_step = last_step

    def _view(self, values):
        return values[0] if len(self.walkers) == 1 else values

    @property
    def mean(self):
        """The running average of the snapshots, [d] ([W, d] for several walkers)."""
        return self._view(self._mean.copy())

    @property
    def variance(self):
        """The diagonal: the running second moment minus the squared mean, clamped at 0."""
        return self._view(np.maximum(self._second - self._mean ** 2, 0.0))

    @property
    def deviations(self):
        """D: the last K deviations theta_i - mean_i as columns, [d, K] ([W, d, K])."""
        return self._view(self._deviations.copy())

    @property
    def rank(self):
        """K: the number of deviation columns (the rank asked for, or fewer snapshots)."""
        return self._deviations.shape[-1]

    def covariance(self):
        """The covariance of the draws, (diag(variance) + D D^T / (K - 1)) / 2: [d, d] ([W, d, d])."""
        variance = np.maximum(self._second - self._mean ** 2, 0.0)
        low_rank = 0.0
        if self.rank:
            low_rank = np.einsum("wik,wjk->wij", self._deviations, self._deviations) / (self.rank - 1)
        return self._view(0.5 * (variance[:, :, None] * np.eye(variance.shape[1]) + low_rank))

    def sample(self, n, seed=0):
        """n draws per walker as a DataFrame shaped like a trajectory: columns id, step and the
        parameters, rows in step order, walkers ascending. Their steps follow the trajectory's
        last step, so any burn_in of the run (Simulation.predictive's default) keeps them all."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError(f"sample: n must be a positive integer, got {n!r}")
        rng = np.random.default_rng(seed)
        walkers, d = self._mean.shape
        k = self.rank
        z1 = rng.standard_normal((n, walkers, d))
        draws = self._mean + np.sqrt(np.maximum(self._second - self._mean ** 2, 0.0)) * z1 / math.sqrt(2.0)
        if k:
            z2 = rng.standard_normal((n, walkers, k))
            draws = draws + np.einsum("wdk,nwk->nwd", self._deviations, z2) / math.sqrt(2.0 * (k - 1))
        frame = pd.DataFrame({
            "id": np.tile(np.asarray(self.walkers, np.int64), n),
            "step": np.repeat(self.last_step + 1 + np.arange(n, dtype=np.int64), walkers)})
        parameters = pd.DataFrame(draws.reshape(n * walkers, d), columns=self.parameter_names)
        return pd.concat([frame, parameters], axis=1)


def swag(trajectory, rank=20, burn_in=0, parameters=None):
    """The SWAG of a trajectory's rows after `burn_in` (snapshots), one per walker (column id),
    keeping the last `rank` deviations (0: the diagonal alone, SWAG-Diagonal). `parameters`:
    the columns, by default all but id, step and loss."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0 or rank == 1:
        raise InputError(f"rank must be 0 (the diagonal alone) or at least 2, got {rank!r}")
    if not isinstance(trajectory, pd.DataFrame) or "id" not in trajectory or "step" not in trajectory:
        raise InputError("swag needs a trajectory: a DataFrame with columns id, step and the parameters")
    names = [c for c in trajectory.columns if c not in NOT_PARAMETERS] if parameters is None else list(parameters)
    missing = [name for name in names if name not in trajectory]
    if missing or not names:
        raise InputError(f"trajectory has no column {missing[0]}" if missing else "trajectory has no parameter column")
    kept = trajectory[trajectory["step"] > burn_in].sort_values(["id", "step"], kind="stable")
    walkers = sorted(int(i) for i in kept["id"].unique())
    if not walkers:
        raise InputError(f"trajectory has no row after burn_in {burn_in}")
    least = max(rank, 2)
    means, seconds, deviations, counts = [], [], [], []
    for walker in walkers:
        rows = kept.loc[kept["id"] == walker, names].to_numpy(np.float64)
        if len(rows) < least:
            raise InputError(f"swag: walker {walker} has {len(rows)} snapshot(s) after burn_in {burn_in}; "
                             f"rank {rank} needs at least {least} (more steps, a smaller every_nth or burn_in)")
        mean, second, columns = running_moments(rows, rank)
        means.append(mean)
        seconds.append(second)
        deviations.append(np.stack(columns, axis=1) if rank else np.zeros((len(names), 0)))
        counts.append(len(rows))
    return SWAG(names, walkers, np.array(means), np.array(seconds), np.array(deviations), np.array(counts),
                int(kept["step"].max()))


def running_moments(rows, rank):
    """(mean, second moment, the last `rank` deviation columns) of the snapshots `rows` [n, d],
    updated one snapshot at a time as SWAG collects them during training."""
    mean, second = np.zeros(rows.shape[1]), np.zeros(rows.shape[1])
    columns = deque(maxlen=max(rank, 1))
    for n, theta in enumerate(rows):
        mean = (n * mean + theta) / (n + 1)
        second = (n * second + theta ** 2) / (n + 1)
        columns.append(theta - mean)
    return mean, second, list(columns)[-rank:] if rank else []
