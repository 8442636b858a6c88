"""tools/benchmark_device.py --quick runs end to end in this process: every row of its table is
there, with positive, finite times and ratios (no timing thresholds: the machine is shared), the
CSV holds the same rows, and bad input is one line with exit status 2."""

import csv
import math

import pytest

from processes import load_tool, tool_here


@pytest.fixture(scope="module")
def tool():
    return load_tool("benchmark_device")


def table_rows(out):
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| a |") or line.startswith("| b |")]


def test_quick_run_has_every_row(tool, tmp_path):
    path = tmp_path / "device.csv"
    # 16 walkers only (--quick's default adds 1): the batched path, at half the tracing
    code, err, out = tool_here(tool.main, ["--quick", "--walkers", "16", "--csv", str(path)])
    assert code == 0, err
    assert out.startswith("devices: ") and "CPU" in out.splitlines()[0]
    rows = table_rows(out)
    assert [(r[0], r[2], r[3]) for r in rows] == (
        [("a", "BAOAB", "1"), ("a", "SGHMC", "1")]
        + [("b", sampler, "16") for sampler in ("BAOAB", "HMC2", "NUTS")])
    for r in rows:
        assert float(r[5]) > 0 and math.isfinite(float(r[5]))
        if r[2] != "BAOAB" or r[0] == "a":  # BAOAB on the Gaussian has no TFP counterpart
            ratio = float(r[8])
            assert ratio > 0 and math.isfinite(ratio)
            assert float(r[7]) > 0 and math.isclose(ratio, float(r[5]) / float(r[7]), rel_tol=1e-2)
        else:
            assert r[6:] == ["", "", ""]
    with open(path, newline="", encoding="utf-8") as file:
        written = list(csv.DictReader(file))
    assert [(w["part"], w["sampler"], w["walkers"]) for w in written] == [(r[0], r[2], r[3]) for r in rows]


@pytest.mark.parametrize("argv, says", [(["--parts", "c"], "--parts takes a, b or a,b, not c"),
                                        (["--walkers", "0,16"], "--walkers"),
                                        (["--steps", "0"], "--steps takes a positive integer, not 0")])
def test_bad_input_is_one_line(tool, argv, says):
    code, err, out = tool_here(tool.main, argv)
    assert code == 2 and says in err and "Traceback" not in err and out == ""
