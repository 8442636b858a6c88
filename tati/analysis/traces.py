"""Traces and running averages: each walker's loss, energies and chosen parameters row by row,
and their running means after burn-in.

    table = traces(result, quantities=["loss", "kinetic_energy"], parameters=["param0"], burn_in=1000)

The potential energy is the `loss` column, U(q_n). A quantity is looked up in the run-info
table, then the trajectory, then the averages table; parameters in the trajectory. The running
mean of a column q, `q_running_mean`, is the mean of this walker's rows from the first after
burn-in to this one: over the table's rows (one every `every_nth` step), not over every step as
the averages table's columns are. It is NaN during burn-in.
"""

import numpy as np

from tati.analysis import select
from tati.errors import InputError

DEFAULT_QUANTITIES = ("loss", "kinetic_energy", "total_energy")
SOURCES = ("run_info", "trajectory", "averages")
PURPOSE = "traces"


def traces(result, quantities=None, parameters=(), burn_in=None):
    """DataFrame with columns id, step, then for each quantity and parameter q: q and
    q_running_mean; rows sorted by id and step (see the module docstring). `quantities` None:
    those of DEFAULT_QUANTITIES that the tables have."""
    burn_in = select.run_burn_in(result, burn_in)
    frames = {name: getattr(result, name, None) for name in SOURCES}
    frames = {name: f for name, f in frames.items() if f is not None and len(f.columns)}
    if not frames:
        raise InputError("traces needs the run-info or the trajectory table: give --run_file or "
                         "--trajectory_file (or --directory)")
    for name, frame in frames.items():
        select.require(result, name, frame, ("id", "step"), PURPOSE)
    parameters = select.names_list(parameters) or []
    if quantities is None:
        quantities = [q for q in DEFAULT_QUANTITIES if any(q in f.columns for f in frames.values())]
        if not quantities and not parameters:
            name = next(iter(frames))
            select.require(result, name, frames[name], ("loss",), PURPOSE)
    quantities = select.names_list(quantities)
    picked = {}  # column -> table it is read from
    for column in quantities:
        source = next((name for name in SOURCES if name in frames and column in frames[name].columns), None)
        if source is None:
            name = "run_info" if "run_info" in frames else next(iter(frames))
            select.check_names(result, name, frames[name], [column], "quantities", PURPOSE)
        picked[column] = source
    if parameters:
        trajectory = select.table(result, "trajectory", "traces of parameters")
        select.check_names(result, "trajectory", trajectory, parameters, "parameters", PURPOSE)
        for column in parameters:
            picked[column] = "trajectory"
    if not picked:
        raise InputError("traces: give at least one quantity or parameter")
    merged = None
    for source in SOURCES:
        columns = [c for c, s in picked.items() if s == source]
        if not columns:
            continue
        part = frames[source][["id", "step"] + columns]
        merged = part if merged is None else merged.merge(part, on=["id", "step"], how="outer")
    merged = merged.sort_values(["id", "step"], kind="stable").reset_index(drop=True)
    ordered = ["id", "step"]
    after = merged["step"] > burn_in
    for column in picked:
        values = merged[column].where(after)
        present = values.notna()
        sums = values.fillna(0.0).groupby(merged["id"]).cumsum()
        counts = present.astype(np.int64).groupby(merged["id"]).cumsum()
        merged[f"{column}_running_mean"] = (sums / counts.where(counts > 0)).where(after)
        ordered += [column, f"{column}_running_mean"]
    return merged[ordered]


def plot(table, path, burn_in=0):
    """One panel per column of a traces() table: each walker's trace (thin) and running mean
    (thick), burn-in shaded; written as PNG to `path`."""
    from tati.analysis import figures
    columns = [c for c in table.columns if c not in ("id", "step") and not c.endswith("_running_mean")]
    figure, axes = figures.new_figure(rows=len(columns), height=2.4, sharex=True)
    from matplotlib import patheffects
    walkers = sorted(table["id"].unique())
    palette = figures.colours(len(walkers))
    for ax, column in zip(axes[:, 0], columns):
        for colour, walker in zip(palette, walkers):
            rows = table[table["id"] == walker]
            ax.plot(rows["step"], rows[column], color=colour, linewidth=0.6, alpha=0.45,
                    label="trace (one colour per walker)" if walker == walkers[0] else None)
            ax.plot(rows["step"], rows[f"{column}_running_mean"], color=colour, linewidth=2.0,
                    path_effects=[patheffects.withStroke(linewidth=3.5, foreground="white")],
                    label="running mean after burn-in" if walker == walkers[0] else None)
        if burn_in > 0 and table["step"].min() <= burn_in:
            ax.axvspan(table["step"].min(), burn_in, color="0.85", zorder=0, label="burn-in")
            _fit_after_burn_in(ax, table, column, burn_in)
        ax.set_ylabel(column)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    figures.legend_above(figure, axes)
    figures.save(figure, path)


def _fit_after_burn_in(ax, table, column, burn_in):
    """The y axis of the rows after burn-in where burn-in spans far more (HMC's first proposals
    of a step-width search have energies of 1e7): those rows are what the panel is for."""
    values = table[column].to_numpy(dtype=float)
    after = values[(table["step"] > burn_in).to_numpy() & np.isfinite(values)]
    finite = values[np.isfinite(values)]
    if not len(after):
        return
    low, high = after.min(), after.max()
    span = high - low if high > low else max(abs(high), 1e-12)
    if finite.max() - finite.min() > 10 * span:
        ax.set_ylim(low - 0.3 * span, high + 0.3 * span)
        ax.text(0.005, 0.97, "burn-in beyond the axis", transform=ax.transAxes, fontsize=7, va="top",
                color="0.3", bbox=dict(facecolor="white", alpha=0.8, linewidth=0, pad=1))


def summary(table):
    """Lines: the last running mean of each column, averaged over walkers."""
    last = table.groupby("id").tail(1)
    lines = []
    for column in [c for c in table.columns if c.endswith("_running_mean")]:
        values = last[column].dropna()
        name = column[: -len("_running_mean")]
        if values.empty:
            lines.append(f"  {name}: no rows after burn-in")
            continue
        spread = f" (walkers {values.min():.6g} to {values.max():.6g})" if len(values) > 1 else ""
        lines.append(f"  {name}: running mean {values.mean():.6g}{spread}")
    return lines
