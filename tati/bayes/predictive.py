"""The posterior predictive distribution of a network from sampled parameters.

Given n parameter draws theta_i (a trajectory's rows after burn-in, all walkers, thinned evenly
to at most `draws`), and the Simulation's `likelihood`:

    mean:    (1/n) sum_i E[y | x, theta_i]            (the Gaussian's mean; a class probability; a rate)
    bands:   Gaussian likelihoods: the quantiles of y~ under the mixture (1/n) sum_i N(mu_i, v_i),
             computed exactly by bisection of its CDF, so the band holds both the parameters'
             and the noise's spread (also for a single network, n = 1); student_t likewise under the
             mixture of mu_i + sigma_i t_nu (its mean the locations' mean, the t's mean for nu > 1); poisson and
             negative_binomial: likewise the counts' quantiles under the mixture of the draws'
             distributions; classifiers: quantiles of the class probabilities over the draws
    log predictive density of held-out (x, y):
             lpd(x, y) = log (1/n) sum_i p(y | x, theta_i) = LogSumExp_i log p(y | x, theta_i) - log n

LogSumExp subtracts the largest term first, so the lpd stays finite where every p(y | x, theta_i)
underflows (below 1e-308). Without a likelihood (the thermodynamic convention) there is no
p(y | x, theta): only the network outputs' mean and quantiles are given.

Held-out labels beyond the predictive's tails: with labels, a continuous likelihood's mixture CDF at each
label, F(y), is uniform where the predictive is calibrated, so a label lies beyond its central 1 - TAIL_BAND
band with probability TAIL_BAND. Far more of them than a binomial count allows at TAIL_CHANCE are
outliers the likelihood's tails price at almost nothing, each costing the lpd many nats (UCI's Boston
housing, heteroscedastic_gaussian, split 0: 2 of 51 test points, lpd -9.2 and -6.9, where 0.01 are
expected): a warning names the cure, student_t's heavier tails. Fewer labels inside the central 95% band
than chance allows is a predictive too narrow overall, and from a fit's few networks so are labels beyond
the tails: the warning's cure is then to sample (held_out_tail_line). A classifier's held-out points of a
bin of confidence with fewer right classes than chance allows are an overconfident predictive, said likewise
(overconfidence_line).
"""

import math
import warnings

import numpy as np
import pandas as pd
import tensorflow as tf
from scipy import special, stats

from tati.bayes import calibration
from tati.errors import InputError
from tati.config.options import COUNTS
from tati.models.losses import mean_and_variance, negative_binomial_parameters, point_nll
from tati.recording.columns import check_parameter_columns

BLOCK_VALUES = 2 ** 24  # network outputs computed at once by pointwise_log_likelihood (128 MiB of float64)
TAIL_BAND, TAIL_CHANCE = 2e-4, 1e-4  # held-out labels beyond the 99.98% band; a count this improbable is said
# Fewer held-out labels inside the central 95% band than TAIL_CHANCE allows: a predictive too narrow overall (a
# MAP's on UCI's Boston housing: its noise variances shrink onto the training points, and the band holds 19-35 of
# 51 test targets over the 20 splits, where BAOAB's and HMC2's hold 41-51, never said). Where it averages
# FEW_NETWORKS draws or fewer it is a fit's (a MAP, a deep ensemble).
NARROW_BAND, FEW_NETWORKS = 0.95, 10
RUN_CURE = "check the run's convergence (its summary's R-hat) and temperature"


def parameter_draws(trajectory, parameter_names, burn_in, draws):
    """[n, d] parameters of the rows after burn_in, all walkers, thinned evenly to <= draws."""
    check_parameter_columns(trajectory.columns, parameter_names, "trajectory")
    kept = trajectory[trajectory["step"] > burn_in]
    if kept.empty:
        raise InputError(f"trajectory has no row after burn_in {burn_in}")
    rows = np.unique(np.linspace(0, len(kept) - 1, min(draws, len(kept))).round().astype(int))
    return kept[list(parameter_names)].to_numpy(np.float64)[rows]


def _checked(simulation, features, labels, dtype):
    """features [n, the run's feature columns] and labels [n, its label columns] (a vector for
    one column), or InputError: labels of another width would broadcast against the outputs into
    a wrong density without an error."""
    run_features, run_labels = simulation.data.all()
    columns = simulation.options["input_dimension"]
    try:
        features = np.asarray(features, dtype=dtype)
        labels = None if labels is None else np.asarray(labels, dtype=dtype)
    except (TypeError, ValueError) as error:
        raise InputError(f"predictive: features and labels must be arrays of numbers ({error})") from None
    point = tuple(run_features.shape[1:])
    if len(point) > 1:  # a Keras model's images or sequences
        if features.shape[1:] != point:
            raise InputError(f"predictive: features of shape {features.shape}; the model takes points of the "
                             f"run's shape {list(point)}")
    elif features.ndim != 2 or features.shape[1] != columns:
        raise InputError(f"predictive: features of shape {features.shape}; the network takes [points, {columns}] "
                         f"(the run's {columns} feature column(s))")
    if labels is None:
        return features, None
    labels = labels.reshape(-1, 1) if labels.ndim == 1 else labels
    if labels.ndim != 2 or labels.shape != (len(features), run_labels.shape[1]):
        raise InputError(f"predictive: labels of shape {labels.shape} for {len(features)} points; the run's "
                         f"data has {run_labels.shape[1]} label column(s), so [{len(features)}, "
                         f"{run_labels.shape[1]}]")
    return features, labels


def _output_blocks(simulation, draws, what, features=None):
    """(the run's labels, blocks of the network's outputs [block, points, outputs] under the rows of `draws`
    (a DataFrame with the model's parameter columns), at most BLOCK_VALUES values each), at the run's data
    points or at `features` (new points, the run's feature columns), or InputError where the simulation
    has no network or no likelihood; `what` names the caller in the error."""
    o, model = simulation.options, simulation.model
    if not model.uses_data:
        raise InputError(f"{what} needs a network; this simulation samples a potential")
    if o["likelihood"] == "none":
        raise InputError(f"{what} needs a likelihood (option likelihood): without one the loss is "
                         "not a log-likelihood")
    check_parameter_columns(draws.columns, model.parameter_names, "trajectory")
    theta = tf.constant(draws[list(model.parameter_names)].to_numpy(np.float64), model.dtype)
    run_features, labels = simulation.data.all()
    if features is None:
        features = run_features
    else:
        features = tf.constant(simulation.inputs(_checked(simulation, features, None,
                                                          tf.as_dtype(model.dtype).as_numpy_dtype)[0]))
    block = max(1, BLOCK_VALUES // (int(features.shape[0]) * int(o["output_dimension"])))
    return labels, (model.outputs(features, theta=theta[first:first + block])
                    for first in range(0, int(theta.shape[0]), block))


def _point_nll(options):
    """The run's likelihood's negative log-likelihood per point (models/losses.py)."""
    return point_nll(options["likelihood"], options["noise_standard_deviation"], options["degrees_of_freedom"])


def pointwise_log_likelihood(simulation, draws):
    """[n, points] float64: log p(y_j | x_j, theta_i) of each of the run's own data points (its network
    inputs and labels) under each draw, a row of `draws` (a DataFrame with the model's parameter
    columns, e.g. trajectory rows), by its likelihood: the pointwise log-likelihood that PSIS-LOO and
    WAIC take (arviz.loo). The draws go through the network in blocks of at most BLOCK_VALUES outputs,
    so a large dataset needs no more memory than the answer's."""
    labels, blocks = _output_blocks(simulation, draws, "log_likelihood")
    nll = _point_nll(simulation.options)
    return np.concatenate([-nll(labels, outputs).numpy() for outputs in blocks]).astype(np.float64)


def posterior_predictive_draws(simulation, draws, seed, features=None):
    """[n, points, label columns] float64: one replicate y~_ij ~ p(y | x_j, theta_i) of each of the run's
    data points under each row of `draws`, by its likelihood (numpy's generator of `seed`): Gaussian
    likelihoods mu + sigma z; student_t mu + sigma t_nu; poisson and negative_binomial a count of mean exp(f);
    bernoulli 1 with probability sigmoid(f), else 0 (-1 where the run's labels are -1/+1); categorical a
    class drawn from softmax(f), as an index or one-hot as the labels are. The replicated data of a posterior predictive
    check (arviz.plot_ppc), PyMC's sample_posterior_predictive.
    With `features` (new points [points, the run's feature columns]) the points are those: predictions,
    in the run's labels' coding."""
    o = simulation.options
    labels, blocks = _output_blocks(simulation, draws, "posterior_predictive", features)
    labels = labels.numpy()
    rng = np.random.default_rng(seed)
    replicates = []
    for outputs in blocks:
        if o["likelihood"] in ("gaussian", "heteroscedastic_gaussian"):
            mu, variance = (t.numpy().astype(np.float64)
                            for t in mean_and_variance(o["likelihood"], outputs, o["noise_standard_deviation"]))
            replicates.append(mu + np.sqrt(variance) * rng.standard_normal(mu.shape))
        elif o["likelihood"] == "student_t":
            mu, scale2 = (t.numpy().astype(np.float64) for t in mean_and_variance("student_t", outputs))
            replicates.append(mu + np.sqrt(scale2) * rng.standard_t(o["degrees_of_freedom"], mu.shape))
        elif o["likelihood"] in COUNTS:
            replicates.append(count_distribution(o["likelihood"], outputs).rvs(random_state=rng).astype(np.float64))
        elif o["likelihood"] == "bernoulli":
            p = special.expit(outputs.numpy().astype(np.float64))
            ones = (rng.random(p.shape) < p).astype(np.float64)
            replicates.append(2.0 * ones - 1.0 if (labels < 0).any() else ones)
        else:  # categorical: the first class whose cumulative probability passes a uniform draw
            p = special.softmax(outputs.numpy().astype(np.float64), axis=-1)
            u = rng.random(p.shape[:-1] + (1,))
            classes = np.minimum((np.cumsum(p, axis=-1) < u).sum(axis=-1), p.shape[-1] - 1)
            replicates.append(classes[..., None].astype(np.float64) if labels.shape[-1] == 1
                              else np.eye(p.shape[-1])[classes])
    return np.concatenate(replicates)


def mixture_quantile(mu, sd, probability, degrees_of_freedom=None, halvings=60):
    """The `probability` quantile of the equal mixture of N(mu_i, sd_i^2) over axis 0 (the
    predictive of y, noise included), by bisection of its CDF between 10 sd below the lowest
    and above the highest component: exact to the bracket's width / 2^60, also for one draw. With
    `degrees_of_freedom` nu, of the mixture of mu_i + sd_i t_nu, between the components' own quantiles
    (10 sd holds no band of a heavy tail: t_1's 97.5% quantile is 12.7)."""
    sd = np.maximum(sd, np.finfo(np.float64).tiny)
    if degrees_of_freedom is None:
        cdf = special.ndtr
        a, b = (mu - 10.0 * sd).min(axis=0), (mu + 10.0 * sd).max(axis=0)
    else:
        def cdf(z):
            return special.stdtr(degrees_of_freedom, z)
        own = mu + sd * special.stdtrit(degrees_of_freedom, probability)
        a, b = own.min(axis=0), own.max(axis=0)
    for _ in range(halvings):
        middle = 0.5 * (a + b)
        below = cdf((middle - mu) / sd).mean(axis=0) < probability
        a, b = np.where(below, middle, a), np.where(below, b, middle)
    return 0.5 * (a + b)


def count_distribution(name, outputs):
    """scipy's frozen Poisson (rate exp f) or negative binomial (r and p = r / (r + mean)) of each output's
    counts, float64 [n, points, label columns]."""
    f = tf.cast(outputs, tf.float64)
    if name == "poisson":
        return stats.poisson(np.exp(f.numpy()))
    log_mean, r = (t.numpy() for t in negative_binomial_parameters(f))
    return stats.nbinom(r, 1.0 / (1.0 + np.exp(log_mean) / r))


def count_mixture_quantile(distribution, probability):
    """The `probability` quantile of the counts under the equal mixture of `distribution`'s components
    over axis 0 (a frozen scipy distribution of counts): the least m whose mixture CDF reaches
    `probability`, by bisection over the integers between the components' own quantiles (the mixture's
    lies between them), also for one draw."""
    own = distribution.ppf(probability)
    low, high = own.min(axis=0), own.max(axis=0)
    for _ in range(64):  # 2^64 counts: any finite rate's bracket
        if not np.any(high > low):
            break
        middle = np.floor(0.5 * (low + high))
        enough = distribution.cdf(middle).mean(axis=0) >= probability
        low, high = np.where(enough, low, middle + 1.0), np.where(enough, middle, high)
    return high


def predictive(simulation, features, labels=None, trajectory=None, burn_in=None, draws=1000, level=0.95):
    """(table, lpd): a DataFrame with one row per point and output column k: `mean_k`,
    `lower_k` and `upper_k` (the central `level` band), and with `labels` the point's
    `log_predictive_density` and, for regression and counts, `pit_k`, the predictive's CDF at label
    column k (randomised for counts; uniform where calibrated: tati/bayes/calibration.py); lpd is the
    densities' sum (None without labels)."""
    o = simulation.options
    model = simulation.model
    if not model.uses_data:
        raise InputError("predictive needs a network; this simulation samples a potential")
    if trajectory is None:
        raise InputError("predictive needs draws: call sample() first, or give trajectory= (a Result's "
                         "trajectory or tati.load_run's)")
    theta = parameter_draws(trajectory, model.parameter_names, o["burn_in_steps"] if burn_in is None else burn_in,
                            draws)
    dtype = tf.as_dtype(model.dtype)
    features, labels = _checked(simulation, features, labels, dtype.as_numpy_dtype)
    x = tf.constant(simulation.inputs(features))
    outputs = model.outputs(x, theta=tf.constant(theta, dtype))  # [n, points, outputs]
    name, noise = o["likelihood"], o["noise_standard_deviation"]
    low, high = (1.0 - level) / 2.0, (1.0 + level) / 2.0
    if name in ("gaussian", "heteroscedastic_gaussian", "student_t"):
        mu, variance = (t.numpy().astype(np.float64) for t in mean_and_variance(name, outputs, noise))
        mean = mu.mean(axis=0)
        nu = o["degrees_of_freedom"] if name == "student_t" else None
        lower, upper = (mixture_quantile(mu, np.sqrt(variance), p, nu) for p in (low, high))
    elif name in COUNTS:
        counts = count_distribution(name, outputs)
        mean = counts.mean().mean(axis=0)
        lower, upper = (count_mixture_quantile(counts, p) for p in (low, high))
    else:
        f = outputs.numpy().astype(np.float64)
        if name == "bernoulli":
            f = special.expit(f)  # no overflow warning at a separable class's large logits
        elif name == "categorical":
            f = np.exp(f - f.max(axis=-1, keepdims=True))
            f /= f.sum(axis=-1, keepdims=True)
        mean = f.mean(axis=0)
        lower, upper = np.quantile(f, low, axis=0), np.quantile(f, high, axis=0)
    table = {}
    for k in range(mean.shape[-1]):
        table.update({f"mean_{k}": mean[:, k], f"lower_{k}": lower[:, k], f"upper_{k}": upper[:, k]})
    table = pd.DataFrame(table)
    if labels is None:
        return table, None
    if name == "none":
        raise InputError("the log predictive density needs a likelihood (option likelihood)")
    y = tf.constant(labels)
    log_p = -_point_nll(o)(y, outputs).numpy().astype(np.float64)  # [n, points]
    largest = log_p.max(axis=0)
    density = largest + np.log(np.exp(log_p - largest).sum(axis=0)) - math.log(len(theta))
    table["log_predictive_density"] = density
    if name in ("gaussian", "heteroscedastic_gaussian", "student_t"):
        pit = mixture_cdf(mu, np.sqrt(variance), labels, nu)
        line = held_out_tail_line(pit, name, nu, len(np.unique(theta, axis=0)))
        if line is not None:
            warnings.warn(line, stacklevel=3)
    elif name in COUNTS:
        pit = randomised_pit(counts, labels, o["seed"])
    else:
        line = overconfidence_line(calibration.class_probabilities(table, name),
                                   calibration.classes_of(labels, name), len(np.unique(theta, axis=0)))
        if line is not None:
            warnings.warn(line, stacklevel=3)
        return table, float(density.sum())
    for k in range(pit.shape[1]):
        table[f"pit_{k}"] = pit[:, k]
    return table, float(density.sum())


def randomised_pit(distribution, counts, seed):
    """[points, columns]: u drawn uniformly between the mixture's CDF at y - 1 and at y, the counts' PIT
    (uniform where the predictive is calibrated: tati/bayes/calibration.py)."""
    below, at = (distribution.cdf(counts + shift).mean(axis=0) for shift in (-1.0, 0.0))
    return below + np.random.default_rng(seed).uniform(size=np.shape(at)) * (at - below)


def mixture_cdf(mu, sd, y, degrees_of_freedom=None):
    """The mixture's CDF at y [points, columns]: the mean over axis 0 of N(mu_i, sd_i^2)'s, or with
    `degrees_of_freedom` of mu_i + sd_i t_nu's."""
    z = (y - mu) / np.maximum(sd, np.finfo(np.float64).tiny)
    return (special.ndtr(z) if degrees_of_freedom is None else special.stdtr(degrees_of_freedom, z)).mean(axis=0)


def held_out_tail_line(probabilities, likelihood, degrees_of_freedom=None, networks=None):
    """One line, with the cure, where more held-out labels lie beyond the predictive's central 1 - TAIL_BAND
    band (their mixture CDF `probabilities`) than chance allows at TAIL_CHANCE (outliers: heavier tails), or
    fewer inside its central NARROW_BAND band (a predictive too narrow overall); or None. From a fit's few
    `networks` (parameter draws, at most FEW_NETWORKS) either is the fit's narrowness, whose cure is to
    sample; from a run's many draws the outliers' cure comes first."""
    probabilities = np.ravel(probabilities)
    n = probabilities.size
    far = int(np.sum(np.minimum(probabilities, 1.0 - probabilities) < TAIL_BAND / 2))
    inside = int(np.sum(np.abs(probabilities - 0.5) < NARROW_BAND / 2))
    outliers = far >= 2 and stats.binom.sf(far - 1, n, TAIL_BAND) < TAIL_CHANCE
    narrow = stats.binom.cdf(inside, n, NARROW_BAND) < TAIL_CHANCE
    few, what = _fit_or_run(networks)
    if outliers and not few:
        cure = ("give a smaller degrees_of_freedom (now {:g})".format(degrees_of_freedom) if likelihood == "student_t"
                else "use likelihood student_t")
        return (f"predictive: {far} of {n} held-out labels lie beyond the predictive's {100 * (1 - TAIL_BAND):g}% "
                f"band, where {TAIL_BAND * n:.2g} would, so likelihood {likelihood}'s tails are too light for these "
                f"data: {cure}")
    if not (narrow or outliers):
        return None
    cure = (": give a larger noise_standard_deviation, or likelihood heteroscedastic_gaussian"
            if likelihood == "gaussian" else
            f", {'its noise variance' if networks == 1 else 'their noise variances'} fitted to the training "
            "points: sample the posterior (a sampler's draws)" if few else
            f": {RUN_CURE}")
    return (f"predictive: the central {NARROW_BAND:.0%} band holds {inside} of {n} held-out labels "
            f"({NARROW_BAND * n:.3g} would) and {far} lie beyond its {100 * (1 - TAIL_BAND):g}% band "
            f"({TAIL_BAND * n:.2g} would): the predictive {what} is far too narrow for these data{cure}")


def overconfidence_line(probabilities, classes, networks=None):
    """One line, with the cure, where a classifier's held-out points of some bin of confidence
    (calibration.reliability's) hold fewer right classes than chance allows at TAIL_CHANCE over the bins:
    under calibration the right ones number a sum of Bernoulli(confidence) draws, whose lower tail is
    below the binomial's of the bin's mean confidence there (Hoeffding 1956), so the test errs at most at
    its level; or None."""
    bins, _ = calibration.reliability(probabilities, classes)
    right = np.round(bins["accuracy"] * bins["points"]).to_numpy(int)
    chance = stats.binom.cdf(right, bins["points"], bins["confidence"])
    worst = int(np.argmin(chance))
    if chance[worst] >= TAIL_CHANCE / calibration.BINS:
        return None
    row = bins.iloc[worst]
    few, what = _fit_or_run(networks)
    cure = (f"the predictive {what}, fitted to the training points, is overconfident: sample the posterior (a "
            "sampler's draws)" if few else f"the predictive {what} is overconfident: {RUN_CURE}")
    wrong = int(row["points"]) - int(right[worst])
    return (f"predictive: {wrong} of the {int(row['points'])} held-out points whose predicted class has probability "
            f"{row['lower']:.2g}-{row['upper']:.2g} are wrong, where {row['points'] * (1.0 - row['confidence']):.2g} "
            f"would be: {cure}")


def _fit_or_run(networks):
    """(whether the predictive averages a fit's few `networks` (distinct draws), the words for it)."""
    few = networks is not None and networks <= FEW_NETWORKS
    return few, f"of {networks} network{'s' * (networks != 1)}" if few else "of these draws"
