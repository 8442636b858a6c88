"""measure_step_width on the UCI yacht data, split 0 (issue #41): BAOAB and SGHMC with nothing
but the likelihood, the prior, batch_size, walkers, burn-in and draws given (tools/uci_benchmark.py's
network, 4 walkers, batches of 32, seed 1), from the random start and from the MAP (L-BFGS).

    python tools/benchmark_measured_width.py [DATA_FOLDER] [--epochs 200] [--samplers BAOAB,SGHMC]
        [--adapt-mass noise] [--friction 3] [--seed 1] [--starts random,map]

Prints per run: the measured widths per walker, test RMSE and log-likelihood per point (the
target's units, the predictive over the draws), per walker beta |p|^2 / d after burn-in
(equipartition reads 1), the loss's R-hat over the walkers after burn-in, the first and last
draws' losses and the adapted mass's scales. --step-width W: the same runs at a given width,
nothing measured; --adapt-mass noise: the mass from the gradient noise (doc/samplers.md).
"""

import argparse
import importlib.util
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("uci_benchmark", os.path.join(HERE, "uci_benchmark.py"))
uci = importlib.util.module_from_spec(spec)
spec.loader.exec_module(uci)


def run(sampler, train, test, y_sd, epochs, start, width=None, seed=1, walkers=4, batch=32, **extra):
    import tati
    per_epoch = -(-len(train[1]) // batch)
    options = dict(uci.model_options(train, 50, seed), sampler=sampler, number_walkers=walkers, batch_size=batch,
                   measure_step_width="auto", burn_in_steps=epochs * per_epoch, max_steps=2 * epochs * per_epoch, every_nth=per_epoch, **extra)
    if start is not None:
        options["initial_parameters"] = start
    if width is not None:  # a given width: nothing measured (the comparison)
        options["step_width"] = width
    simulation = tati.Simulation(**options)
    began = time.perf_counter()
    try:
        result = simulation.sample()
    except tati.SamplingError as error:
        return dict(sampler=sampler, error=str(error), widths=simulation.measured_width)
    seconds = time.perf_counter() - began
    draws = result.trajectory[result.trajectory.step > options["burn_in_steps"]]
    table, _ = simulation.predictive(test[0], test[1], trajectory=draws, burn_in=-1, draws=uci.DRAWS)
    residuals = test[1][:, 0] - table["mean_0"].to_numpy()
    rmse, ll = uci.in_target_units(residuals, table["log_predictive_density"].to_numpy(), y_sd)
    info = result.run_info[result.run_info.step > options["burn_in_steps"]]
    d = simulation.model.num_parameters
    temperature = (2.0 * info.groupby("id").kinetic_energy.mean() / d).to_numpy()
    losses = result.run_info[result.run_info.step > options["burn_in_steps"]].pivot(index="step", columns="id",
                                                                                   values="loss").to_numpy()
    return dict(sampler=sampler, rmse=rmse, ll=ll, temperature=temperature, widths=simulation.measured_width,
                seconds=seconds, warm=simulation.warm_start, summary=summary_lines(simulation, result), d=d, rhat=rhat(losses), losses=losses, scales=simulation.sampler.metric_scales())


def timed_warm_start():
    """The warm start, its seconds kept as WARM_SECONDS[-1]."""
    from tati.adaptation import warm_start
    original = warm_start.warm_start

    def timed(*args, **kwargs):
        began = time.perf_counter()
        report = original(*args, **kwargs)
        WARM_SECONDS.append(time.perf_counter() - began)
        return report
    warm_start.warm_start = timed


WARM_SECONDS = []


def bound(excess):
    """measure_step_width's heat bound EXCESS set to `excess` (its functions take it as a default)."""
    from tati.adaptation import measured_width
    measured_width.EXCESS = excess
    for name in ("noise_width", "graph_friction", "graph_noise_width"):
        function = getattr(measured_width, name)
        function.__defaults__ = function.__defaults__[:-1] + (excess,)


def summary_lines(simulation, result):
    """The summary's kinetic-temperature and T_0.99 lines (record_momenta), if any."""
    from tati.diagnostics import summary
    try:
        text = summary.summarise("benchmark", simulation, result, True)
    except Exception as error:  # a benchmark: the figures above still count
        return [f"summary failed: {error}"]
    lines = text if isinstance(text, list) else str(text).splitlines()
    return [line.rstrip() for line in lines if any(word in line for word in ("kinetic", "T_0.99", "friction", "hot", "cold", "consistent", "layer", "mass", "warm"))]


def rhat(chains):
    """Gelman-Rubin's R-hat of [draws, chains] (split in halves): near 1 when the walkers agree."""
    n = chains.shape[0] // 2
    halves = np.concatenate([chains[:n], chains[n:2 * n]], axis=1)
    within = halves.var(axis=0, ddof=1).mean()
    between = n * halves.mean(axis=0).var(ddof=1)
    return float(np.sqrt(((n - 1) / n * within + between / n) / within))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", nargs="?", default=os.path.join(HERE, "..", "tests", "fixtures", "uci", "yacht"))
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--samplers", default="BAOAB,SGHMC")
    parser.add_argument("--starts", default="random,map")
    parser.add_argument("--step-width", type=float, help="a given width instead of the measured one")
    parser.add_argument("--adapt-mass", default="auto", help="adapt_mass: auto, true or noise")
    parser.add_argument("--friction", default="1", help="friction_constant, or auto")
    parser.add_argument("--warm-iterations", type=int, help="the warm start's L-BFGS cap (start 'warm'; 200 without)")
    parser.add_argument("--record-momenta", action="store_true", help="the summary's T_0.99 line")
    parser.add_argument("--excess", type=float, help="measure_step_width's heat bound instead of 5%%")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    import tati
    timed_warm_start()
    if args.excess:
        bound(args.excess)
    if args.warm_iterations:
        from tati.adaptation import warm_start
        warm_start.ITERATIONS = args.warm_iterations
    friction = args.friction if args.friction == "auto" else float(args.friction)
    extra = dict(record_momenta=True) if args.record_momenta else {}
    dataset = uci.read_dataset(args.folder)
    train, test, y_sd = uci.standardise(dataset["x"], dataset["y"], *dataset["splits"][0])
    for start_name in args.starts.split(","):
        start, extra["warm_start"] = None, start_name == "warm"
        if start_name == "map":
            fitted = tati.Simulation(**uci.model_options(train, 50, args.seed), number_walkers=4, **uci.MAP_FIT)
            fitted.fit()
            start = fitted.parameters
        for sampler in args.samplers.split(","):
            out = run(sampler, train, test, y_sd, args.epochs, start, args.step_width,
                      seed=args.seed, adapt_mass=args.adapt_mass, friction_constant=friction, **extra)
            w = out["widths"]
            print(f"{sampler} from {start_name}: " + (w.line() if w is not None else "no width measured"))
            if out.get("warm") is not None:
                print("  " + out["warm"].line() + f", {WARM_SECONDS[-1]:.1f} s")
            if "error" in out:
                print("  " + out["error"])
                continue
            print(f"  RMSE {out['rmse']:.3f}, test LL {out['ll']:+.3f}, beta |p|^2 / d per walker "
                  f"{', '.join(f'{t:.3f}' for t in out['temperature'])} (d = {out['d']}), loss R-hat {out['rhat']:.2f}, "
                  f"loss after burn-in first/last {np.round(out['losses'][[0, -1]], 0).tolist()}, scales "
                  f"{out['scales'].min():.3g} .. {out['scales'].max():.3g}, {out['seconds']:.0f} s",
                  flush=True)
            for line in out["summary"]:
                print("  " + line)


if __name__ == "__main__":
    main()
