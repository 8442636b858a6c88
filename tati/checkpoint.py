"""Checkpoints (save_model / restore_model): everything the next step needs, in one .npz file.

Saved: the model's parameters, every variable of the sampler or optimizer (momenta, its
iteration counter, which keys the stateless noise and the HMC legs' draws, HMC's chain and leg
state, CCAdL's thermostat), the step counter, the running averages and the ensemble
preconditioner, and the position of the mini-batches (data/pipeline.py). A restored run
therefore continues bitwise on the same machine and versions. The file is written to a temporary name and renamed,
so an interruption during the write leaves the previous checkpoint intact. Reading a file's
description (`load`) needs no TensorFlow, so the tools check a checkpoint before importing it.
"""

import json
import os
import re
import zipfile

import numpy as np

from tati.errors import InputError
from tati.preflight import compare_checkpoint, saved_options

FORMAT = 1
_META_FIELDS = {"method": str, "sampler": str, "optimizer": str, "walkers": int, "parameters": list}


def object_variables(obj):
    """The tf.Variables among an object's attributes (alone or in a list), in attribute-name order."""
    import tensorflow as tf
    if obj is None:
        return []
    found = []
    for _, value in sorted(vars(obj).items()):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, tf.Variable):
                found.append(item)
    return found


def _groups(simulation, run):
    return {"model": list(simulation.model.variables),
            "optimizer": list(run.optimizer.variables),
            "run": [run.step] + object_variables(run.averages),
            "data": object_variables(simulation.data),
            "ensemble": object_variables(simulation.ensemble)}


def _meta(simulation, run):
    o = simulation.options
    return {"format": FORMAT, "method": run.method, "sampler": o["sampler"], "optimizer": o["optimizer"],
            "walkers": simulation.model.num_walkers, "parameters": simulation.model.parameter_names,
            "options": saved_options(o)}


def save(path, simulation, run):
    arrays = {"meta": np.array(json.dumps(_meta(simulation, run)))}
    for group, variables in _groups(simulation, run).items():
        for i, variable in enumerate(variables):
            arrays[f"{group}/{i}"] = variable.numpy()
    temporary = f"{path}.partial"
    try:
        with open(temporary, "wb") as file:
            np.savez(file, **arrays)
        os.replace(temporary, path)
    except OSError as error:
        raise InputError(f"save_model: cannot write '{path}': {error.strerror}") from None


def load(path):
    """(meta, arrays) of a checkpoint file; InputError naming it if it is not one."""
    try:
        with open(path, "rb") as handle:  # np.load would leave the file open when it is no zip file
            file = np.load(handle, allow_pickle=False)
            if not isinstance(file, np.lib.npyio.NpzFile):  # a single array (.npy)
                raise ValueError("not an .npz archive")
            with file:
                arrays = {key: file[key] for key in file.files}
        meta = json.loads(str(arrays.pop("meta")))
    except FileNotFoundError:
        raise InputError(f"restore_model '{path}' does not exist") from None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise InputError(f"restore_model '{path}' is not a tati checkpoint ({type(error).__name__})") from None
    if not isinstance(meta, dict) or "format" not in meta:
        raise InputError(f"restore_model '{path}' is not a tati checkpoint")
    if meta["format"] != FORMAT:
        raise InputError(f"restore_model '{path}' has checkpoint format {meta['format']!r:.20}; this "
                         f"version of tati reads format {FORMAT}")
    # What restore reads: the fields of meta and state arrays named group/index.
    if any(not isinstance(meta.get(field), kind) for field, kind in _META_FIELDS.items()) or not all(
            re.fullmatch(r"[A-Za-z_]+/[0-9]+", key) for key in arrays):
        raise InputError(f"restore_model '{path}' is a damaged tati checkpoint")
    return meta, arrays


def restore(path, simulation, run):
    """Assign the checkpoint's values; the whole run state if it was saved by the same method
    (sample or fit), else only the parameters. Returns whether the run state was restored."""
    import tensorflow as tf
    meta, arrays = load(path)
    compare_checkpoint(path, meta, simulation.options, run.method)
    if meta["walkers"] != simulation.model.num_walkers or meta["parameters"] != simulation.model.parameter_names:
        raise InputError(f"restore_model '{path}' holds {meta['walkers']} walker(s) of {len(meta['parameters'])} "
                         f"parameters, this run {simulation.model.num_walkers} of {simulation.model.num_parameters}: "
                         "give the options of the saved run")
    same_run = meta["method"] == run.method  # compare_checkpoint refused another sampler or optimizer
    groups = _groups(simulation, run)
    if not same_run:
        groups = {"model": groups["model"]}
    pairs = []
    for group, variables in groups.items():
        saved = sorted((key for key in arrays if key.startswith(group + "/")), key=lambda k: int(k.split("/")[1]))
        if len(saved) != len(variables):
            raise InputError(f"restore_model '{path}' was saved with other options ({group} state differs)")
        for key, variable in zip(saved, variables):
            value = arrays[key]
            if tuple(value.shape) != tuple(variable.shape) or value.dtype != tf.as_dtype(variable.dtype).as_numpy_dtype:
                raise InputError(f"restore_model '{path}' was saved with other options ({group} state differs)")
            pairs.append((variable, value))
    for variable, value in pairs:
        variable.assign(value)
    return same_run
