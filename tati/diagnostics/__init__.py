"""Diagnostics that say whether sampling is right: kinetic temperature and the momentum
chi-square test (temperature.py); T_c, kinetic and configurational temperatures per layer from
readings of momenta and positions (of a run's momenta table: layer_temperatures), and T_c of a
run's recorded kinetic energies (momentum.py); R-hat and effective sample size across walkers
(convergence.py); walkers hot, cold, blown up or far out from the others (outliers.py); and the
summary of a run that puts them together, which the tools print and `Simulation.summary()`
returns (summary/)."""

from tati.diagnostics.convergence import convergence
from tati.diagnostics.momentum import (configurational_temperatures, independent_readings,
                                       integrated_autocorrelation_time, kinetic_temperatures,
                                       layer_temperatures, momentum_test, quantile_fractions)
from tati.diagnostics.outliers import Outlier, kinetic_outliers, loss_outliers, peak_outliers, walker_outliers
from tati.diagnostics.temperature import kinetic_temperature_interval, momentum_chi_square

__all__ = ["Outlier", "configurational_temperatures", "convergence", "independent_readings",
           "integrated_autocorrelation_time", "kinetic_outliers", "kinetic_temperature_interval",
           "kinetic_temperatures", "layer_temperatures", "loss_outliers", "momentum_chi_square",
           "momentum_test", "peak_outliers", "quantile_fractions", "walker_outliers"]
