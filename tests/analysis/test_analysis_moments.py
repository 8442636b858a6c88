"""Moments (tati/analysis/moments.py, tati-analyse moments): rows are reweighted only when
asked for a temperature other than the run's (issue #38: the default weighted a beta-1 run's
rows by exp(-U) again, the averages at beta 2, and plotted them as the run's)."""

import numpy as np
import pandas as pd
import pytest

from stats import seed
from tati.analysis.moments import moments
from tati.analysis.runs import RunTables
from tati.cli.analyse import main
from tati.errors import InputError


def beta_one_run(rng, rows=2000, walkers=2):
    """Rows of N(0, 1) = exp(-U), U = x^2 / 2: a run at beta 1."""
    x = rng.standard_normal(rows * walkers)
    return RunTables(trajectory=pd.DataFrame({"id": np.tile(np.arange(walkers), rows),
                                              "step": np.repeat(np.arange(1, rows + 1), walkers),
                                              "loss": 0.5 * x ** 2, "param0": x}))


def test_by_default_the_weighted_columns_are_the_plain_moments():
    """Without inverse_temperature, or with the run's own, the rows are not reweighted: the
    weighted columns equal numpy's mean and variance (ddof 1) of the rows exactly, all rows
    count. Before the fix the weighted variance of these rows was about 1/2 (beta 2's)."""
    tables = beta_one_run(np.random.default_rng(seed(2100)))
    x = tables.trajectory["param0"].to_numpy()
    for options in ({}, {"inverse_temperature": 1.0, "run_inverse_temperature": 1.0}):
        row = moments(tables, **options).set_index("parameter").loc["param0"]
        assert row.weighted_mean == row["mean"] == pytest.approx(x.mean(), rel=1e-12)
        assert row.weighted_variance == row.variance == pytest.approx(x.var(ddof=1), rel=1e-12)
        assert row.weighted_rows == row.rows == len(x)


def test_another_temperature_reweights_and_needs_the_runs():
    """Asked for beta 2 of the beta-1 rows, the weights are exp(-(2 - 1) U): the exact weighted
    mean of x^2 with these weights (computed here), about 1/2. Without the run's beta the
    tables cannot tell the weights: one line asking for it."""
    tables = beta_one_run(np.random.default_rng(seed(2101)))
    x = tables.trajectory["param0"].to_numpy()
    row = moments(tables, inverse_temperature=2.0, run_inverse_temperature=1.0).set_index("parameter").loc["param0"]
    w = np.exp(-0.5 * x ** 2)
    assert row.weighted_mean == pytest.approx(np.sum(w * x) / w.sum(), rel=1e-9, abs=1e-12)
    assert row.weighted_variance + row.weighted_mean ** 2 == pytest.approx(np.sum(w * x ** 2) / w.sum(), rel=1e-9)
    assert row.weighted_rows < 0.9 * len(x)
    hotter = moments(tables, inverse_temperature=0.5, run_inverse_temperature=1.0).set_index("parameter")
    assert hotter.loc["param0", "weighted_variance"] > 1.3  # beta 1/2: variance 2, from the tails
    with pytest.raises(InputError, match="needs the beta the rows were sampled at.*run_inverse_temperature"):
        moments(tables, inverse_temperature=2.0)


def test_command_line_default_prints_and_writes_the_plain_moments(tmp_path, capsys, monkeypatch):
    beta_one_run(np.random.default_rng(seed(2102)), rows=200).trajectory.to_csv(tmp_path / "t.csv", index=False)
    monkeypatch.chdir(tmp_path)
    main(["moments", "--trajectory_file", "t.csv"])
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("  not reweighted: the run's own averages"), out
    assert "reweighted mean" not in "\n".join(out)
    table = pd.read_csv("moments.csv")
    np.testing.assert_array_equal(table["weighted_mean"], table["mean"])
    main(["moments", "--trajectory_file", "t.csv", "--inverse_temperature", "3", "--run_inverse_temperature", "1",
          "--overwrite", "true"])
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("  reweighted to beta 3: ") and "reweighted mean" in out[3], out


def test_walkers_that_never_mixed_are_counted():
    """Two walkers at x + 4 and x - 4 (sd 1): the pooled mean of 0 and sd of about 4 are of their
    places, not of a mixed chain's; the table gives their R-hat and the summary counts the parameter.
    The same rows unshifted (R-hat 1.00) are not counted."""
    from tati.analysis.moments import summary
    for shift in (4.0, 0.0):
        tables = beta_one_run(np.random.default_rng(seed(2103)))
        frame = tables.trajectory
        frame["param0"] += np.where(frame["id"] == 0, shift, -shift)
        table = moments(tables).set_index("parameter")
        lines = "\n".join(summary(table.reset_index()))
        if shift:
            assert table.loc["param0", "walkers_r_hat"] > 3, table
            assert "walkers apart on 1 of 2 (R-hat > 1.1)" in lines and "param0: mean" in lines, lines
        else:
            assert table.loc["param0", "walkers_r_hat"] < 1.01 and "apart" not in lines, (table, lines)
    assert np.isnan(moments(tables, per_walker=True)["walkers_r_hat"]).all()
