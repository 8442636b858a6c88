"""Targets with exact answers shared by several test modules."""

import numpy as np
import tensorflow as tf

# A correlated 2-D Gaussian: standard deviations 1 and 2, correlation 0.9; A is its precision.
STD, RHO = np.array([1.0, 2.0]), 0.9
COVARIANCE = np.outer(STD, STD) * np.array([[1.0, RHO], [RHO, 1.0]])
A = np.linalg.inv(COVARIANCE)


def logistic_potential(theta):
    """U(q) = 2 log cosh q per walker ([W, 1] -> [W]): density sech^2(q) / 2, CDF (1 + tanh q) / 2."""
    q = theta[:, 0]
    return 2.0 * (tf.abs(q) + tf.math.log1p(tf.exp(-2.0 * tf.abs(q))) - np.log(2.0))
