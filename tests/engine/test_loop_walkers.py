"""Walkers at the cost of batched chains (issue #23, item 3): the compiled chunk that sample()
runs (tati/engine/loop.py, tati/samplers/proposal_kernel.py) is the same graph whatever the number of walkers.
The walker axis is a dimension of its tensors, never a Python loop that adds operations per
walker.

The operations counted are those of the chunk's traced graph and of every function in its
library: the bodies of its while loops, HMC's evaluation program and the gradients. One walker
may differ from several by a constant number of operations (without a walker axis, some
shapes are static and some broadcasts go), so the exact comparisons are between W > 1.
NUTS pads its walkers to whole SIMD registers of the CPU (samplers/proposal.py, `transition`;
4 float64 or 8 float32 walkers with AVX). So a walker count of 3 and one of two registers and
3 both carry the padding and have the same graph; two registers' worth needs no padding and
has fewer operations.
"""

import collections

import numpy as np
import pytest
import tensorflow as tf

import tati
from tati.engine.loop import steps_dtype
from tati.engine.running import Run
from tati.random.streams import values_per_register


def gaussian(theta):
    """A batched potential, [W, 3] -> [W]."""
    return 0.5 * tf.reduce_sum(theta * theta, axis=-1)


def simulation(sampler, target, walkers):
    extra = dict(hamiltonian_dynamics_time=0.3) if sampler.startswith("HMC") else {}
    if target == "potential":
        return tati.Simulation(potential=gaussian, potential_batched=True, dtype="float64",
                               initial_parameters=np.zeros((walkers, 3)), number_walkers=walkers,
                               sampler=sampler, step_width=0.05, seed=1, **extra)
    features = np.random.default_rng(0).normal(size=(6, 2))
    if target == "keras callable loss":  # a user's Keras model and loss function
        import keras
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        return tati.Simulation(model=model, loss=lambda labels, outputs: tf.reduce_mean((labels - outputs) ** 2),
                               dataset=(features, features[:, :1]), number_walkers=walkers, sampler=sampler,
                               step_width=0.05, seed=1, **extra)
    # The built-in network 2-4-1 on six points.
    return tati.Simulation(dataset=(features, np.sign(features[:, :1])), hidden_dimension=[4],
                           number_walkers=walkers, sampler=sampler, step_width=0.05, seed=1, **extra)


def operations(sampler, target, walkers):
    """{operation type: count} over the graph of sample()'s chunk and its function library."""
    sim = simulation(sampler, target, walkers)
    run = Run("sample", sim.sampler, sim)  # what sample() builds and calls
    graph = run.chunk.get_concrete_function(tf.TensorSpec([], steps_dtype(run.optimizer))).graph
    counts = collections.Counter(op.type for op in graph.get_operations())
    for function in graph.as_graph_def().library.function:  # loop bodies, nested programs, gradients
        counts.update(node.op for node in function.node_def)
    return counts


def grown(few, many):
    """The operation types whose count differs, {type: (few, many)}."""
    return {kind: (few[kind], many[kind]) for kind in set(few) | set(many) if few[kind] != many[kind]}


@pytest.mark.parametrize("target", ["potential", "network"])
@pytest.mark.parametrize("sampler", ["BAOAB", "SGLD", "GLA2", "HMC2"])
def test_chunk_graph_does_not_grow_with_walkers(sampler, target):
    four, sixteen = operations(sampler, target, 4), operations(sampler, target, 16)
    assert sum(four.values()) > 100  # the loop body's operations are counted, not only its shell
    assert grown(four, sixteen) == {}


@pytest.mark.parametrize("sampler", ["BAOAB", "HMC2"])
def test_a_keras_model_with_a_callable_loss_does_not_grow_with_walkers(sampler):
    """The user's loss is called once for all walkers (tf.vectorized_map), not once per walker."""
    target = "keras callable loss"
    four, sixteen = operations(sampler, target, 4), operations(sampler, target, 16)
    assert sum(four.values()) > 100  # the loop body's operations are counted, not only its shell
    assert grown(four, sixteen) == {}


def test_nuts_chunk_graph_does_not_grow_with_walkers():
    register = values_per_register(tf.float64)  # the potential's dtype
    few, many, whole = (operations("NUTS", "potential", w) for w in (3, 2 * register + 3, 2 * register))
    assert sum(few.values()) > 100
    assert grown(few, many) == {}  # both padded to whole registers
    assert sum(whole.values()) < sum(few.values())  # no padding at all
    # The network (float32; its loss is the only difference; TFP's tracing is the slow part of this file).
    register = values_per_register(tf.float32)
    assert grown(operations("NUTS", "network", 3), operations("NUTS", "network", 2 * register + 3)) == {}
