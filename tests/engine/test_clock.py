"""Durations in words and the line a long call prints without a progress bar (tati/engine/clock.py)."""

import io

from tati.engine.clock import Heartbeat, duration


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
    """A second call of 1000 steps after 500, burn-in 700: a first compiled call of 10 steps that
    takes 20 s (compiling), then 10 steps a second. Nothing before 30 s; at 30 s step 610, in
    burn-in, and the time left at the rate after the first call (890 steps at 10 per second);
    the next line a minute later, after burn-in; none once the call is done."""
    clock, stream = Clock(), io.StringIO()
    beat = Heartbeat(1000, first_step=500, burn_in_steps=700, clock=clock, stream=stream)
    clock.now = 20.0
    beat.update(10)
    for _ in range(98):
        clock.now += 1.0
        beat.update(10)
    lines = stream.getvalue().splitlines()
    assert lines == ["tati: step 610 of 1500 (11%, burn-in) after 30 s, about 1 min 29 s left "
                     "(the option progress shows a bar)",
                     "tati: step 1210 of 1500 (71%) after 1 min 30 s, about 29 s left (the option progress shows a bar)"]
    clock.now += 100.0
    beat.update(10)  # the last steps: done, no line
    assert len(stream.getvalue().splitlines()) == 2
