"""An option's record and the kinds that parse and check its values: no TensorFlow, and nothing
of tati but its errors, so that the registry (tati/engine/registry.py) can declare a sampler's
own options in its line and tati/config/options.py, which reads the registry, builds its table
from the same classes (and re-exports them).

A kind converts a Python value or a command-line string into the option's value, or raises an
InputError naming the option.
"""

import difflib
import math
import numbers
from dataclasses import dataclass

from tati.errors import InputError


class Kind:
    """Converts values of one option type; `metavar` is what --help shows. On the command line
    a flag alone means `bare` (None: it needs a value), and a kind with a `separator` also takes
    its items as separate words, joined with it (--hidden_dimension 8 8 as 8,8)."""
    metavar = "VALUE"
    bare = None
    separator = None

    def __call__(self, option, value):
        raise NotImplementedError


class Number(Kind):
    def __init__(self, integer=False, minimum=None, strict=False, maximum=None):
        self.integer, self.minimum, self.strict = integer, minimum, strict
        # Integers end up as TensorFlow int64 (steps, seeds of the stateless noise).
        self.maximum = maximum if maximum is not None else 2 ** 63 - 1 if integer else None
        self.metavar = "INT" if integer else "FLOAT"

    def __call__(self, option, value):
        text = value
        if isinstance(value, str):
            try:
                value = int(value) if self.integer else float(value)
            except ValueError:
                raise InputError(f"{option} must be {'an integer' if self.integer else 'a number'}, "
                                 f"got '{text}'") from None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InputError(f"{option} must be {'an integer' if self.integer else 'a number'}, got {text!r}")
        try:
            number = float(value)
        except OverflowError:  # an int beyond the range of floats
            number = math.inf if value > 0 else -math.inf
        if self.integer and math.isfinite(number) and not number.is_integer():
            raise InputError(f"{option} must be an integer, got {text!r}")
        if not math.isfinite(number) and not (self.integer and isinstance(value, numbers.Integral)):
            raise InputError(f"{option} must be finite, got {text!r:.60}")
        value = int(value) if self.integer else number
        if self.maximum is not None and value > self.maximum:
            raise InputError(f"{option} must be <= {self.maximum}, got {text!r:.60}")
        if self.minimum is not None and (value <= self.minimum if self.strict else value < self.minimum):
            relation = ">" if self.strict else ">="
            raise InputError(f"{option} must be {relation} {self.minimum:g}, got {text!r}")
        return value


class Optional(Kind):
    """None (or the string 'none') or a value of the wrapped kind."""

    def __init__(self, kind):
        self.kind, self.metavar = kind, kind.metavar
        self.bare, self.separator = kind.bare, kind.separator

    def __call__(self, option, value):
        if value is None or (isinstance(value, str) and value.lower() in ("none", "")):
            return None
        return self.kind(option, value)


class Text(Kind):
    def __init__(self, choices=None):
        self.choices = choices
        self.metavar = "{" + ",".join(choices) + "}" if choices else "TEXT"

    def __call__(self, option, value):
        if not isinstance(value, str):
            raise InputError(f"{option} must be a string, got {value!r:.60}")
        if self.choices and value not in self.choices:
            close = difflib.get_close_matches(value, self.choices, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise InputError(f"{option} '{value}' is unknown; choose one of {', '.join(self.choices)}{hint}")
        return value


class Boolean(Kind):
    metavar = "{true,false}"
    bare = "true"  # --overwrite alone

    def __call__(self, option, value):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
            return value.lower() in ("true", "1", "yes", "on")
        raise InputError(f"{option} must be true or false, got {value!r:.60}")


class BooleanOrAuto(Boolean):
    """true, false or "auto" (kept as the string: each sampler decides what it means); `words`
    adds further values kept as strings (adapt_mass's "noise")."""

    def __init__(self, words=()):
        self.words = ("auto",) + tuple(words)
        self.metavar = "{" + ",".join(self.words + ("true", "false")) + "}"

    def __call__(self, option, value):
        if isinstance(value, str) and value.lower() in self.words:
            return value.lower()
        try:
            return super().__call__(option, value)
        except InputError:
            raise InputError(f"{option} must be {', '.join(self.words)}, true or false, got {value!r:.60}") from None


class OrAuto(Kind):
    """"auto" (kept as the string: resolved when the run measures it) or a value of the wrapped kind."""

    def __init__(self, kind):
        self.kind, self.metavar = kind, "{auto," + kind.metavar + "}"
        self.bare, self.separator = kind.bare, kind.separator

    def __call__(self, option, value):
        if isinstance(value, str) and value.lower() == "auto":
            return "auto"
        try:
            return self.kind(option, value)
        except InputError as error:
            raise InputError(f"{error} (or auto)") from None


class ListOf(Kind):
    """A list; on the command line comma- or space-separated, e.g. --hidden_dimension 8,8 or 8 8."""
    separator = ","

    def __init__(self, kind):
        self.kind, self.metavar = kind, f"{kind.metavar},..."

    def __call__(self, option, value):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        try:
            items = list(value)
        except TypeError:
            raise InputError(f"{option} must be a list, got {value!r:.60}") from None
        return [self.kind(option, item) for item in items]


class Parameters(Kind):
    """A parameter vector, or in Python also one per walker; checked against the model."""
    metavar = "FLOAT,..."
    separator = ","

    def __call__(self, option, value):
        return ListOf(Number())(option, value) if isinstance(value, str) else value


class PythonObject(Kind):
    """Only through the Python interface (a callable, an array, a Keras model)."""
    metavar = None

    def __init__(self, check=None):
        self.check = check

    def __call__(self, option, value):
        return value if self.check is None or value is None else self.check(option, value)


class TextOrCallable(Text):
    """One of the names or, in Python, a callable."""

    def __call__(self, option, value):
        return value if callable(value) else super().__call__(option, value)


class RateOrSchedule(Number):
    """A positive number or, in Python, a Keras LearningRateSchedule (recognised by its class
    name, so that checking options needs no TensorFlow; tati/optimizers/schedules.py)."""

    def __init__(self):
        super().__init__(minimum=0, strict=True)

    def __call__(self, option, value):
        if any(cls.__name__ == "LearningRateSchedule" for cls in type(value).__mro__):
            return value
        return super().__call__(option, value)


POSITIVE = Number(minimum=0, strict=True)
NONNEGATIVE = Number(minimum=0)
POSITIVE_INT = Number(integer=True, minimum=1)
NONNEGATIVE_INT = Number(integer=True, minimum=0)


@dataclass(frozen=True)
class Option:
    """One option: its name, default, kind, group (doc/options.md's section, the CLI's group) and
    help. Which samplers take it is the registry's (`registry.samplers_taking(name)`; none: every
    run), not the option's."""
    name: str
    default: object
    kind: Kind
    group: str
    help: str

    @property
    def on_command_line(self):
        return not isinstance(self.kind, PythonObject)
