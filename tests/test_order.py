"""Order of accuracy on U(q) = 2 log cosh q (exact <q^2> = pi^2 / 12), with the measurement of
examples/order_of_accuracy.py: GLA1 at friction 1 is first order.

Step widths 0.025, 0.05, 0.1 with 200,000 chains over 60 time units each: every error is
more than 10 standard errors (asserted, as the fitting rule requires), and the fitted slope
lies in [0.7, 1.3]. The slope's own standard error (about 0.06 here) puts the band's edges
about 4 standard errors from the measured slope (0.92): false-failure rate below 1e-4.
BAOAB's error at friction 1 is about 30 times smaller (below 0.004 for h <= 0.6), so showing
its second order needs about 100 times the samples: that test is marked slow.
"""

import importlib.util
import pathlib

import pytest

from stats import seed
from tati.samplers import BAOAB, GLA1

path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "order_of_accuracy.py"
spec = importlib.util.spec_from_file_location("order_of_accuracy", path)
order = importlib.util.module_from_spec(spec)
spec.loader.exec_module(order)


def test_gla1_is_first_order():
    step_widths = (0.025, 0.05, 0.1)
    errors, standard_errors = zip(*(order.measure_error(GLA1(step_width=h, friction_constant=1.0, seed=seed(600)),
                                                        h, 200000, 60.0, seed(601)) for h in step_widths))
    slope, slope_error, used = order.fitted_slope(step_widths, errors, standard_errors)
    assert len(used) == 3, (errors, standard_errors)
    assert 0.7 <= slope <= 1.3, (slope, slope_error, errors)


@pytest.mark.slow
def test_baoab_is_second_order():
    """BAOAB at friction 1: slope in [1.6, 2.4] over h = 0.3 ... 0.6 with 1,000,000 chains over
    2000 time units each (standard errors about 6e-5, so every error is above 10 of them and
    the slope's own standard error is about 0.06). About 7 minutes on two cores: too long for
    the default suite, whose budget the other order test respects."""
    step_widths = (0.3, 0.4, 0.5, 0.6)
    errors, standard_errors = zip(*(order.measure_error(BAOAB(step_width=h, friction_constant=1.0, seed=seed(610)),
                                                        h, 1000000, 2000.0, seed(611)) for h in step_widths))
    slope, slope_error, used = order.fitted_slope(step_widths, errors, standard_errors)
    assert len(used) >= 3, (errors, standard_errors)
    assert 1.6 <= slope <= 2.4, (slope, slope_error, errors)

