"""Do the walkers agree? The summary's lines on walkers hot, cold or far out from the others
(tati/diagnostics/outliers.py) and on R-hat and ESS over the walkers (tati/diagnostics/convergence.py,
imported only here and only when called, as it imports TensorFlow Probability)."""

import math

import numpy as np

from tati.diagnostics.summary.lines import hinted, wrapped

# Stan's rule (Vehtari et al. 2021, "Rank-normalization, folding, and localization"): use the
# draws when R-hat < 1.01 and the bulk ESS is above 100 per chain. Our ESS is of all walkers
# together (tfp's cross-chain estimate), so its bound is 100 times the number of walkers.
R_HAT_MAX = 1.01
ESS_PER_WALKER = 100
# The hint where only a longer run helps; convergence_lines puts in how much longer the ESS asks.
LONGER = "run longer (max_steps, burn_in_steps)"
# Added where mini-batches measured the width: their noise's heat asks for a mass and a friction that
# slow the walkers, per epoch alike for every batch size (breast cancer's 31-weight logistic
# regression: R-hat 1.18 after 6,400 epochs of BAOAB, where NUTS on the full data gives 1.003 in
# 2,000 steps; batches of 8, 32, 128 all R-hat 3.1-3.3 at 400 epochs; doc/benchmarks.md).
FULL_BATCH = ", or NUTS without batch_size"
# Walker means of a parameter further apart than this many of the walkers' largest own sd: modes.
SEPARATION = 6.0


def outlier_lines(outliers):
    """A line per walker hot, cold or far out after burn-in (walker_outliers,
    tati/diagnostics/outliers.py), its fix after a colon, or on a line of its own where it does not fit."""
    return [line for outlier in outliers for line in hinted("  " + outlier.text(), outlier.fix)]


def identified(o, groups):
    """The trajectory columns whose R-hat judges a network with hidden layers: its weights are
    not identified (hidden units can swap places and flip signs, so walkers in equally good
    modes disagree forever), the loss and the output layer's biases are. None (every parameter)
    for potentials and models without a hidden layer. `groups`: the parameter groups by path
    (layer/variable, the last layer last)."""
    if o["potential"] is not None or not groups:
        return None
    layers = list(dict.fromkeys(path.rsplit("/", 1)[0] for path in groups))
    if len(layers) < 2:
        return None
    biases = [column for path, columns in groups.items() if path.rsplit("/", 1)[0] == layers[-1]
              and path.rsplit("/", 1)[-1].startswith("bias") for column in columns]
    return ["loss"] + biases


def convergence_lines(trajectory, walkers, burn_in, hint=None, columns=None):
    """The R-hat/ESS line and its verdict, or one line saying there are too few rows. `columns`:
    the identified quantities a network is judged on (identified), or None for every parameter."""
    found = _convergence(trajectory, walkers, burn_in, columns)
    if found is None:
        return [f"  walkers not compared (R-hat, ESS): too few rows after burn_in_steps {burn_in}, "
                "or no parameter moved"]
    r_hat, ess, rows = found
    line = (f"  R-hat max {r_hat.max():.3f} ({r_hat.idxmax()}), ESS min {ess.min():.0f} "
            f"({ess.idxmin()}) over {walkers} walkers")
    if columns is not None:
        line += f" ({'loss, output biases' if len(columns) > 1 else 'loss'})"
    note = [] if columns is None else [
        "    weights not compared: hidden units can swap places and flip signs (not identified)"]
    need = ESS_PER_WALKER * walkers
    faults = ([f"R-hat > {R_HAT_MAX} (walkers disagree)"] if r_hat.max() > R_HAT_MAX else []) + (
        [f"ESS < {need} (too few independent draws)"] if ess.min() < need else [])
    hint = hint or "run longer (max_steps), or raise step_width"
    if ess.min() < need and hint.startswith("run longer"):  # ESS grows with the draws at best: a lower bound
        hint = f"run at least {_times(need / max(ess.min(), 1.0))} times longer" + hint[len("run longer"):]
    modes = _equal_modes(rows, r_hat) if faults else None
    if modes is not None:
        column, groups = modes
        apart = " | ".join(", ".join(str(walker) for walker in group) for group in groups)
        return [line, *wrapped(f"    walkers in separate modes of equal loss (its R-hat {r_hat['loss']:.3f}): "
                               f"{column} splits them {apart}"),
                "    running longer will not join them: break the symmetry (order the components, say)"] + note
    if faults:
        return [line] + hinted(f"    not converged: {', '.join(faults)}", hint) + note
    return [line, f"    ok: R-hat (between- over within-walker spread) < {R_HAT_MAX}, "
                  f"ESS (independent draws) > {need}"] + note


def _times(factor):
    """The factor rounded up to two significant digits, as the hint prints it (80, 1.3, 13000)."""
    scale = 10.0 ** (math.floor(math.log10(factor)) - 1)
    return f"{math.ceil(round(factor / scale, 9)) * scale:g}"


def _convergence(trajectory, walkers, burn_in, columns=None):
    """(r_hat, ess) Series by parameter and the loss (or by the `columns` given), and the rows
    compared, or None if burn-in leaves too few rows or nothing moved.
    Walkers whose rows are not equally many (HMC writes rows at each walker's own evaluation
    steps) are compared over their last rows, as many as the shortest has."""
    from tati.diagnostics.convergence import MIN_ROWS, convergence, equal_rows
    rows = equal_rows(trajectory, burn_in)
    counts = rows.groupby("id").size()
    if len(counts) < walkers or counts.min() < MIN_ROWS:
        return None
    if columns is None:  # every parameter and the log density, which sees every parameter at once
        names = list(rows.columns)
        columns = ["loss"] + names[names.index("loss") + 1:]
    table = convergence(rows, columns=columns)
    r_hat, ess = table["r_hat"].dropna(), table["ess"].dropna()
    if r_hat.empty or ess.empty:  # no parameter moved
        return None
    return r_hat, ess, rows


def _equal_modes(rows, r_hat):
    """(parameter, [walker groups]) where the walkers agree on the loss (its R-hat within R_HAT_MAX)
    but a parameter's walker means fall into groups SEPARATION of their own sds apart (the worst
    such parameter by R-hat): walkers in modes of the same depth, as a mixture's whose component
    labels swap, which no run length joins; else None. A walker drifting along a ridge is spread,
    not apart; a walker with fewer than ESS_PER_WALKER independent draws of the parameter (Stan's per
    chain) has not yet spread over its mode, so its sd does not measure the mode (2 walkers on
    60,000 points, 47 rows after a burn-in of one epoch: an output bias 6 sds apart, per walker ESS
    of a few, called modes no run joins)."""
    from tati.diagnostics.convergence import convergence
    if "loss" not in r_hat or r_hat["loss"] > R_HAT_MAX:
        return None
    for column in r_hat.drop("loss").sort_values(ascending=False, kind="stable").index:
        if r_hat[column] <= R_HAT_MAX:
            return None
        spread = rows.groupby("id")[column].agg(["mean", "std"]).sort_values("mean", kind="stable")
        cut = np.flatnonzero(np.diff(spread["mean"].to_numpy()) > SEPARATION * spread["std"].max())
        if len(cut):
            if min(convergence(own, columns=[column])["ess"].iloc[0] for _, own in rows.groupby("id")) < ESS_PER_WALKER:
                return None
            walkers = [int(walker) for walker in spread.index]
            bounds = [0, *(cut + 1), len(walkers)]
            return column, sorted((sorted(walkers[a:b]) for a, b in zip(bounds[:-1], bounds[1:])), key=min)
    return None


def convergence_line(trajectory, walkers, burn_in):
    """[one line]: the worst R-hat and the smallest ESS over all parameters, whichever parameters
    they belong to; [] if burn-in leaves too few rows to tell."""
    found = convergence_lines(trajectory, walkers, burn_in)
    return found[:1] if found[0].startswith("  R-hat") else []
