"""BAOAB as a Keras 3 optimizer: standalone use, config round trip, saving with a model,
refusal of dynamics-changing base options, seeded reproducibility, and a step that reads each
parameter once however many variables it moves."""

import numpy as np
import keras
import pytest
import tensorflow as tf

from tati.errors import InputError
from tati.samplers import BAOAB, SGNHT, get_sampler
from tati.samplers.psgld import PSGLD


def test_apply_gradients_in_a_users_loop_is_reproducible():
    def trajectory(seed):
        v = tf.Variable([1.0, -2.0])
        w = tf.Variable([[0.5]])
        opt = BAOAB(step_width=0.1, friction_constant=2.0, seed=seed)
        out = []
        for _ in range(5):
            opt.apply_gradients([(v * 1.0, v), (w * 3.0, w)])
            out.append(np.concatenate([v.numpy(), w.numpy().ravel()]))
        return np.array(out)

    first, again, other = trajectory(3), trajectory(3), trajectory(4)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert np.all(np.isfinite(first))


def test_zero_temperature_limit_is_velocity_verlet():
    """With no friction the O step is the identity and each call B B A A is one leapfrog step:
    p^{n+1/2} = p^{n-1/2} - h q_n, q_{n+1} = q_n + h p^{n+1/2} (here from p^{-1/2} = 0).
    On q'' = -q its orbit is q_n = q_0 cos(n theta) + b sin(n theta), cos(theta) = 1 - h^2/2."""
    h, q0 = 0.375, 1.0  # h exact in float32, the dtype of Keras' learning-rate variable
    v = tf.Variable([q0], dtype=tf.float64)
    opt = BAOAB(step_width=h, friction_constant=0.0, seed=0)
    opt.build([v])
    opt.momenta[0].assign([0.0])
    positions = []
    for _ in range(20):
        positions.append(v.numpy()[0])
        opt.apply_gradients([(v * 1.0, v)])
    theta = np.arccos(1.0 - h * h / 2.0)
    q1 = q0 * (1.0 - h * h)
    b = (q1 - q0 * np.cos(theta)) / np.sin(theta)
    n = np.arange(20)
    np.testing.assert_allclose(positions, q0 * np.cos(n * theta) + b * np.sin(n * theta), rtol=0, atol=1e-12)


def test_config_round_trip():
    opt = BAOAB(step_width=0.05, friction_constant=3.0, inverse_temperature=2.0, seed=9)
    config = opt.get_config()
    clone = BAOAB.from_config(config)
    assert clone.get_config() == config
    assert config["step_width"] == pytest.approx(0.05) and config["friction_constant"] == 3.0
    assert config["inverse_temperature"] == 2.0 and config["seed"] == 9


@pytest.mark.parametrize("sampler", [BAOAB(step_width=0.01, friction_constant=1.0, seed=5),
                                     SGNHT(step_width=0.01, seed=5), PSGLD(step_width=0.001, seed=5)],
                         ids=["BAOAB", "SGNHT", "pSGLD"])
def test_keras_model_compiled_with_a_sampler_saves_and_loads(tmp_path, sampler):
    """In model.fit, over the model's several variables (SGNHT: one thermostat for all of them)."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)])
    model.compile(optimizer=sampler, loss="mse")
    x = np.random.default_rng(0).normal(size=(32, 2)).astype("float32")
    y = x[:, :1] - x[:, 1:]
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded.optimizer) is type(sampler)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    for a, b in zip(loaded.optimizer.variables, model.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("option,value", [("weight_decay", 0.1), ("clipnorm", 1.0), ("clipvalue", 1.0),
                                          ("global_clipnorm", 1.0), ("use_ema", True),
                                          ("gradient_accumulation_steps", 2)])
def test_dynamics_changing_base_options_are_refused(option, value):
    with pytest.raises(InputError, match=option):
        BAOAB(**{option: value})


@pytest.mark.parametrize("option,value", [("step_width", 0.0), ("step_width", -1.0),
                                          ("friction_constant", -0.5), ("inverse_temperature", 0.0),
                                          ("inverse_temperature", float("nan"))])
def test_bad_sampler_values_name_the_option(option, value):
    with pytest.raises(InputError, match=option):
        BAOAB(**{option: value})


def test_sampler_names_full_short_and_case_insensitive():
    assert get_sampler("baoab") is BAOAB and get_sampler("BAOAB") is BAOAB
    assert get_sampler("GeometricLangevinAlgorithm_2ndOrder").__name__ == "GLA2"
    assert get_sampler("stochasticgradientlangevindynamics").__name__ == "SGLD"
    assert get_sampler("NoUTurnSampler").__name__ == "NUTS"
    assert get_sampler("randomwalkmetropolishastings").__name__ == "RWMH"
    with pytest.raises(InputError, match="did you mean 'BAOAB'"):
        get_sampler("BAOBA")


def reads_per_step(optimizer, names):
    """How often one traced step of `optimizer` on four variables reads each named variable."""
    variables = [tf.Variable(tf.ones(shape)) for shape in ((3, 2), (2,), (2, 1), (1,))]
    optimizer.build(variables)
    step = tf.function(lambda: optimizer.apply([2.0 * v for v in variables], variables))
    graph = step.get_concrete_function().graph
    handles = {name: [inner for outer, inner in graph.captures if outer is getattr(optimizer, name).value.handle]
               for name in names}
    return {name: sum(1 for op in graph.get_operations()
                      if op.type == "ReadVariableOp" and any(op.inputs[0] is handle for handle in inner))
            for name, inner in handles.items()}


@pytest.mark.parametrize("sampler, names", [
    (BAOAB(step_width=0.1, seed=1), ("inverse_temperature", "friction_constant")),
    (get_sampler("SGHMC")(step_width=0.1, gradient_noise_estimator="adam", seed=1),
     ("inverse_temperature", "friction_constant", "first_moment_decay", "second_moment_decay"))])
def test_a_step_reads_each_parameter_once_whatever_the_number_of_variables(sampler, names):
    # each read is a graph operation (with its cast, and what is made of it) per variable otherwise
    assert reads_per_step(sampler, names) == {name: 1 for name in names}
