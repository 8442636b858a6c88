"""Randomness keyed per walker (issue #17): walker w's noise, momenta, leg lengths and widths
and accept uniforms depend on (seed, walker, step, stream) only, so the first walkers of a run
with more walkers are bitwise the walkers of a run with fewer (without the ensemble
preconditioner, which couples them). This is what lets walkers be split across devices.

The model's own arithmetic must cooperate: TensorFlow's CPU kernels compute the last elements
of an array that do not fill a SIMD packet by a scalar path whose pow, exp or tanh may differ in
the last bit. The potential here has 4 float64 parameters per walker, whole AVX2 packets
whatever the walker count, so 3 walkers against 8 test the tails of tati's own [W] vectors; the
network's rows are not whole packets, so it is compared at 4 walkers against 8."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from stats import for_sampler
from tati.samplers import sampler_names
from tati.engine.registry import spec_of


def quartic(q):
    return 0.5 * tf.reduce_sum(q ** 2) + 0.1 * tf.reduce_sum(q ** 4)


MODELS = {
    "potential": dict(potential=quartic, initial_parameters=[0.3, -0.2, 0.1, 0.4], dtype="float64"),
    "network": dict(hidden_dimension=[3], batch_size=100),
}
# Under XLA, Box-Muller's sin and cos are tati's own series (random/turns.py).
MODELS["potential under XLA"] = dict(
    MODELS["potential"], jit_compile=True, potential_batched=True,
    potential=lambda q: 0.5 * tf.reduce_sum(q ** 2, axis=-1) + 0.1 * tf.reduce_sum(q ** 4, axis=-1))
FEW = {"potential": 3, "potential under XLA": 3, "network": 4, "keras": 4}


def keras_options():
    """A new model each time (a run leaves walker 0's parameters in it), with seeded initializers."""
    import keras
    glorot = keras.initializers.GlorotUniform
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4, activation="tanh", kernel_initializer=glorot(1)),
                              keras.layers.Dense(1, kernel_initializer=glorot(2))])
    return dict(model=model, loss="mean_squared", dataset="two_clusters", batch_size=100)


def tables(walkers, few, **options):
    result = tati.Simulation(number_walkers=walkers, every_nth=1, seed=3, burn_in_steps=0, **options).sample()  # pooled adaptation would couple walkers
    return {name: frame[frame.id < few].drop(columns=["time_per_nth_step"], errors="ignore")
            .sort_values(["id", "step"], kind="stable").reset_index(drop=True)
            for name, frame in (("run_info", result.run_info), ("trajectory", result.trajectory))}


def assert_same(few, many):
    for name in few:
        assert len(few[name]) > 0
        pd.testing.assert_frame_equal(few[name], many[name], check_exact=True, obj=name)


# Every sampler on the potential (NUTS and RWMH: TensorFlow Probability's kernels, their draws
# keyed per walker by random/walker_draws.py); on the network (mini-batches, float32) one of
# each kind (HMC2 and NUTS on the whole dataset); on a Keras model (walkers through a vectorised
# stateless call) one Langevin sampler and one proposal kernel.
CASES = ([(sampler, "potential") for sampler in sampler_names()]
         + [("BAOAB", "network"), ("HMC2", "network"), ("NUTS", "network"), ("BAOAB", "keras"), ("RWMH", "keras")]
         + [("BAOAB", "potential under XLA")])


@pytest.mark.parametrize("sampler, model", CASES)
def test_first_walkers_do_not_depend_on_the_walker_count(sampler, model):
    def options():
        given = keras_options() if model == "keras" else dict(MODELS[model])
        if spec_of(sampler).full_batch:  # batch_size refused: the whole dataset at every step
            given.pop("batch_size", None)
        return for_sampler(sampler, **given, sampler=sampler, step_width=0.05, max_steps=24,
                           hamiltonian_dynamics_time=0.2, max_tree_depth=3)  # NUTS: legs of at most 7 steps
    assert_same(tables(FEW[model], FEW[model], **options()), tables(8, FEW[model], **options()))


def test_large_variables_box_muller_noise_is_keyed_per_walker():
    """Above BOX_MULLER_SIZE numbers per walker the noise is Box-Muller on Philox uniforms."""
    from tati.random.streams import BOX_MULLER_SIZE
    d = BOX_MULLER_SIZE + 3  # odd: a pair's second number is dropped
    options = dict(potential=lambda q: 0.5 * tf.reduce_sum(q ** 2), initial_parameters=np.zeros(d),
                   dtype="float32", sampler="BAOAB", max_steps=3)
    few, many = tables(3, 3, **options), tables(5, 3, **options)
    assert_same(few, many)
    last = few["trajectory"].groupby("id").tail(1).filter(like="param").to_numpy()
    assert not np.array_equal(last[0], last[1])  # walkers have noise of their own


@pytest.mark.parametrize("sampler", ["NUTS", "RWMH", "BAOAB", "SGNHT", "pSGLD"])
def test_a_share_of_the_walkers_moves_as_in_the_whole_run(sampler):
    """Walkers 3-5 of 8 run alone as a share of the run (first_walker 3, as one replica of a
    distributed run holds them, tati/engine/distribute.py) are bitwise walkers 3-5 of the whole run."""
    options = for_sampler(sampler, **MODELS["potential"], sampler=sampler, number_walkers=8, every_nth=1, seed=3,
                          step_width=0.05, max_steps=24, max_tree_depth=3, burn_in_steps=0)
    simulation = tati.Simulation(**options)
    share = simulation.shard(3, 3).sample()
    whole = simulation.sample()
    for name in ("run_info", "trajectory"):
        mine = getattr(share, name).drop(columns=["time_per_nth_step"], errors="ignore")
        theirs = getattr(whole, name).drop(columns=["time_per_nth_step"], errors="ignore")
        theirs = theirs[theirs.id.between(3, 5)].assign(id=lambda frame: frame.id - 3)
        assert len(mine) == 3 * 24
        pd.testing.assert_frame_equal(mine.sort_values(["id", "step"], kind="stable").reset_index(drop=True),
                                      theirs.sort_values(["id", "step"], kind="stable").reset_index(drop=True),
                                      check_exact=True, obj=name)
