"""Every spelling of the original TATi in doc/migration.md's tables runs: an alias is taken to
its counterpart (parse-level: the parsers, option kinds and names, without a sampler), an entry
without a counterpart is refused in one line that says what to do instead (exit status 2), and
the tables list every alias and refusal the code has (tati/config/original.py, tati/engine/registry.py). Two tiny
end-to-end runs use the original's spellings."""

import pathlib
import re

import pytest

import tati
from tati.config import original
from tati.cli import analyse, dataset_writer, lossfunction, optimize, sample
from tati.cli import original as retired_tools
from tati.cli.common import TOOL_GROUPS, make_parser
from tati.engine.registry import canonical_optimizer, canonical_sampler, specs
from tati.config.options import check
from tati.config.preflight import check as simulation_options  # what Simulation(**options) checks first
from tests.processes import tool_here

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = (ROOT / "doc" / "migration.md").read_text(encoding="utf-8")


def table(heading):
    """The (original, tati, notes) rows of the first table after the heading (and, for a
    heading with two tables, the second's); backticks and leading dashes stripped."""
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (`[^`]+`|none) \|(?: *(.*?) *\|)?$", section, re.MULTILINE)
    return [(old.lstrip("-"), None if new == "none" else new.strip("`").lstrip("-"), notes) for old, new, notes in rows]


def refused(main, argv):
    code, err, _ = tool_here(main, argv)
    assert code == 2 and err.count("\n") == 1, err
    return err


def test_the_tables_list_every_alias_and_refusal_of_the_code():
    rows = {heading: table(heading) for heading in (
        "Tools", "Sampler names", "Dataset codes", "Options of TATiSampler and TATiOptimizer",
        "TATiAnalyser subcommands", "TATiLossFunctionSampler", "TATiDatasetWriter")}
    assert {old for old, _, _ in rows["Tools"]} == set(original.TOOLS) | set(original.RETIRED_TOOLS)
    assert {alias for spec in specs(samples=True) for alias in spec.aliases} <= {old for old, _, _ in rows["Sampler names"]}
    assert {int(old) for old, _, _ in rows["Dataset codes"]} == set(original.DATASET_CODES)
    assert {old for old, _, _ in rows["TATiAnalyser subcommands"]} == set(original.ANALYSES)
    documented = {old for heading in rows for old, new, _ in rows[heading] if new is None}
    assert set(original.RETIRED_OPTIONS) | set(original.RETIRED_MODES) <= documented
    renamed = {(old, new) for heading in rows for old, new, _ in rows[heading]}
    assert {pair for names in original.RENAMED_OPTIONS.values() for pair in names.items()} <= renamed


@pytest.mark.parametrize("old, new, _", table("Sampler names"))
def test_sampler_names(old, new, _):
    assert canonical_sampler(old) == canonical_sampler(old.upper()) == new
    assert check("sampler", old) == new  # what Simulation(sampler=...) and --sampler convert with


def test_a_simulation_takes_the_originals_sampler_name_and_dataset_code():
    options, _ = simulation_options({"sampler": "HMC_2ndOrder", "hamiltonian_dynamics_time": 0.5, "dataset": 3})
    assert options["sampler"] == "HMC2" and options["dataset"] == "two_spirals"


def test_the_optimizers_keep_their_names():
    assert canonical_optimizer("GradientDescent") == canonical_optimizer("gd")
    assert canonical_optimizer("BarzilaiBorweinGradientDescent") == canonical_optimizer("bb")


@pytest.mark.parametrize("old, new, _", table("Dataset codes"))
def test_dataset_codes(old, new, _):
    assert check("dataset", old) == check("dataset", int(old)) == new


def test_an_unknown_dataset_code_names_the_codes():
    with pytest.raises(tati.InputError, match=r"^dataset 4: the original TATi's dataset codes are 0 \(two_circles\)"):
        check("dataset", "4")


def sampler_or_optimizer(argv):
    """The options either of tati-sample and tati-optimize parses from argv, else exit 2."""
    for prog in ("tati-sample", "tati-optimize"):
        try:
            return vars(make_parser(prog, "", TOOL_GROUPS[prog]).parse_args(argv))
        except SystemExit:
            pass
    raise AssertionError(f"neither tool takes {argv}")


@pytest.mark.parametrize("old, new, notes", table("Options of TATiSampler and TATiOptimizer"))
def test_options_of_sampler_and_optimizer(old, new, notes, capsys):
    if new is None:
        for main in (sample.main, optimize.main):
            err = refused(main, [f"--{old}", "1"])
            assert original.RETIRED_OPTIONS[old] in err and notes in err
        with pytest.raises(tati.InputError, match=f"^option '{old}' is the original TATi's: "):
            simulation_options({old: 1})
    else:
        assert sampler_or_optimizer([f"--{old}", "1"]) == {new: "1"}


@pytest.mark.parametrize("old, new, notes", table("TATiAnalyser subcommands"))
def test_analyser_subcommands(old, new, notes):
    values = vars(analyse.make_parser().parse_args([old, "--run_file", "r.csv"]))
    assert values["command"] == old and original.analysis(old)[0] == new


@pytest.mark.parametrize("old, new, notes", table("TATiLossFunctionSampler"))
def test_lossfunction_modes_and_options(old, new, notes, tmp_path):
    modes = set(original.LANDSCAPE_MODES) | set(original.RETIRED_MODES)
    argv = [old, "--output", str(tmp_path / "x.csv")] if old in modes else ["grid", f"--{old}", "1"]
    if new is None:
        err = refused(lossfunction.main, argv)
        assert notes in err
    elif old in modes:
        values = vars(lossfunction.make_parser().parse_args(argv))
        files = {"directions": {"directions_file": "d.csv"}, "trajectory": {"points_file": "p.csv"}}.get(new, {})
        assert lossfunction.convert(dict(values, **files))[0] == new
    else:
        assert vars(lossfunction.make_parser().parse_args(argv))[new] == "1"


@pytest.mark.parametrize("old, new, notes", table("TATiDatasetWriter"))
def test_dataset_writer_options(old, new, notes):
    if new is None:
        assert notes in refused(dataset_writer.main, ["--train_file", "a.csv", f"--{old}", "1"])
    else:
        assert vars(dataset_writer.make_parser().parse_args([f"--{old}", "1"])) == {new: "1"}


@pytest.mark.parametrize("old, new, notes", table("Tools"))
def test_tools(old, new, notes):
    setup = (ROOT / "setup.py").read_text(encoding="utf-8")
    target = re.search(rf'"{old}=([\w.:]+)"', setup).group(1)
    if new is None:
        assert target.startswith("tati.cli.original:")
        err = refused(getattr(retired_tools, target.split(":")[1]), [])
        assert err.startswith(f"{old}: error: {old} is the original TATi's tool") and original.RETIRED_TOOLS[old] in err
    else:
        assert target == re.search(rf'"{new}=([\w.:]+)"', setup).group(1)


def test_a_run_and_its_analysis_in_the_originals_spellings(tmp_path):
    """End to end: TATiSampler's habits, then TATiAnalyser's average_energies and
    TATiDatasetWriter's options."""
    data, run = tmp_path / "data.csv", tmp_path / "run.csv"
    code, err, out = tool_here(dataset_writer.main, ["--data_type", "2", "--dimension", "40", "--noise", "0.1",
                                                     "--seed", "3", "--train_data_files", str(data)])
    assert code == 0, err
    assert "two_clusters (noise 0.1, seed 3): 40 points" in out
    run.write_text("stale")
    code, err, out = tool_here(sample.main, ["--sampler", "GLA_1stOrder", "--batch_data_files", str(data),
                                             "--hidden_dimension", "2", "2", "--max_steps", "3",
                                             "--run_file", str(run), "--overwrite", "--progress", "false"])
    assert code == 0, err
    assert "3 steps of GLA1" in out and "network 2-2-2-1" in out
    code, err, out = tool_here(analyse.main, ["average_energies", "--run_file", str(run), "--overwrite",
                                              "--output", str(tmp_path / "energies.csv")])
    assert code == 0, err
    assert out.startswith("tati-analyse traces: 3 rows") and (tmp_path / "energies.csv").exists()


def test_covariance_per_walker_implies_per_walker(monkeypatch):
    seen = {}
    monkeypatch.setattr(analyse, "run", lambda command, o: seen.update(o, command=command) or [])
    for argv, per_walker in ((["covariance_per_walker"], True), (["covariance_per_walker", "--per_walker", "false"], False),
                             (["covariance"], False)):
        assert tool_here(analyse.main, argv + ["--trajectory_file", "t.csv"])[0] in (0, None)
        assert seen["command"] == "covariance" and seen["per_walker"] is per_walker
