"""Today's numbers, bit for bit (issue #39): the run-info, trajectory and averages tables (and
momenta, CSV files and checkpoints' state where a run has them) of the fixed runs of
tools/record_fixture.py, recorded in tests/fixtures/bitwise-CLASS.npz for the CPU class of the
machine that recorded them, are what this checkout computes.

This file checks the part "samplers" (every sampler in the graph loop);
test_bitwise_fixture_loops.py the part "loops" (fit with every optimizer, XLA, a checkpoint
resumed, a mirrored run), so that pytest-xdist runs the two on both workers. Each part records
in a fresh process, as the fixture was recorded: the mirrored run needs the CPU split before
TensorFlow starts, and a fresh process has no state of earlier tests. Timing columns are left
out. The last bits depend on the CPU's vendor and SIMD extensions, so on a CPU of a class with no
fixture the test is skipped; a change meant to change numbers rerecords the fixture
(doc/contributing.md)."""

import os
import subprocess
import sys

import pytest

from processes import load_tool

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, os.pardir, "tools", "record_fixture.py")
PART = "samplers"


tool = load_tool("record_fixture")


def recorded_now(tmp_path_factory, part):
    """(fixture, its meta, this checkout's recording of the part, its meta); skips on a CPU of a
    class no fixture was recorded on."""
    here = tool.simd_class()
    if not os.path.exists(tool.fixture_path(here)):
        recorded = ", ".join(tool.load(path)[1]["simd"] for path in tool.fixture_paths())
        pytest.skip(f"bitwise fixture recorded on {recorded} CPUs, this one is {here}: record it here on an "
                    f"unchanged checkout with python tools/record_fixture.py --output "
                    f"{os.path.relpath(tool.fixture_path(here))} to compare later changes")
    fixture, meta = tool.load(tool.fixture_path(here))
    assert meta["simd"] == here
    path = str(tmp_path_factory.mktemp("bitwise") / f"{part}.npz")
    process = subprocess.run([sys.executable, TOOL, "--part", part, "--output", path],
                             capture_output=True, text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    return (fixture, meta, *tool.load(path))


def check(recorded, run):
    """Fail unless the run's arrays are the fixture's bit for bit, naming each that is not."""
    fixture, meta, now, now_meta = recorded
    found = tool.differences(fixture, now, run)
    versions = "" if meta["versions"] == now_meta["versions"] else (
        f"\n(recorded with {meta['versions']}, now {now_meta['versions']})")
    if found:
        pytest.fail(f"{run} differs from {os.path.basename(tool.fixture_path())} (a change meant to change numbers "
                    "rerecords it: python tools/record_fixture.py):\n" + "\n".join(found[:20]) + versions, pytrace=False)


def comparison_of(part):
    """(the module's recording fixture, its test of every run) for one part of the tool."""
    @pytest.fixture(scope="module")
    def recorded(tmp_path_factory):
        return recorded_now(tmp_path_factory, part)

    @pytest.mark.parametrize("run", list(tool.PARTS[part]))
    def test_tables_are_the_fixtures_bit_for_bit(recorded, run):
        check(recorded, run)
    return recorded, test_tables_are_the_fixtures_bit_for_bit


recorded, test_tables_are_the_fixtures_bit_for_bit = comparison_of(PART)


def test_the_fixture_holds_the_runs_of_the_tool():
    """A run added to or renamed in the tool is recorded before it is compared, in every CPU class's
    fixture (rerecording removes the others'), each named by the class it was recorded on."""
    paths = tool.fixture_paths()
    assert paths, "python tools/record_fixture.py"
    for path in paths:
        _, meta = tool.load(path)
        assert meta["parts"] == {part: list(runs) for part, runs in tool.PARTS.items()}, "python tools/record_fixture.py"
        assert path == tool.fixture_path(meta["simd"])


def test_a_changed_bit_is_found():
    """The comparison sees one bit of one number and names the table, column and row."""
    import numpy as np
    fixture, _ = tool.load(tool.fixture_paths()[0])
    key = "HMC2-potential-w4-burn-in/run_info/total_energy"
    changed = dict(fixture)
    changed[key] = fixture[key].copy()
    changed[key].view(np.uint64)[5] ^= 1
    before, after = fixture[key][5].item(), changed[key][5].item()
    assert tool.differences(fixture, changed, "HMC2-potential-w4-burn-in") == [
        f"{key}: element 5 (1 of {fixture[key].size} differ): {before!r} recorded, {after!r} now"]


def test_another_simd_class_skips_saying_how_to_rerecord(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(tool, "simd_class", lambda: "x86_64:AnyVendor:avx")
    with pytest.raises(pytest.skip.Exception, match="this one is x86_64:AnyVendor:avx: record it here .* python "
                                                    "tools/record_fixture.py --output .*bitwise-x86_64-AnyVendor-avx.npz"):
        recorded_now(tmp_path_factory, PART)
