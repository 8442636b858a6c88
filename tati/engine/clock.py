"""Time as a reader sees it: durations in words, and the line a long call prints now and then
when no progress bar was asked for, so that a run of minutes is seen to be alive."""

import sys
import time
from typing import NamedTuple


def duration(seconds):
    """'4.84 s', '4 min 19 s' or '2 h 05 min'."""
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


class FirstStep(NamedTuple):
    """Where a run's time to its first row went, in seconds: from Simulation(...) (its set-up
    and, for the first call of its first run, the warm start) to the end of the first compiled
    call, with the parts spent tracing the loop into a graph and compiling it (TensorFlow's graph
    optimisation, XLA; the first call less its steps at the next call's rate). None: not measured
    (a distributed run's calls are not traced apart; no warm start)."""
    seconds: float
    tracing: float = None
    compiling: float = None
    warm_start: float = None

    def line(self):
        """'first step after 2.1 s (tracing 0.8 s, compiling 1.0 s)'."""
        parts = [f"{name} {duration(value)}" for name, value in (
            ("warm start", self.warm_start), ("tracing", self.tracing), ("compiling", self.compiling))
            if value is not None]
        return f"first step after {duration(self.seconds)}" + (f" ({', '.join(parts)})" if parts else "")


class Heartbeat:
    """A line on stderr once a call has run FIRST seconds, then every EVERY seconds: the run's
    step (the call's steps follow `first_step`), whether it is still in burn-in, the time so far
    and the time left at the rate since the first compiled call (which also compiles, so it says
    little about the rate)."""

    FIRST, EVERY = 30.0, 60.0

    def __init__(self, total, first_step=0, burn_in_steps=0, clock=time.perf_counter, stream=None):
        self.total, self.first_step, self.burn_in_steps = total, first_step, burn_in_steps
        self.clock, self.stream = clock, stream
        self.start = clock()
        self.done = 0
        self.due = self.FIRST
        self.after_first_call = None  # (seconds, steps) at the first call's end

    def update(self, steps):
        self.done += steps
        now = self.clock() - self.start
        if self.after_first_call is None:
            self.after_first_call = (now, self.done)
        if now < self.due or self.done >= self.total:
            return
        self.due = now + self.EVERY
        seconds, steps_then = self.after_first_call
        rate = (self.done - steps_then) / (now - seconds) if self.done > steps_then else self.done / now
        step = self.first_step + self.done
        phase = ", burn-in" if step <= self.burn_in_steps else ""
        print(f"tati: step {step} of {self.first_step + self.total} ({self.done / self.total:.0%}{phase}) "
              f"after {duration(now)}, "
              f"about {duration((self.total - self.done) / rate)} left (the option progress shows a bar)",
              file=self.stream or sys.stderr, flush=True)
