"""Helpers for tests that interrupt a running command-line tool."""

import os
import time


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
