"""Helpers for tests that interrupt a running command-line tool, or run one in the test process."""

import contextlib
import importlib.util
import io
import os
import sys
import time
import warnings

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")


def signal_when_written(process, path, size, signal_number, timeout=240):
    """Send `signal_number` to the running `process` once the file `path` holds more than
    `size` bytes; fail if the process ends (or `timeout` seconds pass) first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if os.path.exists(path) and os.path.getsize(path) > size:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be interrupted"
    process.send_signal(signal_number)


def tool_here(main, argv):
    """A tool's main(argv) in this process: (exit status, stderr, stdout) as a new process's,
    without a new process's TensorFlow import (~7 s of CPU).

    Python's default warning filters (pytest's show deprecations, which a user does not see).
    Python's stderr only: TensorFlow's C++ lines go to the file descriptor (capfd has them);
    that a new process's stderr has no start-up lines is tested where a tool runs in one
    (test_checkpoint.py's SIGTERM test, test_xla_cache.py)."""
    err, out = io.StringIO(), io.StringIO()
    code = 0
    with warnings.catch_warnings(), contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        try:
            main(argv)
        except SystemExit as exit:
            code = exit.code
    return code, err.getvalue(), out.getvalue()


def load_tool(name):
    """tools/NAME.py as a module (a tool is a script, not a package), with tools/ on sys.path
    while it loads, for its imports of other tools (benchmark, benchmark_hmc, ...)."""
    sys.path.insert(0, TOOLS)
    try:
        spec = importlib.util.spec_from_file_location(name, os.path.join(TOOLS, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(TOOLS)
    return module
