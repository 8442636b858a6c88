"""The short summary the tools print at the end of a run."""


def summarise(prog, simulation, result, sampler):
    o = simulation.options
    method = o["sampler"] if sampler else o["optimizer"]
    if result.run_info.empty:  # HMC writes rows at the ends of legs only; none ended in this call
        return (f"{prog}: {method} on {simulation.num_parameters} parameters: no leg ended in these "
                f"{o['max_steps']} steps, so no row was written")
    last = result.run_info.iloc[-1]
    lines = [f"{prog}: {int(last['step'])} steps of {method} on {simulation.num_parameters} parameters",
             f"  final loss {last['loss']:.6g}"
             + (f", accuracy {last['accuracy']:.4f}" if "accuracy" in last else "")]
    if sampler and len(result.averages) and "average_kinetic_energy" in result.averages:  # not SGLD
        averages = result.averages.iloc[-1]
        expected = simulation.num_parameters / (2.0 * o["inverse_temperature"])
        lines.append(f"  average kinetic energy {averages['average_kinetic_energy']:.6g} "
                     f"(equipartition: {expected:.6g}), average virial {averages['average_virials']:.6g}")
    if sampler and simulation.num_walkers >= 2:
        lines += _convergence_line(result.trajectory, simulation.num_walkers, o["burn_in_steps"])
    for name in ("run_file", "trajectory_file", "averages_file"):
        if o[name]:
            lines.append(f"  wrote {o[name]}")
    return "\n".join(lines)


def _convergence_line(trajectory, walkers, burn_in):
    """[one line]: the worst R-hat and the smallest ESS over all parameters, whichever parameters
    they belong to; [] if burn-in leaves too few rows to tell. Walkers whose rows are not
    equally many (HMC writes rows at each walker's own evaluation steps) are compared over
    their last rows, as many as the shortest has."""
    from tati.diagnostics.convergence import MIN_ROWS, convergence, equal_rows
    rows = equal_rows(trajectory, burn_in)
    counts = rows.groupby("id").size()
    if len(counts) < walkers or counts.min() < MIN_ROWS:
        return []
    table = convergence(rows)
    r_hat, ess = table["r_hat"].dropna(), table["ess"].dropna()
    if r_hat.empty or ess.empty:  # no parameter moved
        return []
    return [f"  R-hat max {r_hat.max():.3f} ({r_hat.idxmax()}), ESS min {ess.min():.0f} "
            f"({ess.idxmin()}) over {walkers} walkers"]
