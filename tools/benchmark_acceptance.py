"""Issue #23's acceptance comparisons, on case (a) of tools/benchmark_hmc.py (the 100-D Gaussian,
standard deviations 0.1 ... 1, float64) unless said otherwise; each part reuses the tool that
measures it:

  rows     sample() with every_nth 1 against its compiled loop with the same rows, per step,
           one walker, BAOAB and HMC2, graph and XLA, also with the three tables read (the
           Result builds its DataFrames when first read): tools/benchmark_rows.py's simulation and
           loop, on case (a) (its own Gaussian differs in the scales only, which cost nothing),
           timed interleaved, median of --repeats after a first call.
  draws    HMC2's sample() with a row per leg (legs of 10 steps of 0.05) against
           tfp.mcmc.sample_chain returning every draw (HamiltonianMonteCarlo, 10 leapfrog steps
           of 0.05, trace_fn None), 1 and 16 chains, XLA: us per leapfrog step, the two timed
           interleaved, median of --repeats after a first call.
  chains   16 chains of HMC2's compiled chunk against 16 batched chains of TFP's HMC per
           leapfrog step, cases (a) and (b), graph and XLA (tools/benchmark_hmc.py --chains 16).
  ess      ESS per second of tati's adapted HMC2 (step width, leg time and diagonal metric
           adapted in a burn-in of 10,000 steps from dispersed starts, then 10,000 steps with a
           row per leg) against TFP's NUTS with dual averaging started at the mode, 4 chains
           each, XLA (tools/benchmark_adapted.py's runs, on case (a)).

BAOAB with 16 walkers against the bare batched gradient is tools/benchmark_bookkeeping.py's.

    python tools/benchmark_acceptance.py [--parts rows,draws,chains,ess] [--steps 2000]
        [--legs 2000] [--repeats 7] [--threads N]
"""

import argparse
import os
import statistics
import time

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

import benchmark_adapted
import benchmark_hmc
import benchmark_rows
import tati
from benchmark import set_threads
from benchmark_bookkeeping import steps_type
from tati.engine.loop import Loop, compile_chunk
from tati.recording.averages import RunningAverages


def load():
    return f"{os.getloadavg()[0]:.1f}"


def rows(args):
    """benchmark_rows.measure's sample() and loop with rows, timed interleaved (that tool times
    them one after the other, which a loaded machine skews)."""
    benchmark_rows.gaussian = lambda dimension: benchmark_hmc.gaussian()[0]  # case (a)
    print("| sampler | mode | sample() us/step | sample() and its three tables read us/step | loop with rows "
          "us/step | ratio | ratio with tables | target | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sampler in ("BAOAB", "HMC2"):
        for mode in ("graph", "XLA"):
            sim = benchmark_rows.simulation(sampler, 1, 100, args.steps, mode == "XLA", 1, False)
            counter = tf.Variable(tf.constant(0, tf.int64))
            chunk = compile_chunk(Loop(sim.model, sim.data, sim.sampler, counter, RunningAverages(1),
                                       jit_compile=mode == "XLA", check_finite=sim.options["on_nan"] == "stop"))
            kind = steps_type(sim.sampler)

            def loop():  # a call stops when its block of rows is full: call again, as sample() does
                end = int(counter.numpy()) + args.steps
                while int(counter.numpy()) < end:
                    chunk(tf.constant(end - int(counter.numpy()), kind))["rows"].numpy()
            def read_tables():  # the Result builds its DataFrames when they are first read
                result = sim.sample()
                return result.run_info, result.trajectory, result.averages
            runs = {"sample()": sim.sample, "tables": read_tables, "loop": loop}
            times = {name: [] for name in runs}
            for run in runs.values():
                run()  # trace and compile
            for _ in range(args.repeats):
                for name, run in runs.items():
                    began = time.perf_counter()
                    run()
                    times[name].append(1e6 * (time.perf_counter() - began) / args.steps)
            a, r, b = (statistics.median(times[name]) for name in ("sample()", "tables", "loop"))
            print(f"| {sampler} | {mode} | {a:.1f} | {r:.1f} | {b:.1f} | {a / b:.2f} | {r / b:.2f} | <= 1.2 | "
                  f"{load()} |", flush=True)


def draws(args):
    """HMC2's sample() with a row per leg against TFP's sample_chain with every draw."""
    potential, dimension, h = benchmark_hmc.gaussian()
    steps = args.legs * benchmark_hmc.LEG
    print("| chains | tati sample(), a row per leg, us/step | TFP sample_chain, every draw, us/step | ratio | "
          "target | tati rows per chain | load |")
    print("|---|---|---|---|---|---|---|")
    for chains in (1, 16):
        start = np.full((chains, dimension), 0.01)
        sim = tati.Simulation(potential=potential, potential_batched=True, dtype="float64",
                              initial_parameters=start, number_walkers=chains, sampler="HMC2", step_width=h,
                              hamiltonian_dynamics_time=benchmark_hmc.LEG * h, max_steps=steps, every_nth=1,
                              jit_compile=True, seed=1)
        kernel = tfp.mcmc.HamiltonianMonteCarlo(lambda x: -potential(x), step_size=h,
                                                num_leapfrog_steps=benchmark_hmc.LEG)

        @tf.function(jit_compile=True)
        def chain(state):
            return tfp.mcmc.sample_chain(args.legs, state, kernel=kernel, trace_fn=None, seed=[1, 2])

        kept = []

        def ours():  # every draw read, as sample_chain returns them
            result = sim.sample()
            assert len(result.trajectory) == len(result.run_info)
            kept.append(len(result.run_info) / chains)

        def theirs():
            chain(tf.constant(start)).numpy()
        runs = {"tati": ours, "TFP": theirs}
        times = {name: [] for name in runs}
        for name, run in runs.items():
            run()  # trace and compile
        for _ in range(args.repeats):
            for name, run in runs.items():
                began = time.perf_counter()
                run()
                times[name].append(1e6 * (time.perf_counter() - began) / steps)
        a, b = statistics.median(times["tati"]), statistics.median(times["TFP"])
        target = "<= 1.2" if chains == 1 else "<= 1"
        print(f"| {chains} | {a:.1f} | {b:.1f} | {a / b:.2f} | {target} | {statistics.median(kept):.0f} | {load()} |",
              flush=True)


def chains(args):
    benchmark_hmc.main(["--chains", "16", "--steps", str(args.steps * 5 // 2), "--repeats", str(args.repeats)])
    print(f"(load {load()})")


def ess(args):
    potential, dimension, _ = benchmark_hmc.gaussian()
    sd = np.linspace(0.1, 1.0, dimension)
    model = benchmark_adapted.Model("(a) 100-D Gaussian, sd 0.1 ... 1", potential, dimension, np.zeros(dimension),
                                    sd, False)
    options = argparse.Namespace(burn_in=1000, draws=1000, walkers=4, seed=1, hmc2_steps_per_draw=10)
    print("| sampler | kept draws per chain | s | min ESS | ESS/s | ESS per 1000 gradients | max R-hat | max abs z | "
          "load |")
    print("|---|---|---|---|---|---|---|---|---|")
    found = {}
    for label, run in (("tati HMC2", lambda: benchmark_adapted.tati_run(model, "HMC2", options, True)),
                       ("TFP NUTS", lambda: benchmark_adapted.tfp_run(model, options, True))):
        r = run()
        min_ess, rhat, z, _ = benchmark_adapted.check(model, r["draws"])
        found[label] = min_ess / r["seconds"]
        print(f"| {label} | {r['draws'].shape[0]} | {r['seconds']:.2f} | {min_ess:.0f} | {found[label]:.0f} | "
              f"{1000 * min_ess / r['gradients']:.1f} | {rhat:.3f} | {z:.1f} | {load()} |", flush=True)
    print(f"ESS/s ratio tati HMC2 / TFP NUTS: {found['tati HMC2'] / found['TFP NUTS']:.2f} (target >= 1)")


PARTS = {"rows": rows, "draws": draws, "chains": chains, "ess": ess}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--steps", type=int, default=2000, help="steps per timed call (rows; chains: 2.5 times)")
    parser.add_argument("--legs", type=int, default=2000, help="legs per timed call (draws)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    args = parser.parse_args(argv)
    if any(part not in PARTS for part in args.parts.split(",")):
        parser.error(f"--parts takes {', '.join(PARTS)}, not {args.parts}")
    set_threads(args.threads)
    for part in args.parts.split(","):
        print(f"\n{part}:")
        PARTS[part](args)


if __name__ == "__main__":
    main()
