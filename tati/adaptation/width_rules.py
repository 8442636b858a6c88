"""The measured step width's rules (tati/adaptation/measured_width.py, whose docstring derives them),
as numbers that the analyses read without TensorFlow: tati-analyse temperature names the heat a
measured width allows, as the run's summary does."""

STABILITY = 0.5  # c of h = c / sqrt(lambda_max): 4 times inside the stability bound 2
OVERDAMPED_STABILITY = 0.1  # SGLD's h lambda_max: the stiffest mode's variance 1 / (1 - h lambda / 2), 5% above
EXCESS = 0.05  # the kinetic temperature's excess from the gradient noise, relative to T
