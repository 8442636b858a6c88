"""Diagnostics that say whether sampling is right: kinetic temperature and the momentum
chi-square test (temperature.py)."""

from tati.diagnostics.temperature import kinetic_temperature_interval, momentum_chi_square

__all__ = ["kinetic_temperature_interval", "momentum_chi_square"]
