"""tati-lossfunction-sampler: the loss (and accuracy) of a network on a grid, on the plane
through three parameter vectors, along a segment, along a stored trajectory or on a grid in the
span of directions, as a CSV file and with --plot a PNG (tati/landscape/, doc/landscape.md):

    tati-lossfunction-sampler plane --hidden_dimension 4 --points_file trajectory.csv \\
        --steps 1000 --walkers 0,1,2 --output plane.csv --plot plane.png

The network and data take tati-sample's options. The points come from --points_file (a
trajectory or any CSV file of the parameter columns; --rows, or --steps and --walkers select
rows, by default its last rows), else from the network's walkers (their initial parameters, or
a checkpoint's with --restore_model, or a trajectory row's with --parse_parameters_file).

Every option and file is checked before TensorFlow is imported, except whether the points'
columns are this network's parameters (known once it is built); every bad input is one line
`tati-lossfunction-sampler: error: ...` on stderr and exit status 2.
"""

import sys

from tati.cli.common import TOOL_GROUPS, add_option, add_renamed, import_tensorflow_quietly, run_command
from tati.cli.common import make_parser as tool_parser
from tati.errors import InputError
from tati.config.options import BY_NAME, Boolean, ListOf, Number, Optional, Text
from tati.config.original import LANDSCAPE_MODES, RETIRED_MODES

PROG = "tati-lossfunction-sampler"
MODES = {
    "grid": "a grid over chosen parameters (--parameters or --exclude_parameters) around a point",
    "plane": "the plane through three points, with a margin around their triangle",
    "segment": "the line through two points, beyond both ends by --margin",
    "trajectory": "every row of --points_file (or those of --steps and --walkers)",
    "directions": "a grid in the span of --directions_file's vectors (tati-analyse covariance "
                  "--eigen_output) around a point",
}
POINTS = {"grid": 1, "directions": 1, "plane": 3, "segment": 2, "trajectory": None}
NAMES = Optional(ListOf(Text()))
INTEGERS = Optional(ListOf(Number(integer=True, minimum=0)))
POSITIVE = Number(minimum=0, strict=True)

# (name, kind, default, help, modes it applies to (None: all), default as --help shows it)
OWN = [
    ("points_file", Optional(Text()), None, "CSV file of points: a trajectory (tati-sample --trajectory_file) "
     "or any table with the network's parameter columns", None, "the network's walkers"),
    ("rows", INTEGERS, None, "0-based rows of --points_file to use", None, "its last rows"),
    ("steps", INTEGERS, None, "steps of --points_file's rows to use (one, or one per point)", None,
     "each walker's last"),
    ("walkers", INTEGERS, None, "walkers (column id) of --points_file's rows (one, or one per point)", None, "none"),
    ("parameters", NAMES, None, "comma-separated parameters to vary", ("grid",), "all"),
    ("exclude_parameters", NAMES, None, "comma-separated parameters to keep fixed, varying the others",
     ("grid",), "none"),
    ("directions_file", Optional(Text()), None, "CSV file of directions: tati-analyse covariance's "
     "eigenvector table, or one row per direction with the parameter columns", ("directions",), "none"),
    ("components", Optional(Number(integer=True, minimum=1)), None, "use the first k directions",
     ("directions",), "2, or 1 if the file has one row"),
    ("width", Optional(ListOf(POSITIVE)), None, "half-width of each axis around the point (one value or one "
     "per axis)", ("grid", "directions"), "1; for eigenvectors 3 sqrt(eigenvalue)"),
    ("ranges", Optional(ListOf(Text())), None, "LOW:HIGH of each axis instead of --width, e.g. "
     "--ranges=-1:1,-2:2", ("grid", "directions"), "none"),
    ("points", Optional(Number(integer=True, minimum=2)), None, "grid points per axis",
     ("grid", "directions", "plane", "segment"), "21; 41 for plane and segment"),
    ("margin", Number(minimum=0), 0.25, "the margin around the triangle as a fraction of the larger side "
     "of its bounding box, or the extension beyond each end as a fraction of the segment", ("plane", "segment"),
     None),
    ("output", Optional(Text()), None, "the CSV file to write", None, "loss_MODE.csv"),
    ("plot", Optional(Text()), None, "also draw the landscape into this PNG file (.pdf, .svg: that format; "
     "needs matplotlib: pip install tati[plots])", None, "none"),
    ("overwrite", Boolean(), False, "replace output files that exist", None, None),
]
SIMULATION_GROUPS = TOOL_GROUPS["tati-lossfunction-sampler"]
# The walkers' options that matter here, with help in this tool's words (or the option's own).
SIMULATION_EXTRA = {
    "number_walkers": "Number of walkers W; without --points_file, walkers 0, 1, 2 are the points of a plane, "
                      "0 and 1 the ends of a segment, 0 the centre of a grid.",
    "seed": None,
    "restore_model": "Checkpoint file (tati-sample --save_model) whose walkers' parameters are the points; "
                     "the network, data, prior and walker options not given default to the saved run's.",
}


def make_parser():
    parser = tool_parser(
        PROG, "The loss (and accuracy) of a network on a grid, on the plane through three parameter vectors, "
        "along a segment, along a trajectory or on a grid in the span of directions, written as a CSV file "
        "and with --plot as a PNG. The network and data take tati-sample's options.", SIMULATION_GROUPS)
    parser.add_argument("mode", choices=[*MODES, *LANDSCAPE_MODES, *RETIRED_MODES], metavar="MODE",
                        help="; ".join(f"{name}: {text}" for name, text in MODES.items())
                        + "; the original TATiLossFunctionSampler's " + ", ".join(
                            f"{old} is {new}" for old, new in LANDSCAPE_MODES.items() if old != new))
    group = parser.add_argument_group("walkers and checkpoint")
    for name, text in SIMULATION_EXTRA.items():
        option = BY_NAME[name]
        default = "none" if option.default is None else option.default
        add_option(group, name, option.kind, f"{text or option.help} (default: {default})".replace("%", "%%"))
    group = parser.add_argument_group("landscape")
    for name, kind, default, text, modes, *shown in OWN:
        shown = default if not shown or shown[0] is None else shown[0]
        shown = "none" if shown is None else str(shown).lower() if isinstance(shown, bool) else shown
        where = "" if modes is None else f"{', '.join(modes)}: "
        add_option(group, name, kind, f"{where}{text} (default: {shown})".replace("%", "%%"))
    add_renamed(parser, PROG)
    return parser


def convert(values):
    """(mode, own options converted and checked, Simulation options as given)."""
    mode = values.pop("mode")
    if mode in RETIRED_MODES:
        raise InputError(f"mode {mode} is the original TATi's: {RETIRED_MODES[mode]}")
    mode = LANDSCAPE_MODES.get(mode, mode)
    own = {}
    for name, kind, default, _, modes, *_ in OWN:
        if name in values:
            given = values.pop(name)
            if modes is not None and mode not in modes:
                raise InputError(f"--{name} applies to {' and '.join(modes)}, not to {mode}")
            own[name] = kind(name, given)
        else:
            own[name] = default
    if own["output"] is None:
        own["output"] = f"loss_{mode}.csv"
    if own["points"] is None:
        own["points"] = 41 if mode in ("plane", "segment") else 21
    if own["rows"] is not None and (own["steps"] is not None or own["walkers"] is not None):
        raise InputError("give --rows, or --steps and --walkers, not both")
    for name in ("rows", "steps", "walkers"):
        if own[name] is not None and own["points_file"] is None:
            raise InputError(f"--{name} selects rows of --points_file: give it")
    if mode == "trajectory" and own["points_file"] is None:
        raise InputError("trajectory needs --points_file, the trajectory CSV file")
    if mode == "directions" and own["directions_file"] is None:
        raise InputError("directions needs --directions_file (tati-analyse covariance --eigen_output)")
    if own["width"] is not None and own["ranges"] is not None:
        raise InputError("give --width or --ranges, not both")
    if own["ranges"] is not None:
        own["ranges"] = [_range(text) for text in own["ranges"]]
    return mode, own, values


def _range(text):
    low, _, high = text.partition(":")
    try:
        low, high = float(low), float(high)
    except ValueError:
        raise InputError(f"ranges: '{text}' is not LOW:HIGH (e.g. --ranges=-1:1,-2:2)") from None
    if not low < high:
        raise InputError(f"ranges: '{text}' needs LOW < HIGH")
    return low, high


def main(argv=None):
    args = vars(make_parser().parse_args(sys.argv[1:] if argv is None else argv))
    run_command(PROG, lambda: print("\n".join(run(*convert(args)))))


def run(mode, o, simulation_options):
    """Check everything that needs no TensorFlow, then build the network, evaluate, write; the
    lines to print."""
    from tati.analysis import figures
    from tati.analysis.output import check_inputs_not_outputs, check_outputs, write_csv
    from tati.landscape.points import select_rows
    from tati.config.preflight import check
    _saved_run_options(simulation_options)
    values, _ = check(simulation_options)  # its notes name the sampler's tunables, which do not matter here
    if o["plot"] is not None:
        figures.check("--plot", o["plot"])
    outputs = {"output": o["output"], "plot": o["plot"]}
    check_outputs(outputs, o["overwrite"])
    inputs = {name: o[name] for name in ("points_file", "directions_file")}
    inputs.update(restore_model=values["restore_model"], parse_parameters_file=values["parse_parameters_file"],
                  **{f"batch_data_files[{i}]": p for i, p in enumerate(values["batch_data_files"] or [])})
    check_inputs_not_outputs(inputs, outputs)
    rows = None
    if o["points_file"] is not None:
        rows = select_rows(_read("points_file", o["points_file"]), f"points_file '{o['points_file']}'",
                           POINTS[mode], o["rows"], o["steps"], o["walkers"])
    directions = None
    if o["directions_file"] is not None:
        directions = _read("directions_file", o["directions_file"])
        if o["components"] is None:
            o["components"] = min(2, len(directions))
        if o["components"] > len(directions):
            raise InputError(f"components {o['components']}: directions_file '{o['directions_file']}' has "
                             f"only {len(directions)} row(s)")
    if mode in ("plane", "segment") and rows is None and values["number_walkers"] < POINTS[mode]:
        raise InputError(f"{mode} needs {POINTS[mode]} points: give --points_file (with --rows, or --steps "
                         f"and --walkers), or --number_walkers {POINTS[mode]} for the walkers' parameters")

    import_tensorflow_quietly()
    from tati.diagnostics.summary.header import model_line
    from tati.simulation import Simulation
    simulation = Simulation(**simulation_options)
    if values["restore_model"] is not None:  # the walkers' parameters, as a sampling run's start
        from tati.engine import checkpoint
        checkpoint.restore_start(values["restore_model"], simulation, "landscape")
    if rows is not None:
        from tati.recording.columns import check_parameter_columns
        check_parameter_columns(rows.columns, simulation.model.parameter_names, f"points_file '{o['points_file']}'")
    if o["plot"] is not None:
        _check_plot_axes(mode, o, simulation.num_parameters)
    frame, lines = _evaluate(mode, o, simulation, rows, directions)
    write_csv(frame, o["output"])
    written = [o["output"]]
    if o["plot"] is not None:
        from tati.landscape import plot
        plot(frame, o["plot"])
        written.append(o["plot"])
    return [f"{PROG} {mode}: {_size(frame)}", "  " + model_line(simulation), *lines,
            "  wrote " + ", ".join(written)]


def _saved_run_options(options):
    """With restore_model, the options of this tool's network, data, prior and walkers that are
    not given take the checkpoint's values (tati/engine/checkpoint.py records them)."""
    if options.get("restore_model") in (None, "none", ""):
        return
    from tati.engine.checkpoint_file import load
    from tati.config.options import OPTIONS
    meta, _ = load(options["restore_model"])
    accepted = {o.name for o in OPTIONS if o.group in SIMULATION_GROUPS and o.on_command_line} | set(SIMULATION_EXTRA)
    for name, value in meta.get("options", {}).items():
        if name in accepted and name not in options:
            options[name] = value
    options.setdefault("number_walkers", meta["walkers"])


def _read(option, path):
    from tati.analysis.output import read_csv
    import pandas as pd
    try:
        frame = read_csv(path)
    except FileNotFoundError:
        raise InputError(f"{option} '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{option} '{path}' is not a readable CSV file ({type(error).__name__})") from None
    if frame.empty:
        raise InputError(f"{option} '{path}' has no rows")
    return frame


def _check_plot_axes(mode, o, parameters):
    """Before any evaluation: --plot draws a grid over at most two axes."""
    if mode == "directions":
        axes, choose = o["components"], "--components"
    elif mode == "grid":
        axes = len(o["parameters"]) if o["parameters"] is not None else parameters - len(o["exclude_parameters"] or [])
        choose = "--parameters (e.g. --parameters weight0,bias0)"
    else:
        return
    if axes > 2:
        raise InputError(f"plot draws a grid over one or two axes; this one would have {axes}: "
                         f"choose them with {choose}")


def _evaluate(mode, o, simulation, rows, directions):
    """(table, summary lines) of the mode."""
    import numpy as np
    from tati import landscape
    count = POINTS[mode]
    if rows is not None:
        chosen = [row for _, row in rows.iterrows()]
        labels = _labels(rows)
    else:
        labels = [f"walker {w}" for w in range(count or 1)]
        chosen = list(np.atleast_2d(simulation.model.get_parameters())[:count or 1])
    if mode == "grid":
        frame = landscape.loss_on_grid(simulation, o["parameters"], chosen[0], o["width"] or 1.0, o["ranges"],
                                       o["points"], o["exclude_parameters"])
        return frame, [f"  grid over {', '.join(frame.attrs['coordinates'][:6])}"
                       f"{', ...' if len(frame.attrs['coordinates']) > 6 else ''} around {labels[0]}", _extremes(frame)]
    if mode == "directions":
        frame = landscape.loss_on_directions(simulation, directions, chosen[0], o["width"], o["ranges"],
                                             o["points"], o["components"])
        return frame, [f"  grid along {', '.join(frame.attrs['coordinates'])} around {labels[0]}", _extremes(frame)]
    if mode == "trajectory":
        frame = landscape.loss_along_trajectory(simulation, rows)
        return frame, [f"  loss along {len(frame)} trajectory rows: {frame['loss'].min():.6g} to "
                       f"{frame['loss'].max():.6g}"]
    if mode == "plane":
        frame = landscape.loss_on_plane(simulation, *chosen, points=o["points"], margin=o["margin"], labels=labels)
    else:
        frame = landscape.loss_on_segment(simulation, *chosen, points=o["points"], extension=o["margin"],
                                          labels=labels)
    lines = []
    for label, coordinates in frame.attrs["points"].items():
        row = frame[frame["point"] == label].iloc[0]
        where = ", ".join(f"{name} {value:.4g}" for name, value in zip(frame.attrs["coordinates"], coordinates))
        accuracy = f", accuracy {row['accuracy']:.4f}" if "accuracy" in frame.columns else ""
        lines.append(f"  {label}: {where}, loss {row['loss']:.6g}{accuracy}")
    return frame, lines + [_extremes(frame)]


def _labels(rows):
    """Names of the selected rows: 'walker 1', 'step 300', 'walker 1, step 300' (what tells them
    apart), else 'row 7'."""
    keys = [c for c in ("id", "step") if c in rows.columns and rows[c].nunique() == len(rows)]
    keys = keys or [c for c in ("id", "step") if c in rows.columns]
    word = {"id": "walker", "step": "step"}
    labels = [", ".join(f"{word[c]} {int(row[c])}" for c in keys) if keys and not row[keys].isna().any()
              else "" for _, row in rows.iterrows()]
    if "" in labels or len(set(labels)) != len(labels):
        labels = [f"row {name}" for name in rows.index]
    return labels


def _size(frame):
    """'44 x 43 grid (1892 points)', or '120 rows'."""
    axes = [frame[c].nunique() for c in frame.attrs["coordinates"]] if frame.attrs["kind"] != "trajectory" else []
    if len(axes) > 1:
        return f"{' x '.join(map(str, axes))} grid ({len(frame)} points)"
    return f"{len(frame)} {'rows' if frame.attrs['kind'] == 'trajectory' else 'points'}"


def _extremes(frame):
    coordinates = frame.attrs["coordinates"]
    low = frame.loc[frame["loss"].idxmin()]
    where = ", ".join(f"{name} {low[name]:.4g}" for name in coordinates[:6])
    return f"  lowest loss {low['loss']:.6g} (at {where}), highest {frame['loss'].max():.6g}"


if __name__ == "__main__":
    main()
