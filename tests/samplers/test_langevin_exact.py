"""Exact stationary covariance of the linear Langevin schemes on a correlated 2-D Gaussian.

Target: standard deviations 1 and 2, correlation 0.9; U(x) = x^T A x / 2 with A the inverse
covariance. For SGLD, GLA1, GLA2, BAOAB and SGHMC (constant B-hat), at two step widths and
frictions 1 and 10, the discrete scheme's exact stationary covariance comes from the discrete
Lyapunov equation on the scheme's own update matrices (langevin_harness.py). K = 32
independent chains (rows of one variable) start at exact draws of it; each chain's second
moments over its run are one estimate; the test is a Student-t test across chains.

False-failure budget: 1e-3 for the whole file, split by Bonferroni over every asserted
entry (covariance entries of positions and momenta, and the mean kinetic energy).
A negative control checks the test has the power to reject a wrong scheme.
"""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from langevin_harness import exact_draws, linear_scheme, run_standalone, stationary
from stats import seed, t_critical
from targets import A
from tati.samplers import get_sampler

CHAINS, STEPS, THIN = 32, 6000, 3
STEP_WIDTHS = {1.0: (0.1, 0.5), 10.0: (0.05, 0.15)}
SECOND_ORDER = ("GLA1", "GLA2", "BAOAB", "SGHMC")
CASES = ([("SGLD", h, 0.0, 1.0) for h in (0.05, 0.2)]
         + [(name, h, gamma, 1.0) for name in SECOND_ORDER for gamma, hs in STEP_WIDTHS.items() for h in hs]
         + [(name, 0.2, 1.0, beta) for name in ("SGLD", "GLA2", "BAOAB") for beta in (0.5, 4.0)])
# entries per case: 3 position (SGLD) or 10 (q, p) covariance entries plus the kinetic energy
TESTS = sum(3 if c[0] == "SGLD" else 11 for c in CASES) + 1
ALPHA = 1e-3


def sample(name, h, gamma, beta, scheme_name=None, run_seed=0):
    """Per-chain second moments [K, n, n], mean kinetic energy per chain and step, and the
    exact stationary covariance / kinetic energy of `scheme_name` (default: the sampler's)."""
    step, report = linear_scheme(scheme_name or name, A, h, gamma, beta)
    sigma = stationary(step)
    rng = np.random.default_rng(run_seed)
    state = exact_draws(sigma, CHAINS, rng)
    d = A.shape[0]
    cls = get_sampler(name)
    options = {"step_width": h, "inverse_temperature": beta, "seed": run_seed}
    if "friction_constant" in cls.parameters:
        options["friction_constant"] = gamma
    a = tf.constant(A)
    qs, ps, kinetic, kinetic_series = run_standalone(cls(**options), lambda x: tf.matmul(x, a), state[:, :d],
                                     state[:, d:] if name != "SGLD" else np.zeros((CHAINS, d)),
                                     STEPS, THIN)
    samples = qs if name == "SGLD" else np.concatenate([qs, ps], axis=-1)  # [T, K, n]
    moments = np.einsum("tki,tkj->kij", samples, samples) / samples.shape[0]
    p_cov = report[0] @ sigma @ report[0].T + report[1]
    exact_kinetic = 0.0 if name == "SGLD" else 0.5 * np.trace(p_cov[d:, d:]) * CHAINS
    # batch means of the kinetic energy: 20 batches of 300 steps, beyond its correlation time
    batches = kinetic_series.reshape(20, -1).mean(axis=1)
    kinetic_error = batches.std(ddof=1) / np.sqrt(len(batches))
    return moments, (kinetic, kinetic_error), sigma, exact_kinetic


def check(moments, kinetic, sigma, exact_kinetic, name):
    critical = t_critical(ALPHA, CHAINS - 1, TESTS)
    kinetic, kinetic_error = kinetic
    failures = []
    for i, j in zip(*np.triu_indices(len(sigma))):
        values = moments[:, i, j]
        error = values.std(ddof=1) / np.sqrt(CHAINS)
        if abs(values.mean() - sigma[i, j]) > critical * error:
            failures.append((i, j, values.mean(), sigma[i, j], error))
    if name != "SGLD":
        if abs(kinetic - exact_kinetic) > t_critical(ALPHA, 19, TESTS) * kinetic_error:
            failures.append(("kinetic", kinetic, exact_kinetic, kinetic_error))
    return failures


@pytest.mark.statistical
@pytest.mark.parametrize("name,h,gamma,beta", CASES, ids=[f"{c[0]}-h{c[1]}-g{c[2]}-b{c[3]}" for c in CASES])
def test_stationary_covariance_is_the_discrete_schemes(name, h, gamma, beta):
    failures = check(*sample(name, h, gamma, beta, run_seed=seed(100)), name)
    assert not failures, failures


@pytest.mark.statistical
def test_negative_control_wrong_scheme_is_rejected():
    """GLA1 at a large step width is not BAOAB: testing it against BAOAB's covariance fails."""
    failures = check(*sample("GLA1", 0.5, 1.0, 1.0, scheme_name="BAOAB", run_seed=seed(200)), "GLA1")
    assert failures


def test_covariance_scales_with_temperature():
    """For every linear scheme the exact covariance is proportional to 1 / beta."""
    for name, h, gamma in itertools.product(("SGLD", "GLA1", "GLA2", "BAOAB", "SGHMC"), (0.2,), (1.0,)):
        base = stationary(linear_scheme(name, A, h, gamma, 1.0)[0])
        for beta in (0.5, 4.0):
            np.testing.assert_allclose(stationary(linear_scheme(name, A, h, gamma, beta)[0]), base / beta,
                                       rtol=1e-10, atol=1e-12)
