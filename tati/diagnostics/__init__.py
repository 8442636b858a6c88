"""Diagnostics that say whether sampling is right: kinetic temperature and the momentum
chi-square test (temperature.py); R-hat and effective sample size across walkers
(convergence.py)."""

from tati.diagnostics.convergence import convergence
from tati.diagnostics.temperature import kinetic_temperature_interval, momentum_chi_square

__all__ = ["convergence", "kinetic_temperature_interval", "momentum_chi_square"]
