"""Momentum and temperature diagnostics per layer, from readings of momenta and positions.

In equilibrium at inverse temperature beta, momenta p of d degrees of freedom with diagonal
mass M are N(0, M / beta), so for any group of k of them beta p^T M^{-1} p ~ chi^2(k). Hence:

* T_c (`quantile_fractions`): the fraction of readings whose beta p^T M^{-1} p lies below the
  c quantile of chi^2(k) is c; its Clopper-Pearson interval (temperature.momentum_chi_square)
  says whether a measured fraction is compatible. An overheated sampler gives T_c < c, an
  overcooled one T_c > c (the T_0.99 test of the SGHMC thesis chapter among the source
  documents, after Wenzel et al. 2020);
* kinetic temperature (`kinetic_temperatures`): p^T M^{-1} p / k has mean 1 / beta; the mean
  of n independent readings lies in the chi^2(nk) interval of temperature.kinetic_temperature_interval;
* configurational temperature (`configurational_temperatures`): q . grad U / k has mean
  1 / beta for a density exp(-beta U) that confines q (integration by parts); its error bar
  here is sd / sqrt(n) over the n readings used.

Groups are a dict name -> column indices (e.g. `model.parameter_groups()` of the built-in
network); "all" (every column) comes first. The intervals assume independent readings: each
function thins the rows evenly to `readings` of them, by default the number of rows divided
by the integrated autocorrelation time of the group "all"'s statistic (`independent_readings`),
and returns how many it used in the column `readings`.

`layer_temperatures` puts the three together for a run's momenta table (record_momenta), per
walker, with the positions from its trajectory (Result.layer_temperatures).

No TensorFlow here: numpy, scipy and pandas.
"""

import numpy as np
import pandas as pd

from tati.diagnostics.convergence import equal_rows
from tati.diagnostics.equipartition import integrated_autocorrelation_time
from tati.diagnostics.temperature import kinetic_temperature_interval, momentum_chi_square
from tati.errors import InputError
from tati.recording.columns import GRADIENT_PREFIX, MOMENTUM_PREFIX


def independent_readings(series):
    """Number of readings over the integrated autocorrelation time (per chain, times chains)."""
    x = np.asarray(series, dtype=np.float64)
    x = x.reshape(len(x), -1)
    return max(1, int(x.shape[0] / integrated_autocorrelation_time(x)) * x.shape[1])


def _groups(d, groups):
    result = {"all": np.arange(d)}
    for name, columns in (groups or {}).items():
        columns = np.asarray(columns, dtype=np.int64).ravel()
        if len(columns) == 0 or columns.min() < -d or columns.max() >= d:
            raise ValueError(f"group '{name}': column indices must lie in [0, {d})")
        result[name] = columns
    return result


def _thinned(rows, statistic, readings):
    """Rows thinned evenly to `readings` of them (default: the independent ones of statistic)."""
    if readings is None:
        readings = independent_readings(statistic)
    readings = int(min(max(readings, 1), len(rows)))
    return np.linspace(0, len(rows) - 1, readings).round().astype(np.int64)


def _scaled_squares(momenta, mass, inverse_temperature):
    p = np.asarray(momenta, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"momenta must be [readings, d], got shape {p.shape}")
    return inverse_temperature * p * p / np.broadcast_to(np.asarray(mass, dtype=np.float64), p.shape[1:])


def quantile_fractions(momenta, mass=1.0, inverse_temperature=1.0, groups=None, quantile=0.99,
                       level=0.99, readings=None):
    """T_c per group: DataFrame indexed by group with columns dof, fraction (T_c), low, high
    (Clopper-Pearson at `level`) and readings (the independent readings assumed).

    momenta: [readings, d]; mass: a scalar or the diagonal [d]."""
    squares = _scaled_squares(momenta, mass, inverse_temperature)
    rows = _thinned(squares, squares.sum(axis=1), readings)
    table = {}
    for name, columns in _groups(squares.shape[1], groups).items():
        values = squares[rows][:, columns].sum(axis=1)  # beta p^T M^-1 p = 2 beta K, with beta = 1 below
        fraction, (low, high) = momentum_chi_square(0.5 * values, len(columns), 1.0, quantile, level)
        table[name] = dict(dof=len(columns), fraction=fraction, low=low, high=high, readings=len(rows))
    return pd.DataFrame.from_dict(table, orient="index")


def kinetic_energy_quantile_fraction(kinetic_energy, dof, inverse_temperature=1.0, quantile=0.99,
                                     level=0.99, readings=None):
    """T_c of the whole momentum vector from recorded kinetic energies K = p^T M^-1 p / 2 (the
    run-info column kinetic_energy): [rows] or [rows, walkers], thinned per walker to independent
    readings. Returns dict(dof, fraction, low, high, readings) as a row of quantile_fractions."""
    energies = np.asarray(kinetic_energy, dtype=np.float64)
    energies = energies.reshape(len(energies), -1)
    n, walkers = energies.shape
    per_walker = n / integrated_autocorrelation_time(energies) if readings is None else readings / walkers
    rows = np.linspace(0, n - 1, int(min(max(per_walker, 1), n))).round().astype(np.int64)
    values = energies[rows].ravel()
    fraction, (low, high) = momentum_chi_square(values, dof, inverse_temperature, quantile, level)
    return dict(dof=int(dof), fraction=fraction, low=low, high=high, readings=len(values))


def momentum_test(run_info, dof, inverse_temperature=1.0, burn_in=0, quantile=0.99, level=0.99):
    """T_quantile of the whole momentum vector from a run-info table's kinetic energies after
    burn_in, each walker's last rows, as many as every walker has (kinetic_energy_quantile_fraction).
    Samplers without momenta (SGLD, RWMH) have no kinetic energy: InputError."""
    if "kinetic_energy" not in run_info:
        raise InputError("momentum_test needs the run info's kinetic_energy: this sampler has no momenta")
    rows = equal_rows(run_info, burn_in)
    if rows.empty:
        raise InputError(f"momentum_test: no run-info row after burn_in {burn_in}")
    energies = np.stack([g["kinetic_energy"].to_numpy() for _, g in rows.groupby("id")], axis=1)
    return kinetic_energy_quantile_fraction(energies, dof, inverse_temperature, quantile, level)


def kinetic_temperatures(momenta, mass=1.0, inverse_temperature=1.0, groups=None, level=0.99, readings=None):
    """Mean kinetic temperature p^T M^{-1} p / k per group: DataFrame with columns dof,
    temperature, low, high (where the mean falls with probability `level` at 1 / beta,
    chi-square) and readings (the independent readings assumed)."""
    squares = _scaled_squares(momenta, mass, 1.0)
    rows = _thinned(squares, squares.sum(axis=1), readings)
    table = {}
    for name, columns in _groups(squares.shape[1], groups).items():
        temperature = float(squares[rows][:, columns].sum(axis=1).mean() / len(columns))
        low, high = kinetic_temperature_interval(len(columns), len(rows), inverse_temperature, level)
        table[name] = dict(dof=len(columns), temperature=temperature, low=low, high=high, readings=len(rows))
    return pd.DataFrame.from_dict(table, orient="index")


def configurational_temperatures(positions, gradients, groups=None, readings=None):
    """Mean configurational temperature q . grad U / k per group (from [readings, d] arrays):
    DataFrame with columns dof, temperature, standard_error and readings."""
    q = np.asarray(positions, dtype=np.float64)
    g = np.asarray(gradients, dtype=np.float64)
    if q.ndim != 2 or q.shape != g.shape:
        raise ValueError(f"positions and gradients must be [readings, d] alike, got {q.shape} and {g.shape}")
    products = q * g
    rows = _thinned(products, products.sum(axis=1), readings)
    table = {}
    for name, columns in _groups(q.shape[1], groups).items():
        values = products[rows][:, columns].sum(axis=1) / len(columns)
        error = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else float("nan")
        table[name] = dict(dof=len(columns), temperature=float(values.mean()), standard_error=error,
                           readings=len(rows))
    return pd.DataFrame.from_dict(table, orient="index")


def _per_walker(table, columns):
    """[rows, walkers, len(columns)] of a table's columns, each walker's rows in step order
    (as many per walker as every walker has: its last ones)."""
    ordered = table.sort_values(["id", "step"], kind="stable")
    walkers = [group[columns].to_numpy(np.float64) for _, group in ordered.groupby("id", sort=True)]
    n = min(len(w) for w in walkers)
    return np.stack([w[len(w) - n:] for w in walkers], axis=1)


def _independent_rows(values, statistic):
    """values [n, W, d] thinned evenly per walker to its independent readings of the [n, W]
    statistic (n / tau, tau pooled over the walkers), as [readings, d]."""
    n = values.shape[0]
    per_walker = int(min(max(n / integrated_autocorrelation_time(statistic), 1), n))
    rows = np.linspace(0, n - 1, per_walker).round().astype(np.int64)
    return values[rows].reshape(-1, values.shape[2])


def layer_temperatures(momenta, trajectory=None, groups=None, inverse_temperature=1.0, burn_in=0, quantile=0.99,
                       level=0.99):
    """The momentum diagnostics per layer from a run's momenta table (record_momenta: the
    momenta scaled by M^{-1/2} and the gradients of the trajectory's rows): a DataFrame indexed
    by group, "all" (the whole vector) first, with

    * dof, and readings: the independent readings assumed (each walker's rows after burn_in
      thinned evenly to rows / tau, tau the integrated autocorrelation time of beta p^T M^-1 p,
      pooled over the walkers);
    * fraction, low, high: T_quantile and its Clopper-Pearson interval at `level`
      (quantile_fractions);
    * kinetic_temperature, kinetic_low, kinetic_high: p^T M^-1 p / dof and the interval it falls
      in at 1 / beta with probability `level` (kinetic_temperatures);
    * configurational_temperature, configurational_error, configurational_readings:
      q . grad U / dof with its standard error, over readings thinned by the autocorrelation
      of q . grad U itself (positions decorrelate more slowly than momenta); q from the
      trajectory rows of the same walker and step (NaN without a trajectory). It is 1 / beta
      only where exp(-beta U) confines q (configurational_temperatures).

    groups: name -> parameter names (the trajectory's columns, e.g. the built-in network's
    `model.parameter_groups()`); names not in the table (fixed parameters) are left out, and so
    are groups left empty. Only the rows with step > burn_in count."""
    names = [c[len(MOMENTUM_PREFIX):] for c in momenta.columns if c.startswith(MOMENTUM_PREFIX)]
    if not names:
        raise InputError("layer_temperatures: the momenta table has no momentum_ columns (record_momenta)")
    kept = momenta[momenta["step"] > burn_in]
    if kept.empty:
        raise InputError(f"layer_temperatures: no momenta row after burn_in {burn_in}")
    index = {name: i for i, name in enumerate(names)}
    members = {}
    for group, columns in (groups or {}).items():
        found = [index[name] for name in columns if name in index]
        if found and group != "all":
            members[group] = found
    p = _per_walker(kept, [MOMENTUM_PREFIX + name for name in names])
    squares = inverse_temperature * np.square(p)
    p = _independent_rows(p, squares.sum(axis=2))
    fractions = quantile_fractions(p, 1.0, inverse_temperature, members, quantile, level, readings=len(p))
    kinetic = kinetic_temperatures(p, 1.0, inverse_temperature, members, level, readings=len(p))
    table = fractions[["dof", "readings", "fraction", "low", "high"]].copy()
    table["kinetic_temperature"] = kinetic["temperature"]
    table["kinetic_low"], table["kinetic_high"] = kinetic["low"], kinetic["high"]
    table["configurational_temperature"] = table["configurational_error"] = np.nan
    table["configurational_readings"] = 0
    if trajectory is not None and set(names) <= set(trajectory.columns) and not trajectory.empty:
        joined = kept[["id", "step"] + [GRADIENT_PREFIX + name for name in names]].merge(
            trajectory[["id", "step"] + names], on=["id", "step"], how="inner", sort=False)
        if not joined.empty:
            q = _per_walker(joined, names)
            g = _per_walker(joined, [GRADIENT_PREFIX + name for name in names])
            both = np.concatenate([q, g], axis=2)
            both = _independent_rows(both, (q * g).sum(axis=2))
            d = len(names)
            configurational = configurational_temperatures(both[:, :d], both[:, d:], members, readings=len(both))
            table["configurational_temperature"] = configurational["temperature"]
            table["configurational_error"] = configurational["standard_error"]
            table["configurational_readings"] = configurational["readings"]
    return table
