"""The short summary the tools print at the end of a run."""


def summarise(prog, simulation, result, sampler):
    o = simulation.options
    last = result.run_info.iloc[-1]
    method = o["sampler"] if sampler else o["optimizer"]
    lines = [f"{prog}: {int(last['step'])} steps of {method} on {simulation.num_parameters} parameters",
             f"  final loss {last['loss']:.6g}"
             + (f", accuracy {last['accuracy']:.4f}" if "accuracy" in last else "")]
    if sampler and len(result.averages):
        averages = result.averages.iloc[-1]
        expected = simulation.num_parameters / (2.0 * o["inverse_temperature"])
        lines.append(f"  average kinetic energy {averages['average_kinetic_energy']:.6g} "
                     f"(equipartition: {expected:.6g}), average virial {averages['average_virials']:.6g}")
    for name in ("run_file", "trajectory_file", "averages_file"):
        if o[name]:
            lines.append(f"  wrote {o[name]}")
    return "\n".join(lines)
