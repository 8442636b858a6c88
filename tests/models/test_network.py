"""The built-in network (tati/models/mlp.py) against a numpy forward pass of the same flat
parameter layout (all weight matrices layer by layer, row-major [fan_in, fan_out], then all
biases), per walker; its initial weights Glorot-uniform with seed + walker and zero biases;
its parameter groups; its mean-squared loss."""

import numpy as np
import pytest
import tensorflow as tf

from tati.models import MLP


def numpy_network(theta, features, shapes, activations):
    sizes = [a * b for a, b in shapes]
    weights = np.split(theta[:sum(sizes)], np.cumsum(sizes)[:-1])
    biases = np.split(theta[sum(sizes):], np.cumsum([b for _, b in shapes])[:-1])
    h = features
    for w, b, (fan_in, fan_out), f in zip(weights, biases, shapes, activations):
        h = f(h @ w.reshape(fan_in, fan_out) + b)
    return h


def test_outputs_match_a_numpy_forward_pass_per_walker():
    model = MLP(3, 2, hidden_dimension=[4, 5], hidden_activation="tanh", output_activation="linear",
                dtype="float64", walkers=3, seed=7)
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(3, model.num_parameters))
    model.set_parameters(theta)
    features = rng.normal(size=(11, 3))
    outputs = model.outputs(tf.constant(features)).numpy()
    shapes = [(3, 4), (4, 5), (5, 2)]
    for walker in range(3):
        expected = numpy_network(theta[walker], features, shapes, [np.tanh, np.tanh, lambda x: x])
        np.testing.assert_allclose(outputs[walker], expected, rtol=1e-12, atol=1e-14)
    labels = rng.normal(size=(11, 2))
    losses = model.loss(tf.constant(features), tf.constant(labels)).numpy()
    np.testing.assert_allclose(losses, ((outputs - labels) ** 2).mean(axis=(1, 2)), rtol=1e-12)


def test_initial_parameters_are_glorot_weights_and_zero_biases_per_walker():
    model = MLP(2, 1, hidden_dimension=[8], seed=3, dtype="float64", walkers=2)
    theta = model.get_parameters()
    assert model.num_parameters == 2 * 8 + 8 * 1 + 8 + 1
    first = model.parameter_names.index("bias0")
    assert np.all(theta[:, first:] == 0.0)
    bounds = np.concatenate([np.full(16, np.sqrt(6 / 10)), np.full(8, np.sqrt(6 / 9))])
    assert np.all(np.abs(theta[:, :first]) <= bounds)
    assert not np.array_equal(theta[0], theta[1])  # walker 1 draws with seed + 1
    np.testing.assert_array_equal(MLP(2, 1, hidden_dimension=[8], seed=4, dtype="float64").get_parameters()[0],
                                  theta[1])


def test_parameter_groups_name_every_tensor_in_order():
    model = MLP(2, 3, hidden_dimension=[4], seed=0)
    groups = model.parameter_groups()
    assert list(groups) == ["layer1/weights", "layer1/biases", "output/weights", "output/biases"]
    assert [len(v) for v in groups.values()] == [8, 4, 12, 3]
    assert sum(groups.values(), []) == [n for n in model.parameter_names if n.startswith("weight")][:8] + \
        [f"bias{i}" for i in range(4)] + [f"weight{i}" for i in range(8, 20)] + [f"bias{i}" for i in range(4, 7)]


def test_unknown_activation_is_refused_in_one_line():
    from tati.errors import InputError
    with pytest.raises(InputError, match="hidden_activation 'swish' is unknown"):
        MLP(2, 1, hidden_dimension=[3], hidden_activation="swish")
