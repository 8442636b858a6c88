"""tools/benchmark_blackjax.py: bad input and a missing BlackJAX are one line with exit status 2,
before any run starts (the runs themselves, a minute each in new processes, are the benchmark's:
doc/benchmarks.md)."""

import importlib.util

import pytest

from processes import load_tool, tool_here


@pytest.fixture(scope="module")
def tool():
    return load_tool("benchmark_blackjax")


@pytest.mark.parametrize("argv, says", [
    (["--methods", "tati-NUTS,Stan"], "--methods takes a comma-separated list of tati-NUTS, tati-HMC2, BlackJAX, "
                                      "not tati-NUTS,Stan"),
    (["--targets", "x"], "--targets takes a comma-separated list of g, l, not x"),
    (["--draws", "0"], "--draws takes a positive integer, not 0")])
def test_bad_input_is_one_line(tool, argv, says):
    code, err, out = tool_here(tool.main, argv)
    assert code == 2 and says in err and "Traceback" not in err and out == ""


@pytest.mark.skipif(importlib.util.find_spec("blackjax") is not None, reason="BlackJAX is installed here")
def test_without_blackjax_the_hint_names_the_package(tool):
    code, err, out = tool_here(tool.main, ["--repeats", "1"])
    assert code == 2 and "BlackJAX is not installed: pip install blackjax" in err and out == ""
