"""Writing an analysis's CSV files under the project's rule: an existing file is replaced only
when overwrite is given (tati/config/preflight.py's check_output_file), and two outputs may not name
the same file. Everything is checked before anything is computed or written."""

import os

import pandas as pd

from tati.errors import InputError
from tati.config.preflight import check_output_file


def check_outputs(paths, overwrite):
    """InputError unless every output {option: path} (None: not written) may be written."""
    seen = {}
    for option, path in paths.items():
        if path is None:
            continue
        try:
            check_output_file(option, path, False, overwrite)
        except InputError as error:  # preflight speaks of restore_model, which tati-analyse has not
            raise InputError(str(error).split(", or restore_model")[0]) from None
        real = os.path.realpath(path)
        if real in seen:
            raise InputError(f"{seen[real]} and {option} name the same file '{path}'")
        seen[real] = option


def check_inputs_not_outputs(inputs, outputs):
    """InputError if an output would replace one of the run's files."""
    read = {os.path.realpath(p): option for option, p in inputs.items() if p is not None}
    for option, path in outputs.items():
        if path is not None and os.path.realpath(path) in read:
            raise InputError(f"{option} '{path}' is the run's {read[os.path.realpath(path)]}: "
                             "give another file name")


def write_csv(frame, path):
    """The table as CSV, floats in shortest round-trip form (pandas' default), no index."""
    try:
        frame.to_csv(path, index=False)
    except OSError as error:
        raise InputError(f"cannot write '{path}': {error.strerror}") from None


def read_csv(path):
    """An analysis's CSV file read back with exact floats."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return pd.read_csv(path)
    return pd.read_csv(path, float_precision="round_trip")
