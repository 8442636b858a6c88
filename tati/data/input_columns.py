"""input_columns: features computed from the data's feature columns, as in the original TATi.

A list of terms, space- (or comma-) separated on the command line, e.g. "x1 x2 x1^2 sin(x2)".
Each term is one input of the network; it is a product (`*`) of factors, each factor

    xK        feature column K, counted from 1 (the original's bare "K" means the same)
    sin(xK)   cos(xK)
    any of these to a power ^n, n a positive integer: x1^2, sin(x2)^3

so "x1*x2" is the product of the first two columns. The terms are parsed here without
TensorFlow (`parse`), so a bad term is one line before anything starts; `apply` computes the
features once, in float64, when the data are loaded, and the network's input width is the
number of terms.
"""

import re

import numpy as np

from tati.errors import InputError

_FACTOR = re.compile(r"(?:(sin|cos)\(x?(\d+)\)|x?(\d+))(?:\^(\d+))?")
_HELP = "use xK, xK^n, sin(xK), cos(xK) or products such as x1*x2 (K a feature column counted from 1)"


def parse(value, option="input_columns"):
    """The terms as a list of strings, spaces removed and lower case; None for none or empty.
    InputError naming the first term that is not understood or appears twice."""
    if value is None:
        return None
    if isinstance(value, str):
        # Spaces around *, ^ and parentheses belong to the term: "x1 * x2" is one term.
        text = re.sub(r"\s*([*^])\s*|\s*(\()\s*|\s*(\))", r"\1\2\3", value.strip())
        terms = [t for t in re.split(r"[\s,]+", text) if t]
    else:
        try:
            terms = [str(t).strip() for t in value]
        except TypeError:
            raise InputError(f"{option} must be a string of terms such as 'x1 x2 x1^2' or a list of "
                             f"them, got {value!r:.60}") from None
    if not terms:
        return None
    terms = [re.sub(r"\s+", "", t).lower() for t in terms]
    for term in terms:
        factors(term, option)
    for i, term in enumerate(terms):
        if term in terms[:i]:
            raise InputError(f"{option} term '{term}' appears twice (the network would get the same input twice)")
    return terms


def factors(term, option="input_columns"):
    """[(function or None, column index from 0, power), ...] of one term; InputError if not a term."""
    result = []
    for factor in term.split("*"):
        match = _FACTOR.fullmatch(factor)
        if not match:
            raise InputError(f"{option} term '{term}' is not understood: {_HELP}")
        function, inner, bare, power = match.groups()
        column = int(inner if function else bare)
        if column < 1:
            raise InputError(f"{option} term '{term}': feature columns count from 1 (x1 is the first)")
        if power is not None and int(power) < 1:
            raise InputError(f"{option} term '{term}': the power must be a positive integer")
        result.append((function, column - 1, 1 if power is None else int(power)))
    return result


def check_columns(terms, columns, option="input_columns"):
    """InputError naming the first term that uses a feature column beyond `columns`."""
    for term in terms or []:
        largest = max(column for _, column, _ in factors(term, option)) + 1
        if largest > columns:
            raise InputError(f"{option} term '{term}' uses feature column {largest}, but the data have "
                             f"{columns} feature column{'s' if columns != 1 else ''}")


def apply(terms, features):
    """The [N, len(terms)] array of the terms evaluated on features [N, columns], in the features'
    dtype (computed in float64); InputError if a term names a missing column or overflows."""
    features = np.asarray(features)
    check_columns(terms, features.shape[1])
    x = features.astype(np.float64)
    columns = []
    with np.errstate(over="ignore", invalid="ignore"):
        for term in terms:
            value = np.ones(len(x))
            for function, column, power in factors(term):
                base = x[:, column] if function is None else getattr(np, function)(x[:, column])
                value = value * base ** power
            columns.append(value)
        result = np.stack(columns, axis=1).astype(features.dtype)
    bad = np.argwhere(~np.isfinite(result))
    if bad.size:
        row, j = bad[0]
        raise InputError(f"input_columns term '{terms[j]}' is not finite in {features.dtype.name} "
                         f"(first at data row {row})")
    return result
