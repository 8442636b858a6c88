"""StopSignals (tati/engine/running.py): the first SIGINT only asks the loop to stop at its next row;
a second one, while the first still waits (a call tracing or compiling), interrupts at once."""

import signal

import pytest

from tati.engine.running import StopSignals


def test_a_second_signal_interrupts_at_once():
    # As in a user's Python, SIGINT raises KeyboardInterrupt before tati's handler: a process started in
    # the background by a non-interactive shell inherits SIGINT ignored, which tati keeps (as it should)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = StopSignals()
    try:
        signal.raise_signal(signal.SIGINT)
        assert stop.signal == signal.SIGINT  # recorded: the loop stops at its next row
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # tati's handler is gone
    finally:
        stop.release()
        signal.signal(signal.SIGINT, outer)


def test_an_ignored_signal_stays_ignored():
    """Where SIGINT was ignored before tati (a background job), a second one is ignored too."""
    outer = signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = StopSignals()
    try:
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # no KeyboardInterrupt, the process goes on
        assert stop.signal == signal.SIGINT and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        stop.release()
        signal.signal(signal.SIGINT, outer)
