"""The one table of every option: name, default, kind (parse and check), group and help.

`Simulation(**options)`, the command-line tools and doc/options.md are all generated from
`OPTIONS`, so a default or a help text can only be stated here, or, for an option of one
sampler alone, in that sampler's registry line (tati/engine/registry.py), from which it joins
the table. A kind converts a Python value or a command-line string into the option's value, or
raises an InputError naming the option; `Option` and the common kinds live in
tati/config/option_kinds.py (which the registry imports too) and are re-exported here.
"""

import difflib
import numbers

from tati.config.option_kinds import (NONNEGATIVE, NONNEGATIVE_INT, POSITIVE, POSITIVE_INT,  # noqa: F401 (re-exported)
                                      Boolean, BooleanOrAuto, Kind, ListOf, Number, Option, Optional, OrAuto,
                                      Parameters, PythonObject, RateOrSchedule, Text, TextOrCallable)
from tati.config.compilation import BREAK_EVEN, UNROLLED_WALKERS
from tati.engine import registry
from tati.engine.contract import GRADIENT, LEGS, PROPOSAL
from tati.errors import InputError


class Dataset(Kind):
    """A built-in dataset's name or, in Python, a pair (X, Y) of arrays."""
    metavar = "{two_clusters,two_circles,four_squares,two_spirals}"

    def __call__(self, option, value):
        from tati.config.original import DATASET_CODES
        if isinstance(value, numbers.Integral) and not isinstance(value, bool) or (
                isinstance(value, str) and value.strip().isdigit()):
            code = int(value)
            if code not in DATASET_CODES:
                raise InputError(f"{option} {value}: the original TATi's dataset codes are "
                                 + ", ".join(f"{c} ({name})" for c, name in DATASET_CODES.items()))
            return DATASET_CODES[code]
        if isinstance(value, str):
            from tati.data.datasets import DATASETS
            return Text(DATASETS)(option, value)
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return tuple(value)
        if any(kind.__name__ == "DatasetV2" for kind in type(value).__mro__):  # a tf.data pipeline, as Keras' fit takes
            raise InputError(f"{option} takes arrays, not a tf.data.Dataset: give dataset=(X, Y) with its points and "
                             "labels as arrays (tati batches and shuffles them itself: batch_size)")
        raise InputError(f"{option} must be a built-in dataset name or a pair (X, Y) of arrays, "
                         f"got {value!r:.60}")


class InputColumns(Kind):
    """Terms such as 'x1 x2 x1^2 sin(x2)' (tati/data/input_columns.py), kept as a list of strings."""
    metavar = "TERMS"
    separator = " "

    def __call__(self, option, value):
        from tati.data.input_columns import parse
        return parse(value, option)


class SamplerName(Kind):
    """A sampler's short or full name in any case, converted to its short name
    (tati/engine/registry.py)."""
    metavar = "NAME"

    def __call__(self, option, value):
        return registry.canonical_sampler(Text()(option, value), option)


LOSS_NAMES = ("mean_squared", "sigmoid_cross_entropy", "softmax_cross_entropy", "log_loss",
              "hinge_loss", "absolute_difference", "cosine_distance")
LIKELIHOODS = ("none", "gaussian", "heteroscedastic_gaussian", "student_t", "bernoulli", "categorical", "poisson",
               "negative_binomial")
# The likelihoods with two outputs per label column, and what the two are; those whose labels are counts.
TWO_OUTPUTS = {"heteroscedastic_gaussian": "a mean and a raw variance",
               "student_t": "a location and a raw squared scale",
               "negative_binomial": "a log mean and a raw dispersion"}
COUNTS = ("poisson", "negative_binomial")
ACTIVATION_NAMES = ("tanh", "sigmoid", "softplus", "softsign", "elu", "relu6", "relu", "linear")


_ORIGINAL_NAMES = [alias for spec in registry.specs(samples=True) for alias in spec.aliases]

OPTIONS = [
    # data
    Option("dataset", None, Optional(Dataset()), "data",
           "Built-in dataset (two_clusters, two_circles, four_squares, two_spirals; or the original "
           "TATi's code 0 to 3 in that order: two_circles, four_squares, two_clusters, two_spirals) or, "
           "in Python, a pair (X, Y) of arrays. With no data option, networks train on two_clusters."),
    Option("dataset_size", 500, POSITIVE_INT, "data", "Number of points of a built-in dataset."),
    Option("dataset_noise", 0.1, NONNEGATIVE, "data", "Noise level of a built-in dataset."),
    Option("dataset_seed", 0, NONNEGATIVE_INT, "data", "Seed of a built-in dataset."),
    Option("batch_data_files", None, Optional(ListOf(Text())), "data",
           "CSV files: a header row, then feature columns followed by label columns."),
    Option("batch_size", None, Optional(POSITIVE_INT), "data",
           "Points per batch; none means the full dataset every step. Batches are reshuffled "
           "each epoch with the seed. HMC1, HMC2, NUTS and RWMH take the full dataset only (their "
           "accept/reject compares energies of one target)."),
    Option("input_dimension", None, Optional(POSITIVE_INT), "data",
           "Number of feature columns; none means taken from the data (CSV: all columns but the "
           "last)."),
    Option("input_columns", None, InputColumns(), "data",
           "Inputs of the network computed from the feature columns, e.g. 'x1 x2 x1^2 sin(x2)': "
           "terms separated by spaces, each xK (feature column K, from 1), sin(xK), cos(xK), any of "
           "them to a positive integer power (^n) or a product of them (x1*x2); none means the "
           "feature columns as they are."),
    Option("output_dimension", None, Optional(POSITIVE_INT), "data",
           "Number of network outputs; none means taken from the labels."),
    # model
    Option("hidden_dimension", [], ListOf(POSITIVE_INT), "network",
           "Widths of the hidden layers of the built-in network, e.g. 8,8; empty means none."),
    Option("hidden_activation", "relu", Text(ACTIVATION_NAMES), "network",
           "Activation of the hidden layers."),
    Option("output_activation", "tanh", Text(ACTIVATION_NAMES), "network",
           "Activation of the output layer; linear when a likelihood is given and this is not "
           "(its logits, means and raw variances must not be bounded to [-1, 1])."),
    Option("loss", "mean_squared", TextOrCallable(LOSS_NAMES), "network",
           "Loss of the network: " + ", ".join(LOSS_NAMES) + "; in Python also a callable "
           "(labels, outputs) -> scalar for a user's Keras model."),
    Option("likelihood", "none", Text(LIKELIHOODS), "network",
           "Bayesian units: U = the data's negative log-likelihood (N / n times a mini-batch's sum) + the "
           "prior's, replacing the mean loss, so inverse_temperature 1 samples the posterior and "
           "prior_standard_deviation is in the parameters' units (on biases too): gaussian with "
           "noise_standard_deviation, heteroscedastic_gaussian (outputs a mean and a raw variance v per "
           "label, variance softplus(v)), student_t (noise with heavy tails, robust to outliers: a location "
           "and a raw squared scale v per label column, scale^2 softplus(v), with degrees_of_freedom), "
           "bernoulli (logits, labels 0/1 or -1/+1), categorical (logits), "
           "poisson (the log of the rate per label column, labels counts 0, 1, 2, ...), negative_binomial (counts "
           "varying more than Poisson's: a log mean m and a raw dispersion a per label column, variance "
           "e^m + softplus(a) e^2m); none keeps loss."),
    Option("noise_standard_deviation", 1.0, POSITIVE, "network",
           "likelihood gaussian: the noise sigma of y = f(x) + N(0, sigma^2)."),
    Option("degrees_of_freedom", 4.0, POSITIVE, "network",
           "likelihood student_t: its degrees of freedom nu; smaller is heavier-tailed (1 is Cauchy's), "
           "and as nu grows student_t tends to heteroscedastic_gaussian."),
    Option("dtype", "float32", Text(("float32", "float64")), "network",
           "Floating-point type of parameters and data."),
    Option("model", None, PythonObject(), "network",
           "A user's keras.Model to sample or train instead of the built-in network, evaluated per "
           "walker by Keras 3's stateless call (Python only)."),
    Option("potential", None, PythonObject(), "network",
           "A callable theta -> U(theta) on a 1-D parameter tensor, sampled instead of a "
           "network (Python only); needs initial_parameters."),
    Option("initial_parameters", None, Parameters(), "network",
           "Initial flat parameter vector (length d), or one per walker ([W, d]); for networks "
           "it replaces the seeded initialisation. On the command line: comma-separated."),
    Option("initial_dispersion", 0.0, NONNEGATIVE, "network",
           "Half-width r: every walker starts at its initial parameters plus its own uniform(-r, r) "
           "draw per parameter, keyed by (seed, walker) (Stan starts chains at uniform(-2, 2)), so "
           "that walkers start dispersed, as R-hat assumes; 0 keeps the starts."),
    Option("potential_batched", False, PythonObject(lambda option, v: Boolean()(option, v)), "network",
           "The potential takes all walkers' parameters [W, d] and returns [W] energies, instead "
           "of being vectorised over walkers by tati (Python only)."),
    Option("fix_parameters", None, Optional(Text()), "network",
           "Parameters kept at given values, e.g. 'layer1/weights=0.1;output/biases=0;weight3=2': "
           "groups layerK/weights, layerK/biases, output/weights, output/biases of the built-in "
           "network (a Keras model's variable paths) or single columns (weight7, param0); one "
           "value per group or one per member. "
           "They leave the trajectory columns and the degrees of freedom."),
    Option("parse_parameters_file", None, Optional(Text()), "network",
           "Trajectory CSV file (as written by trajectory_file) whose row gives the initial "
           "parameters: walker i takes the row of its id at the step, or the only row there."),
    Option("parse_steps", None, Optional(ListOf(NONNEGATIVE_INT)), "network",
           "Step of the parse_parameters_file row to start from (one step, or one per walker); "
           "none means the file's last step."),
    # prior
    Option("prior_lower_boundary", None, Optional(Number()), "prior",
           "Lower wall l on every parameter: energy a tau/(n+1) max(0, 1 - (theta - l)/tau)^(n+1), "
           "tau = 0.01 (u - l); equal to prior_upper_boundary it tethers the parameters there."),
    Option("prior_upper_boundary", None, Optional(Number()), "prior",
           "Upper wall u on every parameter, mirroring the lower one."),
    Option("prior_factor", 1.0, POSITIVE, "prior", "a: the strength of walls and tethering."),
    Option("prior_power", 1.0, POSITIVE, "prior", "n: the power of the walls' and tethering's force."),
    Option("prior_standard_deviation", None, Optional(POSITIVE), "prior",
           "s of a Gaussian prior, energy |w|^2 / (2 s^2) over a network's weights (not its "
           "biases; with a likelihood over all its parameters) or over every parameter of a "
           "potential; none means no Gaussian prior."),
    # sampler
    Option("sampler", "BAOAB", SamplerName(), "sampler",
           f"Sampler by short or full name, any case: {', '.join(registry.sampler_names())}; the original "
           f"TATi's names ({', '.join(_ORIGINAL_NAMES[:2])}, ...; doc/migration.md) are accepted too."),
    Option("step_width", 0.1, POSITIVE, "sampler",
           "Time step h of the sampler's integrator. HMC1, HMC2, NUTS, RWMH with burn_in_steps > 0 "
           "and adapt_step_width: only the start of the initial width's search, which doubles or "
           "halves it at the first step of burn-in until the one-step acceptance crosses 0.5."),
    Option("measure_step_width", "auto", BooleanOrAuto(), "sampler",
           "SGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT, pSGLD: before a sampling run's first step (not a "
           "restored one's), set step_width from every walker's start: the least over the walkers of "
           "0.5 / sqrt(largest curvature of U / mass; with batch_size, of the largest batch's U) and the "
           "width at which the mini-batch gradient's noise heats the kinetic temperature by 5% "
           "(SGLD and pSGLD, without momenta: 0.1 / largest curvature, and the width at which the noise heats "
           "the positions by 5%; doc/samplers.md); with adapt_mass noise measured again with each new mass. "
           "Reported in the summary and as Simulation.measured_width. auto: on for SGLD, GLA1, GLA2, BAOAB, "
           "CCAdL, SGHMC (without gradient_noise_estimator), SGNHT, pSGLD with a likelihood and batch_size when no "
           "step_width is given (the run then tunes itself: friction_constant and adapt_mass below). Needs "
           "friction_constant > 0 where the sampler has one."),
    Option("inverse_temperature", 1.0, POSITIVE, "sampler",
           "beta: the sampler targets exp(-beta U)."),
    Option("friction_constant", 1.0, OrAuto(NONNEGATIVE), "sampler",
           "gamma: how fast the thermostat replaces momentum by noise (alpha = exp(-gamma h)); SGHMC's "
           "friction C; CCAdL's initial adaptive friction. auto (GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT with"
           " measure_step_width): measured with the width, the least friction at which the gradient noise "
           "heats the momenta by no more than measure_step_width's bound at the stability width, at least 1 "
           "(doc/samplers.md), and for GLA1, GLA2, BAOAB and SGHMC measured again with each new width of "
           "adapt_mass noise, never lowered; the default there where measure_step_width is auto and on."),
    Option("sigma", 1.0, POSITIVE, "sampler",
           "CCAdL: coupling of the adaptive friction xi to the kinetic temperature, "
           "dxi/dt = sigma (|p|^2 / N - 1 / beta)."),
    Option("sigmaA", None, Optional(NONNEGATIVE), "sampler",
           "CCAdL: amplitude of the additive momentum noise; none means sqrt(2 gamma / beta), "
           "which makes gamma the equilibrium friction for exact gradients."),
    Option("mass", 1.0, POSITIVE, "sampler", "SGHMC, SGNHT: the (scalar) mass M of the momenta."),
    Option("noise_estimate", 0.0, NONNEGATIVE, "sampler",
           "SGHMC: B-hat, the estimated gradient-noise term (Chen et al. 2014), kept constant; "
           "must stay below C / beta."),
    Option("gradient_noise_estimator", "none", Text(("none", "batch", "adam", "adam_centered")), "sampler",
           "SGHMC: how B-hat = eps V-hat / 2 is found, V-hat the gradient's variance per "
           "parameter: none (the constant noise_estimate), batch (the sample variance of the "
           "gradients of noise_estimation_batches random mini-batches at the start of each epoch), "
           "adam (Adam's decaying moments, V-hat = v - m^2) or adam_centered (the second moment "
           "centred with the first)."),
    Option("noise_estimation_batches", 10, Number(integer=True, minimum=2), "sampler",
           "SGHMC, gradient_noise_estimator batch: K, the mini-batches (drawn at random, apart "
           "from the training batches) whose gradients at the current parameters give V-hat; its "
           "relative error is about sqrt(2 / (K - 1))."),
    Option("noise_estimation_steps", 50, POSITIVE_INT, "sampler",
           "SGHMC, gradient_noise_estimator batch, runs without mini-batches (full batch or a "
           "potential): steps between two estimates, the first at step 1 (with mini-batches "
           "there is one at the start of every epoch)."),
    Option("first_moment_decay", 0.9, POSITIVE, "sampler",
           "SGHMC, gradient_noise_estimator adam or adam_centered: decay b1 < 1 of the running "
           "mean of the gradient."),
    Option("second_moment_decay", 0.999, POSITIVE, "sampler",
           "SGHMC, gradient_noise_estimator adam or adam_centered: decay b2 < 1 of the running "
           "second moment of the gradient."),
    Option("mass_rescaling_steps", 50, NONNEGATIVE_INT, "sampler",
           "SGHMC with a gradient_noise_estimator: steps between two rescalings of the diagonal "
           "mass M = mass W, W = max(W, m_est beta B-hat / C) from 1 (it only grows), friction "
           "scaled alike; 0 means never. No effect without an estimator."),
    Option("mass_safety_factor", 2.0, Number(minimum=1), "sampler",
           "SGHMC with a gradient_noise_estimator: m_est, kept as m_est beta B-hat <= C at every "
           "step (B-hat is clamped between rescalings), so at least 1 - 1/m_est of the "
           "thermostat's noise is injected."),
    Option("hamiltonian_dynamics_time", 1.0, POSITIVE, "sampler",
           "HMC: time T of one leg; each leg takes round(u T / step_width) steps, u uniform in "
           "[0.9, 1.1], of width uniform in [0.7, 1.3] times step_width."),
    Option("max_tree_depth", 10, Number(integer=True, minimum=1, maximum=20), "sampler",
           "NUTS: largest tree depth k of a step (at most 2^k - 1 leapfrog steps), at most 20 (TFP "
           "builds a table of 2^k entries before the first step)."),
    Option("adapt_step_width", True, Boolean(), "sampler",
           "NUTS, RWMH, HMC1, HMC2: at the first step of burn_in_steps search an initial width "
           "from step_width (doubled or halved until the walkers' mean one-step acceptance crosses "
           "0.5; Hoffman & Gelman 2014, Algorithm 4), then adapt it by dual averaging towards "
           "target_acceptance_rate, then keep the averaged width."),
    Option("target_acceptance_rate", None, Optional(Number(minimum=0.0, strict=True)), "sampler",
           "NUTS, RWMH, HMC1, HMC2: the mean acceptance the step width adapts to, in (0, 1); none "
           "means 0.8, for RWMH 0.234."),
    Option("adapt_mass", "auto", BooleanOrAuto(("noise",)), "sampler",
           "NUTS, RWMH, HMC1, HMC2, SGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT (pSGLD: noise): estimate a diagonal metric "
           "(each parameter's scale s; for the samplers with momenta the inverse mass s^2) from the draws of "
           "burn-in in Stan's windows; needs burn_in_steps >= 20 (HMC: >= 200 gradient evaluations, windows "
           "counted in legs). auto: on for NUTS, RWMH, HMC1, HMC2; for SGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, "
           "SGNHT, pSGLD noise where measure_step_width is auto and on and burn_in_steps >= 20, else off: their "
           "dynamics (trajectories, kinetic temperature) it changes, so otherwise they adapt only when "
           "asked, and keep their step_width (then relative to each parameter's scale). With "
           "covariance_blending the ensemble preconditioner takes its place. noise (SGLD, GLA1, GLA2, BAOAB, "
           "CCAdL, SGHMC without gradient_noise_estimator, SGNHT, with batch_size): the mass from the "
           "gradient noise, M_i = max(V_i batch_size / data size, 1 / prior_standard_deviation^2), V_i the "
           "variance of a batch's gradient, measured at the start, an epoch later and after each window, frozen after "
           "burn-in; every parameter then heats alike under the mini-batch noise (doc/samplers.md). pSGLD "
           "(noise or false): its metric is RMSprop's G = 1 / (rmsprop_epsilon + sqrt(V)); noise starts V "
           "from the measured gradients' mean square and measures step_width in G's metric."),
    Option("metric", "diagonal", Text(("diagonal", "dense")), "sampler",
           "NUTS, RWMH, HMC1, HMC2: the metric adapt_mass estimates: diagonal (a scale per parameter) "
           "or dense (the draws' covariance, theta = centre + L z with L its Cholesky factor; HMC: "
           "of its legs' starts, kicks L^T grad U, drifts L p; for at most 1000 parameters; cost "
           "d^2 per gradient; not with covariance_blending). Without adapt_mass, L stays the identity."),
    Option("adapt_trajectory_length", True, Boolean(), "sampler",
           "HMC1, HMC2: adapt hamiltonian_dynamics_time during burn_in_steps by the ChEES "
           "criterion (gradient ascent on log T), then keep the averaged T "
           "(hamiltonian_dynamics_time is the start). Not with covariance_blending."),
    Option("warm_start", "auto", BooleanOrAuto(), "sampler",
           "NUTS, RWMH, HMC1, HMC2: before a sampling run's first step (not a restored one's), "
           "L-BFGS (at most 200 iterations) from every walker's start, and a walker that ends far above "
           "the best (beta dU > d/2 + 4 sqrt(d/2)) restarts at the best walker's point, so that burn-in "
           "adapts from the typical set (doc/samplers.md); with at most 200 parameters (a potential's: "
           "20,000) a walker that ends at no mode (U unbounded below, as a hierarchical model's funnel), "
           "or at a mode too narrow to hold the mass (Neal's funnel's neck), far below where its path "
           "entered the typical set starts there. auto: on with two walkers or more and "
           "burn_in_steps > 0; for SGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT, pSGLD with adapt_mass noise on with "
           "burn_in_steps > 0 (the noise mass and the measured step width are taken where the walkers start)."),
    # optimizer
    Option("optimizer", "GradientDescent", Text(), "optimizer",
           "Optimizer of fit(): GradientDescent, BarzilaiBorweinGradientDescent (step width "
           "s.s / s.y from the last two steps, learning_rate only for the first; whole dataset), "
           "L-BFGS (TensorFlow Probability's, on the whole "
           "dataset, no learning_rate; stops when converged) or any Keras optimizer name (adam, sgd, ...)."),
    Option("learning_rate", 0.03, RateOrSchedule(), "optimizer",
           "Learning rate of the optimizer; in Python also a keras.optimizers.schedules.LearningRateSchedule "
           "of the optimizer's step count."),
    Option("learning_rate_decay_rate", None, Optional(POSITIVE), "optimizer",
           "Exponential decay r (Keras' ExponentialDecay): after k steps the learning rate is "
           "learning_rate * r^(k / learning_rate_decay_steps); none keeps it constant."),
    Option("learning_rate_decay_steps", 1000, POSITIVE_INT, "optimizer",
           "Steps s over which the learning rate decays by the factor learning_rate_decay_rate."),
    Option("learning_rate_cycle_steps", None, Optional(POSITIVE_INT), "optimizer",
           "Cyclic schedule (for SWAG): within each cycle of c steps the learning rate falls linearly "
           "from learning_rate to learning_rate_cycle_minimum, reached at the cycle's last step; "
           "with every_nth = c the rows are the cycle ends. None means no cycles."),
    Option("learning_rate_cycle_minimum", None, Optional(POSITIVE), "optimizer",
           "The learning rate at the end of each cycle (learning_rate_cycle_steps); none means "
           "learning_rate / 10."),
    # walkers
    Option("number_walkers", 1, POSITIVE_INT, "walkers",
           "Number of walkers W, advanced together in one vectorised step; each has its own noise "
           "and, by default, its own initial parameters (drawn with seed + walker; a Keras model's "
           "walker 0 keeps the model's values)."),
    Option("covariance_blending", 0.0, NONNEGATIVE, "walkers",
           "eta of the ensemble preconditioner: walkers move in two alternating halves, each using the "
           "Cholesky factor of I + eta C, C the covariance of the standing half's positions; 0 means off."),
    Option("covariance_blocks", "full", Text(("full", "layers")), "walkers",
           "Covariance of the ensemble preconditioner: full (all parameters at once, at most 4000) "
           "or layers (block-diagonal, one block per weight and bias tensor of the built-in "
           "network or variable of a Keras model, each at most 4000 parameters), for larger networks."),
    Option("covariance_after_steps", 100, POSITIVE_INT, "walkers",
           "Steps between two swaps of the moving half and updates of the ensemble preconditioner "
           "(and collapses); HMC: at least 2, and best several leg lengths, since legs end at a swap."),
    Option("collapse_walkers", False, Boolean(), "walkers",
           "Reset every walker to walker 0's position at each preconditioner update (not with HMC)."),
    Option("distribution", "none", Text(("none", "mirrored", "multi_worker")), "walkers",
           "Spread the walkers over devices with tf.distribute: none (one device), mirrored "
           "(MirroredStrategy over `devices`) or multi_worker (MultiWorkerMirroredStrategy over "
           "the machines of TF_CONFIG; every worker runs the same program, the first writes the "
           "files). Each replica advances number_walkers / replicas walkers of sample(); the "
           "tables are those of one device, bitwise. Burn-in with adaptation (which pools the "
           "walkers) runs on one device; fit() keeps every walker in one process."),
    Option("devices", None, Optional(ListOf(Text())), "walkers",
           "The devices of distribution=mirrored, e.g. GPU:0,GPU:1; none means every GPU, or "
           "every CPU device when there is no GPU (tati.engine.distribute.split_cpu makes several "
           "logical ones)."),
    # run
    Option("max_steps", 1000, POSITIVE_INT, "run", "Number of steps of one sample() or fit() call."),
    Option("every_nth", 1, POSITIVE_INT, "run",
           "Write a table row every nth step (and at the last step); for HMC every nth leg of "
           "each walker, at its evaluation step. The rows are kept in memory too: a call whose "
           "rows would take more than half the machine's memory is warned of before it runs."),
    Option("burn_in_steps", None, Optional(NONNEGATIVE_INT), "run",
           "Steps left out of the averages (their rows are not written to the averages table); NUTS, "
           "RWMH, HMC1 and HMC2 adapt during them. none: half of max_steps for NUTS, RWMH, HMC1 and HMC2 "
           "(as Stan's warm-up, 1000 of 2000 iterations; on resume the checkpoint's), 0 for the others. "
           "One given shorter than the metric's windows where adapt_mass is on (Stan's 75 + 25 + 50 "
           "steps; HMC: 200 gradient evaluations) warns in one line."),
    Option("jit_compile", "auto", BooleanOrAuto(), "run",
           "Compile the sampling loop with XLA: several times faster per step for potentials and "
           "small networks, after seconds of compiling (cold: 2-20 s on 2 cores; XLA's persistent "
           "cache makes a later process's compile of the same loop about 1.6 s); not with "
           "mini-batches (batch_size), whose varying batch shapes XLA cannot compile; a potential "
           f"with more than {UNROLLED_WALKERS} walkers must be potential_batched (up to {UNROLLED_WALKERS}, "
           "XLA calls it once per walker). auto: XLA where the loop compiles and "
           "max_steps repays a cold compile, as measured per sampler kind and target "
           f"(doc/benchmarks.md): NUTS from {BREAK_EVEN[PROPOSAL][0]} steps on a potential or a Keras model, "
           f"{BREAK_EVEN[PROPOSAL][1]} on the built-in network; RWMH from 50000; HMC1 and HMC2 from "
           f"{BREAK_EVEN[LEGS][0]} on a potential, {BREAK_EVEN[LEGS][1]} on the built-in network, "
           f"{BREAK_EVEN[LEGS][2]} on a Keras model; the Langevin samplers from {BREAK_EVEN[GRADIENT][0]} on a "
           f"potential, {BREAK_EVEN[GRADIENT][1]} on the network, {BREAK_EVEN[GRADIENT][2]} on a Keras "
           "model; graph mode with distribution. Decided once per Simulation, for its sampler "
           "(fit() runs as decided), so a run split into shorter calls may run in graph mode: "
           "give true or false to compare runs bitwise. The tools' summary and Result.compilation "
           "say which and why."),
    Option("xla_cache_directory", "auto", Optional(Text()), "run",
           "Directory where XLA keeps the programs it compiles (TensorFlow's persistent cache), "
           "so that a later process running the same loop (the same options) loads them "
           "instead of compiling again: the first sample() call of an XLA run (jit_compile, or "
           "HMC, whose evaluation step is always compiled) takes seconds less. auto: the user's "
           "cache directory, $XDG_CACHE_HOME/tati/xla or ~/.cache/tati/xla; none: no cache. "
           "Created if missing. TensorFlow reads it when its runtime starts: `import tati` names "
           "auto's, and in Python another one must reach the process's first Simulation before "
           "any TensorFlow operation runs. TensorFlow "
           "logs a harmless 'Error parsing text-format' line for each program it loads (the tools "
           "and `import tati` before TensorFlow hide it)."),
    Option("on_nan", "stop", Text(("stop", "continue")), "run",
           "What a sampler or optimizer (not HMC, which rejects such proposals) does at the "
           "first non-finite loss or gradient: stop with a message naming step and walker, "
           "keeping every row written before, or continue."),
    Option("save_model", None, Optional(Text()), "run",
           "Checkpoint file written at the end of each sample() or fit() call and on "
           "interruption: everything the next step needs, so that a restored run continues "
           "bitwise."),
    Option("restore_model", None, Optional(Text()), "run",
           "Checkpoint file (from save_model) to continue: the run goes on with the next step, "
           "appending to the CSV files. Give the same options as the saved run."),
    Option("seed", 0, NONNEGATIVE_INT, "run",
           "Seed of the network's initial parameters, the momenta, the noise and the batches."),
    Option("run_file", None, Optional(Text()), "output", "CSV file for the run-info table."),
    Option("trajectory_file", None, Optional(Text()), "output", "CSV file for the trajectory table."),
    Option("averages_file", None, Optional(Text()), "output", "CSV file for the averages table."),
    Option("record_momenta", False, Boolean(), "output",
           "Record, at every row (every_nth), each walker's momentum scaled by M^-1/2 (so that "
           "beta |p|^2 is chi-square in equilibrium) and gradient per parameter in the Result's "
           "`momenta` table, for the momentum diagnostics per layer (result.layer_temperatures(), "
           "and the tati-sample summary). Samplers whose momenta persist from step to step only: "
           "GLA1, GLA2, BAOAB, CCAdL, SGHMC."),
    Option("momenta_file", None, Optional(Text()), "output",
           "CSV file for the momenta table (record_momenta; giving the file records them)."),
    Option("summaries_path", None, Optional(Text()), "output",
           "Directory for TensorBoard summaries written as the run goes: at every row, a scalar of "
           "every run-info column and histograms of the parameters, one TensorBoard run per walker "
           "(walker0, walker1, ...). Each call adds event files; an existing directory is kept, so a new "
           "run into it draws over the old one's steps: give each run its own directory. "
           "View with tensorboard --logdir (pip install tati[tensorboard])."),
    Option("overwrite", False, Boolean(), "output",
           "Replace existing output files (run_file, trajectory_file, averages_file, momenta_file). "
           "Without it a run refuses to start if one exists, unless restore_model continues the run "
           "that wrote it, in which case the new rows are appended."),
    Option("progress", False, Boolean(), "output",
           "Show a progress bar with steps per second and the remaining time (needs tqdm: "
           "pip install tati[progress]). Without one, a call still running after 30 s writes "
           "a line to stderr, then one a minute: the step, whether in burn-in, and the time left."),
]

BY_NAME = {option.name: option for option in OPTIONS}


def _place(spec, option):
    """Where a sampler's own option joins the table: in its group, before the first option that
    only samplers listed after it in the registry take (so the sampler options keep the
    registry's order in --help and doc/options.md), else after its group's last option."""
    later = {s.name for s in registry.specs()[registry.specs().index(spec) + 1:]}
    group = [i for i, other in enumerate(OPTIONS) if other.group == option.group]
    for i in group:
        takers = set(registry.samplers_taking(OPTIONS[i].name))
        if takers and takers <= later:
            return i
    return group[-1] + 1 if group else len(OPTIONS)


def _declare(spec, added):
    """A registered sampler's own options (Option objects in its Spec.options) join the table
    while it is registered, so that a new sampler's option needs no line here."""
    for option in spec.declared_options:
        if added and option.name in BY_NAME:
            raise ValueError(f"{spec.name} declares the option '{option.name}', which exists")
        if added:
            OPTIONS.insert(_place(spec, option), option)
            BY_NAME[option.name] = option
        else:
            OPTIONS.remove(option)
            del BY_NAME[option.name]


registry.watch(_declare)


# Names under which Keras, scikit-learn and PyMC users pass their data (model.fit(x, y), ...).
_DATA_WORDS = {"x", "y", "data", "input", "inputs", "output", "outputs", "features", "labels", "target",
               "targets", "train_data", "training_data"}


def unknown_option(name):
    from tati.config.original import RETIRED_OPTIONS
    if name in RETIRED_OPTIONS:  # the original TATi's option with no counterpart
        return InputError(f"option '{name}' is the original TATi's: {RETIRED_OPTIONS[name]}")
    if name.lower() in _DATA_WORDS:
        return InputError(f"option '{name}' is unknown: data is given as dataset=(X, Y), the inputs [N, "
                          f"input_dimension] and labels [N, k] as arrays, or read from CSV files by batch_data_files")
    close = difflib.get_close_matches(name, list(BY_NAME), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return InputError(f"option '{name}' is unknown{hint}")


def resolve(options):
    """All options with defaults filled in and every given value converted and checked."""
    values = {option.name: option.default for option in OPTIONS}
    for name, value in options.items():
        if name not in BY_NAME:
            raise unknown_option(name)
        values[name] = BY_NAME[name].kind(name, value)
    return values


def takes(name, sampler):
    """Whether a run with this sampler (short name) takes the option: one that no spec lists is
    every run's."""
    samplers = registry.samplers_taking(name)
    return not samplers or sampler in samplers


def check_sampler_options(given, sampler):
    """InputError naming the first of the `given` option names that the sampler (short name)
    does not take: an option of other samplers would be ignored silently."""
    for name in given:
        if name in BY_NAME and not takes(name, sampler):
            samplers = registry.samplers_taking(name)
            raise InputError(f"{name} applies to {', '.join(samplers)}, not to sampler {sampler}: drop it, "
                             f"or see the options of {sampler} (tati-sample --sampler {sampler} --help)")


def default(name):
    """The table's default of one option (used by the samplers' signatures)."""
    return BY_NAME[name].default


def check(name, value):
    """One option's value converted and checked by its kind, or an InputError naming it."""
    return BY_NAME[name].kind(name, value)
