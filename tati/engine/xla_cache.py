"""XLA's persistent cache (option `xla_cache_directory`): TensorFlow keeps each program that
XLA compiles in the directory, keyed by the program and the compiler, and a later process that
compiles the same program loads it instead (TensorFlow's --tf_xla_persistent_cache_directory).

TensorFlow reads its XLA flags once per process, when its runtime starts, so the directory
takes effect only if it is named before TensorFlow runs its first operation: the command-line
tools name it before they start TensorFlow; in Python, the first Simulation of a fresh process
does (otherwise a warning says how to set it).
"""

import os
import sys
import warnings

from tati.errors import InputError

FLAG = "--tf_xla_persistent_cache_directory"


def use(directory):
    """Create the directory if needed and name it in TF_XLA_FLAGS (replacing an earlier one);
    warn if TensorFlow's runtime started before with another directory or none."""
    if any(character.isspace() for character in os.path.abspath(directory)):  # TF_XLA_FLAGS splits at spaces
        raise InputError(f"xla_cache_directory '{directory}' has white space in its path, which TensorFlow's "
                         "flags cannot carry: choose a path without")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise InputError(f"xla_cache_directory '{directory}' cannot be created: {error.strerror}") from None
    wanted = f"{FLAG}={os.path.abspath(directory)}"
    flags = os.environ.get("TF_XLA_FLAGS", "").split()
    if wanted in flags:
        return
    if _runtime_started():
        warnings.warn(f"xla_cache_directory '{directory}' has no effect: TensorFlow already ran in this process "
                      f"(start Python with TF_XLA_FLAGS={wanted})", stacklevel=3)
    os.environ["TF_XLA_FLAGS"] = " ".join([flag for flag in flags if not flag.startswith(FLAG + "=")] + [wanted])


def _runtime_started():
    """Whether TensorFlow's eager runtime (which reads the XLA flags) has started in this process."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context
    return bool(getattr(context.context(), "_initialized", False))
