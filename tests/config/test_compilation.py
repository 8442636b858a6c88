"""jit_compile auto (tati/config/compilation.py): XLA where the loop compiles and its steps repay
the compile, graph mode elsewhere, with the reason; true and false as given."""

import pytest

from tati.config.compilation import BREAK_EVEN, TARGETS, UNROLLED_WALKERS, Compilation, choose
from tati.config.preflight import check
from tati.engine.contract import GRADIENT, LEGS, PROPOSAL
from tati.engine.registry import spec_of
from tati.errors import InputError


def potential(q):
    import tensorflow as tf
    return 0.5 * tf.reduce_sum(q * q, axis=-1)


def decided(**options):
    """The Compilation of these options, checked as a Simulation checks them (no TensorFlow)."""
    if "dataset" not in options and "model" not in options:
        options = dict(dict(potential=potential, initial_parameters=[0.5]), **options)
    return choose(check(options)[0])


def test_nuts_on_a_potential_long_enough_to_repay_the_compile_runs_under_xla():
    steps = BREAK_EVEN[PROPOSAL][0]
    long = decided(sampler="NUTS", max_steps=steps)
    assert long == (True, f"auto: {steps} NUTS steps on a potential; XLA pays from {steps}")
    assert long.line() == f"loop: XLA ({long.reason})"
    short = decided(sampler="NUTS", max_steps=steps - 1)
    assert short == (False, f"auto: {steps - 1} NUTS steps on a potential; XLA pays from {steps}")


def test_the_break_even_is_the_kinds_and_the_targets():
    assert TARGETS == ("potential", "network", "Keras model")
    # NUTS on a network repays XLA's compile sooner than on a potential (its trees are deeper)
    assert BREAK_EVEN[PROPOSAL][1] < BREAK_EVEN[PROPOSAL][0]
    assert decided(sampler="NUTS", max_steps=BREAK_EVEN[PROPOSAL][1], dataset="two_clusters").xla
    assert not decided(sampler="NUTS", max_steps=BREAK_EVEN[PROPOSAL][1] - 1, dataset="two_clusters").xla
    assert decided(sampler="HMC2", max_steps=BREAK_EVEN[LEGS][0]).xla
    assert not decided(sampler="HMC2", max_steps=BREAK_EVEN[LEGS][0] - 1).xla
    assert decided(sampler="BAOAB", max_steps=BREAK_EVEN[GRADIENT][1], dataset="two_clusters").xla
    assert not decided(sampler="BAOAB", max_steps=BREAK_EVEN[GRADIENT][1] - 1, dataset="two_clusters").xla


def test_rwmh_steps_its_own_break_even():
    """One evaluation a step, not NUTS's tree: its spec's xla_steps replace its kind's."""
    rwmh = spec_of("RWMH").xla_steps[0]
    assert rwmh > BREAK_EVEN[PROPOSAL][0]
    assert decided(sampler="RWMH", max_steps=rwmh) == (True, f"auto: {rwmh} RWMH steps on a potential; XLA pays from {rwmh}")
    assert not decided(sampler="RWMH", max_steps=BREAK_EVEN[PROPOSAL][0]).xla


def test_mini_batches_stay_in_graph_mode_and_say_why():
    assert decided(sampler="BAOAB", max_steps=10 ** 6, dataset="two_clusters", batch_size=10) == (
        False, "auto: mini-batches (batch_size) vary in shape, which XLA cannot compile")


def test_many_walkers_on_an_unbatched_potential_stay_in_graph_mode():
    """Up to UNROLLED_WALKERS walkers XLA calls a one-walker potential once per walker; beyond, it needs the batch."""
    few = dict(sampler="NUTS", max_steps=10 ** 6, number_walkers=UNROLLED_WALKERS,
               initial_parameters=[[0.5]] * UNROLLED_WALKERS)
    assert decided(**few).xla
    many = dict(few, number_walkers=UNROLLED_WALKERS + 1, initial_parameters=[[0.5]] * (UNROLLED_WALKERS + 1))
    assert decided(**many) == (False, f"auto: more than {UNROLLED_WALKERS} walkers on a potential need "
                                      "potential_batched for XLA")
    assert decided(**many, potential_batched=True).xla


def test_true_and_false_are_kept():
    assert decided(sampler="BAOAB", max_steps=1, jit_compile=True) == (True, "jit_compile true")
    assert decided(sampler="NUTS", max_steps=10 ** 6, jit_compile="false") == (False, "jit_compile false")
    assert decided(dataset="two_clusters", batch_size=10, jit_compile=False) == (False, "jit_compile false")
    assert Compilation(False, "jit_compile false").line() == "loop: graph mode (jit_compile false)"


def test_true_with_mini_batches_is_still_refused():
    import tati
    with pytest.raises(InputError, match="^jit_compile cannot compile mini-batches"):
        tati.Simulation(dataset="two_clusters", batch_size=10, jit_compile=True)


def test_auto_is_the_default_and_a_bad_value_is_named():
    assert check({})[0]["jit_compile"] == "auto"
    assert check({"jit_compile": "AUTO"})[0]["jit_compile"] == "auto"
    with pytest.raises(InputError, match="^jit_compile must be auto, true or false, got 'sometimes'"):
        check({"jit_compile": "sometimes"})


def test_the_simulation_and_its_result_say_which_and_why():
    """One short run: the Simulation resolves auto into the bool its loop uses; the Result and the
    tools' summary carry the reason."""
    import tati
    from tati.diagnostics.summary import summarise
    sim = tati.Simulation(potential=potential, initial_parameters=[0.5], sampler="BAOAB", max_steps=3)
    assert sim.options["jit_compile"] is False and sim.compilation == decided(sampler="BAOAB", max_steps=3)
    result = sim.sample()
    assert result.compilation is sim.compilation
    lines = summarise("tati-sample", sim, result, sampler=True, seconds=1.0).splitlines()
    assert lines[4] == f"  loop: graph mode (auto: 3 gradient steps on a potential; XLA pays from {BREAK_EVEN[GRADIENT][0]})"


def test_the_command_line_takes_auto_and_names_a_bad_value():
    from processes import tool_here
    from tati.cli.common import TOOL_GROUPS, make_parser
    from tati.cli.sample import main
    parser = make_parser("tati-sample", "", TOOL_GROUPS["tati-sample"])
    assert vars(parser.parse_args(["--jit_compile", "auto"]))["jit_compile"] == "auto"
    code, err, out = tool_here(main, ["--jit_compile", "sometimes"])
    assert (code, out) == (2, "") and err == "tati-sample: error: jit_compile must be auto, true or false, got 'sometimes'\n"
