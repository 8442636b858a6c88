"""What the per-step bookkeeping costs (issue #23, item 2): the compiled chunk as sample() runs
it, against the same chunk with parts of its bookkeeping taken out, and against a bare
loss-and-gradient loop.

Case (a) of tools/benchmark_hmc.py, the 100-D Gaussian with standard deviations 0.1 ... 1,
float64, step width 0.05 (HMC2: legs of 10 steps, 0.5 time units); BAOAB and HMC2 with 1 and
16 walkers, in graph mode and under XLA. Each chunk runs --steps steps per call with no row but
its last, so what is timed is the per-step work. The variants, each with what the one above
it has, less one thing:

    as is          sample()'s chunk (tati/engine/gradient.py, with its check for non-finite values)
    XLA's sin, cos as is, but Box-Muller's sin and cos by XLA's own functions, not tati's series
                   (random/turns.py): what the series save (XLA only; graph mode uses
                   TensorFlow's own in both)
    - averages     RunningAverages.update a no-op
    - virial       the virial 1/2 q . grad U replaced by zeros (BAOAB: in GradientKernel.one_step;
                   HMC2: in the sampler's _move, where it is computed at evaluations only)
    - report       BAOAB: the sampler's step report (kinetic energy, |p|^2, inertia q.p; only
                   the averages read it between rows) a no-op off the rows
    - finite check BAOAB: check_finite off
    - noise draw   the sampler's normals (BAOAB's noise, HMC2's fresh momenta) as zeros: what is
                   left is the gradient and the update (not a sampler any more: timing only)
    bare gradient  a tf.while_loop of the loss, its gradient and q <- q - 1e-4 g, nothing else
    + noise draw   BAOAB: the bare loop plus one draw of the sampler's normals (Philox uniforms
                   and Box-Muller, samplers/base.py), the floor of any Langevin step
    + uniforms     BAOAB: the bare loop plus the draw's Philox uniforms alone

The parts are taken out by patching while the chunk is traced (never in tati/): a method
replaced for the duration, or a function's source with one line replaced, compiled from a
temporary file. A replacement whose line is not found stops the
tool, so an edit of tati/ cannot make it time the wrong thing silently.

After a first call of each (tracing and compiling), the variants of one configuration are
timed interleaved, --repeats times; medians, microseconds per step.

    python tools/benchmark_bookkeeping.py [--steps 2000] [--repeats 7] [--samplers BAOAB,HMC2]
        [--walkers 1,16] [--modes graph,XLA] [--threads N]
"""

import argparse
import atexit
import contextlib
import inspect
import os
import shutil
import statistics
import tempfile
import textwrap
import time

import numpy as np
import tensorflow as tf

import tati
from tati.engine.gradient import GradientKernel
from tati.engine.loop import Loop, compile_chunk
from benchmark import set_threads
from benchmark_hmc import LEG, gaussian
from tati.recording.averages import RunningAverages
from tati.random.streams import box_muller, packed_pairs
from tati.samplers.base import SamplerBase
from tati.random import turns
from tati.samplers.hmc import HamiltonianMonteCarlo

NO_ROWS = 10 ** 12
_FILES = tempfile.mkdtemp(prefix="tati_bookkeeping_")
atexit.register(shutil.rmtree, _FILES, True)


def with_line_replaced(function, old, new):
    """`function` compiled again from its source with `old` replaced by `new`, in a copy of its
    module's namespace (from a file, so that tracebacks and inspect can read its source)."""
    source = textwrap.dedent(inspect.getsource(function))
    if source.count(old) != 1:
        raise SystemExit(f"benchmark_bookkeeping: {function.__qualname__} no longer holds {old!r}: "
                         "update the tool")
    path = os.path.join(_FILES, f"{function.__qualname__.replace('.', '_')}_{abs(hash(new))}.py")
    with open(path, "w") as f:
        f.write(source.replace(old, new))
    namespace = dict(function.__globals__)
    exec(compile(open(path).read(), path, "exec"), namespace)
    return namespace[function.__name__]


ONE_STEP_NO_VIRIAL = with_line_replaced(
    GradientKernel.one_step, "virial = 0.5 * self.per_walker([v * g for v, g in zip(model.variables, grads)])",
    "virial = tf.zeros([model.num_walkers] if model.walker_axis else [1], tf.float64)")
MOVE_NO_VIRIAL = with_line_replaced(
    HamiltonianMonteCarlo._move, "virial.append(self._walker_sum(chain_q * chain_g))",
    "virial.append(tf.zeros_like(fresh_sq[-1]))")
_REPORT = SamplerBase._report


def _report_on_rows_only(self, position, momentum, noise, mass=1.0):
    if self.report_details:
        _REPORT(self, position, momentum, noise, mass)


def steps_type(sampler):
    """The dtype of a chunk's step count: int32 for HMC's chunk (legs), else int64."""
    try:
        from tati.engine.loop import steps_dtype
    except ImportError:  # before the kernel contract (commit 894d395 and earlier)
        return tf.int32 if getattr(sampler, "metropolis", False) else tf.int64
    return steps_dtype(sampler)


def _zeros(self, variable, stream=0):
    return tf.zeros(variable.shape, variable.dtype)


@contextlib.contextmanager
def replaced(owner, name, value):
    old = owner.__dict__[name]
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


# Each variant: (name, samplers it applies to, patches while tracing, check_finite, virial removed)
VARIANTS = (
    ("as is", ("BAOAB", "HMC2"), (), True, False),
    ("XLA's sin, cos", ("BAOAB", "HMC2"), ("libm",), True, False),
    ("- averages", ("BAOAB", "HMC2"), ("averages",), True, False),
    ("- virial", ("BAOAB", "HMC2"), ("averages",), True, True),
    ("- report", ("BAOAB",), ("averages", "report"), True, True),
    ("- finite check", ("BAOAB",), ("averages", "report"), False, True),
    ("- noise draw", ("BAOAB", "HMC2"), ("averages", "report", "draw"), False, True),
)


def patches(names, virial, sampler):
    stack = contextlib.ExitStack()
    if "libm" in names:
        stack.enter_context(replaced(turns, "traced_for_xla", lambda: False))
    if "averages" in names:
        stack.enter_context(replaced(RunningAverages, "update", lambda self, *args, **kwargs: None))
    if "report" in names:
        stack.enter_context(replaced(SamplerBase, "_report", _report_on_rows_only))
    if "draw" in names:
        stack.enter_context(replaced(SamplerBase, "_normal", _zeros))
    if virial and sampler == "HMC2":
        stack.enter_context(replaced(HamiltonianMonteCarlo, "_move", MOVE_NO_VIRIAL))
    elif virial:
        stack.enter_context(replaced(GradientKernel, "one_step", ONE_STEP_NO_VIRIAL))
    return stack


def simulation(sampler, walkers, jit):
    potential, dimension, h = gaussian()
    extra = dict(hamiltonian_dynamics_time=LEG * h) if sampler == "HMC2" else {}
    return tati.Simulation(potential=potential, potential_batched=True, dtype="float64",
                           initial_parameters=np.full((walkers, dimension), 0.01), number_walkers=walkers,
                           sampler=sampler, step_width=h, every_nth=NO_ROWS, jit_compile=jit, seed=1, **extra)


def chunk_call(sim, sampler, walkers, jit, names, check_finite, virial, steps):
    """A timed call of the variant's chunk, traced and compiled (first call) under its patches."""
    counter = tf.Variable(tf.constant(0, tf.int64))
    kind = steps_type(sim.sampler)
    # HMC's legs: its virial is patched in the sampler (MOVE_NO_VIRIAL), the others' in one_step
    loop = Loop(sim.model, sim.data, sim.sampler, counter, RunningAverages(walkers), every_nth=NO_ROWS,
                jit_compile=jit, check_finite=check_finite and kind != tf.int32)
    chunk = compile_chunk(loop)  # traced at its first call, under the patches
    n = tf.constant(steps, kind)

    def call():
        chunk(n)["rows"].numpy()
    with patches(names, virial, sampler):
        call()
    return call


def bare_call(walkers, jit, steps, noise):
    """A loop of the loss and its gradient (and, with `noise` "normals", one draw of normals as
    the samplers make them; "uniforms", their uniforms alone) and q <- q - 1e-4 g (+ 1e-3
    noise): nothing else."""
    potential, dimension, _ = gaussian()
    half = packed_pairs(dimension)
    start = tf.constant(np.full((walkers, dimension), 0.01))
    key = tf.constant([1], tf.uint64)

    @tf.function(jit_compile=jit)
    def loop(n, q):
        def body(i, q, total):
            with tf.GradientTape() as tape:
                tape.watch(q)
                energy = tf.reduce_sum(potential(q))
            q = q - 1e-4 * tape.gradient(energy, q)
            if noise:
                counter = tf.stack([tf.cast(i, tf.uint64), tf.constant(0, tf.uint64)])
                uniforms = tf.raw_ops.StatelessRandomUniformV2(shape=[walkers, 2 * half], key=key, counter=counter,
                                                               alg=1, dtype=tf.float64)
                q = q + 1e-3 * (box_muller(uniforms) if noise == "normals" else uniforms)[:, :dimension]
            return i + 1, q, total + energy
        return tf.while_loop(lambda i, q, total: i < n, body, (tf.constant(0), q, tf.constant(0.0, tf.float64)))[2]

    n = tf.constant(steps)

    def call():
        loop(n, start).numpy()
    call()
    return call


def measure(sampler, walkers, jit, steps, repeats):
    """{variant: median us per step}, the variants timed interleaved."""
    calls = {}
    for name, samplers, names, check_finite, virial in VARIANTS:
        if sampler in samplers and (jit or "libm" not in names):
            sim = simulation(sampler, walkers, jit)  # one each: the variants share no state
            calls[name] = chunk_call(sim, sampler, walkers, jit, names, check_finite, virial, steps)
    calls["bare gradient"] = bare_call(walkers, jit, steps, None)
    if sampler == "BAOAB":
        calls["+ noise draw"] = bare_call(walkers, jit, steps, "normals")
        calls["+ uniforms"] = bare_call(walkers, jit, steps, "uniforms")
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - start) / steps)
    return {name: 1e6 * statistics.median(t) for name, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--samplers", default="BAOAB,HMC2")
    parser.add_argument("--walkers", default="1,16")
    parser.add_argument("--modes", default="graph,XLA")
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    names = [v[0] for v in VARIANTS] + ["bare gradient", "+ noise draw", "+ uniforms"]
    print("| sampler | W | mode | " + " | ".join(names) + " | as is / bare | load |")
    print("|---|---|---|" + "---|" * len(names) + "---|---|")
    for sampler in args.samplers.split(","):
        for walkers in (int(w) for w in args.walkers.split(",")):
            for mode in args.modes.split(","):
                result = measure(sampler, walkers, mode == "XLA", args.steps, args.repeats)
                cells = [f"{result[n]:.1f}" if n in result else "-" for n in names]
                ratio = result["as is"] / result["bare gradient"]
                print(f"| {sampler} | {walkers} | {mode} | " + " | ".join(cells)
                      + f" | {ratio:.1f} | {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
