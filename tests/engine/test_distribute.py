"""Walkers over several devices (tati/engine/distribute.py): the same tables as on one device.

The comparisons run in a process of their own (tests/distributed_runs.py), which splits the
CPU into 4 logical devices before TensorFlow starts. 8 walkers on 4 replicas against one
device, exactly: HMC2 with the ensemble preconditioner on a potential (parameters and momenta
set between two calls), BAOAB with the preconditioner (refreshed between the replicas' calls,
rows every 3rd step), BAOAB on a Keras model with mini-batches, and fit() then sample() on the
built-in network; RWMH (TensorFlow Probability's kernel, its draws keyed per walker) after a
burn-in with adaptation, and HMC2 with its default adaptation (step width, metric, leg length)
in a short burn-in: burn-in on one device, the rest on the replicas. A run saved on 4 replicas
and restored on one device (that HMC2 run after its two calls) and the other way round (GLA2)
continues bitwise. A walker count that does not divide is refused, and so is a second layout in
one process. Two worker processes with TF_CONFIG (MultiWorkerMirroredStrategy) write the tables
of one process.
"""

import os
import socket
import subprocess
import sys

import pandas as pd
import pytest

import tati

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
CASES = ["BAOAB-preconditioner", "HMC2-set-between-calls", "BAOAB-keras", "fit-then-sample",
         "RWMH-adapted-burn-in", "HMC2-adapted-burn-in", "HMC2-four-to-one", "GLA2-one-to-four"]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    directory = tmp_path_factory.mktemp("distributed")
    process = subprocess.run([sys.executable, os.path.join(HERE, "distributed_runs.py"), str(directory)],
                             capture_output=True, text=True, timeout=600)
    lines = [line.split(" ", 2) for line in process.stdout.splitlines() if line.strip()]
    found = {line[0]: line[1:] for line in lines}
    assert process.returncode == 0, process.stderr[-3000:]
    return found


@pytest.mark.parametrize("case", CASES)
def test_replicas_give_the_tables_of_one_device(outcomes, case):
    assert outcomes[case][0] == "OK", outcomes[case]


def test_walkers_that_do_not_divide_over_the_devices_are_refused(outcomes):
    verdict, message = outcomes["six-walkers"]
    assert verdict == "REFUSED"
    assert message == "number_walkers 6 does not divide over 4 devices (CPU:0, CPU:1, CPU:2, CPU:3): give a multiple of 4"


def test_a_second_layout_in_one_process_is_refused(outcomes):
    verdict, message = outcomes["other-layout"]
    assert verdict == "REFUSED"
    assert message == ("distribution=mirrored: this process already runs walkers on CPU:0, CPU:1, CPU:2, CPU:3; "
                       "TensorFlow's collectives allow one layout per process")


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def test_two_workers_write_the_tables_of_one_process(tmp_path):
    """Two processes with TF_CONFIG on the loopback interface (MultiWorkerMirroredStrategy, one
    replica each, 4 of the 8 walkers each): the chief's files are those of one process, and
    the other worker writes none. The workers are bounded in time and always terminated."""
    sys.path.insert(0, HERE)
    from distributed_runs import worker_options
    ports = [str(port) for port in free_ports(2)]
    workers = []
    try:
        for index in range(2):
            log = open(tmp_path / f"worker{index}.log", "w")
            workers.append(subprocess.Popen([sys.executable, os.path.join(HERE, "distributed_runs.py"), "worker",
                                             str(index), *ports, str(tmp_path / f"worker{index}")],
                                            stdout=log, stderr=subprocess.STDOUT))
        for index, process in enumerate(workers):
            assert process.wait(timeout=300) == 0, (tmp_path / f"worker{index}.log").read_text()[-3000:]
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
    (tmp_path / "one").mkdir()
    tati.Simulation(**worker_options(tmp_path / "one")).sample()
    for name in ("run.csv", "trajectory.csv", "averages.csv"):
        one = pd.read_csv(tmp_path / "one" / name).drop(columns=["time_per_nth_step"], errors="ignore")
        chief = pd.read_csv(tmp_path / "worker0" / name).drop(columns=["time_per_nth_step"], errors="ignore")
        assert len(one) > 0
        pd.testing.assert_frame_equal(one, chief, check_exact=True, obj=name)
    assert os.listdir(tmp_path / "worker1") == []
