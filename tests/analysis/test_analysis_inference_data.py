"""tati/analysis/inference_data.py: a run read back (tati.read_run) as ArviZ's InferenceData, the
same as a Result's export, and a NetCDF file written whole or not at all."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest

from tati.analysis import inference_data
from tati.analysis.runs import read_run
from tati.errors import InputError

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its coming refactor
    az = pytest.importorskip("arviz")


@pytest.fixture
def tables(tmp_path):
    rng = np.random.default_rng(0)
    ids, steps = np.tile([0, 1], 50), np.repeat(np.arange(1, 51), 2)
    pd.DataFrame({"id": ids, "step": steps, "loss": rng.random(100), "param0": rng.normal(size=100)}).to_csv(
        tmp_path / "trajectory.csv", index=False)
    return read_run(trajectory_file=str(tmp_path / "trajectory.csv"))


def test_the_files_export_as_the_result_does(tables, tmp_path):
    idata = inference_data.inference_data(tables, burn_in=10, inverse_temperature=3.0)
    kept = tables.trajectory[(tables.trajectory.id == 1) & (tables.trajectory.step > 10)]
    np.testing.assert_array_equal(idata.posterior["param0"].sel(chain=1), kept["param0"])
    np.testing.assert_array_equal(idata.sample_stats["lp"].sel(chain=1), -3.0 * kept["loss"])
    inference_data.write(idata, str(tmp_path / "run.nc"))
    assert sorted(os.listdir(tmp_path)) == ["run.nc", "trajectory.csv"]
    back = az.from_netcdf(tmp_path / "run.nc")
    np.testing.assert_array_equal(back.posterior["param0"], idata.posterior["param0"])
    assert inference_data.summary(back)[0] == ("  groups posterior, sample_stats: 2 chains (walkers) of 40 draws, "
                                               "1 parameter; 3 sample stats")


def test_a_failed_write_leaves_no_file(tables, tmp_path):
    idata = inference_data.inference_data(tables, burn_in=0)
    with pytest.raises(InputError, match=r"cannot write '.*missing/run.nc'"):
        inference_data.write(idata, str(tmp_path / "missing" / "run.nc"))
    assert sorted(os.listdir(tmp_path)) == ["trajectory.csv"]
