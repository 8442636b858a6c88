"""The registry (tati/engine/registry.py): every spec names a kernel class that exists and options
that the option table has; and a sampler added at run time, by its spec alone, runs wherever the
built-in ones do.

The toy is overdamped Langevin (SGLD's update, x a factor on the drift that it declares as its
own option) defined here and registered for the tests: with the factor 1 it draws SGLD's
numbers bit for bit (the noise is keyed by seed, step, variable and walker, not by the class), so
each path is checked against the built-in SGLD, not only for running. The mirrored run needs the
CPU split before TensorFlow starts: this file run as a script does it (`python
tests/engine/test_registry.py`), registering the toy first.
"""

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tati
from tati.engine import registry
from tati.engine.contract import FULL_BATCH, GRADIENT, KINDS, Spec, kernel_path, load_driver, load_kernel
from tati.engine.driver import Kernel
from tati.errors import InputError
from tati.engine.kernels import is_sampler, kind_of
from tati.config.options import BY_NAME, POSITIVE, Option
from tati.engine.registry import every_info
from tati.recording.columns import SGLD_INFO, Info
from tati.dynamics import splitting
from tati.samplers.base import SamplerBase


class Toy(SamplerBase):
    """q <- q - h x grad U(q) + sqrt(2 h / beta) G: SGLD with its drift scaled by x."""

    parameters = ("inverse_temperature", "toy_drift_factor")
    has_momentum = False
    info = SGLD_INFO

    def __init__(self, step_width=0.1, inverse_temperature=1.0, toy_drift_factor=1.0, seed=0, name=None, **kwargs):
        super().__init__(step_width, seed, name, dict(kwargs, inverse_temperature=inverse_temperature,
                                                      toy_drift_factor=toy_drift_factor))

    def update_step(self, gradient, variable, learning_rate):
        h = tf.cast(learning_rate, variable.dtype)
        beta = self._parameter("inverse_temperature", variable.dtype)
        factor = self._parameter("toy_drift_factor", variable.dtype)
        noise = tf.sqrt(2.0 * h / beta) * self._normal(variable)
        drift = self._velocity(self._force(gradient))
        # factor 1: SGLD's operations exactly (kick(q, g, h) = q - h g)
        drift = tf.where(tf.equal(factor, 1.0), drift, factor * drift)
        variable.assign(splitting.kick(tf.convert_to_tensor(variable), drift, h) + self._velocity(noise))
        self._report(None, None, noise)


TOY = Spec("Toy", "ToyOverdampedLangevin", kernel_path(Toy), aliases=("toy_langevin",), infos=(SGLD_INFO,),
           options=(Option("toy_drift_factor", 1.0, POSITIVE, "sampler", "Toy: the factor x on the drift."),))


def quartic(q):
    return 0.5 * tf.reduce_sum(q ** 2) + 0.1 * tf.reduce_sum(q ** 4)


RUN = dict(potential=quartic, initial_parameters=[0.3, -0.2, 0.1, 0.4], dtype="float64", number_walkers=4, seed=3,
           step_width=0.05, max_steps=6, every_nth=2)


def tables(result):
    return [frame.drop(columns="time_per_nth_step", errors="ignore").reset_index(drop=True)
            for frame in (result.run_info, result.trajectory, result.averages)]


def assert_same(first, second):
    for one, other in zip(tables(first), tables(second)):
        pd.testing.assert_frame_equal(one, other, check_exact=True)


@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry.unregister("Toy")


# -- the list ---------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", registry.specs(), ids=lambda spec: spec.name)
def test_every_spec_names_its_kernel_and_known_options(spec):
    cls = load_kernel(spec)
    assert kernel_path(cls) == spec.kernel and spec.kind in KINDS
    if isinstance(getattr(cls, "info", None), Info):  # what its rows have is declared (SGHMC's: a property)
        assert cls.info in spec.infos and set(spec.infos) <= set(every_info())
    assert not [name for name in spec.option_names if name not in BY_NAME]
    driver = load_driver(spec)  # the driver kernel it names, made on the loop's interface
    assert issubclass(driver, Kernel) and driver.steps_dtype in (tf.int32, tf.int64)
    assert registry.spec_of(spec.name.lower(), kinds="kernel") is spec
    assert all(registry.find(spelling.upper()) is spec for spec in registry.specs() for spelling in spec.spellings)


def test_lookups_and_their_refusals():
    assert registry.canonical_sampler("hamiltonianmontecarlo_2ndorder") == "HMC2"
    assert registry.samplers_where("metropolis", evaluates_target=False) == registry.samplers_where(kind="legs")
    with pytest.raises(InputError, match=r"^sampler 'BAOBA' is unknown; choose one of SGLD, .*\(did you mean 'BAOAB'\?\)$"):
        registry.spec_of("BAOBA")
    with pytest.raises(InputError, match="^sampler 'L-BFGS' is unknown"):  # an optimizer is no sampler
        registry.spec_of("L-BFGS")
    with pytest.raises(ValueError, match="'BAOAB' is already registered"):
        registry.register(Spec("BAOAB", "Other", "tati.samplers.sgld:SGLD"))


def test_a_kernel_is_known_by_its_spec():
    """Kind and sampling by the registry: tati's L-BFGS is full batch, Keras' own optimizer an
    optimizer of one gradient per step (no spec)."""
    import keras
    lbfgs = load_kernel(registry.spec_of("lbfgs", kinds="optimizer"))
    assert kind_of(lbfgs.__new__(lbfgs)) == FULL_BATCH
    adam = keras.optimizers.Adam()
    assert kind_of(adam) == GRADIENT and not is_sampler(adam) and registry.spec_of_kernel(adam) is None


# -- a sampler added by its spec alone ---------------------------------------------------------
def test_the_toy_is_a_sampler_with_its_own_option_while_registered(toy):
    assert "Toy" in registry.sampler_names() and registry.samplers_taking("toy_drift_factor") == ["Toy"]
    with pytest.raises(InputError, match="^toy_drift_factor applies to Toy, not to sampler BAOAB"):
        tati.Simulation(toy_drift_factor=2.0)
    registry.unregister("toy_langevin")
    try:
        assert "toy_drift_factor" not in BY_NAME
        with pytest.raises(InputError, match="^sampler 'Toy' is unknown"):
            tati.Simulation(sampler="Toy")
    finally:
        registry.register(toy)


def test_the_toy_samples_walkers_as_sgld_does_and_resumes(toy, tmp_path):
    """Simulation.sample, 4 walkers: SGLD's tables bit for bit at factor 1, others at factor 2;
    at factor 2 saved after 6 steps and restored, 6 more continue as 12 in one run."""
    simulation = tati.Simulation(sampler="toy_langevin", **RUN)
    result = simulation.sample()
    assert is_sampler(simulation.sampler) and kind_of(simulation.sampler) == GRADIENT
    assert_same(result, tati.Simulation(sampler="SGLD", **RUN).sample())
    path = str(tmp_path / "toy.npz")
    steeper = tati.Simulation(sampler="Toy", toy_drift_factor=2.0, save_model=path, **RUN).sample()
    assert not np.array_equal(tables(steeper)[1].to_numpy(), tables(result)[1].to_numpy())
    resumed = tati.Simulation(sampler="Toy", toy_drift_factor=2.0, restore_model=path, **RUN).sample()
    whole = tati.Simulation(sampler="Toy", toy_drift_factor=2.0, **dict(RUN, max_steps=12)).sample()
    for first, second, frame in zip(tables(steeper), tables(resumed), tables(whole)):
        joined = pd.concat([first, second], ignore_index=True)
        pd.testing.assert_frame_equal(joined, frame, check_exact=True)


def test_the_toy_runs_from_tati_sample(toy, tmp_path):
    from processes import tool_here
    from tati.cli.sample import main
    code, err, out = tool_here(main, ["--sampler", "Toy", "--help"])
    assert code == 0 and "--toy_drift_factor" in out and "--friction_constant" not in out
    trajectory = tmp_path / "trajectory.csv"
    code, err, out = tool_here(main, ["--sampler", "toy", "--toy_drift_factor", "0.5", "--max_steps", "4",
                                      "--every_nth", "2", "--trajectory_file", str(trajectory)])
    assert code == 0 and err == "", err
    assert out.startswith("tati-sample: 4 steps of Toy (step_width 0.1)")
    assert list(pd.read_csv(trajectory)["step"]) == [2, 4]


def test_the_toy_runs_mirrored_as_on_one_device():
    """4 walkers on 2 logical CPUs against one device, in a process of its own (below)."""
    process = subprocess.run([sys.executable, os.path.abspath(__file__)], capture_output=True, text=True,
                             timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert process.returncode == 0, process.stderr[-3000:]
    assert process.stdout.split() == ["OK"], process.stdout


def mirrored_run():
    """Split the CPU, register the toy, compare the tables of one device with 2 replicas'."""
    from tati.engine.distribute import split_cpu
    split_cpu(2)
    registry.register(TOY)
    options = dict(RUN, sampler="Toy", toy_drift_factor=0.5)
    one = tati.Simulation(**options).sample()
    many = tati.Simulation(**options, distribution="mirrored", devices=["CPU:0", "CPU:1"]).sample()
    assert_same(one, many)
    print("OK")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mirrored_run()
