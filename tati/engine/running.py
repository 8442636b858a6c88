"""Running a call: the run's state (step counter, running averages, compiled chunk) and the
loop of compiled calls that drives it, with signals, progress (a bar, or a line now and then
on a long call: tati/engine/clock.py) and non-finite stops.

A *run* is a sequence of sample() (or fit()) calls on one Simulation (`Run`); `drive` makes
one call's steps in compiled calls of about CALL_SECONDS each, handing each call's block of
rows to the recorder (recording/recorder.py). SIGINT and SIGTERM stop it at the next call's
end, that is at a row boundary.
"""

import signal
import threading
import time
import warnings

import numpy as np
import tensorflow as tf

from tati.engine import checkpoint
from tati.engine.clock import Heartbeat
from tati.engine.kernels import LEGS, info_of, is_sampler, kind_of
from tati.engine.loop import Loop, compile_chunk, steps_dtype
from tati.config.preflight import appended_files
from tati.recording.averages import RunningAverages

# Seconds one compiled call should take: interruption waits at most for the call under way.
CALL_SECONDS = 0.5


class Run:
    """State of one run: its kernel, step counter, running averages and compiled chunk."""

    def __init__(self, method, optimizer, simulation):
        self.method = method
        self.optimizer = optimizer
        self.kind = kind_of(optimizer)  # tati/engine/kernels.py
        self.info = info_of(optimizer)
        self.is_sampler = is_sampler(optimizer)
        self.step = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="step")
        self.averages = RunningAverages(simulation.model.num_walkers)
        self.calls = 0
        # The first compiled call, timed (drive): (its end on time.perf_counter, tracing, compiling).
        self.first_call = None
        o = simulation.options
        self.burn_in_steps = o["burn_in_steps"] if method == "sample" else 0  # for the progress line
        # Continuing a restored run in files that exist: the restored checkpoint, which each
        # call's end updates without save_model, so that a checkpoint goes on with the files.
        self.updated_checkpoint = None
        if o["restore_model"] is not None and not simulation.restored:
            simulation.restored = True
            if checkpoint.restore(o["restore_model"], simulation, self):
                self.calls = 1  # continue the saved run: append to its files
                if appended_files(o):
                    self.updated_checkpoint = o["restore_model"]
        self.chunk = compile_chunk(Loop(
            simulation.model, simulation.data, optimizer, self.step, self.averages, o["burn_in_steps"],
            simulation.has_accuracy, simulation.ensemble, o["every_nth"], o["jit_compile"],
            check_finite=o["on_nan"] == "stop", record_momenta=simulation.record_momenta and method == "sample"))

    @property
    def metropolis(self):
        """Whether rows come where legs end (HMC), not at multiples of every_nth."""
        return self.kind == LEGS


def drive(run, recorder, max_steps, every_nth, progress=False, shards=None, nonfinite=None, after_call=None):
    """max_steps steps of the run in compiled calls, every call's rows to the recorder, which is
    closed at the end. Returns the signal (SIGINT, SIGTERM) that stopped the call early, or None.

    shards: a distributed run's replicas (tati/engine/distribute.py), whose chunk runs instead and which
    gather the whole run's state at the end; nonfinite(block): the error to raise after a block
    with a non-finite step; after_call(): after each compiled call."""
    bar = progress_bar(progress, max_steps)
    beat = Heartbeat(max_steps, int(run.step.numpy()), run.burn_in_steps) if bar is None else None
    stop = StopSignals()
    try:
        recorder.start_summaries()
        # A run's first call: one row's steps (it also compiles); a later sample() or fit() call
        # starts at the size its predecessor reached (each call has a fixed cost of a few ms).
        done, budget = 0, getattr(run, "budget", every_nth)
        first_steps = None  # the run's first call, until the next one tells its steps' time
        while done < max_steps and stop.signal is None:
            first = int(run.step.numpy())
            n = min(max_steps - done, budget)
            start = time.perf_counter()
            # HMC: rows where legs end, stopping early when its block is full; the others end
            # at a row (a multiple of every_nth or the call's last step) or a full block.
            if not run.metropolis and n < max_steps - done:  # to the next row at least
                n = min(max((first + n) // every_nth * every_nth - first, every_nth - first % every_nth),
                        max_steps - done)
            n = tf.constant(n, steps_dtype(run.optimizer))
            tracing = None
            if shards is not None:  # every replica's walkers, as one block
                block = shards.chunk(n)
            else:
                if run.first_call is None:  # traced apart, to tell tracing from compiling
                    run.chunk.get_concrete_function(n)
                    tracing = time.perf_counter() - start
                block = {k: np.asarray(v) for k, v in run.chunk(n).items()}
            elapsed = time.perf_counter() - start  # np.asarray: read-only views, no copy of the block
            step = int(run.step.numpy())
            if run.first_call is None:
                run.first_call, first_steps = [time.perf_counter(), tracing, elapsed - (tracing or 0.0)], step - first
            elif first_steps is not None:  # compiling: the first call less its steps at this call's rate
                run.first_call[2] = max(0.0, run.first_call[2] - first_steps * elapsed / max(step - first, 1))
                first_steps = None
            recorder.append(block, first, step, elapsed)
            if step == first:  # nothing left to do (L-BFGS converged)
                break
            if block["nonfinite_step"] >= 0:
                raise nonfinite(block)
            done += step - first
            # Calls of about CALL_SECONDS: a signal is answered within one call.
            rate = (step - first) / max(elapsed, 1e-6)
            budget = run.budget = max(1, min(8 * budget, int(rate * CALL_SECONDS)))
            if after_call is not None:
                after_call()
            if bar is not None:
                bar.update(step - first)
            else:
                beat.update(step - first)
    finally:
        stop.release()
        recorder.close()
        if bar is not None:
            bar.close()
        if shards is not None:  # the whole run's state, for parameters and the checkpoint
            shards.gather()
    return stop.signal


class StopSignals:
    """While alive, SIGINT and SIGTERM only record themselves (in `signal`): the loop stops at
    the next row boundary. A second one while the first waits (a call still tracing or
    compiling, which no row boundary ends) acts as if tati were not there: the handler before it
    runs (SIGINT: KeyboardInterrupt; SIGTERM: the process ends). Only the main thread can handle
    signals; elsewhere this does nothing."""

    def __init__(self):
        self.signal = None
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._record)

    def _record(self, number, frame):
        if self.signal is None:
            self.signal = number
            return
        previous = self._previous.get(number, signal.SIG_DFL)
        self.release()
        if callable(previous):
            previous(number, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(number, signal.SIG_DFL)
            signal.raise_signal(number)

    def release(self):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}


_progress_warned = []


def progress_bar(enabled, total):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # optional extra: run on without a bar, and say so once
        if not _progress_warned:
            _progress_warned.append(True)
            warnings.warn("progress needs tqdm, which is not installed (pip install tati[progress]); "
                          "running without a progress bar", stacklevel=4)
        return None
    return tqdm(total=total, unit="step", dynamic_ncols=True)
