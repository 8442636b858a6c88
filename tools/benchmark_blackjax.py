"""tati's NUTS and HMC2 against BlackJAX's NUTS, end to end, each run in a new process (issue #42:
tati's NUTS at least 1.5 times BlackJAX's ESS per second).

Targets (float64, one chain): (g) the 100-D Gaussian of tools/benchmark_hmc.py, standard
deviations 0.1 ... 1; (l) its logistic regression, 25 weights, 1,000 points (the same data on
both sides). Every run starts at the same draw of uniform(-2, 2) per coordinate (Stan's start)
and takes `--warm-up` transitions of its library's own default adaptation, then `--draws` kept
(the same seed in every repeat: a user running the same script again):

  tati NUTS   Simulation(sampler="NUTS", burn_in_steps=W) and max_steps D; every other option
              at its default (warm start, dual averaging to 0.8, Stan's metric windows,
              jit_compile auto, XLA's persistent cache).
  tati HMC2   the same with sampler="HMC2" and 10 leapfrog steps per transition (its steps are
              leapfrog steps, its rows leg ends; tools/benchmark_adapted.py's convention).
  BlackJAX    blackjax.window_adaptation(blackjax.nuts, logdensity) run for W steps (its
              defaults: target acceptance 0.8, diagonal mass, Stan's windows), then D steps of
              the adapted kernel in one jitted lax.scan.

Seconds are end to end after the imports: from defining the target to the draws in numpy
(set-up, tracing, compiling, warm-up and draws); the imports are shown apart. tati's XLA cache
is a new directory for the run, so the first repeat is cold and the later ones warm (what a
user's second run pays: $XDG_CACHE_HOME points there); BlackJAX keeps no cache between processes
by default, so all its repeats count as first runs. (A run with another seed or start compiles
anew after a warm start: TensorFlow names a traced function with a counter of the process's
operations so far, which the warm start's iterations move, and XLA's cache keys on the name.)
ESS: the smallest over the parameters of `tfp.mcmc.effective_sample_size` of the kept draws,
the same estimator for every library. The processes alternate (repeat 1: tati NUTS, tati HMC2,
BlackJAX, for each target; then repeat 2 ...), so machine noise falls on all alike; medians.

    python tools/benchmark_blackjax.py [--repeats 3] [--warm-up 1000] [--draws 2000] [--targets g,l]
        [--methods tati-NUTS,tati-HMC2,BlackJAX]

Needs BlackJAX (`pip install blackjax`, which brings JAX).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HMC2_STEPS_PER_DRAW = 10
METHODS = ("tati-NUTS", "tati-HMC2", "BlackJAX")
TARGETS = {"g": "100-D Gaussian, sd 0.1 ... 1", "l": "logistic regression, 25 weights, 1,000 points"}


def gaussian_data():
    return {"sd": np.linspace(0.1, 1.0, 100)}


def logistic_data():
    """tools/benchmark_hmc.py's data, without importing TensorFlow."""
    rng = np.random.default_rng(0)
    features = rng.normal(size=(1000, 25))
    labels = np.where(rng.uniform(size=1000) < 1.0 / (1.0 + np.exp(-features @ rng.normal(size=25))), 1.0, -1.0)
    return {"features": features, "labels": labels}


def start(dimension, seed):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=dimension)


def tati_run(target, method, warm_up, draws, seed):
    began = time.perf_counter()
    import tati
    import tensorflow as tf
    imports = time.perf_counter() - began
    began = time.perf_counter()
    if target == "g":
        sd = tf.constant(gaussian_data()["sd"])
        potential, dimension = (lambda x: 0.5 * tf.reduce_sum(tf.square(x / sd), axis=-1)), 100
    else:
        data = logistic_data()
        features, labels = tf.constant(data["features"]), tf.constant(data["labels"])
        dimension = 25

        def potential(w):  # [W, 25] -> [W]
            return (tf.reduce_sum(tf.math.softplus(-labels * tf.einsum("nd,wd->wn", features, w)), axis=-1)
                    + 0.5 * tf.reduce_sum(w * w, axis=-1))
    steps = HMC2_STEPS_PER_DRAW if method == "tati-HMC2" else 1
    sampler = method.split("-")[1]
    sim = tati.Simulation(potential=potential, potential_batched=True, dtype="float64",
                          initial_parameters=start(dimension, seed)[None, :], number_walkers=1, sampler=sampler,
                          burn_in_steps=warm_up * steps, max_steps=warm_up * steps, seed=seed)
    first = sim.sample().first_step
    sim.options["max_steps"] = draws * steps  # the same Simulation continues after its burn-in
    trajectory = sim.sample().trajectory.sort_values("step")
    kept = trajectory[[f"param{i}" for i in range(dimension)]].to_numpy()
    return imports, time.perf_counter() - began, kept, {"tracing": first.tracing, "compiling": first.compiling}


def blackjax_run(target, warm_up, draws, seed):
    began = time.perf_counter()
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import blackjax
    imports = time.perf_counter() - began
    began = time.perf_counter()
    if target == "g":
        sd = jnp.asarray(gaussian_data()["sd"])
        dimension = 100

        def logdensity(x):
            return -0.5 * jnp.sum(jnp.square(x / sd))
    else:
        data = logistic_data()
        features, labels = jnp.asarray(data["features"]), jnp.asarray(data["labels"])
        dimension = 25

        def logdensity(w):
            return -(jnp.sum(jax.nn.softplus(-labels * (features @ w))) + 0.5 * jnp.sum(w * w))
    warm_key, draw_key = jax.random.split(jax.random.key(seed))
    adaptation = blackjax.window_adaptation(blackjax.nuts, logdensity)
    (state, parameters), _ = adaptation.run(warm_key, jnp.asarray(start(dimension, seed)), num_steps=warm_up)
    step = blackjax.nuts(logdensity, **parameters).step

    @jax.jit
    def chain(state, keys):
        def one(state, key):
            state, _ = step(key, state)
            return state, state.position
        return jax.lax.scan(one, state, keys)[1]
    kept = np.asarray(chain(state, jax.random.split(draw_key, draws)))
    return imports, time.perf_counter() - began, kept, {}


def child(method, target, warm_up, draws, seed, out):
    if method == "BlackJAX":
        imports, seconds, kept, parts = blackjax_run(target, warm_up, draws, seed)
    else:
        imports, seconds, kept, parts = tati_run(target, method, warm_up, draws, seed)
    np.save(out, kept)
    print(json.dumps(dict(parts, imports=imports, seconds=seconds)))


def ess(kept):
    """The smallest ESS over the parameters of one chain's draws [n, d]."""
    import tensorflow as tf
    import tensorflow_probability as tfp
    return float(np.min(tfp.mcmc.effective_sample_size(tf.constant(kept), filter_beyond_positive_pairs=True)))


def measure(method, target, args, seed, cache, directory):
    out = os.path.join(directory, f"{method}-{target}.npy")
    environment = dict(os.environ, XDG_CACHE_HOME=cache)  # tati's XLA cache in $XDG_CACHE_HOME/tati/xla
    environment.pop("TF_XLA_FLAGS", None)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", method, target, str(args.warm_up),
                           str(args.draws), str(seed), out], capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        raise SystemExit(f"{method} on {target} failed: {done.stderr[-2000:]}")
    times = json.loads(done.stdout.strip().splitlines()[-1])
    kept = np.load(out)
    sanity = ""
    if target == "g":
        variance = kept.var(axis=0) / gaussian_data()["sd"] ** 2
        sanity = f"variance / exact {variance.min():.2f} .. {variance.max():.2f}"
    return dict(times, ess=ess(kept), sanity=sanity)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", default="g,l")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        method, target, warm_up, draws, seed, out = args.child
        child(method, target, int(warm_up), int(draws), int(seed), out)
        return
    methods, targets = args.methods.split(","), args.targets.split(",")
    for name, given, known in (("--methods", methods, METHODS), ("--targets", targets, TARGETS)):
        if not given or not set(given) <= set(known):
            parser.error(f"{name} takes a comma-separated list of {', '.join(known)}, not {','.join(given)}")
    for name in ("repeats", "warm_up", "draws"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} takes a positive integer, not {getattr(args, name)}")
    if "BlackJAX" in methods:
        try:
            import blackjax  # noqa: F401
        except ImportError:
            parser.error("BlackJAX is not installed: pip install blackjax (or --methods tati-NUTS,tati-HMC2)")
    rows = {}
    with tempfile.TemporaryDirectory() as directory:
        cache = os.path.join(directory, "cache")  # tati's XLA cache: cold in repeat 1, warm after
        for repeat in range(args.repeats):
            for target in targets:
                for method in methods:
                    r = measure(method, target, args, args.seed, cache, directory)
                    rows.setdefault((target, method), []).append(r)
                    print(f"repeat {repeat + 1} {target} {method}: imports {r['imports']:.1f} s, run "
                          f"{r['seconds']:.2f} s, min ESS {r['ess']:.0f}, ESS/s {r['ess'] / r['seconds']:.0f} "
                          f"{r['sanity']}" + (f" (first call: tracing {r['tracing']:.1f} s, compiling "
                                              f"{r['compiling']:.1f} s)" if "tracing" in r else ""), flush=True)
    print("\n| target | method | imports s | run s, first | run s, later (median) | min ESS | ESS/s, first | "
          "ESS/s, later | ratio to BlackJAX, first | ratio, later |\n|---|---|---|---|---|---|---|---|---|---|")
    for target in targets:
        first = {m: rows[(target, m)][0]["ess"] / rows[(target, m)][0]["seconds"] for m in methods}
        later = {m: statistics.median(x["ess"] / x["seconds"] for x in (rows[(target, m)][1:] or rows[(target, m)]))
                 for m in methods}
        if "BlackJAX" in methods:  # no cache: every repeat is a first run
            first["BlackJAX"] = later["BlackJAX"] = statistics.median(
                x["ess"] / x["seconds"] for x in rows[(target, "BlackJAX")])
        for method in methods:
            r = rows[(target, method)]
            ratios = [rate[method] / rate["BlackJAX"] if "BlackJAX" in rate else float("nan")
                      for rate in (first, later)]
            print(f"| {TARGETS[target]} | {method} | {statistics.median(x['imports'] for x in r):.1f} | "
                  f"{r[0]['seconds']:.2f} | {statistics.median(x['seconds'] for x in (r[1:] or r)):.2f} | "
                  f"{statistics.median(x['ess'] for x in r):.0f} | {first[method]:.0f} | {later[method]:.0f} | "
                  f"{ratios[0]:.2f} | {ratios[1]:.2f} |")

if __name__ == "__main__":
    main()
