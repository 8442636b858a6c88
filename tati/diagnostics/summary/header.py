"""The summary's account of what ran and where it ended: the sampler or optimizer with its step
width or learning rate, the model and its data, the time taken, the final loss, and the widths,
frictions and masses the run measured."""

import math

import numpy as np

from tati.diagnostics.summary.lines import WIDTH
from tati.engine.clock import duration
from tati.engine.contract import Spec
from tati.engine.registry import optimizer_spec


def header(prog, o, steps, walkers, sampler, width=None):
    """The first line: what ran; `width` the step width burn-in adapted, if any."""
    tail = f", {walkers} walkers" if walkers > 1 else ""
    if sampler:
        return _sampler_header(prog, o, steps, tail, width)
    return f"{prog}: {_optimizer_header(o, steps)}{tail}"


def _optimizer_header(o, steps):
    """What fit() ran, as its spec's summary_header says (a Keras optimizer: the default's)."""
    spec = optimizer_spec(o["optimizer"])
    header = Spec.summary_header if spec is None else spec.summary_header
    rate = o["learning_rate"]
    return header.format(steps=steps, name=o["optimizer"] if spec is None else spec.name, optimizer=o["optimizer"],
                         learning_rate=_schedule(o), first_learning_rate=f"{rate:g}" if isinstance(rate, float) else "",
                         stopped=" (converged or stopped early)" if steps < o["max_steps"] else "")


def _sampler_header(prog, o, steps, tail, width):
    """An adapted width with its start where the line has room (the lines below give it too)."""
    def line(shown):
        beta = o["inverse_temperature"]
        return f"{prog}: {steps} steps of {o['sampler']} ({shown}) at inverse temperature {beta:g}{tail}"
    if width is None:
        return line(f"step_width {o['step_width']:g}")
    if o.get("measure_step_width") is True:  # set once from the start (tati/adaptation/measured_width.py)
        return line(f"step_width {width:.3g}, measured")
    full = line(f"step_width {width:.3g}, adapted from {o['step_width']:g}")
    return full if len(full) < WIDTH else line(f"step_width {width:.3g}, adapted")


def _schedule(o):
    """fit()'s learning rate as the header shows it: the number, with its schedule if any."""
    if not isinstance(o["learning_rate"], float):  # a Keras schedule given in Python
        return f"from a {type(o['learning_rate']).__name__}"
    rate = f"{o['learning_rate']:g}"
    if o["learning_rate_decay_rate"] is not None:
        return f"{rate}, times {o['learning_rate_decay_rate']:g} every {o['learning_rate_decay_steps']} steps"
    if o["learning_rate_cycle_steps"] is not None:
        low = o["learning_rate_cycle_minimum"]
        low = f"{low:g}" if low is not None else f"{o['learning_rate'] / 10:g}"
        return f"{rate} down to {low} in cycles of {o['learning_rate_cycle_steps']} steps"
    return rate


def model_line(simulation):
    o = simulation.options
    d = simulation.num_parameters
    if o["potential"] is not None:
        return f"model: potential U(theta) of {_count(d)}"
    if o["model"] is not None:
        from tati.models.keras_model import training_layers
        kinds = training_layers(o["model"])
        inference = f"; {', '.join(kinds)} as at inference (doc/data.md)" if kinds else ""
        return f"model: Keras model ({_count(d)}){inference}"
    inputs = getattr(simulation, "network_inputs", o["input_dimension"])  # input_columns' terms
    widths = [inputs, *o["hidden_dimension"], o["output_dimension"]]
    total = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    count = _count(d) if d == total else f"{d} free of {total} parameters"
    hidden = o["hidden_dimension"]
    layers = ([f"hidden layer{'s' if len(hidden) > 1 else ''} of {', '.join(map(str, hidden))} "
               f"{o['hidden_activation']}"] if hidden else []) + [f"output {widths[-1]} {o['output_activation']}"]
    line = f"model: network {'-'.join(map(str, widths))} ({count}: {', '.join(layers)})"
    data = _data(o)
    return line + f" on {data}" if data and len(line) + len(data) < 92 else line


def _count(d):
    return f"{d} parameter{'s' if d != 1 else ''}"


def _data(o):
    if o["batch_data_files"]:
        return ", ".join(o["batch_data_files"])
    if isinstance(o["dataset"], tuple):
        return f"{len(o['dataset'][0])} given points"
    return o["dataset"] or "two_clusters"


def timing(seconds, steps, walkers, compiled):
    rate = steps / seconds if seconds > 0 else math.inf
    notes = ([f"each step moves all {walkers} walkers"] if walkers > 1 else []) + (
        ["includes compiling the loop"] if compiled else [])
    rate = f"{rate:.0f}" if rate >= 100 else f"{rate:.3g}"
    return f"  took {duration(seconds)}: {rate} steps per second" + (f" ({'; '.join(notes)})" if notes else "")


def final_line(run_info, walkers):
    last = run_info.groupby("id").tail(1)
    text = f"  final loss {last['loss'].mean():.6g}"
    if "accuracy" in last:
        text += f", accuracy {last['accuracy'].mean():.4f}"
    if walkers > 1:
        text += (f" (mean of the {len(last)} walkers; loss {last['loss'].min():.4g} "
                 f"to {last['loss'].max():.4g})")
    return text


def listed(values):
    return ", ".join(f"{v:.3g}" for v in values)


def followed_widths(simulation):
    """The widths measured with each of a noise mass's measurements (samplers/mass.py), if any."""
    sampler = getattr(simulation, "sampler_made", None)
    return sampler.followed_widths() if hasattr(sampler, "followed_widths") else ()


def langevin_mass_line(sampler):
    """The Langevin samplers' adapted diagonal mass M = 1 / s^2 (samplers/mass.py)."""
    masses = 1.0 / sampler.metric_scales() ** 2
    times = int(sampler.metric_windows())
    span = f"masses {masses.min():.3g} ... {masses.max():.3g} (median {np.median(masses):.3g})"
    if getattr(sampler, "noise_mass", False):
        words = sampler.noise_mass_words.format(count=times, times=f"{times} time{'s' if times != 1 else ''}")
        return f"  {words}: {span}"
    return f"  mass adapted in {times} window{'s' if times != 1 else ''}: {span}"
