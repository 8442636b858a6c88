"""The option table declares which samplers take each sampler option: it agrees with the
samplers' own parameters, an option of other samplers is refused in one line, and
`tati-sample --sampler NAME --help` lists that sampler's options only."""

import inspect

import pytest

import tati
from tati.config.building import ADAPTATION
from tati.cli.sample import main
from tati.engine.registry import sampler_names, samplers_taking, spec_of
from tati.errors import InputError
from tati.config.options import OPTIONS
from tati.samplers import get_sampler

GENERAL = {"inverse_temperature"}  # every sampler takes it: not declared per sampler


@pytest.mark.parametrize("sampler", sampler_names())
def test_the_table_declares_what_each_sampler_takes(sampler):
    """Its spec lists what its class takes: its parameters, the burn-in adaptations that its
    constructor takes by name (tati/config/building.py), for a Metropolis sampler the
    Simulation's warm start before its burn-in (tati/adaptation/warm_start.py; also a Langevin sampler
    taking adapt_mass, for its noise mass), and for one with
    friction, or overdamped (SGLD), the Simulation's measured step width (tati/adaptation/measured_width.py)."""
    cls = get_sampler(sampler)
    takes = set(cls.parameters) - GENERAL
    takes |= {name for name in ADAPTATION if name in inspect.signature(cls).parameters}
    if spec_of(sampler).metropolis or "adapt_mass" in takes:  # the Langevin samplers' with adapt_mass noise
        takes.add("warm_start")
    if "friction_constant" in takes or getattr(cls, "overdamped", False):
        takes.add("measure_step_width")
    declared = {option.name for option in OPTIONS if sampler in samplers_taking(option.name)}
    assert declared == takes == set(spec_of(sampler).option_names)


def test_an_option_of_other_samplers_is_refused_in_one_line():
    with pytest.raises(InputError, match=r"^friction_constant applies to GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT, "
                                         r"not to sampler HMC2: drop it"):
        tati.Simulation(sampler="HMC2", friction_constant=2.0)
    with pytest.raises(InputError, match="^max_tree_depth applies to NUTS, not to sampler BAOAB"):
        tati.Simulation(max_tree_depth=5)  # the default sampler
    tati.Simulation(sampler="hamiltonianmontecarlo_2ndorder", hamiltonian_dynamics_time=0.5)  # its own: taken


def test_a_samplers_own_options_come_from_its_registry_line(capsys):
    """pSGLD declares rmsprop_decay and rmsprop_epsilon in its spec (tati/engine/registry.py): they
    join the table in the registry's order of the sampler options (after SGHMC's, before HMC's),
    and --help, Simulation.help and the option checks know them."""
    assert [option.name for option in spec_of("pSGLD").declared_options] == ["rmsprop_decay", "rmsprop_epsilon"]
    names = [option.name for option in OPTIONS]
    at = names.index("rmsprop_decay")
    assert names[at - 1:at + 3] == ["mass_safety_factor", "rmsprop_decay", "rmsprop_epsilon", "hamiltonian_dynamics_time"]
    assert {"rmsprop_decay", "rmsprop_epsilon"} <= help_options(capsys, "--sampler", "pSGLD")
    assert "pSGLD: lambda of G" in tati.Simulation.help("rmsprop_epsilon")
    with pytest.raises(InputError, match="^rmsprop_decay applies to pSGLD, not to sampler BAOAB"):
        tati.Simulation(rmsprop_decay=0.9)
    with pytest.raises(InputError, match="^rmsprop_decay must be <= 1"):
        tati.Simulation(sampler="pSGLD", rmsprop_decay=2)


def help_options(capsys, *argv):
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return {word[2:] for word in capsys.readouterr().out.split() if word.startswith("--")}


def test_help_with_a_sampler_lists_its_options_only(capsys):
    everything = help_options(capsys)
    hmc = help_options(capsys, "--sampler", "HMC2")
    nuts = help_options(capsys, "--sampler=nuts")
    assert {"friction_constant", "hamiltonian_dynamics_time", "max_tree_depth"} <= everything
    assert {"hamiltonian_dynamics_time", "adapt_mass", "adapt_trajectory_length"} <= hmc
    assert not {"friction_constant", "max_tree_depth"} & hmc
    assert {"max_tree_depth", "adapt_mass"} <= nuts and not {"hamiltonian_dynamics_time", "adapt_trajectory_length"} & nuts
    assert {"step_width", "inverse_temperature", "seed"} <= hmc & nuts
