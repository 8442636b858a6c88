"""tati-dataset-writer: write a built-in dataset to CSV files that tati reads back (batch_data_files).

    tati-dataset-writer --dataset two_circles --dataset_size 1000 --dataset_noise 0.05 \\
        --test_fraction 0.2 --train_file train.csv --test_file test.csv

The points are those of `dataset=...` with the same dataset_size, dataset_noise and dataset_seed
(tati/data/datasets.py), rows in the same (shuffled) order; with test_fraction f the last
round(f N) rows go to test_file and the others to train_file. Every bad option or file is one
line `tati-dataset-writer: error: ...` and exit status 2, before anything is written; an existing
file is replaced only with --overwrite true. No TensorFlow is imported.
"""

import argparse
import os
import sys

from tati.cli.common import EPILOG, Parser, add_option, add_renamed, fail
from tati.errors import InputError
from tati.config.options import BY_NAME, Boolean, Number, Optional, Text

PROG = "tati-dataset-writer"
TABLE_OPTIONS = ("dataset", "dataset_size", "dataset_noise", "dataset_seed")
DEFAULT_DATASET = "two_clusters"  # as in a Simulation without data options
# (name, kind, default, help) of the options only this tool has
OWN_OPTIONS = [
    ("train_file", Text(), None, "the CSV file of the training points (all points without --test_fraction)"),
    ("test_file", Optional(Text()), None, "the CSV file of the test points (needs --test_fraction)"),
    ("test_fraction", Number(minimum=0), 0.0, "the fraction f of the points written to test_file "
     "(round(f N) of them, the last rows), below 1"),
    ("overwrite", Boolean(), False, "replace train_file and test_file if they exist"),
]


def make_parser():
    parser = Parser(prog=PROG, allow_abbrev=False, argument_default=argparse.SUPPRESS, epilog=EPILOG,
                     description="Write a built-in dataset (the points a Simulation with the same "
                     "dataset options trains on) to CSV files: a header x1,x2,label, then one row per "
                     "point, labels -1 and +1; optionally split into a training and a test file.")
    for name in TABLE_OPTIONS:
        option = BY_NAME[name]
        default = DEFAULT_DATASET if name == "dataset" else option.default
        add_option(parser, name, option.kind, f"{option.help} (default: {default})".replace("%", "%%"))
    for name, kind, default, text in OWN_OPTIONS:
        shown = "required" if name == "train_file" else f"default: {'none' if default is None else str(default).lower()}"
        add_option(parser, name, kind, f"{text} ({shown})")
    add_renamed(parser, PROG)
    return parser


def resolve(given):
    """The tool's options with defaults filled in, converted and checked (InputError otherwise)."""
    values = {name: BY_NAME[name].kind(name, given[name]) if name in given else BY_NAME[name].default
              for name in TABLE_OPTIONS}
    for name, kind, default, _ in OWN_OPTIONS:
        values[name] = kind(name, given[name]) if name in given else default
    if values["dataset"] is None:
        values["dataset"] = DEFAULT_DATASET
    if values["train_file"] is None:
        raise InputError("train_file is required: the CSV file to write the points to")
    if not values["test_fraction"] < 1:
        raise InputError(f"test_fraction must be < 1 (the training file needs points), got {values['test_fraction']:g}")
    if values["test_fraction"] > 0 and values["test_file"] is None:
        raise InputError("test_fraction needs test_file, the CSV file of the test points")
    if values["test_fraction"] == 0 and values["test_file"] is not None:
        raise InputError("test_file needs test_fraction > 0, the fraction of the points to write to it")
    return values


def split(size, test_fraction):
    """(training rows, test rows) of `size` points: round(test_fraction size) test rows, the
    last ones. InputError if a part with a file would be empty."""
    tests = int(round(test_fraction * size))
    if test_fraction > 0 and tests == 0:
        raise InputError(f"test_fraction {test_fraction:g} of dataset_size {size} leaves no test point")
    if tests >= size:
        raise InputError(f"test_fraction {test_fraction:g} of dataset_size {size} leaves no training point")
    return size - tests, tests


def check_outputs(values):
    from tati.config.preflight import check_output_file
    for name in ("train_file", "test_file"):
        check_output_file(name, values[name], False, values["overwrite"], resumable=False)
    if values["test_file"] is not None and os.path.realpath(values["train_file"]) == os.path.realpath(values["test_file"]):
        raise InputError(f"train_file and test_file name the same file '{values['test_file']}'")


def write(values):
    """Make the dataset and write its files; returns [(path, rows)]."""
    import numpy as np
    from tati.data.csv import write_csv_file
    from tati.data.datasets import make_dataset
    features, labels = make_dataset(values["dataset"], size=values["dataset_size"], noise=values["dataset_noise"],
                                    seed=values["dataset_seed"], dtype=np.float64)
    train, _ = split(values["dataset_size"], values["test_fraction"])
    written = []
    for path, rows in ((values["train_file"], slice(0, train)), (values["test_file"], slice(train, None))):
        if path is None:
            continue
        try:
            write_csv_file(path, features[rows], labels[rows])
        except OSError as error:
            raise InputError(f"cannot write '{path}': {error.strerror}") from None
        written.append((path, len(features[rows])))
    return written


def main(argv=None):
    given = vars(make_parser().parse_args(sys.argv[1:] if argv is None else argv))
    try:
        values = resolve(given)
        split(values["dataset_size"], values["test_fraction"])
        check_outputs(values)
        written = write(values)
    except InputError as error:
        fail(PROG, error)
    parts = ", ".join(f"{rows} points to {path}" for path, rows in written)
    print(f"{PROG}: {values['dataset']} (noise {values['dataset_noise']:g}, seed {values['dataset_seed']}): {parts}")


if __name__ == "__main__":
    main()
