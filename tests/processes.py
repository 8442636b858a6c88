"""Helpers for tests that interrupt a running command-line tool, or run one in the test process."""

import contextlib
import io
import os
import time
import warnings


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
