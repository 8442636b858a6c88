"""tati-predictive: the posterior predictive distribution of a network at held-out points, from
a run's trajectory (or the SWAG Gaussian of an optimizer's trajectory), as a CSV file and a PNG
figure: the band over 1-D inputs, else the held-out labels' calibration.

    tati-predictive --batch_data_files train.csv --hidden_dimension 8 --likelihood gaussian \\
        --trajectory_file trajectory.csv --burn_in_steps 500 --test_data_files test.csv \\
        --output predictive.csv --plot predictive.png

The network is described by the options of the run (data and network groups, as tati-sample);
without a data option the held-out file gives the shapes. The held-out file has the layout of
batch_data_files: features, then labels; labels are optional, and with them and a likelihood
each point's log predictive density is a column and their sum is printed (tati/bayes/predictive.py).
Options and files are checked before TensorFlow is imported where possible; every bad input is
one line and exit status 2.
"""

import math
import sys

from tati.cli.common import TOOL_GROUPS, add_option, fail, make_parser, parse, run_tool
from tati.errors import InputError
from tati.config.options import COUNTS, TWO_OUTPUTS, Boolean, Number, Optional, Text

PROG = "tati-predictive"
GROUPS = TOOL_GROUPS["tati-predictive"]
# (name, kind, default, help) of the tool's own options
OWN = [
    ("trajectory_file", Optional(Text()), None, "the trajectory CSV file of the run (tati-sample or "
     "tati-optimize --trajectory_file): its rows after burn-in are the parameter draws"),
    ("burn_in_steps", Optional(Number(integer=True, minimum=0)), None, "leave out the rows with step <= this "
     "(the run's burn_in_steps; not given: 0, every row a draw, and the tool says so)"),
    ("draws", Number(integer=True, minimum=1), 1000, "at most this many parameter draws, the rows "
     "after burn-in of all walkers thinned evenly"),
    ("swag_rank", Optional(Number(integer=True, minimum=0)), None, "draw the parameters from the SWAG "
     "Gaussian of the trajectory's rows after burn-in (per walker, this many deviation columns; "
     "tati/bayes/swag.py) instead of taking the rows; none means the rows"),
    ("level", Number(minimum=0, strict=True), 0.95, "probability of the central predictive band, below 1"),
    ("test_data_files", Optional(Text()), None, "the held-out points: a CSV file in batch_data_files' "
     "layout, features then labels (without label columns: no log predictive density)"),
    ("output", Text(), "predictive.csv", "the CSV file to write: features, labels, mean_k, lower_k, "
     "upper_k, log_predictive_density and, for regression and counts, pit_k (the predictive's CDF at label k)"),
    ("plot", Optional(Text()), None, "also draw a figure into this PNG file (.pdf, .svg: that format): "
     "for 1-D inputs the band over them, else the calibration of the held-out labels (PIT histogram, or "
     "a classifier's reliability diagram; tati/bayes/calibration.py); needs matplotlib: pip install tati[plots]"),
    ("inference_data", Optional(Text()), None, "also write ArviZ's InferenceData to this NetCDF file "
     "(arviz.from_netcdf): the posterior (every trajectory row after burn-in, walkers as chains), the "
     "pointwise log-likelihood of the run's data and a replicate of it per draw (az.loo, az.plot_ppc; "
     "needs the run's batch_data_files), and a replicate per draw at the held-out points (predictions); "
     "needs arviz: pip install tati[arviz]"),
    ("seed", Number(integer=True, minimum=0), 0, "seed of SWAG's draws (--swag_rank) and of inference_data's "
     "replicates"),
    ("overwrite", Boolean(), False, "replace output files that exist"),
]
OWN_NAMES = [name for name, *_ in OWN]


def make_tool_parser():
    parser = make_parser(
        PROG, "Compute the posterior predictive distribution (mean, central band and, with labels, the "
        "log predictive density) of a network at held-out points from a run's trajectory, and write "
        "it as a CSV file (with --plot a PNG: the band over 1-D inputs, else the labels' calibration). "
        "Give the network's options as for the run.", GROUPS)
    group = parser.add_argument_group("predictive")
    for name, kind, default, text in OWN:
        shown = "none" if default is None else str(default).lower() if isinstance(default, bool) else default
        add_option(group, name, kind, f"{text} (default: {shown})")
    return parser


def main(argv=None):
    given = parse(make_tool_parser(), sys.argv[1:] if argv is None else argv)
    sim_options = {k: v for k, v in given.items() if k not in OWN_NAMES}
    try:
        own = {name: kind(name, given[name]) if name in given else default for name, kind, default, _ in OWN}
        trajectory, test = check_inputs(own)
        if own["inference_data"] is not None:
            check_inference_data(own, sim_options)
        points = None
        if "dataset" not in sim_options and "batch_data_files" not in sim_options:
            points = read_points(own["test_data_files"], sim_options.get("input_dimension"))
            sim_options["dataset"] = (points[0], points[1] if points[1] is not None else placeholder_labels(
                len(points[0]), sim_options))
    except InputError as error:
        fail(PROG, error)

    def body():
        print(predict(sim_options, own, trajectory, points))

    run_tool(PROG, sim_options, None, body)


def check_inputs(own):
    """(trajectory DataFrame, held-out file) after checking the options and files, no TensorFlow."""
    from tati.analysis import figures
    from tati.analysis.output import check_inputs_not_outputs, check_outputs
    from tati.analysis.runs import read_table
    from tati.data.csv import check_file
    if not own["level"] < 1:
        raise InputError(f"level must be below 1, got {own['level']:g}")
    if own["swag_rank"] == 1:
        raise InputError("swag_rank must be 0 (the diagonal alone) or at least 2 (the deviations' part is "
                         "divided by swag_rank - 1), got 1")
    for name in ("trajectory_file", "test_data_files"):
        if own[name] is None:
            raise InputError(f"give --{name}")
    try:
        check_file(own["test_data_files"])
    except InputError as error:
        raise InputError(str(error).replace("batch_data_files:", "test_data_files:", 1)) from None
    if own["plot"] is not None:
        figures.check("--plot", own["plot"])
    outputs = {"output": own["output"], "plot": own["plot"], "inference_data": own["inference_data"]}
    check_outputs(outputs, own["overwrite"])
    check_inputs_not_outputs({"trajectory_file": own["trajectory_file"],
                              "test_data_files": own["test_data_files"]}, outputs)
    trajectory = read_table("trajectory_file", own["trajectory_file"])
    if not (trajectory["step"] > (own["burn_in_steps"] or 0)).any():
        raise InputError(f"trajectory_file '{own['trajectory_file']}' has no row after burn_in_steps "
                         f"{own['burn_in_steps']}")
    return trajectory, own["test_data_files"]


def check_inference_data(own, sim_options):
    """InputError where --inference_data cannot be written: no arviz, SWAG's draws (the file holds the
    trajectory's rows), or no run data (its log-likelihood is of the run's points)."""
    from tati.export.arviz import import_arviz
    import_arviz("inference_data")  # or one line naming the extra
    if own["swag_rank"] is not None:
        raise InputError("inference_data holds the trajectory's rows, not SWAG's draws: leave out swag_rank")
    if sim_options.get("likelihood", "none") == "none":
        raise InputError("inference_data needs the run's likelihood (--likelihood): without one the loss is not "
                         "a log-likelihood")
    if "batch_data_files" not in sim_options and "dataset" not in sim_options:
        raise InputError("inference_data needs the run's data (batch_data_files): its log-likelihood and "
                         "replicates are of the run's points")


def write_inference_data(sim, trajectory, burn_in, features, path):
    """The run's posterior, the log-likelihood and replicates of its data, and predictions at `features`,
    as a NetCDF file (tati/export/arviz.py; written whole or not at all); the number of draws it holds."""
    from tati.analysis.inference_data import write
    from tati.analysis.runs import RunTables
    from tati.export.arviz import to_inference_data
    idata = to_inference_data(RunTables(trajectory=trajectory), burn_in, log_likelihood=sim, posterior_predictive=sim,
                              predictions=features)
    write(idata, path)
    return idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]


def read_points(path, input_dimension, dtype="float64"):
    """(features, labels or None, feature names, label names) of the held-out file: the first
    input_dimension columns (none: all but the last) are features, the rest labels."""
    import csv
    from tati.data import csv as data_csv
    try:
        with open(path, encoding="utf-8-sig", newline="") as file:
            header = next((row for row in csv.reader(file) if row), [])
        if input_dimension is None:
            input_dimension = max(1, len(header) - 1)
        input_dimension = int(input_dimension)
        if len(header) > input_dimension:
            features, labels = data_csv.read_csv_files(path, input_dimension, dtype)
        elif len(header) == input_dimension:  # features only
            header, lines, rows = data_csv._read_rows(path)
            features, labels = data_csv._numbers(path, header, lines, rows).astype(dtype), None
        else:
            raise InputError(f"batch_data_files: file '{path}' has {len(header)} columns; the network "
                             f"takes {input_dimension} features")
    except InputError as error:  # before ValueError, its base
        raise InputError(str(error).replace("batch_data_files:", "test_data_files:", 1)) from None
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as error:
        raise InputError(f"test_data_files: file '{path}' cannot be read: {error}") from None
    return features, labels, header[:input_dimension], header[input_dimension:]


def placeholder_labels(n, o):
    """Labels of the right width for a Simulation built on features alone (only shapes matter)."""
    import numpy as np
    likelihood = o.get("likelihood", "none")
    width = int(o.get("output_dimension") or 1)
    if likelihood in TWO_OUTPUTS:
        width = max(1, width // 2)
    elif likelihood == "categorical" or o.get("loss") == "softmax_cross_entropy":
        width = 1  # class indices 0
    return np.zeros((n, width))


def predict(sim_options, own, trajectory, points):
    """Compute and write; the summary line."""
    from tati.analysis.output import write_csv
    from tati.bayes import calibration
    from tati.recording.columns import check_parameter_columns
    from tati.simulation import Simulation
    import pandas as pd
    sim = Simulation(**sim_options, seed=own["seed"])  # the seed of inference_data's replicates
    o = sim.options
    if points is None:  # the run's data gave the network's shapes; now read the held-out file
        points = read_points(own["test_data_files"], o["input_dimension"])
    features, labels, feature_names, label_names = points
    if features.shape[1] != o["input_dimension"]:
        raise InputError(f"test_data_files: file '{own['test_data_files']}' has {features.shape[1]} feature "
                         f"columns; the network takes {o['input_dimension']}")
    run_labels = sim.data.all()[1].shape[1]
    if labels is not None and labels.shape[1] != run_labels:
        raise InputError(f"test_data_files: file '{own['test_data_files']}' has {features.shape[1] + labels.shape[1]} "
                         f"columns: {features.shape[1]} feature and {labels.shape[1]} label columns; the run's "
                         f"data has {run_labels} label column(s)")
    lpd_wanted = labels is not None and o["likelihood"] != "none"
    if own["plot"] is not None and features.shape[1] != 1 and not lpd_wanted:
        raise InputError(f"plot draws the band over 1-D inputs (the network takes {features.shape[1]} features), "
                         "or the calibration of held-out labels: give test_data_files with label columns" +
                         ("" if labels is None else " and the run's likelihood"))
    given = own["burn_in_steps"] is not None
    asked = burn_in = own["burn_in_steps"] or 0
    draws, source = trajectory, f"trajectory_file '{own['trajectory_file']}'"
    check_parameter_columns(trajectory.columns, sim.model.parameter_names, source)
    kept = trajectory[trajectory["step"] > burn_in]
    walkers = kept["id"].nunique()
    if own["swag_rank"] is not None:
        from tati.bayes.swag import swag
        posterior = swag(trajectory, rank=own["swag_rank"], burn_in=burn_in, parameters=sim.model.parameter_names)
        draws = posterior.sample(math.ceil(own["draws"] / walkers), seed=own["seed"])
        burn_in = posterior.last_step
        source = f"SWAG (rank {own['swag_rank']}) of {source}"
    table, lpd = sim.predictive(features, labels if lpd_wanted else None, trajectory=draws, burn_in=burn_in,
                                draws=own["draws"], level=own["level"])
    n = min(own["draws"], int((draws["step"] > burn_in).sum()))
    columns = {name: features[:, j] for j, name in enumerate(feature_names)}
    if labels is not None:
        columns.update({name: labels[:, j] for j, name in enumerate(label_names)})
    frame = pd.concat([pd.DataFrame(columns), table], axis=1)
    write_csv(frame, own["output"])
    written = [own["output"]]
    if own["inference_data"] is not None:
        every = write_inference_data(sim, trajectory, asked, features, own["inference_data"])
        written.append(f"{own['inference_data']} (all {every} draws)")
    if own["plot"] is not None:
        training = None if "dataset" in sim_options and isinstance(sim_options["dataset"], tuple) else sim.data.all()
        if features.shape[1] == 1:
            plot(frame, feature_names[0], label_names if labels is not None else [], training, own, o["likelihood"])
        else:
            calibration.plot(table, labels, o["likelihood"], own["plot"], own["level"], label_names)
        written.append(own["plot"])
    what = (f"log predictive density {lpd:.6g} ({lpd / len(frame):.4g} per point)" if lpd is not None else
            "no labels, so no log predictive density" if labels is None else
            "no likelihood, so no log predictive density")
    return (f"{PROG}: {len(frame)} points, {n} draws from {source} ({walkers} walker{'s' * (walkers != 1)}, "
            f"steps after {asked}); {what}; wrote {', '.join(written)}"
            + (f"\n  held-out: {calibration.scores(table, labels, o['likelihood'], own['level'])}"
               if lpd_wanted else "")
            + ("" if given else "\n  burn_in_steps not given: every row was a draw, the run's burn-in too "
                                "(give --burn_in_steps, the run's)"))


def plot(frame, x_name, label_names, training, own, likelihood):
    """One panel per output: the held-out points (and the run's data), the mean and the band."""
    import numpy as np
    from tati.analysis import figures
    outputs = sorted(int(c.split("_")[1]) for c in frame.columns if c.startswith("mean_"))
    figure, axes = figures.new_figure(rows=len(outputs), height=3.2, sharex=True)
    order = np.argsort(frame[x_name].to_numpy())
    x = frame[x_name].to_numpy()[order]
    for k, ax in zip(outputs, axes[:, 0]):
        ax.fill_between(x, frame[f"lower_{k}"].to_numpy()[order], frame[f"upper_{k}"].to_numpy()[order],
                        step="mid" if likelihood in COUNTS else None,  # counts' quantiles are steps
                        color="tab:blue", alpha=0.25, linewidth=0, label=f"central {own['level']:g} band")
        ax.plot(x, frame[f"mean_{k}"].to_numpy()[order], color="tab:blue", label="predictive mean")
        label = label_names[k] if k < len(label_names) else None
        if label is not None and likelihood != "categorical":
            ax.plot(frame[x_name], frame[label], ".", color="tab:red", markersize=4, label="held-out points")
        if training is not None and training[1].shape[1] > k and training[0].shape[1] == 1:
            ax.plot(np.asarray(training[0])[:, 0], np.asarray(training[1])[:, k], "o", markerfacecolor="none",
                    color="black", markersize=5, markeredgewidth=0.8, label="run's data")
        ax.set_ylabel(f"output {k}" if label is None else label)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(x_name)
    figures.legend_above(figure, axes)
    figures.save(figure, own["plot"])


if __name__ == "__main__":
    main()
