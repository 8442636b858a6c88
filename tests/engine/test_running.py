"""StopSignals (tati/engine/running.py): the first SIGINT only asks the loop to stop at its next row;
a second one, while the first still waits (a call tracing or compiling), interrupts at once."""

import signal

import pytest

from tati.engine.running import StopSignals


def test_a_second_signal_interrupts_at_once():
    # raise_signal delivers to this (the main) thread before it returns; os.kill to the process may land
    # on one of TensorFlow's threads, whose note the main thread reads a few instructions later (under
    # load, after pytest.raises had closed: "DID NOT RAISE" in CI)
    stop = StopSignals()
    try:
        signal.raise_signal(signal.SIGINT)
        assert stop.signal == signal.SIGINT  # recorded: the loop stops at its next row
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # tati's handler is gone
    finally:
        stop.release()
