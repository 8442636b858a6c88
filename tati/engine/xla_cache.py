"""XLA's persistent cache (option `xla_cache_directory`): TensorFlow keeps each program that
XLA compiles in the directory, keyed by the program and the compiler, and a later process that
compiles the same program loads it instead (TensorFlow's --tf_xla_persistent_cache_directory).

On by default ("auto"): the user's cache directory, $XDG_CACHE_HOME/tati/xla or
~/.cache/tati/xla (`default_directory`); "none" turns it off, a path moves it.

TensorFlow reads its XLA flags once per process, when its runtime starts, so the directory
takes effect only if it is named before TensorFlow runs its first operation: `import tati`
names the default directory (if TensorFlow's runtime has not started), the command-line tools
name the option's value before they start TensorFlow, and in Python a Simulation names its own
if TensorFlow has not run yet (otherwise a directory the user named warns how to set it; the
default stays quiet).
"""

import os
import sys
import warnings

from tati.errors import InputError

FLAG = "--tf_xla_persistent_cache_directory"
AUTO = "auto"


def default_directory():
    """The user's cache directory for XLA's programs: $XDG_CACHE_HOME/tati/xla, else ~/.cache/tati/xla."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tati", "xla")


def apply(value):
    """The option's value at work before TensorFlow's runtime starts: "auto" the default directory
    (quietly none where it cannot be made or named), None no cache (an inherited flag removed),
    a path that directory (`use`)."""
    if value is None:
        _set_flags([flag for flag in _flags() if not flag.startswith(FLAG + "=")], "none", stacklevel=4)
    elif value == AUTO:
        if _runtime_started() or any(flag.startswith(FLAG + "=") for flag in _flags()):
            return  # too late, or the user's own TF_XLA_FLAGS names a directory
        try:
            use(default_directory())
        except InputError:  # a home without a writable cache: run uncached, as before
            pass
    else:
        use(value)


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
    flags = _flags()
    if wanted in flags:
        return
    _set_flags([flag for flag in flags if not flag.startswith(FLAG + "=")] + [wanted], directory, wanted, stacklevel=5)


def _flags():
    return os.environ.get("TF_XLA_FLAGS", "").split()


def _set_flags(flags, directory, wanted=None, stacklevel=4):
    """TF_XLA_FLAGS = flags, with a warning (at the user's Simulation) where TensorFlow already read them."""
    if flags == _flags():
        return
    if _runtime_started():
        how = f"TF_XLA_FLAGS={wanted}" if wanted else f"TF_XLA_FLAGS without {FLAG}"
        warnings.warn(f"xla_cache_directory '{directory}' has no effect: TensorFlow already ran in this process "
                      f"(start Python with {how})", stacklevel=stacklevel)
    if flags:
        os.environ["TF_XLA_FLAGS"] = " ".join(flags)
    else:
        os.environ.pop("TF_XLA_FLAGS", None)


def _runtime_started():
    """Whether TensorFlow's eager runtime (which reads the XLA flags) has started in this process."""
    context = sys.modules.get("tensorflow.python.eager.context")  # loaded with TensorFlow
    return context is not None and bool(getattr(context.context(), "_initialized", False))


# TensorFlow names each traced function, and each branch and loop body in it, after a counter of
# the process's operations so far (ops.uid), and XLA's cache keys on the program with its names:
# a chunk traced after a varying number of eager operations (the warm start's L-BFGS evaluations,
# three each) would miss the cache. Tracing from the counter's next multiple of NAME_ALIGNMENT
# gives the names of any process that reached the same multiple: two runs whose warm starts differ
# by k evaluations straddle one with probability 3k / 65,536 (100: 0.5%). (At most ~20 ms of counting.)
NAME_ALIGNMENT = 1 << 16


def align_names():
    """Advance TensorFlow's name counter to its next multiple of NAME_ALIGNMENT: called as an XLA
    chunk's tracing starts (engine/driver.py compiled_chunk)."""
    from tensorflow.python import pywrap_tfe
    uid = pywrap_tfe.TFE_Py_UID
    for _ in range(-uid() % NAME_ALIGNMENT):
        uid()
