"""Built-in datasets and CSV reading (no TensorFlow, so these stay fast)."""

import numpy as np
import pandas as pd
import pytest

from tati.data.csv import read_csv_files
from tati.data.datasets import DATASETS, make_dataset
from tati.errors import InputError


# -- built-in datasets --------------------------------------------------------------------------
@pytest.mark.parametrize("name", DATASETS)
def test_dataset_is_deterministic(name):
    X1, Y1 = make_dataset(name, seed=3)
    X2, Y2 = make_dataset(name, seed=3)
    assert X1.tobytes() == X2.tobytes() and Y1.tobytes() == Y2.tobytes()
    X3, _ = make_dataset(name, seed=4)
    assert not np.array_equal(X1, X3)


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("size", [2, 7, 500])
def test_dataset_shapes_labels_and_balance(name, size):
    X, Y = make_dataset(name, size=size)
    assert X.shape == (size, 2) and Y.shape == (size, 1)
    assert X.dtype == np.float32 and Y.dtype == np.float32
    assert set(np.unique(Y)) == {-1.0, 1.0}
    assert (Y == 1).sum() == (size + 1) // 2 and (Y == -1).sum() == size // 2
    assert np.all(np.isfinite(X))


def test_dataset_dtype():
    X, Y = make_dataset("two_spirals", dtype=np.float64)
    assert X.dtype == np.float64 and Y.dtype == np.float64


def test_two_clusters_linearly_separable_at_defaults():
    X, Y = make_dataset("two_clusters")
    accuracy = np.mean(np.sign(X[:, 0] + X[:, 1]) == Y[:, 0])
    assert accuracy >= 0.95


def test_four_squares_label_rule_without_noise():
    X, Y = make_dataset("four_squares", size=1000, noise=0.0)
    assert np.all(np.abs(X) <= 5.0)
    assert np.array_equal(Y[:, 0], np.where(X[:, 0] * X[:, 1] >= 0, 1.0, -1.0))


def test_two_circles_radii_without_noise():
    X, Y = make_dataset("two_circles", size=1000, noise=0.0)
    radius = np.hypot(X[:, 0], X[:, 1])
    assert np.all(radius[Y[:, 0] == 1] <= 2.5 + 1e-5)
    assert np.all((radius[Y[:, 0] == -1] >= 3.5 - 1e-5) & (radius[Y[:, 0] == -1] <= 5.0 + 1e-5))


def test_unknown_dataset_names_value_and_suggestion():
    with pytest.raises(InputError) as error:
        make_dataset("two_cluster")
    message = str(error.value)
    assert "'two_cluster'" in message and "did you mean 'two_clusters'" in message
    assert all(name in message for name in DATASETS)


@pytest.mark.parametrize("kwargs, option", [({"size": 1}, "dataset_size"), ({"noise": -0.1}, "dataset_noise"),
                                            ({"noise": float("nan")}, "dataset_noise")])
def test_dataset_bad_size_or_noise(kwargs, option):
    with pytest.raises(InputError, match=option):
        make_dataset("two_clusters", **kwargs)


# -- CSV files ----------------------------------------------------------------------------------
def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def assert_error(paths, fragments, input_dimension=2):
    with pytest.raises(InputError) as error:
        read_csv_files(paths, input_dimension)
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_csv_round_trip(tmp_path):
    X, Y = make_dataset("two_spirals", size=101, dtype=np.float64)
    first, second = str(tmp_path / "a.csv"), str(tmp_path / "b.csv")
    pd.DataFrame({"x1": X[:60, 0], "x2": X[:60, 1], "label": Y[:60, 0]}).to_csv(first, index=False)
    pd.DataFrame({"x1": X[60:, 0], "x2": X[60:, 1], "label": Y[60:, 0]}).to_csv(second, index=False)
    features, labels = read_csv_files([first, second], 2, dtype=np.float64)
    assert np.array_equal(features, X) and np.array_equal(labels, Y)
    features, labels = read_csv_files(first, 2)
    assert features.dtype == np.float32 and np.array_equal(features, X[:60].astype(np.float32))


def test_csv_several_label_columns(tmp_path):
    path = write(tmp_path, "multi.csv", "x,l1,l2\n1,0,1\n\n2,1,0\n")
    features, labels = read_csv_files(path, 1)
    assert features.shape == (2, 1) and labels.tolist() == [[0, 1], [1, 0]]


def test_csv_missing_file(tmp_path):
    assert_error(str(tmp_path / "x.csv"), ["batch_data_files", "x.csv", "does not exist"])


def test_csv_directory(tmp_path):
    assert_error(str(tmp_path), [str(tmp_path), "directory"])


def test_csv_empty_file(tmp_path):
    assert_error(write(tmp_path, "empty.csv", ""), ["empty.csv", "empty"])


def test_csv_header_only(tmp_path):
    assert_error(write(tmp_path, "header.csv", "x1,x2,y\n"), ["header.csv", "no data rows"])


def test_csv_too_few_columns(tmp_path):
    assert_error(write(tmp_path, "narrow.csv", "x1,x2\n1,2\n"),
                 ["narrow.csv", "has 2 column(s); 2 feature column(s) and at least one label column are needed"])
    assert_error(write(tmp_path, "semicolons.csv", "x1;x2;y\n1;2;1\n"),
                 ["semicolons.csv", "has 1 column(s) (its header is separated by ';'; tati reads commas)"])


def test_csv_row_with_wrong_column_count(tmp_path):
    assert_error(write(tmp_path, "ragged.csv", "x1,x2,y\n1,2,1\n1,2\n"), ["ragged.csv", "line 3", "2 columns"])


def test_csv_files_with_different_column_counts(tmp_path):
    first = write(tmp_path, "three.csv", "x1,x2,y\n1,2,1\n")
    second = write(tmp_path, "four.csv", "x1,x2,y,z\n1,2,1,0\n")
    assert_error([first, second], ["four.csv", "4 columns", "three.csv"])


def test_csv_non_numeric_cell(tmp_path):
    path = write(tmp_path, "text.csv", "x1,x2,y\n1,2,1\n3,abc,-1\n")
    assert_error(path, ["text.csv", "line 3", "'x2'", "'abc'", "not a number"])


def test_csv_empty_cell(tmp_path):
    assert_error(write(tmp_path, "hole.csv", "x1,x2,y\n1,,1\n"), ["hole.csv", "line 2", "'x2'"])


@pytest.mark.parametrize("cell", ["nan", "inf", "-inf", "1e300"])
def test_csv_non_finite_value(tmp_path, cell):
    path = write(tmp_path, "nan.csv", f"x1,x2,y\n1,2,1\n\n3,4,{cell}\n")
    assert_error(path, ["nan.csv", "line 4", "'y'", f"'{cell}'"])


def test_csv_empty_list_of_files():
    assert_error([], ["batch_data_files"])


@pytest.mark.parametrize("input_dimension", [0, -1])
def test_csv_bad_input_dimension(tmp_path, input_dimension):
    path = write(tmp_path, "ok.csv", "x1,x2,y\n1,2,1\n")
    assert_error(path, ["input_dimension"], input_dimension=input_dimension)
