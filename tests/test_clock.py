"""Durations in words and the line a long call prints without a progress bar (tati/clock.py)."""

import io

from tati.clock import Heartbeat, duration


def test_durations_in_words():
    assert duration(4.8412) == "4.84 s"
    assert duration(259.7) == "4 min 19 s"
    assert duration(7500.0) == "2 h 05 min"


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_long_call_says_where_it_is_at_30_s_then_every_minute():
    """1000 steps: a first call of 10 steps that takes 20 s (compiling), then 10 steps a second.
    Nothing before 30 s; at 30 s step 110 and the time left at the rate after the first call
    (890 steps at 10 per second); the next line a minute later; none once the call is done."""
    clock, stream = Clock(), io.StringIO()
    beat = Heartbeat(1000, clock=clock, stream=stream)
    clock.now = 20.0
    beat.update(10)
    for _ in range(98):
        clock.now += 1.0
        beat.update(10)
    lines = stream.getvalue().splitlines()
    assert lines == ["tati: step 110 of 1000 (11%) after 30 s, about 1 min 29 s left (the option progress shows a bar)",
                     "tati: step 710 of 1000 (71%) after 1 min 30 s, about 29 s left (the option progress shows a bar)"]
    clock.now += 100.0
    beat.update(10)  # the last steps: done, no line
    assert len(stream.getvalue().splitlines()) == 2
