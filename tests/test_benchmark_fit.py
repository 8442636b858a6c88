"""tools/benchmark_fit.py --quick runs end to end in this process: a row per case with a positive,
finite time and ratio (no timing thresholds: the machine is shared), Keras SGD's ratio 1, and bad
input is one line with exit status 2."""

import math

import pytest

from processes import load_tool, tool_here


@pytest.fixture(scope="module")
def tool():
    return load_tool("benchmark_fit")


def test_quick_run_has_every_case(tool):
    code, err, out = tool_here(tool.main, ["--quick"])
    assert code == 0, err
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| case")]
    assert [r[0] for r in rows] == ["keras-sgd", "baoab", "baoab+recorder", "sghmc-adam"]
    for r in rows:
        assert float(r[1]) > 0 and math.isfinite(float(r[2])) and float(r[2]) > 0
    assert rows[0][2] == "1.00"
    assert "(85002 parameters)" in out


@pytest.mark.parametrize("argv, says", [(["--repeats", "0"], "--repeats takes a positive integer, not 0"),
                                        (["--epochs", "1"], "--epochs takes an integer >= 2")])
def test_bad_input_is_one_line(tool, argv, says):
    code, err, out = tool_here(tool.main, argv)
    assert code == 2 and says in err and "Traceback" not in err and out == ""
