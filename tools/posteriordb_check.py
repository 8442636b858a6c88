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

Each run prints its verdict, its least ESS over the parameters, that ESS per evaluation after
burn-in summed over walkers (per gradient for NUTS, HMC1, HMC2 and TFP's NUTS; RWMH evaluates no
gradient: per potential evaluation, one per step and walker) and per second of the draws, and
the warm-up's seconds apart from the draws'. tati's burn-in and draws are two sample() calls of
one Simulation (the same draws as one call); TFP's run advances its chains in compiled calls of
50 steps. Compiling (tati's tracing and compiling, TFP's first call, whose steps are dropped)
is excluded from both sides' warm-up and draws and shown apart; the warm start (tati) or the
mode search (--tfp mode) is part of the warm-up. --compare-tfp runs tati's sampler, then TFP's
NUTS with dual averaging on the same posterior and seed, and prints tati's warm-up over TFP's
and both ESS per evaluation and per second side by side.

    python tools/posteriordb_check.py --posterior kidiq --sampler NUTS --burn-in 1000 --steps 3000
    python tools/posteriordb_check.py --posterior all --sampler HMC2 --steps 20000 --seeds 1,2,3
    python tools/posteriordb_check.py --posterior kidiq --sampler NUTS --burn-in 1000 --compare-tfp inits
"""

import argparse
import json
import os
import sys
import time
from typing import NamedTuple

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

    def potential(u):  # u: [d] or a batch of walkers [..., d]
        beta1, beta2, log_sigma = u[..., 0, None], u[..., 1, None], u[..., 2]
        sigma = tf.exp(log_sigma)
        residual = (y - beta1 - beta2 * x) / sigma[..., None]
        log_likelihood = (-0.5 * tf.reduce_sum(tf.square(residual), axis=-1)
                          - tf.cast(tf.size(y), tf.float64) * log_sigma)
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

    def potential(u):  # u: [d] or a batch of walkers [..., d]
        mu1 = u[..., 0]
        mu2 = mu1 + tf.exp(u[..., 1])
        sigma1, sigma2 = tf.exp(u[..., 2]), tf.exp(u[..., 3])
        theta = tf.sigmoid(u[..., 4])
        log_prior = (normal_lpdf(mu1, 0.0, 2.0) + normal_lpdf(mu2, 0.0, 2.0) + normal_lpdf(sigma1, 0.0, 2.0)
                     + normal_lpdf(sigma2, 0.0, 2.0) + 4.0 * tf.math.log(theta) + 4.0 * tf.math.log1p(-theta))
        mix = tf.reduce_logsumexp(tf.stack([
            tf.math.log(theta)[..., None] + normal_lpdf(y, mu1[..., None], sigma1[..., None]),
            tf.math.log1p(-theta)[..., None] + normal_lpdf(y, mu2[..., None], sigma2[..., None])]), axis=0)
        log_jacobian = u[..., 1] + u[..., 2] + u[..., 3] + tf.math.log(theta) + tf.math.log1p(-theta)
        return -(tf.reduce_sum(mix, axis=-1) + log_prior + log_jacobian)

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
    """One run from Stan's inits: (rows of `compare`, Timing, Result of the draws' call). Burn-in
    and draws are two sample() calls of one Simulation (the same draws as one call), so each is
    timed alone; the warm-up's seconds are the first call's (the warm start included) less its
    tracing and compiling."""
    import tati
    potential, dimension, constrained, reference = load(name)
    burn = steps // 2 if burn_in is None else burn_in  # tati's default, given so the first call can stop there
    settings = dict(potential=potential, initial_parameters=[0.0] * dimension, initial_dispersion=2.0,
                    dtype="float64", sampler=sampler, number_walkers=walkers, max_steps=burn, seed=seed,
                    inverse_temperature=inverse_temperature, burn_in_steps=burn)
    settings.update(options)
    if settings.get("jit_compile"):  # XLA takes several walkers' potential batched, not vectorised
        settings["potential_batched"] = True
    sim = tati.Simulation(**settings)
    start = time.perf_counter()
    warm = sim.sample()
    warmup_seconds = time.perf_counter() - start
    first = warm.first_step
    compiled = (first.tracing or 0.0) + (first.compiling or 0.0) if first is not None else 0.0
    sim.options["max_steps"] = steps - burn  # a per-call option: the draws' call continues the run
    start = time.perf_counter()
    result = sim.sample()
    draws_seconds = time.perf_counter() - start
    draws = chains(result.trajectory, burn, dimension)
    after = result.trajectory[result.trajectory.step > burn].sort_values(["step", "id"])
    loss = after.loss.to_numpy(np.float64).reshape(draws.shape[:2])
    timing = Timing(warmup_seconds - compiled, draws_seconds, compiled,
                    evaluations(sampler, warm.run_info, result.run_info, steps - burn, walkers))
    return compare(draws, constrained, reference, loss), timing, result


class Timing(NamedTuple):
    """Seconds of the warm-up and of the draws (compiling excluded from both), of compiling
    (tracing included), and the evaluations after burn-in, summed over walkers: gradients for
    NUTS, HMC1, HMC2 and TFP's NUTS, of the potential for RWMH (one per step and walker)."""
    warmup: float
    draws: float
    compiling: float
    evaluations: int


def evaluations(sampler, warm_info, draws_info, draws, walkers):
    """Evaluations after burn-in summed over walkers: NUTS's run info counts each walker's
    gradients (cumulative); HMC's steps are gradient evaluations, RWMH's potential evaluations."""
    if sampler != "NUTS":
        return draws * walkers
    last = draws_info.groupby("id").gradient_evaluations.max()
    before = warm_info.groupby("id").gradient_evaluations.max()
    return int((last - before.reindex(last.index, fill_value=0)).sum())


def min_ess(rows):
    return min(row["ess"] for row in rows if row["parameter"] != "lp__")


def run_tfp(name, burn_in, steps, seed, walkers=8, start_at_mode=False, chunk=50):
    """TensorFlow Probability's NUTS inside its DualAveragingStepSizeAdaptation (no metric; the
    width adapts over the first 80% of burn-in), the walkers as a batch of chains from Stan's
    inits (or, start_at_mode, from the mode that tati's warm start finds), compiled by XLA:
    (rows of `compare`, Timing). One compiled call advances every chain `chunk` steps; it is
    compiled by a first call whose steps are dropped, so neither the warm-up's calls nor the
    draws' include compiling (Timing.compiling: that call less the warm-up's first call, the same
    steps from the same start; the mode search of start_at_mode counts as warm-up)."""
    import tensorflow as tf
    import tensorflow_probability as tfp
    potential, dimension, constrained, reference = load(name)
    begin = time.perf_counter()
    start = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(walkers, dimension))
    if start_at_mode:
        from tati.adaptation import warm_start

        def evaluate(theta):
            value, gradient = tfp.math.value_and_gradient(lambda x: tf.vectorized_map(potential, x),
                                                          tf.constant(theta))
            return value.numpy(), gradient.numpy()
        start = warm_start.minimise(evaluate, start, 1.0)[0]
    mode_seconds = time.perf_counter() - begin
    kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
        tfp.mcmc.NoUTurnSampler(lambda x: -tf.vectorized_map(potential, x), step_size=0.1),
        num_adaptation_steps=int(0.8 * burn_in))

    @tf.function(jit_compile=True, autograph=False)
    def advance(state, results, chunk_seed):
        return tfp.mcmc.sample_chain(
            chunk, state, previous_kernel_results=results, kernel=kernel, seed=chunk_seed,
            trace_fn=lambda _, r: (r.inner_results.target_log_prob, r.inner_results.leapfrogs_taken),
            return_final_kernel_results=True)

    state = tf.constant(start)
    results = kernel.bootstrap_results(state)
    begin = time.perf_counter()
    advance(state, results, tf.constant([seed, -1], tf.int32))  # compiles; its steps are dropped
    first_call = time.perf_counter() - begin
    chunk_seconds = []

    def steps_from(state, results, count, offset):
        traces = []
        for index in range(-(-count // chunk)):
            begin = time.perf_counter()
            out = advance(state, results, tf.constant([seed, offset + index], tf.int32))
            state, results = out.all_states[-1], out.final_kernel_results
            traces.append((out.all_states.numpy(), *(t.numpy() for t in out.trace)))
            chunk_seconds.append(time.perf_counter() - begin)
        return state, results, [np.concatenate(part)[:count] for part in zip(*traces)]

    begin = time.perf_counter()
    state, results, _ = steps_from(state, results, burn_in, 0)
    warmup = time.perf_counter() - begin + mode_seconds
    # the first call less its steps, timed again from the same start in the warm-up's first call
    compiling = max(first_call - chunk_seconds[0], 0.0)
    begin = time.perf_counter()
    _, _, (draws, log_prob, leapfrogs) = steps_from(state, results, steps - burn_in, 1 << 20)
    timing = Timing(warmup, time.perf_counter() - begin, compiling, int(leapfrogs.sum()))
    return compare(draws, constrained, reference, -log_prob), timing


def report(name, label, seed, rows, timing, unit):
    """The run's line (verdict, ESS, ESS per evaluation and per second of draws, seconds) and a
    line per parameter; whether it was wrong."""
    wrong = verdict(rows)
    ess = min_ess(rows)
    print(f"{name} {label} seed {seed}: " + ("right" if not wrong else "WRONG: " + "; ".join(wrong)))
    print(f"  min ESS {ess:.0f}, {ess / max(timing.evaluations, 1):.3g} per {unit}, "
          f"{ess / timing.draws:.4g} per s of draws; warm-up {timing.warmup:.1f} s, draws {timing.draws:.1f} s "
          f"(compiling {timing.compiling:.1f} s apart)")
    for row in rows:
        extra = (f" z {row['z_mean']:+.2f}/{row['z_sd']:+.2f} sd ratio {row['sd_ratio']:.3f}"
                 if "z_mean" in row else "")
        print(f"  {row['parameter']:9s} mean {row['mean']:.5g} sd {row['sd']:.4g} "
              f"ESS {row['ess']:.0f} R-hat {row['rhat']:.3f}{extra}")
    return bool(wrong)


def side_by_side(name, seed, tati_rows, tati_timing, tfp_rows, tfp_timing, unit):
    """The --compare-tfp line: tati's warm-up over TFP's, and ESS per evaluation and per second."""
    ours, theirs = min_ess(tati_rows), min_ess(tfp_rows)
    print(f"{name} seed {seed}: warm-up tati / TFP {tati_timing.warmup / tfp_timing.warmup:.2f} "
          f"({tati_timing.warmup:.1f} s / {tfp_timing.warmup:.1f} s); min ESS per {unit} "
          f"{ours / max(tati_timing.evaluations, 1):.3g} / TFP per gradient "
          f"{theirs / max(tfp_timing.evaluations, 1):.3g}; per s of draws {ours / tati_timing.draws:.4g} / "
          f"{theirs / tfp_timing.draws:.4g}")


def tfp_label(start):
    return f"TFP's NUTS from {'the mode' if start == 'mode' else 'the inits'}"


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
    parser.add_argument("--compare-tfp", choices=["inits", "mode"], help="tati's sampler and then TFP's NUTS "
                        "(as --tfp; --burn-in and --steps as tati's for NUTS, else 1000 of 3000) on the same "
                        "posterior and seed, and a line of their warm-ups' ratio and ESS per evaluation and per second")
    args = parser.parse_args(argv)
    names = list(POSTERIORS) if args.posterior == "all" else [args.posterior]
    unit = "potential evaluation" if args.sampler == "RWMH" else "gradient"
    failures = 0
    for name in names:
        for seed in (int(s) for s in args.seeds.split(",")):
            if args.tfp:
                rows, timing = run_tfp(name, args.burn_in or 1000, args.steps, seed, args.walkers, args.tfp == "mode")
                failures += report(name, tfp_label(args.tfp), seed, rows, timing, "gradient")
                continue
            rows, timing, _ = run(name, args.sampler, args.burn_in, args.steps, seed, args.walkers,
                                  args.inverse_temperature, jit_compile=args.jit_compile)
            failures += report(name, args.sampler, seed, rows, timing, unit)
            if args.compare_tfp:
                burn, steps = (args.burn_in or 1000, args.steps) if args.sampler == "NUTS" else (1000, 3000)
                tfp_rows, tfp_timing = run_tfp(name, burn, steps, seed, args.walkers, args.compare_tfp == "mode")
                failures += report(name, tfp_label(args.compare_tfp), seed, tfp_rows, tfp_timing, "gradient")
                side_by_side(name, seed, rows, timing, tfp_rows, tfp_timing, unit)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
