"""The traces figure (tati/analysis/traces.py): a panel's y axis fits the rows after burn-in
where burn-in spans far more (HMC's first proposals), and follows every row otherwise."""

import numpy as np
import pandas as pd

from stats import seed
from tati.analysis.traces import plot, traces
from tati.analysis.runs import RunTables


def test_the_y_axis_fits_the_rows_after_burn_in():
    from matplotlib import pyplot
    rng = np.random.default_rng(seed(7100))
    steps = np.arange(1, 401)
    energy = 2.0 + 0.3 * rng.standard_normal(400)
    energy[:5] = 6.5e7  # a step-width search's first proposals
    run = pd.DataFrame({"id": 0, "step": steps, "loss": 1.0 + 0.1 * rng.standard_normal(400), "total_energy": energy})
    table = traces(RunTables(run_info=run), quantities=["loss", "total_energy"], burn_in=100)
    drawn = {}
    from tati.analysis import figures
    saved, figures.save = figures.save, lambda figure, path: drawn.setdefault(path, figure)
    try:
        plot(table, "traces", burn_in=100)
    finally:
        figures.save = saved
    loss_axis, energy_axis = drawn["traces"].axes[:2]
    after = energy[100:]
    low, high = energy_axis.get_ylim()
    assert low < after.min() and high > after.max() and high - low < 2 * (after.max() - after.min())
    assert loss_axis.get_ylim()[1] - loss_axis.get_ylim()[0] > 0.9 * np.ptp(run["loss"])  # nothing cut there
    pyplot.close(drawn["traces"])
