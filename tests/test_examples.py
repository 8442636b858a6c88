"""The examples run (with short settings) and say what they claim to (doc/examples.md).

Each example's main() runs in this process with the command line a user gives it (a new
process per example added TensorFlow's import, about 6 s each); sample_gaussian.py runs as a
user runs it, a script in a new process. With matplotlib installed the plots are written too;
without, the one-line hint is printed instead.
"""

import ast
import contextlib
import importlib.util
import io
import math
import pathlib
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from stats import seed, t_critical, z_critical

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
HINT = "install tati[plots] (matplotlib) for the figure"


def run(script, *args):
    """What the example prints: its main() with sys.argv the command line, in this process."""
    spec = importlib.util.spec_from_file_location(f"example_{script[:-3]}", EXAMPLES / script)
    module = importlib.util.module_from_spec(spec)
    out, argv, path = io.StringIO(), sys.argv, list(sys.path)
    sys.argv = [str(EXAMPLES / script), *args]
    sys.path.insert(0, str(EXAMPLES))  # as for a script: its folder first (loss_plane.py imports a sibling)
    try:
        with contextlib.redirect_stdout(out):
            spec.loader.exec_module(module)
            module.main()
    except SystemExit as stop:
        assert stop.code in (None, 0), f"{stop.code}\n{out.getvalue()[-2000:]}"
    finally:
        sys.argv, sys.path[:] = argv, path
    return out.getvalue()


def run_script(script, *args):
    """What the example prints, run as a user runs it: a script in a new process."""
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def check_plot(out, png):
    if HAS_MATPLOTLIB:
        assert f"wrote {png}" in out and png.stat().st_size > 10000, out
    else:
        assert HINT in out, out


def value(out, label):
    """The Python literal after `label` on its line."""
    line = next(line for line in out.splitlines() if line.startswith(label))
    return ast.literal_eval(line[len(label):].split("(")[0].strip())


@pytest.mark.statistical
def test_sample_gaussian(tmp_path):
    """The sampled covariance is within the Monte Carlo tolerance of the exact one: each entry
    within t * se, se from 20 batch means (19 dof), false-failure budget 1e-3 over 3 entries."""
    png = tmp_path / "gaussian.png"
    out = run_script("sample_gaussian.py", "--steps", "3000", "--seed", str(seed(700)), "--plot", str(png))
    exact, sampled = value(out, "exact covariance:"), value(out, "sampled covariance:")
    standard_error = value(out, "standard error:")
    assert exact == [[1.0, 1.8], [1.8, 4.0]]
    limit = t_critical(1e-3, 19, tests=3)
    for i, j in ((0, 0), (0, 1), (1, 1)):
        assert 0 < standard_error[i][j] < 0.3 * exact[i][i], standard_error
        assert abs(sampled[i][j] - exact[i][j]) <= limit * standard_error[i][j], (i, j, out)
    check_plot(out, png)


@pytest.mark.statistical
def test_network_posterior(tmp_path):
    """Writes the three tables; the kinetic energy readings agree with equipartition N / (2 beta)."""
    png = tmp_path / "network.png"
    out = run("network_posterior.py", "--steps", "500", "--out", str(tmp_path), "--plot", str(png))
    for name in ("run", "trajectory", "averages"):
        assert (tmp_path / f"{name}.csv").exists()
    match = re.search(r"([\d.]+) \+- ([\d.]+) over \d+ readings; equipartition N / \(2 beta\) = ([\d.]+)", out)
    assert match, out
    mean, standard_error, equipartition = map(float, match.groups())
    assert equipartition == 33 / 2000
    assert abs(mean - equipartition) <= z_critical(1e-3) * standard_error, out
    check_plot(out, png)


SLOPE = re.compile(r"^(\w+): slope \(order\) ([\d.]+) \+- ([\d.]+), expected (\d)", re.M)


@pytest.mark.statistical
@pytest.mark.slow
def test_order_of_accuracy_slopes():
    """SGLD and GLA1 are first order and GLA2 second order: each fitted order within 3 of its
    standard errors of the documented one (100,000 chains, 400,000 for GLA2, over 30 time units:
    standard errors about 0.1, 0.1 and 0.4). Slow (about 27 s): tests/samplers/test_order.py checks the
    orders in the default run; this checks the example's own fit."""
    out = run("order_of_accuracy.py", "--samplers", "SGLD,GLA1,GLA2", "--chains", "100000",
              "--time", "30", "--no-exact", "--seed", str(seed(710)))
    slopes = {name: (float(p), float(se), int(order)) for name, p, se, order in SLOPE.findall(out)}
    assert set(slopes) == {"SGLD", "GLA1", "GLA2"}, out
    for name, (p, se, order) in slopes.items():
        assert order == {"SGLD": 1, "GLA1": 1, "GLA2": 2}[name]
        assert se < (0.25 if order == 1 else 0.8), (name, p, se)
        assert abs(p - order) <= 3 * se, (name, p, se)


@pytest.mark.statistical
def test_order_of_accuracy_quick_and_baoab(tmp_path):
    """The smoke run prints a slope or an explanation for every sampler (never nan); BAOAB's
    error is below its Monte Carlo resolution, and its measurements agree with the exact values
    of the discrete chain (5 comparisons, budget 1e-3)."""
    png = tmp_path / "order.png"
    out = run("order_of_accuracy.py", "--quick", "--seed", str(seed(720)), "--plot", str(png))
    assert "nan" not in out
    for name in ("SGLD", "GLA1", "GLA2", "BAOAB"):
        assert re.search(rf"^{name}: (slope \(order\) [\d.]+ \+- [\d.]+|no slope: )", out, re.M), (name, out)
    assert "BAOAB: no slope: the error is below the Monte Carlo resolution" in out, out
    agreement = re.search(r"\(\|measured - exact\| <= ([\d.]+) se\)", out)
    assert agreement and float(agreement.group(1)) <= z_critical(1e-3, tests=5), out
    exact_slope = re.search(r"transfer operator, last column\) has slope ([\d.]+)", out)
    assert exact_slope and abs(float(exact_slope.group(1)) - 2) < 0.1, out
    check_plot(out, png)


@pytest.mark.statistical
def test_choosing_a_sampler(tmp_path):
    """Reduced run: HMC2 and NUTS, adapting their metrics, give the most independent draws per
    evaluation (at full length 375 and 128 against at most 24, doc/choosing_a_sampler.md) and
    their sampled standard deviations are right within 10% (about 6 of their standard errors)."""
    png = tmp_path / "choose.png"
    out = run("choosing_a_sampler.py", "--draws", "600", "--burn-in", "500", "--seed", str(seed(750)),
              "--plot", str(png))
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.split() and line.split()[0] in ("BAOAB", "HMC2", "NUTS", "RWMH")}
    per_evaluation = {name: float(values[3]) for name, values in rows.items()}
    assert set(sorted(per_evaluation, key=per_evaluation.get)[-2:]) == {"HMC2", "NUTS"}, per_evaluation
    assert float(rows["NUTS"][5]) < 0.1 and float(rows["HMC2"][5]) < 0.1, rows
    check_plot(out, png)


MIXTURE_Z = re.compile(r"^SGHMC, (B-hat = 0|adam_centered): \|mean - NUTS's\| / combined mcse = "
                       r"([\d.]+) \(mu1\), ([\d.]+) \(mu2\)", re.M)
MIXTURE_ROW = re.compile(r"^(NUTS|SGHMC, B-hat = 0|SGHMC, adam_centered) +(\d+) +(\d+) ", re.M)


@pytest.mark.statistical
def test_sghmc_mixture(tmp_path):
    """Reduced run (2000 points per component; SGHMC 4 walkers x 1500 steps, NUTS 500 steps,
    200 burn-in): each SGHMC variant's posterior means of mu1 and mu2 agree with NUTS's within
    z = 3.5 (false-failure budget 1e-3 over the 4 comparisons) of the combined Monte Carlo
    standard error sqrt(mcse_SGHMC^2 + mcse_NUTS^2), mcse = sd / sqrt(effective samples), with
    at least 50 effective samples each so that the errors mean something."""
    png = tmp_path / "mixture.png"
    out = run("sghmc_mixture.py", "--quick", "--seed", str(seed(760)), "--plot", str(png))
    effective = {name: int(n) for name, _, n in MIXTURE_ROW.findall(out)}
    assert len(effective) == 3 and min(effective.values()) >= 50, out
    distances = MIXTURE_Z.findall(out)
    assert {name for name, _, _ in distances} == {"B-hat = 0", "adam_centered"}, out
    limit = z_critical(1e-3, tests=4)
    for name, mu1, mu2 in distances:
        assert float(mu1) <= limit and float(mu2) <= limit, (name, mu1, mu2, out)
    check_plot(out, png)


REGRESSION_T = re.compile(r"^(B-hat = 0|batch|adam_centered) +(\d+) +([\d.]+) +\[([\d.]+), ([\d.]+)\]", re.M)
REGRESSION_RATIO = re.compile(r"^(batch|adam_centered) +([\d.]+) +at the end: ", re.M)


@pytest.mark.statistical
@pytest.mark.slow  # for the suite's time: the estimators' own tests are in tests/samplers/test_sghmc_noise.py
def test_sghmc_regression_temperature(tmp_path):
    """Reduced run (100 walkers x 3000 steps, the first 1000 left out, B-hat = 0, batch and
    adam_centered): with each estimator |T_0.99 - 0.99| is smaller than with B-hat = 0 by more
    than the widths of the two 99% Clopper-Pearson intervals together (issue 20's acceptance;
    measured: 0.0650 against 0.0072 (batch) and 0.0032 (adam_centered), widths 0.0194, 0.0097
    and 0.0085). The estimate V-hat of the mini-batch gradient variance, over the run: within
    20% of the exact one for adam_centered (measured 1.051), and for batch within its own
    sampling error: its 40 estimates after burn-in are shared by the walkers (the same K = 10
    batches), each with a relative error of at most sqrt(2 / (K - 1)) = 0.47, so their mean is
    within 3.29 x 0.47 / sqrt(40) = 0.25 of 1 (false-failure budget 1e-3; measured 1.027)."""
    png = tmp_path / "regression.png"
    out = run("sghmc_regression.py", "--walkers", "100", "--steps", "3000", "--burn_in", "1000",
              "--estimators", "none,batch,adam_centered", "--seed", str(seed(770)), "--plot", str(png))
    rows = {name: (int(n), float(t), float(low), float(high)) for name, n, t, low, high in REGRESSION_T.findall(out)}
    assert set(rows) == {"B-hat = 0", "batch", "adam_centered"}, out
    n0, t0, low0, high0 = rows["B-hat = 0"]
    for estimator in ("batch", "adam_centered"):
        n1, t1, low1, high1 = rows[estimator]
        assert min(n0, n1) >= 2000, out
        assert abs(t0 - 0.99) - abs(t1 - 0.99) > (high0 - low0) + (high1 - low1), (estimator, out)
    ratios = {name: float(ratio) for name, ratio in REGRESSION_RATIO.findall(out)}
    assert 0.8 < ratios["adam_centered"] < 1.2, out
    assert abs(ratios["batch"] - 1.0) < z_critical(1e-3) * math.sqrt(2 / 9) / math.sqrt(40), out
    check_plot(out, png)


def test_bayesian_regression_1d(tmp_path):
    """Reduced run (MAP, the deep ensemble and HMC2 at a quarter of its steps): the posterior's
    95% band widens away from the data (far / near width > 2: measured 3.06, 3.30 at full length)
    while the MAP network's, which knows only its noise, does not (< 1.5; measured 1.40), and away
    from the data the ensemble's band is wider than its members' own on average (measured 1.051:
    the mixture adds their disagreement; issue 19). Not asserted: wider than its widest member's
    (measured 0.917, 0.90-0.93 over 6 seeds; the mixture's variance mean(v_i) + var(mu_i) exceeds
    max(v_i) only where the members' means disagree more than their variances differ, and these
    members learn nearly the same function; doc/examples.md)."""
    png = tmp_path / "bands.png"
    out = run("bayesian_regression_1d.py", "--quick", "--methods", "MAP,ensemble,HMC2", "--sweep", "",
              "--plot", str(png))
    assert value(out, "widening HMC2:") > 2.0, out
    assert value(out, "widening MAP:") < 1.5, out
    assert value(out, "widening HMC2:") > value(out, "widening MAP:") + 1.0, out
    assert value(out, "ensemble band over its members' mean band away from the data:") > 1.0, out
    check_plot(out, png)


@pytest.mark.statistical
def test_eight_schools(tmp_path):
    """Reduced run (400 + 400 steps): the centered model's warm start finds no mode and its walkers
    move (before, L-BFGS left them at log tau = -31, each parameter's sd 1e-10), missing log tau's
    lower tail (its sd below the non-centered one's: 0.76 against 1.17 at full length) with more
    divergences; the non-centered model's mu within 1.0 of Stan's 4.4 (about 6 of its Monte Carlo
    standard errors at 1,600 draws, sd 3.3 and ESS above 400)."""
    png = tmp_path / "schools.png"
    out = run("eight_schools.py", "--burn-in", "400", "--draws", "400", "--seed", str(seed(760)), "--plot", str(png))
    centered, noncentered = out.split("non-centered:")
    assert "found no mode" in centered and "found no mode" not in noncentered, out

    def number(text, label, at=0):
        return float(re.search(label + r"[^\d-]*(-?[\d.]+)(?:, sd (-?[\d.]+))?", text).groups()[at])

    assert number(centered, "log_tau: mean", 1) > 0.3, out
    assert number(centered, "log_tau: mean", 1) < number(noncentered, "log_tau: mean", 1), out
    assert number(centered, "divergent transitions after burn-in:") > number(noncentered, "divergent transitions after burn-in:"), out
    assert abs(number(noncentered, "mu: mean") - 4.4) < 1.0 and number(noncentered, "largest R-hat:") < 1.05, out
    check_plot(out, png)


@pytest.mark.statistical
def test_count_regression(tmp_path):
    """Reduced run (150 + 150 NUTS steps) on negative binomial counts: the Poisson run says its counts
    vary more than Poisson's, naming negative_binomial; Poisson's 95% band covers fewer held-out counts
    than the binomial bound below 0.95 (two-sided, false-failure rate 1e-3 over 400 points; measured
    0.865), the negative binomial's at least that many (0.99), and its held-out density per point is higher
    (-2.24 against -2.59)."""
    png = tmp_path / "counts.png"
    out = run("count_regression.py", "--quick", "--plot", str(png))
    assert len(re.findall(r"likelihood poisson: the counts vary [\d.]+ times .* use likelihood negative_binomial",
                          out)) == 1, out
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in out.splitlines()
            if line.startswith(("poisson ", "negative_binomial "))}
    low = binom.ppf(5e-4, 400, 0.95) / 400
    assert rows["poisson"][1] < low <= rows["negative_binomial"][1], out
    assert rows["negative_binomial"][0] > rows["poisson"][0], out
    check_plot(out, png)


@pytest.mark.statistical
def test_robust_regression(tmp_path):
    """Reduced run (150 + 250 NUTS steps) on a sine with 8% gross outliers: the heteroscedastic Gaussian run
    names its outliers and its held-out labels beyond the predictive's tails, each with student_t as the
    cure (once each); student_t's held-out density per point is higher (measured -0.49 against -0.99) and
    its mean nearer the true sin(2x) (rms 0.11 against 0.25)."""
    png = tmp_path / "robust.png"
    out = run("robust_regression.py", "--quick", "--plot", str(png))
    for line in (r"likelihood heteroscedastic_gaussian: \d+ of 120 residuals at the warm start's end lie beyond 4 sd "
                 r".* use likelihood student_t",
                 r"predictive: \d+ of 400 held-out labels lie beyond the predictive's 99.98% band, .* likelihood "
                 r"heteroscedastic_gaussian's tails are too light for these data: use likelihood student_t"):
        assert len(re.findall(line, out)) == 1, out
    rows = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in out.splitlines()
            if line.startswith(("heteroscedastic_gaussian ", "student_t "))}
    assert rows["student_t"][0] > rows["heteroscedastic_gaussian"][0], out
    assert rows["student_t"][1] < rows["heteroscedastic_gaussian"][1], out
    check_plot(out, png)


@pytest.mark.statistical
def test_bayesian_diabetes(tmp_path):
    """Reduced run on scikit-learn's diabetes data (MAP, ensemble, SWAG and HMC2 with --quick;
    NUTS only in the full run, for time). Every method's test MSE is below the variance of the
    test targets, i.e. better than predicting their mean (measured 0.49-0.68 against 1.003 over
    6 seeds); HMC2's test log predictive density per point is at least the MAP network's minus
    0.05 (measured: HMC2 -1.017 to -1.031, MAP -1.38 to -2.19; 0.05 is more than 5 times HMC2's
    spread over the seeds) and above the baseline N(training mean, training variance)'s -1.421;
    and HMC2's 95% band covers at least binom.ppf(1e-3, 88, 0.95) = 76 of the 88 test points
    (false-failure budget 1e-3 for a calibrated band; measured 85-86)."""
    pytest.importorskip("sklearn")
    png, csv = tmp_path / "diabetes", tmp_path / "diabetes.csv"
    out = run("bayesian_diabetes.py", "--quick", "--methods", "MAP,ensemble,SWAG,HMC2", "--seed", str(seed(780)),
              "--plot", str(png), "--table", str(csv))
    variance = float(re.search(r"variance of the test targets ([\d.]+)", out).group(1))
    baseline = float(re.search(r"baseline .*test lpd per point (-?[\d.]+)", out).group(1))
    rows = {name: (float(mse), float(lpd), float(coverage)) for name, mse, lpd, coverage in
            re.findall(r"^(\w+): test MSE ([\d.]+), test lpd per point (-?[\d.]+), coverage ([\d.]+)$", out, re.M)}
    assert set(rows) == {"MAP", "ensemble", "SWAG", "HMC2"}, out
    assert abs(variance - 1.003) < 1e-3, out  # the fixed split
    for name, (mse, _, _) in rows.items():
        assert mse < variance, (name, out)
    assert rows["HMC2"][1] >= rows["MAP"][1] - 0.05, out
    assert rows["HMC2"][1] > baseline, out
    assert round(rows["HMC2"][2] * 88) >= binom.ppf(1e-3, 88, 0.95), out
    table = pd.read_csv(csv, index_col="method")
    assert list(table.index) == ["MAP", "ensemble", "SWAG", "HMC2"]
    assert np.allclose(table["test MSE"], [rows[n][0] for n in table.index], atol=1e-4)
    for name in ("traces", "autocorrelation", "marginals", "residuals"):
        check_plot(out, pathlib.Path(f"{png}_{name}.png"))


def test_bayesian_diabetes_without_scikit_learn():
    """Without scikit-learn the example stops with one line naming the extra."""
    code = ("import runpy, sys; sys.modules['sklearn'] = None; sys.argv = ['bayesian_diabetes.py']; "
            f"runpy.run_path({str(EXAMPLES / 'bayesian_diabetes.py')!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.strip().splitlines() == [
        "bayesian_diabetes.py needs scikit-learn for its data: pip install tati[examples]"], done.stderr


@pytest.mark.statistical
def test_model_comparison(tmp_path):
    """Reduced run (--quick: 300 + 300 NUTS steps, 4 walkers) of PSIS-LOO on three models of the diabetes
    data. LOO's elpd per point estimates what the 88 held-out points measure: each model's difference
    within 4 combined standard errors (LOO's, and the held-out mean's over its points; three models,
    false failure about 2e-4; measured differences 0.011-0.048 against tolerances 0.15-0.32); both
    rank the model whose noise is fixed too wide (sd 1 against the data's 0.7) last."""
    pytest.importorskip("sklearn")
    pytest.importorskip("arviz")
    png = tmp_path / "ppc.png"
    out = run("model_comparison.py", "--quick", "--seed", str(seed(790)), "--plot", str(png))
    rows = {name: tuple(map(float, numbers)) for name, *numbers in re.findall(
        r"^(.+): elpd_loo (-[\d.]+) \+- ([\d.]+) per point .* held out (-[\d.]+) \+- ([\d.]+) per point", out, re.M)}
    assert set(rows) == {"linear, noise sd 1", "linear, learned noise", "network"}, out
    for name, (loo, loo_error, held_out, held_out_error) in rows.items():
        assert abs(loo - held_out) < 4.0 * math.hypot(loo_error, held_out_error), (name, out)
    assert min(rows, key=lambda name: rows[name][0]) == "linear, noise sd 1", out
    assert min(rows, key=lambda name: rows[name][2]) == "linear, noise sd 1", out
    table = out.split("weight\n")[1].splitlines()[:3]  # az.compare's, best first
    assert table[2].startswith("linear, noise sd 1") and table[2].split()[4] == "2", out
    check_plot(out, png)


def test_loss_plane(tmp_path):
    """The plane through three fitted solutions reproduces their losses exactly (issue 19), and
    each straight segment between two of them crosses a barrier more than 1 above its ends (the
    solutions lie in separate basins, as the essay found for two of its three)."""
    png = tmp_path / "plane.png"
    out = run("loss_plane.py", "--points", "21", "--steps", "1500", "--plot", str(png))
    assert "plane reproduces the three losses exactly: True" in out, out
    barriers = [float(b) for b in re.findall(r"barrier (-?[\d.]+) above the higher end", out)]
    assert len(barriers) == 3 and min(barriers) > 1.0, out  # measured 154-532: three separate basins
    check_plot(out, png)
