"""fix_parameters: which parameters stay at given values, in the original TATi's syntax.

    "layer1/weights=0.1;output/biases=0"     every weight of the first hidden layer 0.1, ...
    "output/weights=0.5,-0.5;weight3=2"      a group's values one by one; single parameters
    "param0=1.5"                             a potential's parameter by its column name

Groups of the built-in network: layerK/weights, layerK/biases (K = 1, 2, ... for the hidden
layers) and output/weights, output/biases; single parameters by their trajectory column
(weight7, bias2, param0). A value is one number for the whole group or one per member.
"""

import math

from tati.errors import InputError


def parse_fixed(spec, parameter_names, groups):
    """{index: value} of the parameters to fix (groups: name -> member column names);
    InputError naming the faulty part otherwise."""
    if spec is None:
        return {}
    index = {name: i for i, name in enumerate(parameter_names)}
    groups = {group: [index[name] for name in members] for group, members in groups.items()}
    groups.update({name: [i] for name, i in index.items()})
    fixed = {}
    for part in (p.strip() for p in spec.split(";")):
        if not part:
            continue
        name, equals, text = (piece.strip() for piece in part.partition("="))
        if not equals or not name or not text:
            raise InputError(f"fix_parameters: '{part}' is not NAME=VALUE")
        if name not in groups:
            known = ", ".join(list(groups)[:8])
            raise InputError(f"fix_parameters: '{name}' is not a parameter or group (e.g. {known})")
        try:
            values = [float(v) for v in text.split(",")]
        except ValueError:
            raise InputError(f"fix_parameters: value '{text}' of {name} is not a number") from None
        if not all(math.isfinite(v) for v in values):
            raise InputError(f"fix_parameters: value '{text}' of {name} is not finite")
        members = groups[name]
        if len(values) == 1:
            values = values * len(members)
        if len(values) != len(members):
            raise InputError(f"fix_parameters: {name} has {len(members)} parameters but "
                             f"{len(values)} values were given")
        twice = [i for i in members if i in fixed and fixed[i] != values[members.index(i)]]
        if twice:
            raise InputError(f"fix_parameters: {parameter_names[twice[0]]} is given two values "
                             f"({fixed[twice[0]]:g} and {values[members.index(twice[0])]:g})")
        fixed.update(zip(members, values))
    return fixed
