"""The user guide matches the code: doc/options.md is what tools/make_options_doc.py renders
from the option table, and every column the tables can have is documented in doc/columns.md."""

import pathlib
import re

import pytest

from processes import load_tool
from tati.engine.registry import every_info
from tati.recording import columns

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_options_doc_is_up_to_date():
    text = (ROOT / "doc" / "options.md").read_text(encoding="utf-8")
    assert text == load_tool("make_options_doc").render(), "run: python tools/make_options_doc.py"


def test_options_doc_lists_every_option():
    from tati.config.options import OPTIONS
    rendered = load_tool("make_options_doc").render()
    for option in OPTIONS:
        assert f"| `{option.name}` |" in rendered


def all_column_names():
    """Every column of every kernel's tables (the registry's every_info)."""
    names = set()
    for info in every_info():
        for accuracy in (True, False):
            names.update(columns.run_info_columns(info, accuracy))
        names.update(columns.averages_columns(info))
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


# -- every snippet of README.md and doc/ runs ---------------------------------------------------
# Fenced blocks tagged `python` run in one namespace per page, in order, as a reader would run
# them; blocks tagged `sh` run command by command, stopping at the first that fails, one
# directory per page (run_shell_block). `pip install` lines are what CI itself does before the tests and are left out.
# Untagged fences hold equations or printed output and are not run.
PAGES = [ROOT / "README.md"] + sorted((ROOT / "doc").glob("*.md"))


def fenced_blocks(page, language):
    text = page.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def pages_with(language):
    return [pytest.param(page, id=page.name) for page in PAGES if fenced_blocks(page, language)]


@pytest.mark.parametrize("page", [page for page in pages_with("python") if page.id != "README.md"])
def test_python_snippets_run(page, tmp_path, monkeypatch):
    """Every page's snippets in one namespace; the README's run as a user's script does, in
    test_the_readme_python_quick_start_runs_and_prints_nothing_on_stderr."""
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__doc__"}
    for block in fenced_blocks(page, "python"):
        exec(compile(block, f"{page.name} snippet", "exec"), namespace)  # noqa: S102 - our own docs


def check_readme_python(A, trajectory):
    """The README's Gaussian: the sampled covariance is inverse(A) within 4 standard errors of
    each entry (batch means of 20 batches, so t with 19 degrees of freedom: P(|t| > 4) = 7.7e-4
    per entry, a false-failure budget of 2.3e-3 for the three)."""
    import numpy as np
    centred = trajectory - trajectory.mean(axis=0)
    exact = np.linalg.inv(A)
    for i, j in ((0, 0), (0, 1), (1, 1)):
        products = centred[:, i] * centred[:, j]
        batches = products[: len(products) // 20 * 20].reshape(20, -1).mean(axis=1)
        error = batches.std(ddof=1) / np.sqrt(len(batches))
        assert abs(products.mean() - exact[i, j]) < 4 * error, (i, j, products.mean(), exact[i, j], error)


def quiet_environment(**changes):
    """This process's environment as a user's shell has it: without the TF_CPP_MIN_LOG_LEVEL
    that conftest.py sets."""
    import os
    environment = {name: value for name, value in os.environ.items() if name != "TF_CPP_MIN_LOG_LEVEL"}
    return dict(environment, PYTHONPATH=str(ROOT), **changes)


def test_the_readme_python_quick_start_runs_and_prints_nothing_on_stderr(tmp_path):
    """The README's snippets as a script in a new process (a user's TensorFlow import, not this
    process's): they run, the Gaussian's covariance is right (check_readme_python), and
    TensorFlow's C++ start-up lines (oneDNN, CUDA probing, the runtime's cuInit error) do not
    reach stderr."""
    import subprocess
    import sys
    import numpy as np
    script = tmp_path / "quick_start.py"
    script.write_text("\n".join(fenced_blocks(ROOT / "README.md", "python")) +
                      "\nimport numpy\nnumpy.save('A.npy', A.numpy())\n"
                      "numpy.save('trajectory.npy', result.trajectory[['param0', 'param1']].to_numpy())\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=quiet_environment())
    assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]
    assert "param0" in done.stdout
    check_readme_python(np.load(tmp_path / "A.npy"), np.load(tmp_path / "trajectory.npy"))


def test_tati_leaves_a_log_level_the_user_set_alone():
    """TF_CPP_MIN_LOG_LEVEL set by the user, or TensorFlow imported before tati: tati sets no
    level and mutes nothing (a stand-in module for TensorFlow keeps this check fast)."""
    import subprocess
    import sys
    script = ("import os, sys, types\n"
              "if sys.argv[1] == 'imported': sys.modules['tensorflow'] = types.ModuleType('tensorflow')\n"
              "import tati\n"
              "print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'), len(sys.meta_path))\n")
    found = {}
    for case, changes in (("unset", {}), ("imported", {}), ("set", {"TF_CPP_MIN_LOG_LEVEL": "0"})):
        done = subprocess.run([sys.executable, "-c", script, case], capture_output=True, text=True, timeout=60,
                              env=quiet_environment(**changes))
        found[case] = done.stdout.split()
    level, finders = found["unset"]
    assert level == "3"
    assert found["imported"] == ["None", str(int(finders) - 1)]
    assert found["set"] == ["0", str(int(finders) - 1)]


def test_the_plots_extra_is_documented_for_every_plot_option(tmp_path, monkeypatch):
    """Every `--plot` needs matplotlib, not only examples/: the install notes say so, and each
    tool with `--plot` names the extra when matplotlib is missing (before TensorFlow is imported)."""
    from processes import tool_here
    from tati.analysis import figures
    from tati.cli.lossfunction import main as lossfunction
    from tati.cli.predictive import main as predictive
    for page in ("README.md", "doc/quickstart.md"):
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        extra = text[text.index("`.[plots]`"):][:200]
        assert "`--plot`" in extra, (page, extra)
    monkeypatch.setattr(figures, "available", lambda: False)
    (tmp_path / "t.csv").write_text("id,step,loss,weight0,weight1,bias0\n0,1,0.5,0.1,0.2,0.0\n")
    (tmp_path / "d.csv").write_text("x1,x2,label\n0.5,0.5,1\n-0.5,-0.5,-1\n")
    plot = str(tmp_path / "p.png")
    for prog, main, argv in (("tati-lossfunction-sampler", lossfunction, ["grid", "--parameters", "weight0"]),
                             ("tati-predictive", predictive, ["--trajectory_file", str(tmp_path / "t.csv"),
                                                              "--test_data_files", str(tmp_path / "d.csv")])):
        assert tool_here(main, argv + ["--plot", plot]) == (
            2, f"{prog}: error: --plot needs matplotlib: pip install tati[plots]\n", "")


# The tools' entry points (setup.py): a snippet's tool runs in this process (processes.tool_here),
# as its console script would, without a new process's TensorFlow import (~7 s of CPU each, a
# hundred seconds over the pages); that the scripts start and stay quiet in a new process is
# tested where one runs (tests/engine/test_xla_cache.py, tests/engine/test_checkpoint.py).
ENTRY_POINTS = dict(re.findall(r'"([\w-]+)=([\w.]+:\w+)"', (ROOT / "setup.py").read_text(encoding="utf-8")))


def run_shell_block(block, directory):
    """The block's commands in order, stopping at the first that fails: a tool's in this process
    with its words as bash expands them (quotes, the block's variables, comments), any other in
    bash after the block's assignments so far."""
    import importlib
    import subprocess
    from processes import tool_here
    assignments = []
    for line in block.replace("\\\n", " ").splitlines():
        if not line.strip() or line.startswith(("pip ", "#")):
            continue
        if line.split()[0] in ENTRY_POINTS:
            words = subprocess.run(["bash", "-c", "\n".join(["set -e", *assignments, "printf '%s\\0' " + line])],
                                   cwd=directory, capture_output=True, text=True, check=True).stdout.split("\0")[:-1]
            module, function = ENTRY_POINTS[words[0]].split(":")
            code, err, _ = tool_here(getattr(importlib.import_module(module), function), words[1:])
            assert code in (0, None), f"{line}\n{err[-2000:]}"
        else:
            done = subprocess.run(["bash", "-c", "\n".join(["set -e", *assignments, line])], cwd=directory,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
            if re.match(r"^\w+=", line):
                assignments.append(line)


@pytest.mark.parametrize("page", pages_with("sh"))
def test_shell_snippets_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the tools' relative paths
    for block in fenced_blocks(page, "sh"):
        run_shell_block(block, tmp_path)
    if page.name == "README.md":
        import pandas as pd
        accuracy = pd.read_csv(tmp_path / "run.csv")["accuracy"].iloc[-1]
        assert accuracy > 0.9, f"the README's quick start ends at accuracy {accuracy}"
