"""Bad input gets one line naming the culprit: InputError in Python, exit status 2 and no
traceback on the command line."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

import tati
from tati.cli import optimize as optimize_cli
from tati.cli import sample as sample_cli
from tati.errors import InputError


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return {
        "few_columns": write("few.csv", "x1,x2\n1,2\n3,4\n"),
        "non_numeric": write("text.csv", "x1,x2,y\n1,2,1\n3,abc,-1\n"),
        "empty": write("empty.csv", ""),
        "nan": write("nan.csv", "x1,x2,y\n1,2,1\nnan,4,-1\n"),
        "missing": str(tmp_path / "missing.csv"),
        "no_dir": str(tmp_path / "no" / "such" / "dir" / "run.csv"),
    }


# (name, options, what the message must name); options given as strings work in Python and
# on the command line alike, since both go through the option table.
CASES = [
    ("zero step_width", {"step_width": "0"}, "step_width"),
    ("negative step_width", {"step_width": "-0.1"}, "step_width"),
    ("text step_width", {"step_width": "abc"}, "step_width"),
    ("negative friction", {"friction_constant": "-1"}, "friction_constant"),
    ("zero inverse_temperature", {"inverse_temperature": "0"}, "inverse_temperature"),
    ("infinite inverse_temperature", {"inverse_temperature": "inf"}, "inverse_temperature"),
    ("every_nth 0", {"every_nth": "0"}, "every_nth"),
    ("max_steps 0", {"max_steps": "0"}, "max_steps"),
    ("fractional max_steps", {"max_steps": "1.5"}, "max_steps"),
    ("negative burn_in", {"burn_in_steps": "-1"}, "burn_in_steps"),
    ("batch_size 0", {"batch_size": "0"}, "batch_size"),
    ("negative seed", {"seed": "-3"}, "seed"),
    ("unknown sampler", {"sampler": "Langevin9"}, "Langevin9"),
    ("NUTS with mini-batches", {"sampler": "NUTS", "batch_size": "10"}, "batch_size"),
    ("HMC with mini-batches", {"sampler": "HMC2", "batch_size": "10"}, "batch_size"),
    ("jit with mini-batches", {"jit_compile": "true", "batch_size": "10"}, "jit_compile"),
    ("walkers beyond memory", {"number_walkers": "100000000000"}, "number_walkers"),
    ("network beyond memory", {"hidden_dimension": "1000000,1000000"}, "hidden_dimension"),
    ("collapse with HMC", {"sampler": "HMC2", "number_walkers": "4", "collapse_walkers": "true"}, "collapse_walkers"),
    ("one-call phases with HMC", {"sampler": "HMC1", "number_walkers": "4", "covariance_blending": "1.0",
                                  "covariance_after_steps": "1"}, "covariance_after_steps"),
    ("unknown activation", {"hidden_activation": "swish2"}, "hidden_activation"),
    ("bad hidden_dimension", {"hidden_dimension": "8,x"}, "hidden_dimension"),
    ("unknown dtype", {"dtype": "float16"}, "dtype"),
    ("bad progress", {"progress": "maybe"}, "progress"),
    ("wrong initial_parameters length", {"initial_parameters": "1,2"}, "initial_parameters"),
    ("input_dimension mismatch", {"input_dimension": "3"}, "input_dimension"),
    ("missing file", {"batch_data_files": "@missing"}, "missing.csv"),
    ("too few columns", {"batch_data_files": "@few_columns", "input_dimension": "2"}, "few.csv"),
    ("non-numeric cell", {"batch_data_files": "@non_numeric"}, "abc"),
    ("empty file", {"batch_data_files": "@empty"}, "empty.csv"),
    ("NaN in the data", {"batch_data_files": "@nan"}, "nan.csv"),
    ("unwritable output", {"run_file": "@no_dir"}, "run.csv"),
]
PYTHON_ONLY = [
    ("jit with a vectorised potential", {"jit_compile": True, "number_walkers": 9,
      "potential": lambda x: tf.reduce_sum(x ** 2), "initial_parameters": [1.0]}, "potential_batched"),
    ("unknown option", {"step_widht": 0.1}, "step_widht"),
    ("data under Keras' name", {"x": np.zeros((4, 2)), "y": np.zeros(4)}, "dataset=(X, Y)"),
    ("unknown dataset", {"dataset": "two_cluster"}, "two_cluster"),
    ("a tf.data pipeline as the data", {"dataset": tf.data.Dataset.from_tensor_slices((np.zeros((4, 2)), np.zeros(4)))},
     "not a tf.data.Dataset: give dataset=(X, Y)"),
    ("NaN in arrays", {"dataset": (np.array([[0.0, np.nan]]), np.array([[1.0]]))}, "dataset"),
    ("class names as labels", {"dataset": (np.zeros((4, 2)), np.array(["cat", "dog"] * 2))},
     "give class indices 0, 1, ..."),
    ("a distribution as the potential", {"potential": tfp.distributions.Normal(0.0, 1.0), "initial_parameters": [0.0]},
     "give lambda theta: -d.log_prob(theta)"),
    ("potential without initial_parameters", {"potential": lambda x: tf.reduce_sum(x)}, "initial_parameters"),
    ("potential returning a vector", {"potential": lambda x: x * 2.0, "initial_parameters": [1.0, 2.0]},
     "scalar"),
    ("potential with data", {"potential": lambda x: tf.reduce_sum(x), "initial_parameters": [1.0],
                             "dataset": "two_clusters"}, "potential"),
    ("potential failing", {"potential": lambda x: x[5], "initial_parameters": [1.0]}, "potential"),
    ("potential in numpy", {"potential": lambda x: 0.5 * np.sum(x ** 2), "initial_parameters": [1.0]},
     "potential cannot run in TensorFlow's compiled graph"),
    ("potential with a Python if", {"potential": lambda x: x[0] ** 2 if x[0] > 0 else -x[0],
                                    "initial_parameters": [1.0]}, "tf.where, not a Python if"),
    ("potential in float64", {"potential": lambda x: tf.reduce_sum(tf.constant([1.0], tf.float64) * x),
                              "initial_parameters": [1.0]}, "give dtype 'float64'"),
    ("potential in float32", {"potential": lambda x: tf.reduce_sum(x * tf.constant([1.0], tf.float32)),
                              "initial_parameters": [1.0], "dtype": "float64"}, "give dtype 'float32'"),
    ("unknown optimizer", {"optimizer": "adamm"}, "adamm"),
    ("unknown loss", {"loss": "squared"}, "loss"),
]


def resolve(options, files):
    return {k: files[v[1:]] if isinstance(v, str) and v.startswith("@") else v for k, v in options.items()}


def run_python(options):
    simulation = tati.Simulation(**{"max_steps": 2, **options})
    simulation.sample()


@pytest.mark.parametrize("name,options,culprit", CASES + PYTHON_ONLY, ids=[c[0] for c in CASES + PYTHON_ONLY])
def test_python_interface(name, options, culprit, files):
    with pytest.raises(InputError) as error:
        run_python(resolve(options, files))
    message = str(error.value)
    assert culprit in message and "\n" not in message, message


@pytest.mark.parametrize("name,options,culprit", CASES, ids=[c[0] for c in CASES])
def test_command_line(name, options, culprit, files, capsys):
    argv = ["--max_steps", "2"]
    for key, value in resolve(options, files).items():
        argv += [f"--{key}", value]
    tool = optimize_cli if "sampler" not in options else sample_cli
    if any(k in options for k in ("step_width", "friction_constant", "inverse_temperature")):
        tool = sample_cli
    with pytest.raises(SystemExit) as exit_:
        tool.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and culprit in err and "Traceback" not in err, err


def test_command_line_misspelled_flag_suggests(capsys):
    with pytest.raises(SystemExit) as exit_:
        sample_cli.main(["--step_widht", "0.1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--step_widht" in err and "--step_width" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv,culprit", [(["--every_nth", "0"], "every_nth"),
                                          (["--sampler", "nope"], "nope")])
def test_installed_tool_exits_2_without_traceback(argv, culprit):
    done = subprocess.run([sys.executable, "-m", "tati.cli.sample", "--max_steps", "2", *argv],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and culprit in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
