"""tati: thermodynamic sampling of loss manifolds and posteriors with TensorFlow.

    import tati
    sim = tati.Simulation(potential=U, initial_parameters=x0, sampler="BAOAB")
    result = sim.sample()   # result.run_info, result.trajectory, result.averages

TensorFlow is imported on first use of Simulation, samplers or optimizers, so that the
command-line tools answer --help and bad flags at once.
"""

import importlib
import os

# TensorFlow's C++ start-up chatter (CPU features, CUDA probing) is noise for our users.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from tati.errors import InputError, Interrupted, SamplingError  # noqa: E402

__version__ = "0.1.0"
_LAZY = {"Simulation": "tati.simulation", "Result": "tati.simulation",
         "samplers": "tati.samplers", "optimizers": "tati.optimizers", "callbacks": "tati.callbacks",
         "diagnostics": "tati.diagnostics", "convergence": "tati.diagnostics.convergence",
         "load_run": "tati.analysis.runs", "analysis": "tati.analysis"}
__all__ = ["InputError", "Interrupted", "Result", "SamplingError", "Simulation", "analysis", "callbacks", "convergence",
           "diagnostics", "load_run", "optimizers", "samplers", "__version__"]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'tati' has no attribute '{name}'")
    module = importlib.import_module(_LAZY[name])
    return module if module.__name__ == f"tati.{name}" else getattr(module, name)
