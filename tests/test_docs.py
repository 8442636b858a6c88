"""The user guide matches the code: doc/options.md is what tools/make_options_doc.py renders
from the option table, and every column the tables can have is documented in doc/columns.md."""

import importlib.util
import inspect
import itertools
import pathlib
import re

import pytest

from tati.recording import columns

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_tool():
    path = ROOT / "tools" / "make_options_doc.py"
    spec = importlib.util.spec_from_file_location("make_options_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_doc_is_up_to_date():
    text = (ROOT / "doc" / "options.md").read_text(encoding="utf-8")
    assert text == load_tool().render(), "run: python tools/make_options_doc.py"


def test_options_doc_lists_every_option():
    from tati.options import OPTIONS
    rendered = load_tool().render()
    for option in OPTIONS:
        assert f"| `{option.name}` |" in rendered


def _variants(function, **fixed):
    """Calls of function over True/False for every boolean parameter it has (beyond `fixed`)."""
    names = [name for name in inspect.signature(function).parameters if name not in fixed]
    for values in itertools.product((True, False), repeat=len(names)):
        yield function(**fixed, **dict(zip(names, values)))


def all_column_names():
    names = set()
    for result in itertools.chain(_variants(columns.run_info_columns),
                                  _variants(columns.averages_columns)):
        names.update(result)
    names.update(columns.trajectory_columns([]))  # the fixed columns id, step, loss
    return names


def documented_columns():
    text = (ROOT / "doc" / "columns.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([A-Za-z_0-9]+)`", text, re.MULTILINE))


def test_column_functions_cover_the_known_columns():
    # guards the enumeration above against signature changes that would hide columns
    names = all_column_names()
    for name in ("id", "step", "epoch", "accuracy", "loss", "time_per_nth_step", "total_energy",
                 "kinetic_energy", "scaled_momentum", "scaled_gradient", "virial", "scaled_noise",
                 "ensemble_average_loss", "average_kinetic_energy", "average_virials",
                 "average_inertia"):
        assert name in names


@pytest.mark.parametrize("name", sorted(all_column_names()))
def test_every_column_is_documented(name):
    assert name in documented_columns(), f"column '{name}' has no entry in doc/columns.md"


def test_parameter_columns_are_documented():
    text = (ROOT / "doc" / "columns.md").read_text(encoding="utf-8")
    for prefix in ("weight", "bias", "param"):
        assert re.search(rf"^\| `{prefix}0`", text, re.MULTILINE)
