"""The original TATi's (v0.9.5) spellings that tati spells differently or not at all.

What has a counterpart is accepted as an alias (the tools' parsers and the option kinds read
these tables); for the rest the tools and `Simulation` answer in one line what tati does
instead. The sampler names are in tati/engine/registry.py (each Spec's aliases). doc/migration.md tabulates
all of it; tests/config/test_migration.py runs every spelling.
"""

# TATiDatasetWriter's --data_type codes, accepted by the option dataset.
DATASET_CODES = {0: "two_circles", 1: "four_squares", 2: "two_clusters", 3: "two_spirals"}

# The original's options with no counterpart in tati: what to do instead.
RETIRED_OPTIONS = {
    "do_hessians": "tati builds no Hessians, so there is nothing to switch on; for the curvature "
                   "around a minimum sample it and read tati-analyse covariance",
    "do_accumulates": "tati always accumulates the run-info and averages values (their cost is small); "
                      "leave out run_file or averages_file to write fewer tables",
    "in_memory_pipeline": "tati always keeps the dataset in memory and draws batches by seed and epoch",
    "batch_data_file_type": "tati reads CSV files only (batch_data_files); convert TFRecord files to CSV",
    "dropout": "the built-in network has no dropout",
    "verbose": "tati has no verbosity levels: a tool prints a summary, and one line per warning or error",
    "version": "the installed version is shown by pip show tati",
    "sql_db": "tati writes no timing database; the run-info table's time_per_nth_step column has the "
              "time per step",
    "inter_ops_threads": "set the environment variable TF_NUM_INTEROP_THREADS, which TensorFlow reads",
    "intra_ops_threads": "set the environment variable TF_NUM_INTRAOP_THREADS, which TensorFlow reads",
    "collapse_after_steps": "give --collapse_walkers true: walkers collapse at every preconditioner "
                           "update, every --covariance_after_steps steps",
    "interval_weights": "tati-lossfunction-sampler grid takes --ranges LOW:HIGH per axis (or --width) "
                        "for every chosen parameter alike, weights or biases",
    "interval_biases": "tati-lossfunction-sampler grid takes --ranges LOW:HIGH per axis (or --width) "
                       "for every chosen parameter alike, weights or biases",
    "interval_offsets": "tati-lossfunction-sampler centres its grid at a point: choose it with "
                        "--points_file and --steps",
    "samples_weights": "tati-lossfunction-sampler takes --points, the grid points per axis, for every axis",
    "samples_biases": "tati-lossfunction-sampler takes --points, the grid points per axis, for every axis",
    "train_test_ratio": "tati-dataset-writer takes --test_fraction 1-r for the original's ratio r: the "
                        "last round(f N) points go to --test_file, the others to --train_file",
}

# The original's options that a tool of tati takes under another name: tool -> {original: tati}.
RENAMED_OPTIONS = {
    "tati-lossfunction-sampler": {"csv_file": "output"},
    "tati-dataset-writer": {"data_type": "dataset", "dimension": "dataset_size", "noise": "dataset_noise",
                            "seed": "dataset_seed", "train_data_files": "train_file",
                            "test_data_files": "test_file"},
}

# The original's tools: those with a counterpart are installed under their old names too.
TOOLS = {
    "TATiSampler": "tati-sample",
    "TATiOptimizer": "tati-optimize",
    "TATiAnalyser": "tati-analyse",
    "TATiLossFunctionSampler": "tati-lossfunction-sampler",
    "TATiDatasetWriter": "tati-dataset-writer",
}
RETIRED_TOOLS = {
    "TATiExplorer": "explore with several dispersed walkers, tati-sample --number_walkers W "
                    "--initial_dispersion r, then tati-analyse diffusion_map of their trajectory",
    "TATiInputSpaceSampler": "evaluate the network at input points with tati-predictive "
                             "--test_data_files, a CSV file of the points",
    "TATiDatasetParser": "tati reads CSV files directly (batch_data_files); tati-dataset-writer "
                         "writes a built-in dataset to one",
    "NumericalDiff": "compare tables with pandas, e.g. numpy.allclose on tati.load_run's frames",
}

# TATiAnalyser's subcommands: original -> (tati-analyse subcommand, options it implies).
ANALYSES = {
    "average_energies": ("traces", {}),
    "average_trajectory": ("moments", {}),
    "ensemble_average_trajectory": ("moments", {}),
    "covariance": ("covariance", {}),
    "covariance_per_walker": ("covariance", {"per_walker": "true"}),
    "diffusion_map": ("diffusion_map", {}),
    "free_energy_levelsets": ("free_energy", {}),
    "free_energy_histograms": ("free_energy", {}),
    "integrated_autocorrelation_time_covariance": ("autocorrelation", {}),
}

# TATiLossFunctionSampler's modes: original -> tati-lossfunction-sampler mode.
LANDSCAPE_MODES = {"naive_grid": "grid", "naive_subgrid": "directions", "trajectory": "trajectory"}
RETIRED_MODES = {
    "trajectory_subgrid": "run tati-lossfunction-sampler directions (or grid) once per trajectory "
                          "row, chosen with --points_file and --steps",
}


def analysis(command):
    """(tati-analyse subcommand, the options it implies) of a subcommand, the original's or ours."""
    return ANALYSES.get(command, (command, {}))


def aliases_of(command):
    """The original's subcommands that are aliases of a tati-analyse subcommand."""
    return [old for old, (new, _) in ANALYSES.items() if new == command and old != command]
