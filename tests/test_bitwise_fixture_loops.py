"""Today's numbers, bit for bit (issue #39), part "loops" of tools/record_fixture.py: fit() with
every optimizer, the XLA loop (BAOAB, HMC2 with burn-in, NUTS, GradientDescent), a checkpoint
saved and resumed (its tables, CSV files and state) and a mirrored run over 4 logical CPUs.
The part "samplers" and how both are compared: test_bitwise_fixture.py."""

import pytest

from test_bitwise_fixture import check, recorded_now, tool

PART = "loops"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return recorded_now(tmp_path_factory, PART)


@pytest.mark.parametrize("run", list(tool.PARTS[PART]))
def test_tables_are_the_fixtures_bit_for_bit(recorded, run):
    check(recorded, run)
