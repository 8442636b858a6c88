"""Harness for the Langevin samplers' exact tests.

`run_standalone` drives a sampler as a plain Keras optimizer on a variable of shape [K, d]
whose rows are K independent chains of a potential with gradient `gradient(x)`: this is the
sampler alone, with no Simulation around it, recorded in one compiled loop.

`linear_scheme` gives, for U(x) = x^T A x / 2, the exact affine-Gaussian map of one step of
each scheme on its stored state s = (q, p) (s' = M s + noise with covariance Q) and the map
from the stored state to the state whose momentum the sampler reports (P, Q_P). They are
written from the documented equations with the split-step matrices below, independently of
the implementation, so the discrete Lyapunov equation Sigma = M Sigma M^T + Q gives the exact
stationary covariance of what the code should do.
"""

import numpy as np
import tensorflow as tf
from scipy import linalg


def run_standalone(sampler, gradient, q0, p0, steps, thin):
    """Positions and stored momenta before every `thin`-th step, the mean reported kinetic
    energy per step (summed over the K chains) and that kinetic energy at every `thin`-th step."""
    q = tf.Variable(q0)
    sampler.build([q])
    if sampler.has_momentum:
        sampler.momenta[0].assign(p0)
    records = (steps + thin - 1) // thin

    @tf.function(autograph=True)
    def loop():
        qs = tf.TensorArray(q.dtype, records)
        ps = tf.TensorArray(q.dtype, records)
        ks = tf.TensorArray(tf.float64, records)
        kinetic = tf.constant(0.0, tf.float64)
        for i in tf.range(steps):
            if i % thin == 0:
                qs = qs.write(i // thin, tf.convert_to_tensor(q))
                ps = ps.write(i // thin, tf.convert_to_tensor(sampler.momenta[0]) if sampler.has_momentum
                              else tf.zeros_like(q))
            sampler.apply_gradients([(gradient(q), q)])
            kinetic += sampler.step_info["kinetic_energy"]
            if i % thin == 0:
                ks = ks.write(i // thin, sampler.step_info["kinetic_energy"])
        return qs.stack(), ps.stack(), kinetic / tf.cast(steps, tf.float64), ks.stack()

    qs, ps, kinetic, ks = loop()
    return qs.numpy(), ps.numpy(), float(kinetic), ks.numpy()


# -- affine-Gaussian maps on s = (q, p), d positions ---------------------------------------
def _compose(*maps):
    """Maps applied left to right; each (M, Q)."""
    m, q = maps[0]
    for m2, q2 in maps[1:]:
        m, q = m2 @ m, m2 @ q @ m2.T + q2
    return m, q


def _ops(a, beta):
    d = a.shape[0]
    eye, zero = np.eye(d), np.zeros((d, d))
    none = np.zeros((2 * d, 2 * d))

    def kick(h):
        return np.block([[eye, zero], [-h * a, eye]]), none

    def drift(h, mass=1.0):
        return np.block([[eye, h / mass * eye], [zero, eye]]), none

    def thermostat(alpha, noise_variance):
        return (np.block([[eye, zero], [zero, alpha * eye]]),
                np.block([[zero, zero], [zero, noise_variance * eye]]))

    return kick, drift, thermostat


# The schemes linear_scheme models exactly (CCAdL equals GLA2's at its equilibrium friction with
# exact gradients); SGNHT's thermostat and pSGLD's preconditioner make theirs nonlinear, and
# their own exact tests (tests/samplers/test_sgnht.py, test_psgld.py) stand in.
LINEAR = ("SGLD", "BAOAB", "GLA1", "GLA2", "SGHMC", "CCAdL")


def linear_scheme(name, a, h, gamma, beta, mass=1.0, noise_estimate=0.0):
    """((M, Q), (P, Q_P)) of one step and of the way to the reported state; SGLD: positions only."""
    if name == "SGLD":
        d = a.shape[0]
        return (np.eye(d) - h * a, 2.0 * h / beta * np.eye(d)), (np.eye(d), np.zeros((d, d)))
    kick, drift, thermostat = _ops(a, beta)
    alpha = np.exp(-gamma * h)
    o = thermostat(alpha, (1.0 - alpha ** 2) / beta)
    identity = _compose(kick(0.0))
    if name == "BAOAB":   # stored (q^n, p after O); reported p^n after the first B
        report = kick(h / 2)
        step = _compose(kick(h / 2), kick(h / 2), drift(h / 2), o, drift(h / 2))
    elif name == "GLA1":  # stored and reported (q^n, p^n)
        report = identity
        step = _compose(kick(h), drift(h), o)
    elif name == "GLA2":  # stored (q^n, p after the second B); reported p^n after O
        report = _compose(kick(h / 2), o)
        step = _compose(kick(h / 2), o, kick(h / 2), drift(h))
    elif name == "SGHMC":  # stored and reported (theta^n, r^n)
        report = identity
        friction = thermostat(1.0 - h * gamma / mass, 2.0 * h * (gamma / beta - noise_estimate))
        step = _compose(friction, kick(h), drift(h, mass))
    else:
        raise ValueError(name)
    return step, report


def stationary(step):
    m, q = step
    assert np.max(np.abs(np.linalg.eigvals(m))) < 1.0, "unstable scheme"
    return linalg.solve_discrete_lyapunov(m, q)


def exact_draws(covariance, chains, rng):
    """chains draws of N(0, covariance), as an array [chains, dim]."""
    return rng.multivariate_normal(np.zeros(len(covariance)), covariance, size=chains)
