"""Comparing models as an ArviZ user does: PSIS-LOO of three models of the diabetes data, checked
against held-out data, and each model's posterior predictive check.

    python examples/model_comparison.py [--quick] [--seed 1] [--plot ppc.png]

Needs scikit-learn (its package ships the data) and ArviZ: pip install tati[examples,arviz].

Data as in bayesian_diabetes.py: 354 training and 88 test patients, inputs and target
standardised by the training part (units of the target's standard deviation). Three models, each
sampled by NUTS with 4 walkers, nothing set but burn_in_steps and max_steps:

- linear, noise sd 1: y = x . w + b + N(0, 1) (likelihood gaussian, noise_standard_deviation 1: wider
  than the data's noise, a linear fit leaves residuals of sd 0.7);
- linear, learned noise: the mean and the raw variance both linear in x
  (likelihood heteroscedastic_gaussian, no hidden layer);
- network: bayesian_diabetes.py's 10-5-2 tanh network, mean and raw variance.

Each run's `to_inference_data(log_likelihood=sim, posterior_predictive=sim)` gives ArviZ the pointwise
log-likelihood of the training data and a replicate of it per draw. Printed per model: az.loo's
expected log predictive density per point (elpd_loo / n) with its standard error, p_loo (the effective
number of parameters) and how many Pareto k exceed 0.7 (points whose LOO estimate is unreliable), beside
the held-out log predictive density per point of the 88 test patients (tati.bayes.predictive), the
quantity LOO estimates without a test set; then az.compare's table. With --plot (matplotlib) one
az.plot_ppc panel per model: the replicates' densities over the data's.
"""

import argparse
import math
import sys
import time
import warnings

try:
    import sklearn  # noqa: F401  (bayesian_diabetes.data loads the data)
except ImportError:
    sys.exit("model_comparison.py needs scikit-learn for its data: pip install tati[examples]")
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # ArviZ's notice of its coming 1.0
        import arviz as az
except ImportError:
    sys.exit("model_comparison.py needs arviz: pip install tati[arviz]")

import tati
from bayesian_diabetes import data, matplotlib_or_hint, shrink

MODELS = {
    "linear, noise sd 1": dict(hidden_dimension=[], likelihood="gaussian"),
    "linear, learned noise": dict(hidden_dimension=[], output_dimension=2, likelihood="heteroscedastic_gaussian"),
    "network": dict(hidden_dimension=[5], hidden_activation="tanh", output_dimension=2,
                    likelihood="heteroscedastic_gaussian"),
}


def run_model(options, train, test, seed, quick):
    """(InferenceData with log_likelihood and posterior_predictive, held-out log predictive density per
    point, its standard error over the test points, seconds)."""
    start = time.time()
    sim = tati.Simulation(dataset=train, output_activation="linear", prior_standard_deviation=1.0,
                          dtype="float64", sampler="nuts", number_walkers=4, seed=seed,
                          burn_in_steps=300 if quick else 500, max_steps=600 if quick else 1500, **options)
    result = sim.sample()
    idata = result.to_inference_data(log_likelihood=sim, posterior_predictive=sim)
    table, _ = sim.predictive(test[0], test[1], trajectory=result.trajectory)
    density = table["log_predictive_density"].to_numpy()
    return idata, density.mean(), density.std(ddof=1) / math.sqrt(len(density)), time.time() - start


def draw_ppc(idatas, path):
    plt = matplotlib_or_hint()
    if plt is None:
        return
    figure, axes = plt.subplots(1, len(idatas), figsize=(4.5 * len(idatas), 3.6), sharey=True)
    for ax, (name, idata) in zip(axes, idatas.items()):
        az.plot_ppc(idata, ax=ax, num_pp_samples=100, random_seed=0, legend=ax is axes[0])
        if ax is axes[0]:
            ax.legend(fontsize=7, loc="upper right")
        ax.set_title(name)
        ax.set_xlabel("y (target's sd units)")
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    shrink(path)
    print(f"wrote {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 + 300 NUTS steps instead of 500 + 1000")
    parser.add_argument("--seed", type=int, default=1, help="seed of the samplers")
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the train/test split")
    parser.add_argument("--plot", default=None, help="write the posterior predictive checks to this PNG file")
    args = parser.parse_args()
    train, test = data(args.split_seed)
    idatas = {}
    for name, options in MODELS.items():
        with warnings.catch_warnings():  # the warm start's and ArviZ's notes; the printed figures say enough
            warnings.simplefilter("ignore")
            idata, held_out, held_out_error, seconds = run_model(options, train, test, args.seed, args.quick)
            loo = az.loo(idata)
        idatas[name] = idata
        n = len(train[1])
        print(f"{name}: elpd_loo {loo.elpd_loo / n:.3f} +- {loo.se / n:.3f} per point (p_loo {loo.p_loo:.1f}, "
              f"{int((loo.pareto_k.values > 0.7).sum())} Pareto k > 0.7); held out {held_out:.3f} +- "
              f"{held_out_error:.3f} per point; {seconds:.0f} s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparison = az.compare(idatas)
    print(comparison[["rank", "elpd_loo", "p_loo", "elpd_diff", "dse", "weight"]].round(2).to_string())
    if args.plot:
        draw_ppc(idatas, args.plot)


if __name__ == "__main__":
    main()
