"""Samplers against posteriordb's reference posteriors, run the way a Stan user runs a model.

Each walker starts at its own uniform(-2, 2) draw on the unconstrained space (Stan's default
inits: initial_parameters 0 with initial_dispersion 2); nothing is given but the sampler, the
walkers, burn_in_steps and max_steps. The draws after burn-in are mapped back to the constrained
scale and each parameter's mean and sd are compared with the reference (tools/posteriordb/, a copy
of the project's ../shared/posteriordb):

    z_mean = (mean - ref_mean) / sqrt(mcse_mean^2 + ref_mcse_mean^2),  mcse_mean = sd / sqrt(ESS)
    z_sd = (sd - ref_sd) / sqrt(mcse_sd^2 + ref_mcse_sd^2),            mcse_sd = sd / sqrt(2 ESS)

with ESS and R-hat across walkers from TensorFlow Probability. A run is right when every |z| < 4,
every sd ratio lies in [0.8, 1.25] and every R-hat (the parameters' and the log density's) is
below 1.01 (issue #40's acceptance).

    python tools/posteriordb_check.py --posterior kidiq --sampler NUTS --burn-in 1000 --steps 3000
    python tools/posteriordb_check.py --posterior all --sampler HMC2 --steps 20000 --seeds 1,2,3
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
POSTERIORDB = os.path.join(HERE, "posteriordb")  # posteriordb's files, as in ../shared/posteriordb


def _tf():
    import tensorflow as tf
    return tf


def kidiq(data):
    """kidiq-kidscore_momiq: kid_score ~ normal(beta1 + beta2 mom_iq, sigma), sigma ~ half-Cauchy(0,
    2.5); unconstrained (beta1, beta2, log sigma)."""
    tf = _tf()
    y = tf.constant(data["kid_score"], tf.float64)
    x = tf.constant(data["mom_iq"], tf.float64)

    def potential(u):
        beta1, beta2, log_sigma = u[0], u[1], u[2]
        sigma = tf.exp(log_sigma)
        residual = (y - beta1 - beta2 * x) / sigma
        log_likelihood = -0.5 * tf.reduce_sum(tf.square(residual)) - tf.cast(tf.size(y), tf.float64) * log_sigma
        log_prior = -tf.math.log1p(tf.square(sigma / 2.5))
        return -(log_likelihood + log_prior + log_sigma)  # + log |d sigma / d log sigma|

    def constrained(u):
        return {"beta[1]": u[:, 0], "beta[2]": u[:, 1], "sigma": np.exp(u[:, 2])}

    return potential, 3, constrained


def low_dim_gauss_mix(data):
    """low_dim_gauss_mix: y ~ theta N(mu1, sigma1) + (1 - theta) N(mu2, sigma2), mu ordered;
    unconstrained (mu1, log(mu2 - mu1), log sigma1, log sigma2, logit theta)."""
    tf = _tf()
    y = tf.constant(data["y"], tf.float64)

    def normal_lpdf(value, mean, sd):
        mean, sd = tf.cast(mean, tf.float64), tf.cast(sd, tf.float64)
        return -0.5 * tf.square((value - mean) / sd) - tf.math.log(sd)

    def potential(u):
        mu1 = u[0]
        mu2 = mu1 + tf.exp(u[1])
        sigma1, sigma2 = tf.exp(u[2]), tf.exp(u[3])
        theta = tf.sigmoid(u[4])
        log_prior = (normal_lpdf(mu1, 0.0, 2.0) + normal_lpdf(mu2, 0.0, 2.0) + normal_lpdf(sigma1, 0.0, 2.0)
                     + normal_lpdf(sigma2, 0.0, 2.0) + 4.0 * tf.math.log(theta) + 4.0 * tf.math.log1p(-theta))
        mix = tf.reduce_logsumexp(tf.stack([tf.math.log(theta) + normal_lpdf(y, mu1, sigma1),
                                            tf.math.log1p(-theta) + normal_lpdf(y, mu2, sigma2)]), axis=0)
        log_jacobian = u[1] + u[2] + u[3] + tf.math.log(theta) + tf.math.log1p(-theta)
        return -(tf.reduce_sum(mix) + log_prior + log_jacobian)

    def constrained(u):
        theta = 1.0 / (1.0 + np.exp(-u[:, 4]))
        return {"mu[1]": u[:, 0], "mu[2]": u[:, 0] + np.exp(u[:, 1]), "sigma[1]": np.exp(u[:, 2]),
                "sigma[2]": np.exp(u[:, 3]), "theta": theta}

    return potential, 5, constrained


POSTERIORS = {"kidiq": ("kidiq-kidscore_momiq.json", kidiq),
              "low_dim_gauss_mix": ("low_dim_gauss_mix-low_dim_gauss_mix.json", low_dim_gauss_mix)}


def load(name, directory=POSTERIORDB):
    """(potential, dimension, constrained map, reference summaries) of a posterior by short name."""
    file, build = POSTERIORS[name]
    with open(os.path.join(directory, file)) as handle:
        posterior = json.load(handle)
    potential, dimension, constrained = build(posterior["data"])
    return potential, dimension, constrained, posterior["reference"]


def chains(trajectory, burn_in, dimension):
    """[draws, walkers, d] array of the rows after burn-in, ordered by step."""
    after = trajectory[trajectory.step > burn_in].sort_values(["step", "id"])
    walkers = after.id.nunique()
    columns = [f"param{i}" for i in range(dimension)]
    values = after[columns].to_numpy(np.float64)
    return values.reshape(-1, walkers, dimension)


def compare(draws, constrained, reference, loss=None):
    """Per parameter: mean, sd, reference's, z of mean and sd, sd ratio, ESS and R-hat; the
    log density's R-hat from `loss` [draws, walkers] where given."""
    import tensorflow_probability as tfp
    flat = draws.reshape(-1, draws.shape[-1])
    values = {name: column.reshape(draws.shape[:2]) for name, column in constrained(flat).items()}
    if loss is not None:
        values["lp__"] = loss
    rows = []
    for name, value in values.items():
        ess = float(np.sum(tfp.mcmc.effective_sample_size(value, cross_chain_dims=1).numpy()))
        # tfp gives the ratio of variances; R-hat as Stan and ArviZ report it is its root
        rhat = float(np.sqrt(tfp.mcmc.potential_scale_reduction(value, split_chains=True).numpy()))
        row = {"parameter": name, "mean": value.mean(), "sd": value.std(ddof=1), "ess": ess, "rhat": rhat}
        if name in reference:
            ref = reference[name]
            mcse_mean = row["sd"] / np.sqrt(max(ess, 1.0))
            mcse_sd = row["sd"] / np.sqrt(2.0 * max(ess, 1.0))
            row.update(ref_mean=ref["mean"], ref_sd=ref["sd"],
                       z_mean=(row["mean"] - ref["mean"]) / np.hypot(mcse_mean, ref["mcse_mean"]),
                       z_sd=(row["sd"] - ref["sd"]) / np.hypot(mcse_sd, ref["mcse_sd"]),
                       sd_ratio=row["sd"] / ref["sd"])
        rows.append(row)
    return rows


def verdict(rows, z_limit=4.0, ratio=(0.8, 1.25), rhat_limit=1.01):
    """The list of what is wrong (empty when the run is right)."""
    wrong = []
    for row in rows:
        if row["rhat"] >= rhat_limit:
            wrong.append(f"{row['parameter']}: R-hat {row['rhat']:.3g}")
        if "z_mean" not in row:
            continue
        if abs(row["z_mean"]) >= z_limit or abs(row["z_sd"]) >= z_limit:
            wrong.append(f"{row['parameter']}: z of mean {row['z_mean']:.3g}, of sd {row['z_sd']:.3g}")
        if not ratio[0] <= row["sd_ratio"] <= ratio[1]:
            wrong.append(f"{row['parameter']}: sd ratio {row['sd_ratio']:.3g}")
    return wrong


def run(name, sampler, burn_in, steps, seed, walkers=8, inverse_temperature=1.0, **options):
    """One run from Stan's inits: (rows of `compare`, seconds, Result)."""
    import tati
    potential, dimension, constrained, reference = load(name)
    settings = dict(potential=potential, initial_parameters=[0.0] * dimension, initial_dispersion=2.0,
                    dtype="float64", sampler=sampler, number_walkers=walkers, max_steps=steps, seed=seed,
                    inverse_temperature=inverse_temperature)
    if burn_in is not None:
        settings["burn_in_steps"] = burn_in
    settings.update(options)
    sim = tati.Simulation(**settings)
    start = time.perf_counter()
    result = sim.sample()
    seconds = time.perf_counter() - start
    burn = settings.get("burn_in_steps", 0)
    draws = chains(result.trajectory, burn, dimension)
    after = result.trajectory[result.trajectory.step > burn].sort_values(["step", "id"])
    loss = after.loss.to_numpy(np.float64).reshape(draws.shape[:2])
    return compare(draws, constrained, reference, loss), seconds, result


def run_tfp(name, burn_in, steps, seed, walkers=8, start_at_mode=False):
    """TensorFlow Probability's NUTS inside its DualAveragingStepSizeAdaptation (no metric), the
    walkers as a batch of chains from Stan's inits (or, start_at_mode, from the mode that tati's
    warm start finds), compiled by XLA: (rows of `compare`, seconds)."""
    import tensorflow as tf
    import tensorflow_probability as tfp
    potential, dimension, constrained, reference = load(name)
    start = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(walkers, dimension))
    if start_at_mode:
        from tati.adaptation import warm_start

        def evaluate(theta):
            value, gradient = tfp.math.value_and_gradient(lambda x: tf.vectorized_map(potential, x),
                                                          tf.constant(theta))
            return value.numpy(), gradient.numpy()
        start = warm_start.minimise(evaluate, start, 1.0)[0]
    kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
        tfp.mcmc.NoUTurnSampler(lambda x: -tf.vectorized_map(potential, x), step_size=0.1),
        num_adaptation_steps=int(0.8 * burn_in))

    @tf.function(jit_compile=True, autograph=False)
    def chain(initial):
        return tfp.mcmc.sample_chain(steps - burn_in, initial, kernel=kernel, num_burnin_steps=burn_in,
                                     trace_fn=lambda _, results: results.inner_results.target_log_prob,
                                     seed=(seed, 0))

    begin = time.perf_counter()
    draws, log_prob = (value.numpy() for value in chain(tf.constant(start)))
    seconds = time.perf_counter() - begin
    return compare(draws, constrained, reference, -log_prob), seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posterior", default="all", choices=["all", *POSTERIORS])
    parser.add_argument("--sampler", default="NUTS")
    parser.add_argument("--burn-in", type=int, default=None, help="burn_in_steps (default: tati's)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--walkers", type=int, default=8)
    parser.add_argument("--inverse-temperature", type=float, default=1.0)
    parser.add_argument("--jit-compile", action="store_true")
    parser.add_argument("--tfp", choices=["inits", "mode"], help="TFP's NUTS with dual averaging instead, from "
                        "Stan's inits or from the mode (compiled by XLA)")
    args = parser.parse_args(argv)
    names = list(POSTERIORS) if args.posterior == "all" else [args.posterior]
    failures = 0
    for name in names:
        for seed in (int(s) for s in args.seeds.split(",")):
            if args.tfp:
                rows, seconds = run_tfp(name, args.burn_in or 1000, args.steps, seed, args.walkers,
                                        args.tfp == "mode")
            else:
                rows, seconds, _ = run(name, args.sampler, args.burn_in, args.steps, seed, args.walkers,
                                       args.inverse_temperature, jit_compile=args.jit_compile)
            wrong = verdict(rows)
            failures += bool(wrong)
            label = f"TFP's NUTS from {'the mode' if args.tfp == 'mode' else 'the inits'}" if args.tfp else args.sampler
            print(f"{name} {label} seed {seed}: {seconds:.1f} s, "
                  + ("right" if not wrong else "WRONG: " + "; ".join(wrong)))
            for row in rows:
                extra = (f" z {row['z_mean']:+.2f}/{row['z_sd']:+.2f} sd ratio {row['sd_ratio']:.3f}"
                         if "z_mean" in row else "")
                print(f"  {row['parameter']:9s} mean {row['mean']:.5g} sd {row['sd']:.4g} "
                      f"ESS {row['ess']:.0f} R-hat {row['rhat']:.3f}{extra}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
