"""Runs of tests/engine/test_distribute.py in a process of their own: the CPU must be split into
logical devices before TensorFlow initialises them, which the test process has done long before.

    python tests/distributed_runs.py DIRECTORY

compares runs on 4 replicas with the same runs on one device and writes one line per case to
stdout: `case OK` or `case DIFFERS <first difference>`, or `case REFUSED <message>`.

    python tests/distributed_runs.py worker INDEX PORT0 PORT1 DIRECTORY

is worker INDEX of two on the loopback ports (MultiWorkerMirroredStrategy), writing its tables
into DIRECTORY.
"""

import sys
import time

START = time.perf_counter()

import pandas as pd

import json
import os

import tati
from tati.engine.distribute import split_cpu
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "samplers"))
from test_walker_randomness import MODELS, keras_options  # the same models as the walker-count test

FOUR = ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]


def potential():
    return dict(MODELS["potential"])


def network():
    return dict(MODELS["network"])


def options(model, sampler, **extra):
    o = dict(model(), sampler=sampler, step_width=0.05, number_walkers=8, seed=3, max_steps=24)
    o.update(extra)
    if sampler.startswith("HMC"):
        o["hamiltonian_dynamics_time"] = 0.2
    return o


def tables(result):
    return {name: frame.drop(columns=["time_per_nth_step"], errors="ignore") for name, frame in
            (("run_info", result.run_info), ("trajectory", result.trajectory), ("averages", result.averages))}


def difference(one, many):
    """None if every table is exactly equal, else the first difference in a line."""
    for name in one:
        try:
            assert len(one[name]) > 0
            pd.testing.assert_frame_equal(one[name], many[name], check_exact=True, obj=name)
        except AssertionError as error:
            return " ".join(str(error).split())[:200]
    return None


def report(case, one, many):
    found = difference(tables(one), tables(many))
    print(f"{case} OK" if found is None else f"{case} DIFFERS {found}", flush=True)
    print(f"{case} took {time.perf_counter() - START:.1f} s", file=sys.stderr, flush=True)


def same_tables(case, model, sampler, devices, **extra):
    one = tati.Simulation(**options(model, sampler, **extra)).sample()
    many = tati.Simulation(**options(model, sampler, **extra), distribution="mirrored", devices=devices).sample()
    report(case, one, many)


def fit_then_sample(case, devices):
    """fit() keeps every walker in the one process; the sample() after it is split."""
    results = []
    for layout in ({}, dict(distribution="mirrored", devices=devices)):
        simulation = tati.Simulation(**options(network, "BAOAB", max_steps=20, batch_size=None), **layout)
        simulation.fit()
        results.append(simulation.sample())
    report(case, *results)


def set_between_calls_then_restored(devices, directory, **extra):
    """Two cases on one run of each layout (a run on the replicas traces a chunk per replica, for
    HMC2 ~14 s of CPU here, the most of any case). HMC2-set-between-calls: parameters and
    momenta set between two sample() calls reach the replicas. HMC2-four-to-one: the run saved
    by the replicas after those calls, restored on one device, continues as the one-device run
    does in a third call. (HMC2 without the preconditioner on the replicas: HMC2-adapted-burn-in.)"""
    path = f"{directory}/HMC2-four-to-one.npz"
    one = tati.Simulation(**options(potential, "HMC2", **extra))
    many = tati.Simulation(**options(potential, "HMC2", **extra), distribution="mirrored", devices=devices,
                           save_model=path)
    seconds = []
    for simulation in (one, many):
        simulation.sample()
        simulation.parameters = [0.7, 0.7, -0.7, 0.7]
        simulation.momenta = 0.5 * simulation.momenta
        seconds.append(simulation.sample())
    report("HMC2-set-between-calls", *seconds)
    restored = tati.Simulation(**options(potential, "HMC2", **extra), restore_model=path).sample()
    report("HMC2-four-to-one", one.sample(), restored)


def resumed(case, sampler, save_devices, restore_devices, directory, **extra):
    """24 steps on one layout, saved; restored on the other and 24 more: as 48 on one device."""
    whole = tati.Simulation(**options(potential, sampler, max_steps=48, **extra)).sample()

    def layout(devices):
        return {} if devices is None else dict(distribution="mirrored", devices=devices)

    path = f"{directory}/{case}.npz"
    first = tati.Simulation(**options(potential, sampler, **extra), **layout(save_devices), save_model=path).sample()
    second = tati.Simulation(**options(potential, sampler, **extra), **layout(restore_devices),
                             restore_model=path).sample()
    joined = tati.Result(*(pd.concat([a, b], ignore_index=True) for a, b in
                           zip((first.run_info, first.trajectory, first.averages),
                               (second.run_info, second.trajectory, second.averages))))
    report(case, whole, joined)


def worker_options(directory):
    """The run of tests/engine/test_distribute.py's two workers (and of its one process)."""
    return dict(options(potential, "BAOAB"), run_file=f"{directory}/run.csv",
                trajectory_file=f"{directory}/trajectory.csv", averages_file=f"{directory}/averages.csv")


def worker(directory):
    """One worker of two (TF_CONFIG above): each writes into its own directory; the chief only
    should write files."""
    os.makedirs(directory, exist_ok=True)
    tati.Simulation(**worker_options(directory), distribution="multi_worker").sample()


def main(directory):
    # Refreshed between calls from every walker: calls cut at steps 10, 20, ..., rows every 3rd step.
    same_tables("BAOAB-preconditioner", potential, "BAOAB", FOUR, covariance_blending=1.0, covariance_after_steps=10,
                every_nth=3)
    # With the preconditioner, refreshed at steps 0, 10, 20, ... (HMC: its legs end there).
    set_between_calls_then_restored(FOUR, directory, covariance_blending=1.0, covariance_after_steps=10)
    same_tables("BAOAB-keras", keras_options, "BAOAB", FOUR)
    fit_then_sample("fit-then-sample", FOUR)
    # Burn-in with adaptation (pooled over all walkers) on one device, then the replicas: RWMH's
    # initial width search and dual averaging, then its draws keyed per walker over the replicas;
    # HMC2's step width, metric and leg length (windows of legs) in 12 of 24 steps.
    same_tables("RWMH-adapted-burn-in", potential, "RWMH", FOUR, burn_in_steps=10, every_nth=3)
    same_tables("HMC2-adapted-burn-in", potential, "HMC2", FOUR, burn_in_steps=12)
    # Across layouts, once each way (HMC2-four-to-one above): the checkpoint is gathered from and
    # scattered to the replicas by the state's shapes (distribute.py: Shards.gather, .scatter),
    # not per sampler, so a Langevin sampler one way and HMC with the preconditioner (the larger
    # state) the other cover both directions; BAOAB's own state on the replicas is compared above.
    resumed("GLA2-one-to-four", "GLA2", None, FOUR, directory)
    for case, extra in (("six-walkers", dict(number_walkers=6, devices=FOUR)),
                        ("other-layout", dict(devices=FOUR[:2]))):
        try:
            devices = extra.pop("devices")
            tati.Simulation(**options(potential, "BAOAB", **extra), distribution="mirrored", devices=devices).sample()
            print(f"{case} ACCEPTED")
        except tati.InputError as error:
            print(f"{case} REFUSED {error}")


if __name__ == "__main__":  # (importing and defining start no TensorFlow runtime)
    if sys.argv[1] == "worker":  # worker INDEX PORT0 PORT1 DIRECTORY
        os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"localhost:{port}" for port in sys.argv[3:5]]},
                                              "task": {"type": "worker", "index": int(sys.argv[2])}})
        worker(sys.argv[5])
    else:  # DIRECTORY
        split_cpu(4)
        main(sys.argv[1])
