"""Checkpoints (save_model / restore_model): everything the next step needs, in one .npz file.

Saved: the model's parameters, every variable of the sampler or optimizer (momenta, its
iteration counter, which keys the stateless noise and the HMC legs' draws, HMC's chain and leg
state, CCAdL's thermostat), the step counter, the running averages and the ensemble
preconditioner, and the position of the mini-batches (data/pipeline.py). A restored run
therefore continues bitwise on the same machine and versions. The file is written to a temporary name and renamed,
so an interruption during the write leaves the previous checkpoint intact. A restored run that
appends to its files without save_model updates the restored file so (running.Run). Reading a file's
description (`load`, engine/checkpoint_file.py) needs no TensorFlow, so the tools check a checkpoint before
importing it.

Format 2 stores each variable under "group/name": the variable's own name (a Keras
optimizer's without its prefix) for the model and the optimizer, the attribute name for the
run's averages, the data batches and the ensemble, so reordering or adding attributes keeps old
checkpoints readable. Format 1 (the first release) stored them by position and still restores.
"""

import json
import os
import warnings

import numpy as np

from tati.errors import InputError
from tati.config.preflight import compare_checkpoint, saved_options
from tati.engine.checkpoint_file import FORMAT, load  # noqa: F401 (load: the file's reader, also from here)



def object_variables(obj):
    """(attribute name, tf.Variable) of an object's variables (alone, or in a list as name_i),
    in attribute-name order."""
    import tensorflow as tf
    if obj is None:
        return []
    found = []
    for name, value in sorted(vars(obj).items()):
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if isinstance(item, tf.Variable):
                found.append((name.lstrip("_") + (f"_{i}" if isinstance(value, list) else ""), item))
    return found


def _own_names(variables):
    """(name, variable): a Keras variable's name without the optimizer's or layer's prefix, a
    tf.Variable's without ':0'; a repeated name gets _2, _3, ... in order."""
    named, seen = [], {}
    for variable in variables:
        name = getattr(variable, "path", variable.name).split("/", 1)[-1].split(":")[0]
        seen[name] = seen.get(name, 0) + 1
        named.append((name if seen[name] == 1 else f"{name}_{seen[name]}", variable))
    return named


def state_groups(simulation, run):
    """{group: [(name, variable)]} of everything a checkpoint holds."""
    return {"model": _own_names(simulation.model.variables),
            "optimizer": _own_names(run.optimizer.variables),
            "run": [("step", run.step)] + object_variables(run.averages),
            "data": object_variables(simulation.data),
            "ensemble": object_variables(simulation.ensemble)}


def _meta(simulation, run):
    o = simulation.options
    return {"format": FORMAT, "method": run.method, "sampler": o["sampler"], "optimizer": o["optimizer"],
            "walkers": simulation.model.num_walkers, "parameters": simulation.model.parameter_names,
            "options": saved_options(o)}


def save(path, simulation, run, option="save_model"):
    """Write the checkpoint to `path`, the file of `option` (save_model, or restore_model
    updated in place), through a temporary file."""
    arrays = {"meta": np.array(json.dumps(_meta(simulation, run)))}
    for group, variables in state_groups(simulation, run).items():
        for name, variable in variables:
            arrays[f"{group}/{name}"] = variable.numpy()
    temporary = f"{path}.partial"
    try:
        with open(temporary, "wb") as file:
            np.savez(file, **arrays)
        os.replace(temporary, path)
    except OSError as error:
        raise InputError(f"{option}: cannot write '{path}': {error.strerror}") from None


def _difference(saved, wanted, group):
    """What a checkpoint's group lacks and holds beyond this run's, a few names of each."""
    def names(keys):
        keys = sorted(k[len(group) + 1:] for k in keys)
        return ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    missing, extra = set(wanted) - set(saved), set(saved) - set(wanted)
    return "; ".join(([f"lacks {names(missing)}"] if missing else []) + ([f"holds {names(extra)}"] if extra else []))


def restore(path, simulation, run):
    """Assign the checkpoint's values; the whole run state if it was saved by the same method
    (sample or fit), else only the parameters. Returns whether the run state was restored."""
    meta, arrays = load(path)
    same_run = meta["method"] == run.method  # compare_checkpoint refuses another sampler or optimizer
    groups = state_groups(simulation, run)
    # the user's sample() or fit() is 6 frames up: _assign, restore, Run(), Simulation._go, its method
    _assign(path, meta, arrays, simulation, run.method, groups if same_run else {"model": groups["model"]}, 6)
    return same_run


def restore_start(path, simulation, method):
    """Before a run of `method` is made: a checkpoint of such a run is left for the run to restore
    and continue (False); one that another method saved (fit()'s, restored into sample(); any
    run's, for the loss landscape's "landscape") gives only the parameters, assigned now as the
    start of a new run, whose warm start and measured width start from them (True)."""
    meta, arrays = load(path)
    if meta["method"] == method:
        return False
    _assign(path, meta, arrays, simulation, method, {"model": _own_names(simulation.model.variables)}, 4)
    return True


def _assign(path, meta, arrays, simulation, method, groups, stacklevel):
    """Assign the checkpoint's values of `groups` ({group: [(name, variable)]}), each checked first;
    a run that continues warns of the tunables changed since it was saved."""
    import tensorflow as tf
    for note in compare_checkpoint(path, meta, simulation.options, method):
        warnings.warn(note, stacklevel=stacklevel)
    if meta["walkers"] != simulation.model.num_walkers or meta["parameters"] != simulation.model.parameter_names:
        raise InputError(f"restore_model '{path}' holds {meta['walkers']} walker(s) of {len(meta['parameters'])} "
                         f"parameters, this run {simulation.model.num_walkers} of {simulation.model.num_parameters}: "
                         "give the options of the saved run")
    pairs = []
    for group, variables in groups.items():
        saved = sorted(key for key in arrays if key.startswith(group + "/"))
        if meta["format"] == 1:  # by position
            saved.sort(key=lambda k: int(k.split("/")[1]))
            wanted = saved if len(saved) == len(variables) else None
        else:
            wanted = [f"{group}/{name}" for name, _ in variables]
            if sorted(wanted) != saved:
                raise InputError(f"restore_model '{path}' was saved with other options or another version of "
                                 f"tati ({group} state differs: {_difference(saved, wanted, group)})")
        if wanted is None:
            raise InputError(f"restore_model '{path}' was saved with other options ({group} state differs)")
        for key, (_, variable) in zip(wanted, variables):
            value = arrays[key]
            if tuple(value.shape) != tuple(variable.shape) or value.dtype != tf.as_dtype(variable.dtype).as_numpy_dtype:
                # a run's own options and version give the same shapes: name the state, for a report
                raise InputError(f"restore_model '{path}' was saved with other options or another version of tati "
                                 f"({group} state differs: {key[len(group) + 1:]} holds {value.dtype} "
                                 f"{tuple(value.shape)}, this run's {tf.as_dtype(variable.dtype).name} "
                                 f"{tuple(variable.shape)})")
            pairs.append((variable, value))
    for variable, value in pairs:
        variable.assign(value)
