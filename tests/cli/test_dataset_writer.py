"""tati-dataset-writer: the built-in datasets to CSV files that tati's reader gives back exactly."""

import subprocess
import sys

import numpy as np
import pytest

from tati.cli.dataset_writer import main
from tati.data.csv import read_csv_files
from tati.data.datasets import DATASETS, make_dataset


def write(tmp_path, *argv):
    """Run the tool as a command in tmp_path; (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "tati.cli.dataset_writer", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_file_reads_back_as_the_in_memory_dataset(tmp_path, name, dtype):
    """Bitwise: the CSV read with tati's reader at either dtype equals make_dataset at that dtype,
    and the data a Simulation of that dtype makes of the same dataset options."""
    path = tmp_path / "train.csv"
    main(["--dataset", name, "--dataset_size", "301", "--dataset_noise", "0.3", "--dataset_seed", "7",
          "--train_file", str(path)])
    features, labels = read_csv_files(str(path), 2, dtype)
    expected = make_dataset(name, size=301, noise=0.3, seed=7, dtype=dtype)
    np.testing.assert_array_equal(features, expected[0])
    np.testing.assert_array_equal(labels, expected[1])
    assert features.dtype == dtype and path.read_text().splitlines()[0] == "x1,x2,label"
    built_in = data_of(dataset=name, dataset_size=301, dataset_noise=0.3, dataset_seed=7, dtype=np.dtype(dtype).name)
    from_file = data_of(batch_data_files=[str(path)], dtype=np.dtype(dtype).name)
    for a, b in zip(built_in, from_file):
        np.testing.assert_array_equal(a, b)


def data_of(**options):
    """The data arrays (features, labels) a Simulation with these options trains on."""
    from tati.config.building import make_data
    from tati.config.options import resolve
    batches, _ = make_data(resolve(options), {})
    return [np.asarray(array) for array in batches.all()]


def test_the_split_partitions_the_points(tmp_path):
    """round(0.3 * 250) = 75 test rows, the last ones; the two files together are the dataset."""
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    status, out, err = write(tmp_path, "--dataset", "two_spirals", "--dataset_size", "250", "--test_fraction",
                             "0.3", "--train_file", str(train), "--test_file", str(test))
    assert status == 0, err
    assert "175 points to" in out and "75 points to" in out
    x_train, y_train = read_csv_files(str(train), 2, np.float64)
    x_test, y_test = read_csv_files(str(test), 2, np.float64)
    features, labels = make_dataset("two_spirals", size=250, dtype=np.float64)
    assert len(x_train) == 175 and len(x_test) == 75
    np.testing.assert_array_equal(np.concatenate([x_train, x_test]), features)
    np.testing.assert_array_equal(np.concatenate([y_train, y_test]), labels)
    # a partition: no point is in both parts (the rows are distinct points)
    assert not {tuple(p) for p in x_train} & {tuple(p) for p in x_test}
    assert set(np.unique(y_test)) == {-1.0, 1.0}  # the shuffled rows give the test part both classes


def test_a_simulation_on_the_file_sees_the_built_in_dataset(tmp_path):
    """batch_data_files of the written file gives the same loss as dataset= with the same options."""
    import tati
    path = tmp_path / "data.csv"
    main(["--dataset", "four_squares", "--dataset_size", "120", "--train_file", str(path)])
    from_file = tati.Simulation(batch_data_files=[str(path)], hidden_dimension=[4], seed=3)
    built_in = tati.Simulation(dataset="four_squares", dataset_size=120, hidden_dimension=[4], seed=3)
    assert from_file.loss() == built_in.loss()


def test_existing_files_are_replaced_only_with_overwrite(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("keep\n")
    status, out, err = write(tmp_path, "--train_file", "data.csv")
    assert status == 2 and out == ""
    assert err == ("tati-dataset-writer: error: train_file 'data.csv' exists: give overwrite=true "
                   "(--overwrite true) to replace it\n")
    assert path.read_text() == "keep\n"
    status, _, err = write(tmp_path, "--train_file", "data.csv", "--overwrite", "true")
    assert status == 0, err
    assert len(path.read_text().splitlines()) == 501


@pytest.mark.parametrize("argv, message", [
    ([], "train_file is required"),
    (["--train_file", "a.csv", "--dataset", "two_circle"], "dataset 'two_circle' is unknown"),
    (["--train_file", "a.csv", "--dataset_size", "1"], "dataset_size must be an integer of at least 2"),
    (["--train_file", "a.csv", "--dataset_noise", "-1"], "dataset_noise must be >= 0"),
    (["--train_file", "a.csv", "--test_fraction", "0.2"], "test_fraction needs test_file"),
    (["--train_file", "a.csv", "--test_file", "b.csv"], "test_file needs test_fraction > 0"),
    (["--train_file", "a.csv", "--test_file", "b.csv", "--test_fraction", "1"], "test_fraction must be < 1"),
    (["--train_file", "a.csv", "--test_file", "b.csv", "--test_fraction", "0.001"], "leaves no test point"),
    (["--train_file", "a.csv", "--test_file", "a.csv", "--test_fraction", "0.5"], "name the same file"),
    (["--train_file", "no/dir/a.csv"], "the directory"),
    (["--train_file", "a.csv", "--test_fractio", "0.2"], "did you mean --test_fraction?"),
])
def test_bad_input_is_one_line_with_exit_status_2(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2 and out == ""
    assert err.startswith("tati-dataset-writer: error: ") and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_no_tensorflow_is_imported(tmp_path):
    script = ("import sys\nfrom tati.cli.dataset_writer import main\n"
              "main(['--train_file', 'a.csv', '--test_file', 'b.csv', '--test_fraction', '0.5'])\n"
              "print('tensorflow' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "False"
