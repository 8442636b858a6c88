"""The examples run (with short settings) and say what they claim to."""

import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def run(script, *args):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_sample_gaussian(tmp_path):
    out = run("sample_gaussian.py", "--steps", "3000")
    assert "sampled covariance" in out


def test_network_posterior(tmp_path):
    out = run("network_posterior.py", "--steps", "500", "--out", str(tmp_path))
    assert "equipartition" in out
    assert (tmp_path / "trajectory.csv").exists()
