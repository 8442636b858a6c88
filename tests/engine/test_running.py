"""StopSignals (tati/engine/running.py): the first SIGINT only asks the loop to stop at its next row;
a second one, while the first still waits (a call tracing or compiling), interrupts at once."""

import os
import signal

import pytest

from tati.engine.running import StopSignals


def test_a_second_signal_interrupts_at_once():
    stop = StopSignals()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.signal == signal.SIGINT  # recorded: the loop stops at its next row
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # tati's handler is gone
    finally:
        stop.release()
