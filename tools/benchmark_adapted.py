"""tati's adapted HMC2 and NUTS, untuned and started dispersed, against TFP's NUTS started at
the mode: min ESS per gradient evaluation (issue #18's second benchmark; target: at least TFP's
on every model, at least 3 times TFP's on the badly conditioned ones).

Models, all tati potentials (`potential_batched=True`, float64):
  (1) 100-D Gaussian, standard deviations log-spaced from 0.1 to 10      (badly conditioned)
  (2) the logistic regression of tools/benchmark_hmc.py, 25 weights, 1,000 points
  (3) eight schools, non-centred: mu, log tau, 8 standardised effects (mu ~ N(0, 5),
      tau ~ half-Cauchy(0, 5), eta ~ N(0, 1), y_j ~ N(mu + tau eta_j, sigma_j))
  (4) Bayesian linear regression, intercept and predictors on scales 1 and 1000, known noise,
      N(0, 10^2) priors: a Gaussian posterior known in closed form    (badly conditioned)

tati: `Simulation.sample()` given only burn_in_steps and max_steps (and number_walkers, seed):
every other option at its default (step width 0.1 to start, HMC2's leg time T = 1, adaptation
on). Its walkers start at independent draws uniform(-2, 2) per coordinate (Stan's dispersed
start, passed as initial_parameters). A first call runs the burn-in (and compiles), a second,
timed call the kept draws. NUTS's steps are transitions: `--burn-in` and `--draws` of them.
HMC2's steps are leapfrog steps (one gradient each) and its rows leg ends: it gets
`--hmc2-steps-per-draw` (10, one leg of T / h at the starting width) steps per transition.

TFP: `tfp.mcmc.NoUTurnSampler` in `DualAveragingStepSizeAdaptation` (width only, target
acceptance 0.8 as tati's and Stan's, starting width 0.1), `--walkers` chains all started at the
mode (closed form where known, else L-BFGS): the burn-in in one compiled `sample_chain`, then
the draws in ten blocks after one untimed block that compiles.

Gradient evaluations, summed over chains: tati (NUTS and HMC2), run info's `gradient_evaluations`
column; TFP, the traced `leapfrogs_taken`. Acceptance after burn-in: tati, 1 - run info's
`average_rejection_rate` (both samplers count it anew after burn-in); TFP, its traced statistic.
ESS: `tfp.mcmc.effective_sample_size`, cross-chain, smallest over the parameters, of the kept
draws; ESS per gradient divides it by the kept draws' gradients (the burn-in's are shown apart).
Sanity columns: max R-hat; where the posterior is known (1, 4) the largest
|mean - exact| / (sd / sqrt(ESS)) over the parameters (about 3 at most for a correct sampler of
100 parameters) and the range of sampled / exact variance. A sampler meets the target only if
its draws pass R-hat <= 1.01 and |z| <= 4.5.

    python tools/benchmark_adapted.py [--burn-in 1000] [--draws 1000] [--walkers 4] [--seed 1]
        [--hmc2-steps-per-draw 10] [--modes xla,graph] [--models 1,2,3,4] [--threads N]
        [--samplers NUTS,HMC2,TFP]
"""

import argparse
import time
from collections import namedtuple

import numpy as np
import tensorflow as tf
import tensorflow_probability as tfp

import tati
from benchmark import set_threads
from benchmark_hmc import logistic_regression

# mean and sd: the exact posterior's, where known; badly: a badly conditioned model (target 3x)
Model = namedtuple("Model", "name potential dimension mean sd badly")
TFP_START_WIDTH = 0.1  # tati's default step_width
TARGET_ACCEPTANCE = 0.8
TFP_BLOCKS = 10
# A run whose draws fail these does not count as meeting the target, however fast: R-hat as
# tati's summary flags it; |z| beyond 4.5 for one of 100 correct means has odds of about 1e-3.
MAX_RHAT, MAX_Z = 1.01, 4.5


def gaussian():
    sd = np.logspace(-1, 1, 100)
    scales = tf.constant(sd)
    return Model("(1) 100-D Gaussian, sd 0.1 ... 10", lambda x: 0.5 * tf.reduce_sum(tf.square(x / scales), axis=-1),
                 100, np.zeros(100), sd, True)


def logistic():
    potential, dimension, _ = logistic_regression()
    return Model("(2) logistic regression, 25 weights", potential, dimension, None, None, False)


def eight_schools():
    y = tf.constant([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], tf.float64)
    sigma = tf.constant([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], tf.float64)

    def potential(q):  # [W, 10]: mu, log tau, eta_1..8 -> [W]
        mu, log_tau, eta = q[:, 0], q[:, 1], q[:, 2:]
        tau = tf.exp(log_tau)
        theta = mu[:, None] + tau[:, None] * eta
        return (0.5 * tf.reduce_sum(tf.square((y - theta) / sigma), axis=-1)
                + 0.5 * tf.reduce_sum(tf.square(eta), axis=-1)
                + 0.5 * tf.square(mu / 5.0)
                + tf.math.log1p(tf.square(tau / 5.0)) - log_tau)  # half-Cauchy, Jacobian of tau = exp(log tau)
    return Model("(3) eight schools, non-centred", potential, 10, None, None, False)


def linear_regression():
    rng = np.random.default_rng(0)
    n, prior_sd = 200, 10.0
    design = np.column_stack([np.ones(n), rng.normal(size=n), 1000.0 * rng.normal(size=n)])
    labels = design @ np.array([1.0, 2.0, 0.003]) + rng.normal(size=n)  # noise sd 1, known
    covariance = np.linalg.inv(design.T @ design + np.eye(3) / prior_sd ** 2)
    mean = covariance @ design.T @ labels
    x, t = tf.constant(design), tf.constant(labels)

    def potential(w):  # [W, 3] -> [W]
        residual = t - tf.einsum("nd,wd->wn", x, w)
        return (0.5 * tf.reduce_sum(tf.square(residual), axis=-1)
                + 0.5 * tf.reduce_sum(tf.square(w), axis=-1) / prior_sd ** 2)
    return Model("(4) linear regression, predictors on scales 1 and 1000", potential, 3, mean,
                 np.sqrt(np.diag(covariance)), True)


MODELS = {"1": gaussian, "2": logistic, "3": eight_schools, "4": linear_regression}


def mode(model):
    """The posterior's mode: its mean where known (Gaussian posteriors), else L-BFGS from 0."""
    if model.mean is not None:
        return model.mean

    def value_and_gradient(x):
        return tfp.math.value_and_gradient(lambda z: model.potential(z[None])[0], x)
    found = tfp.optimizer.lbfgs_minimize(value_and_gradient, tf.zeros(model.dimension, tf.float64),
                                         tolerance=1e-10, max_iterations=1000)
    if not bool(found.converged.numpy()):
        raise SystemExit(f"L-BFGS found no mode of {model.name}")
    return found.position.numpy()


def check(model, draws):
    """min ESS, max R-hat, max |z| of the means and (min, max) sampled / exact variance of
    draws [n, chains, d] (NaN where too few draws or nothing is known)."""
    if draws.shape[0] < 4:
        return float("nan"), float("nan"), float("nan"), (float("nan"), float("nan"))
    ess = tfp.mcmc.effective_sample_size(tf.constant(draws), filter_beyond_positive_pairs=True,
                                         cross_chain_dims=1).numpy()
    rhat = float(np.max(tfp.mcmc.potential_scale_reduction(tf.constant(draws)).numpy()))
    z, variance = float("nan"), (float("nan"), float("nan"))
    if model.mean is not None:
        flat = draws.reshape(-1, draws.shape[-1])
        z = float(np.max(np.abs(flat.mean(axis=0) - model.mean) / (model.sd / np.sqrt(np.maximum(ess, 1.0)))))
        ratio = flat.var(axis=0) / model.sd ** 2
        variance = (float(ratio.min()), float(ratio.max()))
    return float(ess.min()), rhat, z, variance


def last_per_walker(run_info, column):
    """The column's value in each walker's last row."""
    return run_info.sort_values("step").groupby("id")[column].last().to_numpy()


def tati_run(model, sampler, args, jit):
    """tati's sampler from dispersed starts: burn-in call, then a timed call of the kept draws."""
    steps = args.hmc2_steps_per_draw if sampler == "HMC2" else 1
    burn_in, kept = args.burn_in * steps, args.draws * steps
    start = np.random.default_rng(args.seed).uniform(-2.0, 2.0, size=(args.walkers, model.dimension))
    sim = tati.Simulation(potential=model.potential, potential_batched=True, dtype="float64",
                          initial_parameters=start, number_walkers=args.walkers, sampler=sampler,
                          burn_in_steps=burn_in, max_steps=burn_in, jit_compile=jit, seed=args.seed)
    burn = sim.sample()
    sim.options["max_steps"] = kept  # the same Simulation continues after its burn-in
    began = time.perf_counter()
    result = sim.sample()
    seconds = time.perf_counter() - began
    info = result.run_info
    burn_gradients = last_per_walker(burn.run_info, "gradient_evaluations").sum()
    gradients = last_per_walker(info, "gradient_evaluations").sum() - burn_gradients
    # NUTS: 1 - mean acceptance statistic; HMC2: rejected / decided legs; both counted since burn-in
    acceptance = 1.0 - float(np.mean(last_per_walker(info, "average_rejection_rate")))
    width = float(info["step_width"].iloc[-1])
    trajectory = result.trajectory.sort_values(["step", "id"])
    columns = [f"param{i}" for i in range(model.dimension)]
    rows = int(trajectory.groupby("id").size().min()) if len(trajectory) else 0  # HMC2: legs that ended
    chains = np.stack([trajectory[trajectory["id"] == w][columns].to_numpy()[:rows] for w in range(args.walkers)],
                      axis=1)
    per_draw = gradients / (rows * args.walkers) if rows else float("nan")  # HMC2: steps per leg
    return dict(burn_gradients=burn_gradients, gradients=gradients, seconds=seconds, draws=chains,
                acceptance=acceptance, width=width, per_draw=per_draw)


def tfp_run(model, args, jit):
    """TFP's NUTS with dual averaging, every chain at the mode: burn-in, one untimed block that
    compiles the draws' loop, then TFP_BLOCKS timed blocks."""
    kernel = tfp.mcmc.DualAveragingStepSizeAdaptation(
        tfp.mcmc.NoUTurnSampler(lambda x: -model.potential(x), step_size=tf.constant(TFP_START_WIDTH, tf.float64)),
        num_adaptation_steps=args.burn_in, target_accept_prob=tf.constant(TARGET_ACCEPTANCE, tf.float64))

    def trace(_, results):
        inner = results.inner_results
        return inner.leapfrogs_taken, tf.exp(tf.minimum(inner.log_accept_ratio, 0.0))

    @tf.function(jit_compile=jit)
    def burn_in(state, seed):
        return tfp.mcmc.sample_chain(args.burn_in, state, kernel=kernel, trace_fn=trace, seed=seed,
                                     return_final_kernel_results=True)

    size = max(1, args.draws // TFP_BLOCKS)

    @tf.function(jit_compile=jit)
    def block(state, results, seed):
        return tfp.mcmc.sample_chain(size, state, previous_kernel_results=results, kernel=kernel, trace_fn=trace,
                                     seed=seed, return_final_kernel_results=True)

    start = tf.constant(np.tile(mode(model), (args.walkers, 1)))
    out = burn_in(start, tf.constant([args.seed, 0], tf.int32))
    burn_gradients = float(tf.reduce_sum(out.trace[0]).numpy())
    state, results = out.all_states[-1], out.final_kernel_results
    out = block(state, results, tf.constant([args.seed, 1], tf.int32))  # compiles; its draws are not kept
    state, results = out.all_states[-1], out.final_kernel_results
    states, gradients, acceptance, seconds = [], 0.0, [], 0.0
    for k in range(TFP_BLOCKS):
        began = time.perf_counter()
        out = block(state, results, tf.constant([args.seed, 2 + k], tf.int32))
        drawn = out.all_states.numpy()
        seconds += time.perf_counter() - began
        state, results = out.all_states[-1], out.final_kernel_results
        states.append(drawn)
        gradients += float(tf.reduce_sum(out.trace[0]).numpy())
        acceptance.append(out.trace[1].numpy())
    chains = np.concatenate(states)
    return dict(burn_gradients=burn_gradients, gradients=gradients, seconds=seconds, draws=chains,
                acceptance=float(np.mean(np.concatenate(acceptance))),
                width=float(tf.reshape(results.new_step_size, [-1])[0].numpy()),
                per_draw=gradients / chains.shape[0] / args.walkers)


def rhat_text(rhat):
    """R-hat to 3 decimals, or in powers of ten when the chains never met (it can reach 1e30)."""
    return shown(rhat, ".3f" if not rhat >= 1000 else ".1e")


def failures(rhat, z):
    """Which sanity checks a run's draws fail ("" if none)."""
    found = [f"R-hat {rhat_text(rhat)}"] if not rhat <= MAX_RHAT else []
    return ", ".join(found + ([f"|z| {z:.1f}"] if z > MAX_Z else []))


def shown(value, form):
    """A table cell: the value formatted, or "-" where there is none."""
    return "-" if value is None or not np.isfinite(value) else format(value, form)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burn-in", type=int, default=1000,
                        help="burn-in transitions (HMC2: times its steps per draw)")
    parser.add_argument("--draws", type=int, default=1000, help="kept transitions per chain (HMC2: likewise)")
    parser.add_argument("--walkers", type=int, default=4, help="chains of every sampler")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hmc2-steps-per-draw", type=int, default=10,
                        help="HMC2's leapfrog steps per NUTS transition of --burn-in and --draws")
    parser.add_argument("--modes", default="xla", help="comma-separated: xla, graph (graph is slow for TFP here)")
    parser.add_argument("--models", default="1,2,3,4", help="comma-separated model numbers")
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    parser.add_argument("--samplers", default="NUTS,HMC2,TFP",
                        help="comma-separated: NUTS, HMC2 (tati's), TFP; the ratios need TFP")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    if any(m not in ("xla", "graph") for m in modes):
        parser.error(f"--modes takes xla and graph, not {args.modes}")
    if any(m not in MODELS for m in args.models.split(",")):
        parser.error(f"--models takes 1, 2, 3, 4, not {args.models}")
    if min(args.burn_in, args.draws, args.walkers, args.hmc2_steps_per_draw) < 1:
        parser.error("--burn-in, --draws, --walkers and --hmc2-steps-per-draw must be at least 1")
    samplers = args.samplers.split(",")
    if any(name not in ("NUTS", "HMC2", "TFP") for name in samplers):
        parser.error(f"--samplers takes NUTS, HMC2 and TFP, not {args.samplers}")
    set_threads(args.threads)
    began = time.perf_counter()
    print("| model | mode | sampler | burn-in gradients | kept draws | gradients | gradients per draw | s | "
          "min ESS | ESS per 1000 gradients | ESS/s | acceptance | step width | max R-hat | max abs z of means | "
          "variance / exact |")
    print("|" + "---|" * 16)
    verdicts = []
    for key in args.models.split(","):
        model = MODELS[key]()
        for mode_name in modes:
            jit = mode_name == "xla"
            runs = {"tati NUTS": lambda: tati_run(model, "NUTS", args, jit),
                    "tati HMC2": lambda: tati_run(model, "HMC2", args, jit),
                    "TFP NUTS": lambda: tfp_run(model, args, jit)}
            runs = {label: run for label, run in runs.items() if label.split()[-1 if label.startswith("tati") else 0]
                    in samplers}
            per_gradient, failed = {}, {}
            for label, run in runs.items():
                r = run()
                ess, rhat, z, (low, high) = check(model, r["draws"])
                per_gradient[label] = ess / r["gradients"]
                failed[label] = failures(rhat, z)
                variance = "-" if not np.isfinite(low) else f"{low:.2f} - {high:.2f}"
                print(f"| {model.name} | {mode_name} | {label} | {r['burn_gradients']:.0f} | "
                      f"{r['draws'].shape[0]} | {r['gradients']:.0f} | {shown(r['per_draw'], '.1f')} | "
                      f"{r['seconds']:.2f} | {shown(ess, '.0f')} | "
                      f"{shown(1000 * per_gradient[label], '.2f')} | {shown(ess / r['seconds'], '.0f')} | "
                      f"{shown(r['acceptance'], '.2f')} | {r['width']:.3g} | {rhat_text(rhat)} | "
                      f"{shown(z, '.1f')} | {variance} |", flush=True)
            need = 3.0 if model.badly else 1.0
            for label in [label for label in ("tati NUTS", "tati HMC2") if label in runs and "TFP NUTS" in runs]:
                ratio = per_gradient[label] / per_gradient["TFP NUTS"]
                met = ("no (no ESS)" if not np.isfinite(ratio) else f"no ({failed[label]})" if failed[label]
                       else "yes" if ratio >= need else "no")
                if failed["TFP NUTS"]:
                    met += f"; TFP's run: {failed['TFP NUTS']}"
                verdicts.append(f"| {model.name} | {mode_name} | {label} | {shown(ratio, '.2f')} | "
                                f">= {need:g} | {met} |")
    print("\n| model | mode | sampler | ESS per gradient / TFP's | target | met |\n|---|---|---|---|---|---|")
    print("\n".join(verdicts))
    print(f"\ntotal {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
