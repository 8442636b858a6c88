"""A checkpoint file's format and its reader (`load`), without TensorFlow: the option checks
(config/preflight.py) read a checkpoint's description before TensorFlow is imported, and
engine/checkpoint.py, which saves and restores a run, reads the file through it (format 2
stores each variable under "group/name", format 1 by position: engine/checkpoint.py).
"""

import json
import re
import zipfile

import numpy as np

from tati.errors import InputError

FORMAT = 2
READS = (1, 2)
_META_FIELDS = {"method": str, "sampler": str, "optimizer": str, "walkers": int, "parameters": list}


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
    if meta["format"] not in READS:
        raise InputError(f"restore_model '{path}' has checkpoint format {meta['format']!r:.20}; this "
                         f"version of tati reads formats {' and '.join(map(str, READS))}")
    # What restore reads: the fields of meta and state arrays named group/name (format 1: group/index).
    key = r"[A-Za-z_]+/[0-9]+" if meta["format"] == 1 else r"[A-Za-z_]+/[A-Za-z0-9_./-]+"
    if any(not isinstance(meta.get(field), kind) for field, kind in _META_FIELDS.items()) or not all(
            re.fullmatch(key, name) for name in arrays):
        raise InputError(f"restore_model '{path}' is a damaged tati checkpoint")
    return meta, arrays
