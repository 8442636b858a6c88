"""Walkers over devices (distribution=mirrored, tati/engine/distribute.py): the cost of the strategy.

Runs BAOAB on the built-in 2-[8,8]-1 network (two_clusters, full batch of 500 points) with 16
walkers, through Simulation.sample(), in four layouts: no strategy, and MirroredStrategy over
1, 2 and 4 logical CPU devices (the CPU split by tati.engine.distribute.split_cpu). Each layout runs
in a process of its own (TensorFlow allows one strategy's collectives per process), which
builds its Simulation and warms it up (tracing) once; then sample() calls of `--steps` steps
(one row per call) are timed interleaved, one process at a time, `--repeats` times, and the
median time per step is kept.

Reported: the time per step of each layout over no strategy (issue target: at most 1.10 with
one replica) and walker-steps per second. On a 2-core machine 2 and 4 logical devices share
the same cores: the figure shows what the replicas cost, not a speed-up.

    python tools/benchmark_distribute.py [--steps 2000] [--repeats 7] [--walkers 16]
"""

import argparse
import json
import statistics
import subprocess
import sys

LAYOUTS = {"no strategy": {}, "1 device": dict(distribution="mirrored", devices=["CPU:0"]),
           "2 devices": dict(distribution="mirrored", devices=["CPU:0", "CPU:1"]),
           "4 devices": dict(distribution="mirrored", devices=["CPU:0", "CPU:1", "CPU:2", "CPU:3"])}


def serve(layout, steps, walkers):
    """One layout's process: after warming up, one timed sample() call per line read."""
    import time
    from tati.engine.distribute import split_cpu
    split_cpu(4)
    import tati
    simulation = tati.Simulation(hidden_dimension=[8, 8], dataset="two_clusters", sampler="BAOAB", step_width=0.01,
                                 number_walkers=walkers, seed=1, max_steps=steps, every_nth=steps,
                                 **LAYOUTS[layout])
    simulation.sample()  # traces and compiles
    print("ready", flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        simulation.sample()
        print((time.perf_counter() - start) / steps, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--walkers", type=int, default=16)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.steps, args.walkers)
    processes = {}
    try:
        for name in LAYOUTS:
            processes[name] = subprocess.Popen(
                [sys.executable, __file__, "--serve", name, "--steps", str(args.steps), "--walkers", str(args.walkers)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if processes[name].stdout.readline().strip() != "ready":
                raise SystemExit(f"layout {name}: its process failed")
        times = {name: [] for name in LAYOUTS}
        for _ in range(args.repeats):
            for name, process in processes.items():
                process.stdin.write("go\n")
                process.stdin.flush()
                times[name].append(float(process.stdout.readline()))
    finally:
        for process in processes.values():
            process.kill()
    base = statistics.median(times["no strategy"])
    print(f"BAOAB, 2-[8,8]-1 network, {args.walkers} walkers, {args.steps} steps per call, "
          f"median of {args.repeats}")
    print(f"{'layout':<12} {'ms/step':>8} {'ratio':>6} {'walker-steps/s':>15}")
    for name in LAYOUTS:
        median = statistics.median(times[name])
        print(f"{name:<12} {1e3 * median:8.3f} {median / base:6.3f} {args.walkers / median:15.0f}")
    print(json.dumps({name: [round(1e3 * t, 4) for t in values] for name, values in times.items()}))


if __name__ == "__main__":
    main()
