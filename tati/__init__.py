"""tati: thermodynamic sampling of loss manifolds and posteriors with TensorFlow.

    import tati
    sim = tati.Simulation(potential=U, initial_parameters=x0, sampler="BAOAB")
    result = sim.sample()   # result.run_info, result.trajectory, result.averages

TensorFlow is imported on first use of Simulation, samplers or optimizers, so that the
command-line tools answer --help and bad flags at once.

TensorFlow's C++ start-up lines (oneDNN, CUDA probing) are kept off stderr when tati is imported
before TensorFlow and TF_CPP_MIN_LOG_LEVEL is unset: tati then sets it to 3 and mutes stderr
while TensorFlow is imported, by tati or by the user. A TF_CPP_MIN_LOG_LEVEL the user set (say 0,
to see everything) leaves TensorFlow's logging alone.
"""

import contextlib
import importlib
import importlib.abc
import importlib.util
import os
import sys

from tati.errors import InputError, Interrupted, SamplingError

__version__ = "0.1.0"
_LAZY = {"Simulation": "tati.simulation", "Result": "tati.simulation",
         "samplers": "tati.samplers", "optimizers": "tati.optimizers", "callbacks": "tati.keras.callbacks",
         "diagnostics": "tati.diagnostics", "convergence": "tati.diagnostics.convergence",
         "load_run": "tati.analysis.runs", "analysis": "tati.analysis"}
# Public names that are modules (tati.callbacks lives in tati/keras/, beside the rest of the Keras
# integration).
_MODULES = ("samplers", "optimizers", "callbacks", "diagnostics", "analysis")
__all__ = ["InputError", "Interrupted", "Result", "SamplingError", "Simulation", "analysis", "callbacks", "convergence",
           "diagnostics", "load_run", "optimizers", "samplers", "__version__"]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'tati' has no attribute '{name}'")
    module = importlib.import_module(_LAZY[name])
    return module if name in _MODULES else getattr(module, name)


@contextlib.contextmanager
def muted_stderr():
    """Nothing reaches file descriptor 2 inside: C++ libraries write there directly, past
    sys.stderr. Python exceptions still propagate (and are printed after)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to mute
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(devnull)
        os.close(saved)


class _MutedLoader(importlib.abc.Loader):
    """TensorFlow's own loader, run with stderr muted; the module keeps the original loader."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            with muted_stderr():
                self.loader.exec_module(module)
        finally:
            module.__loader__ = module.__spec__.loader = self.loader

    def __getattr__(self, name):
        return getattr(self.loader, name)


class _QuietTensorFlow(importlib.abc.MetaPathFinder):
    """At the first `import tensorflow`, wherever it happens, hands TensorFlow's spec back with
    its loader muted (its start-up lines are written before any log level applies), and steps
    out of the import system."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _MutedLoader(spec.loader)
        return spec


# Level 3 also hides the error line of the runtime's start on a machine without a GPU driver
# (cuInit); real failures still raise Python exceptions.
if "TF_CPP_MIN_LOG_LEVEL" not in os.environ and "tensorflow" not in sys.modules:
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.meta_path.insert(0, _QuietTensorFlow())

# XLA's persistent cache is on by default (option xla_cache_directory, tati/engine/xla_cache.py).
# TensorFlow reads the flag once, when its runtime starts: named at import, it holds even where the
# user's own TensorFlow operations (a tf.constant for the potential) run before the first Simulation.
from tati.engine import xla_cache as _xla_cache  # noqa: E402 (after the log level above)
_xla_cache.apply(_xla_cache.AUTO)
