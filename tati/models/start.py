"""Initial parameters from a stored trajectory row (parse_parameters_file, parse_steps)."""

import numpy as np
import pandas as pd

from tati.errors import InputError
from tati.recording.columns import check_parameter_columns


def parameters_from_trajectory(path, steps, parameter_names, walkers):
    """[W, d]: walker i takes the row of id i at its step (steps: none = the file's last step,
    one step for all walkers, or one per walker), or the only row at that step."""
    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise InputError(f"parse_parameters_file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"parse_parameters_file '{path}' is not a readable CSV file: "
                         f"{type(error).__name__}") from None
    if "step" not in frame.columns:
        raise InputError(f"parse_parameters_file '{path}' has no column 'step': not a trajectory table")
    check_parameter_columns(frame.columns, parameter_names, f"parse_parameters_file '{path}'")
    if frame.empty:
        raise InputError(f"parse_parameters_file '{path}' has no rows")
    text = [c for c in ["step", "id"] + list(parameter_names) if c in frame.columns
            and not pd.api.types.is_numeric_dtype(frame[c])]
    if text:
        raise InputError(f"parse_parameters_file '{path}' has cells that are not numbers in the column(s) "
                         f"{', '.join(text[:5])}")
    if "id" not in frame.columns:
        frame["id"] = 0
    if steps is None:
        steps = [frame["step"].max()]
    if len(steps) not in (1, walkers):
        raise InputError(f"parse_steps must give one step or one per walker ({walkers}), got {len(steps)}")
    rows = []
    for walker in range(walkers):
        step = steps[walker % len(steps)]
        at_step = frame[frame["step"] == step]
        if at_step.empty:
            raise InputError(f"parse_parameters_file '{path}' has no row at step {step}")
        own = at_step[at_step["id"] == walker]
        if len(own) == 0 and len(at_step) == 1:
            own = at_step
        if len(own) != 1:
            raise InputError(f"parse_parameters_file '{path}' has {len(own)} rows for walker {walker} "
                             f"at step {step}")
        rows.append(own[list(parameter_names)].to_numpy(dtype=np.float64)[0])
    values = np.stack(rows)
    if not np.all(np.isfinite(values)):
        raise InputError(f"parse_parameters_file '{path}': the row at step {steps[0]} has non-finite parameters")
    return values
