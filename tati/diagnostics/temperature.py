"""Kinetic temperature and the momentum chi-square diagnostic.

In equilibrium at inverse temperature beta the momenta of N degrees of freedom with mass M
satisfy beta p^T M^{-1} p = 2 beta K ~ chi^2(N). Hence:

* kinetic temperature T_kin = 2 K / N has mean 1 / beta; the mean of n independent readings
  lies in [chi^2_{nN}(a/2), chi^2_{nN}(1 - a/2)] / (nN beta) with probability 1 - a;
* T_0.99 (see the SGHMC thesis chapter among the source documents): the fraction of readings
  with 2 beta K below the 0.99 quantile of chi^2(N) should be 0.99; a binomial (Clopper-Pearson)
  interval says whether a measured fraction is compatible with that.
Readings must be far enough apart in time to be nearly independent.
"""

import numpy as np
from scipy import stats


def kinetic_temperature_interval(dof, readings, inverse_temperature=1.0, level=0.99):
    """The interval the mean kinetic temperature 2K/N of `readings` independent readings
    falls in with probability `level` in equilibrium."""
    total = dof * readings
    low, high = stats.chi2.ppf([(1 - level) / 2, (1 + level) / 2], total)
    return low / (total * inverse_temperature), high / (total * inverse_temperature)


def momentum_chi_square(kinetic_energies, dof, inverse_temperature=1.0, quantile=0.99, level=0.99):
    """(T_quantile, (low, high)): the fraction of readings with 2 beta K below the chi^2(dof)
    quantile, and its Clopper-Pearson interval at `level`."""
    values = 2.0 * inverse_temperature * np.asarray(kinetic_energies, dtype=np.float64)
    inside = int(np.sum(values <= stats.chi2.ppf(quantile, dof)))
    n = len(values)
    a = 1.0 - level
    low = stats.beta.ppf(a / 2, inside, n - inside + 1) if inside > 0 else 0.0
    high = stats.beta.ppf(1 - a / 2, inside + 1, n - inside) if inside < n else 1.0
    return inside / n, (float(low), float(high))
