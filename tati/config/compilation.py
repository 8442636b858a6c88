"""jit_compile auto: whether a run's loop is compiled with XLA, and why, in a few words.

XLA takes the loop where its shapes are fixed (no mini-batches) and where a potential with
more than UNROLLED_WALKERS walkers takes them as a batch (potential_batched); there it runs
each step several times faster than graph mode, but compiles for seconds first (cold, without
XLA's persistent cache). Auto turns it on where the run's steps repay that compile, by the measured break-even
steps of the sampler's kind on the kind of target (doc/benchmarks.md, "XLA where it pays";
tools/benchmark_jit_auto.py). Decided once per Simulation, for its sampler; no TensorFlow here.
"""

from typing import NamedTuple

from tati.engine.contract import GRADIENT, LEGS, PROPOSAL
from tati.engine.registry import spec_of

TARGETS = ("potential", "network", "Keras model")
# The steps of one sample() call from which XLA's cold compile is repaid by its saving per
# step, per kernel kind, on each of TARGETS: tools/benchmark_jit_auto.py's break-even rounded
# up (doc/benchmarks.md); a spec's xla_steps replaces its kind's (RWMH: one evaluation a step).
BREAK_EVEN = {
    PROPOSAL: (1000, 400, 1000),  # NUTS: graph mode 7-20 times slower per transition; a network's trees are deep
    LEGS: (300000, 50000, 100000),  # HMC: graph mode is lean already (20-40 us a step on a potential)
    GRADIENT: (20000, 10000, 100000),  # Langevin and optimizers: graph mode is 100-1000 us a step
}

# A potential written for one walker is mapped over the walkers; XLA fails on tf.vectorized_map's map
# ("LLVM compilation error: Cannot allocate memory", TensorFlow 2.21), so under XLA it is called once per
# walker, unrolled, up to this many walkers (each a copy in the program: a horseshoe regression of 202
# parameters, 4 walkers, compiled in 5.8 s and ran NUTS's 2000 steps in 24 s against graph mode's 100 s).
UNROLLED_WALKERS = 8


class Compilation(NamedTuple):
    """Whether the loop runs under XLA, and why: a (bool, reason) pair."""
    xla: bool
    reason: str

    def line(self):
        """'loop: XLA (auto: ...)' or 'loop: graph mode (...)'."""
        return f"loop: {'XLA' if self.xla else 'graph mode'} ({self.reason})"


def choose(o):
    """The Compilation of a run with the resolved options `o`: jit_compile true or false as
    given; auto: graph mode where the loop cannot compile, else XLA from the break-even steps."""
    if o["jit_compile"] != "auto":
        return Compilation(bool(o["jit_compile"]), f"jit_compile {str(bool(o['jit_compile'])).lower()}")
    cannot = _not_compiled(o)
    if cannot is not None:
        return Compilation(False, f"auto: {cannot}")
    spec = spec_of(o["sampler"])
    target = 0 if o["potential"] is not None else 2 if o["model"] is not None else 1
    steps = (spec.xla_steps or BREAK_EVEN[spec.kind])[target]
    what = f"{spec.name} steps" if spec.kind == PROPOSAL else "HMC steps" if spec.kind == LEGS else "gradient steps"
    what = f"{o['max_steps']} {what} on a {TARGETS[target]}"
    return Compilation(o["max_steps"] >= steps, f"auto: {what}; XLA pays from {steps}")


def _not_compiled(o):
    """Why auto leaves the loop in graph mode whatever its length, or None."""
    if o["batch_size"] is not None:
        return "mini-batches (batch_size) vary in shape, which XLA cannot compile"
    if o["distribution"] != "none":
        return f"XLA is not measured with distribution {o['distribution']}"
    if o["potential"] is not None and o["number_walkers"] > UNROLLED_WALKERS and not o["potential_batched"]:
        return f"more than {UNROLLED_WALKERS} walkers on a potential need potential_batched for XLA"
    return None
