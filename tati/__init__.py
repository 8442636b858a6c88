"""tati: thermodynamic sampling of loss manifolds and posteriors with TensorFlow.

    import tati
    sim = tati.Simulation(potential=U, initial_parameters=x0, sampler="BAOAB")
    result = sim.sample()   # result.run_info, result.trajectory, result.averages
"""

import os

# TensorFlow's C++ start-up chatter (CPU features, CUDA probing) is noise for our users.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tati import optimizers, samplers  # noqa: E402
from tati.errors import InputError  # noqa: E402
from tati.simulation import Result, Simulation  # noqa: E402

__version__ = "0.1.0"
__all__ = ["InputError", "Result", "Simulation", "optimizers", "samplers", "__version__"]
