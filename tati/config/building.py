"""Building a Simulation from its resolved options: data, model (with likelihood, fixed
parameters, prior and start), the walkers' ensemble, the sampler and the optimizer.

The options are read, never written: what the data implies (the network's input and output
widths) is returned beside them (`Parts.implied_options`). The cross-option rules that need
no data are tati/config/preflight.py's; the ones here need the data or the model.
"""

from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from tati.config.options import COUNTS, TWO_OUTPUTS
from tati.data.pipeline import Batches, NoData, check_arrays
from tati.diagnostics.data_scale import input_scale_line
from tati.engine.contract import load_kernel
from tati.engine.registry import spec_of
from tati.errors import InputError
from tati.models import MLP, KerasNetwork, Potential
from tati.models.keras_model import output_squashing

# Largest covariance matrix of the ensemble preconditioner (d^2 numbers are kept, and factorised
# at every swap).
MAX_COVARIANCE = 4000
# The options of burn-in's adaptation, which a kernel built on the variables takes by name
# with adaptation_steps where its spec lists them (not in its `parameters`).
ADAPTATION = ("adapt_step_width", "target_acceptance_rate", "adapt_mass", "adapt_trajectory_length", "metric")


@dataclass
class Parts:
    """What a Simulation is made of, before its sampler and optimizer."""
    data: object
    model: object
    ensemble: object = None
    has_accuracy: bool = False
    implied_options: dict = field(default_factory=dict)  # input_dimension, output_dimension from the data
    notes: tuple = ()  # lines on the data to warn of (tati/diagnostics/data_scale.py)


def build(o):
    """The data, the model (likelihood, fixed parameters, prior, start) and the ensemble."""
    implied = {}
    data, network_inputs = make_data(o, implied)
    model = make_model(o, network_inputs, implied)
    if o["model"] is not None:
        _check_logits(o)
    set_likelihood(o, model, data, implied)
    fix_and_prior(o, model)
    if o["parse_parameters_file"] is not None:
        from tati.models.start import parameters_from_trajectory
        model.set_parameters(parameters_from_trajectory(o["parse_parameters_file"], o["parse_steps"],
                                                        model.parameter_names, model.num_walkers))
    if o["initial_dispersion"] > 0:
        disperse(o, model, o["initial_dispersion"])
    if o["jit_compile"] and not getattr(data, "full", True):
        raise InputError("jit_compile cannot compile mini-batches (their shapes vary): drop batch_size or jit_compile")
    has_accuracy = model.uses_data and getattr(model, "loss_name", None) is not None
    scale = None
    if model.uses_data and (o["model"] is None or _dense_on_inputs(o["model"])) and data.all()[0].shape.rank == 2:
        scale = input_scale_line(data.all()[0].numpy())
    unseen = first_class_line(o, data.all()[1].numpy()) if model.uses_data else None
    notes = tuple(line for line in (scale, unseen) if line is not None)
    return Parts(data, model, make_ensemble(o, model), has_accuracy, implied, notes)


def _dense_on_inputs(keras_model):
    """Whether a Keras model's first layer is a Dense one, which takes the inputs as they come (a
    Normalization or any other first layer may rescale them: no warning on their scale then)."""
    import keras
    layers = [layer for layer in keras_model.layers if not isinstance(layer, keras.layers.InputLayer)]
    return bool(layers) and type(layers[0]) is keras.layers.Dense


def network_inputs(o, features):
    """The network's inputs for rows of feature columns: the input_columns terms computed from
    them (tati/data/input_columns.py), or the features as they are."""
    if o["input_columns"] is None:
        return features
    from tati.data.input_columns import apply
    return apply(o["input_columns"], features)


def make_data(o, implied):
    """(the batches or NoData for a potential, the network's input width, or a point's shape for a
    Keras model's images); the widths the data implies go to `implied`."""
    if o["potential"] is not None:
        return NoData(), None
    if o["batch_data_files"] is not None:
        from tati.data.csv import read_csv_files
        features, labels = read_csv_files(o["batch_data_files"], _csv_input_dimension(o), o["dtype"])
    elif isinstance(o["dataset"], tuple):
        features, labels = o["dataset"]
    else:
        from tati.data.datasets import make_dataset
        features, labels = make_dataset(o["dataset"] or "two_clusters", size=o["dataset_size"],
                                        noise=o["dataset_noise"], seed=o["dataset_seed"], dtype=o["dtype"])
    features, labels = check_arrays(features, labels, o["dtype"], points_of_any_shape=o["model"] is not None)
    if features.ndim > 2:  # a Keras model's images or sequences: it is built for points of this shape
        for option in ("input_dimension", "input_columns"):
            if o[option] is not None:
                raise InputError(f"{option} is for feature columns; these points have the shape "
                                 f"{list(features.shape[1:])}: drop {option}")
    else:
        implied["input_dimension"] = features.shape[1]
        if o["input_dimension"] is not None and o["input_dimension"] != features.shape[1]:
            raise InputError(f"input_dimension {o['input_dimension']} does not match the "
                             f"{features.shape[1]} feature columns of the data")
    features = network_inputs(o, features)
    classes = class_indices(o, labels)
    not_counts = (labels < 0) | (labels != np.round(labels))  # what neither class indices nor counts can be
    if classes and not_counts.any():
        raise InputError("loss softmax_cross_entropy with one label column takes class indices 0, 1, ...; "
                         "these labels are not (e.g. the built-in datasets' -1/+1: use another loss, "
                         "or one-hot label columns)")
    if o["likelihood"] == "bernoulli":
        values = np.unique(labels)
        if not (set(values) <= {0.0, 1.0} or set(values) <= {-1.0, 1.0}):
            shown = ", ".join(f"{v:g}" for v in values[:4]) + (", ..." if len(values) > 4 else "")
            raise InputError(f"likelihood bernoulli takes labels 0/1 or -1/+1; these have {len(values)} values "
                             f"({shown}): for more classes use likelihood categorical")
    if o["likelihood"] in COUNTS and not_counts.any():
        raise InputError(f"likelihood {o['likelihood']} takes counts 0, 1, 2, ... as labels; these include "
                         f"{labels[not_counts][0]:g}: for real-valued labels use likelihood gaussian")
    width = int(labels.max()) + 1 if classes else labels.shape[1]
    if classes and o["output_dimension"] is not None:
        check_classes(o, labels, o["output_dimension"])
    if o["likelihood"] in TWO_OUTPUTS:
        width = 2 * labels.shape[1]
    implied["output_dimension"] = o["output_dimension"] or width
    if o["output_dimension"] is not None and o["output_dimension"] != width and not classes:
        if o["likelihood"] in TWO_OUTPUTS:
            raise InputError(f"output_dimension {o['output_dimension']} must be {width} with likelihood "
                             f"{o['likelihood']} ({TWO_OUTPUTS[o['likelihood']]} per label column)")
        raise InputError(f"output_dimension {o['output_dimension']} does not match the "
                         f"{labels.shape[1]} label column(s) of the data")
    inputs = features.shape[1] if features.ndim == 2 else features.shape[1:]  # a point's columns, or its shape
    return Batches(features, labels, o["batch_size"], o["seed"]), inputs


# The cure where class-index labels look counted from 1 (as many datasets store them).
FROM_ONE = "classes counted from 1? subtract 1 from the labels"


def class_indices(o, labels):
    """Whether the labels are read as class indices 0, 1, ...: one label column, with likelihood
    categorical or loss softmax_cross_entropy."""
    return (o["loss"] == "softmax_cross_entropy" or o["likelihood"] == "categorical") and labels.shape[1] == 1


def check_classes(o, labels, outputs):
    """InputError where class-index labels reach past the network's `outputs` classes (TensorFlow's own
    error is a traceback): often classes counted from 1, as many datasets store them."""
    top = int(labels.max())
    if top < outputs:
        return
    name = "likelihood categorical" if o["likelihood"] == "categorical" else "loss softmax_cross_entropy"
    cure = FROM_ONE if labels.min() >= 1 and top == outputs else f"give output_dimension {top + 1}"
    raise InputError(f"{name} with {outputs} outputs takes class indices 0 to {outputs - 1}; these labels reach "
                     f"{top}: {cure}")


def first_class_line(o, labels):
    """One line where the built-in network's classes come from class-index labels (no output_dimension
    given) that start at 1: class 0 then gets a logit and no point, as where classes are counted from 1;
    else None."""
    if o["model"] is not None or o["output_dimension"] is not None or not class_indices(o, labels) or labels.min() < 1:
        return None
    top = int(labels.max())
    return (f"the labels are classes 1 to {top}, so the network has {top + 1} outputs and class 0 none of the data: "
            f"{FROM_ONE}")


def _csv_input_dimension(o):
    """input_dimension, or all columns but the last of the first file's header."""
    if o["input_dimension"] is not None:
        return o["input_dimension"]
    import csv
    try:
        with open(o["batch_data_files"][0], encoding="utf-8-sig", newline="") as file:
            return max(1, len(next(csv.reader(file), [])) - 1)
    except (OSError, IndexError, UnicodeDecodeError, csv.Error):
        return 1  # read_csv_files reports the file's problem


def make_model(o, inputs, implied):
    if o["potential"] is not None:
        return Potential(o["potential"], o["initial_parameters"], o["dtype"], o["number_walkers"],
                         o["potential_batched"], vectorize=not o["jit_compile"])
    if o["model"] is not None:
        return KerasNetwork(o["model"], o["loss"], inputs, o["dtype"], o["number_walkers"],
                            o["initial_parameters"], o["seed"], vectorize=not o["jit_compile"])
    return MLP(inputs, implied["output_dimension"], o["hidden_dimension"], o["hidden_activation"],
               o["output_activation"], o["loss"], o["seed"], o["dtype"], o["initial_parameters"],
               o["number_walkers"])


def disperse(o, model, radius):
    """Each walker's start plus uniform(-radius, radius) draws of its own (seed, walker)."""
    largest = float(np.finfo(tf.as_dtype(model.dtype).as_numpy_dtype).max)
    if not radius < largest / 2:
        raise InputError(f"initial_dispersion {radius:g} would put initial parameters beyond the range "
                         f"of {o['dtype']}")
    theta = np.asarray(model.get_parameters(), dtype=np.float64).reshape(model.num_walkers, -1)
    for walker in range(len(theta)):
        theta[walker] += np.random.default_rng((o["seed"], walker, 2)).uniform(-radius, radius, theta.shape[1])
    if not np.all(np.abs(theta) < largest):
        raise InputError(f"initial_dispersion {radius:g} puts initial parameters beyond the range "
                         f"of {o['dtype']}")
    model.set_parameters(theta)


def set_likelihood(o, model, data, implied):
    """With `likelihood`, the potential in Bayesian units: the data's negative log-likelihood
    (N / n x a batch's sum) replaces the mean loss."""
    if o["likelihood"] == "none":
        return
    if o["model"] is not None and isinstance(data, Batches):  # the built-in network's follow the data
        check_model_outputs(o["likelihood"], model, data.all(), implied["output_dimension"])
    from tati.models.losses import LIKELIHOOD_ACCURACY, likelihood_loss
    model.loss_function = likelihood_loss(o["likelihood"], data.size, o["noise_standard_deviation"],
                                          o["degrees_of_freedom"])
    model.loss_name = LIKELIHOOD_ACCURACY[o["likelihood"]]


def _check_logits(o):
    """The classification likelihoods and losses read a Keras model's outputs as logits, the count
    likelihoods as the log of the mean: a last layer with softmax or sigmoid (as Keras' own examples
    end), or with a positive rate's activation, would give a wrong posterior."""
    takes, names = "logits", ("softmax", "sigmoid")
    if o["likelihood"] in ("bernoulli", "categorical"):
        reader = f"likelihood {o['likelihood']}"
    elif o["likelihood"] in COUNTS:
        reader, names = f"likelihood {o['likelihood']}", ("exponential", "softplus", "relu")
        takes = "the log of the rate" if o["likelihood"] == "poisson" else "the log of the mean"
    elif o["likelihood"] == "none" and o["loss"] in ("sigmoid_cross_entropy", "softmax_cross_entropy"):
        reader = f"loss {o['loss']}"
    else:
        return
    squashing = output_squashing(o["model"], names)
    if squashing:
        layer, name = squashing
        applies = "it" if takes == "logits" else "exp"
        raise InputError(f"{reader} takes {takes}, and the model's last layer '{layer.name}' applies {name}: "
                         f"drop that activation ({reader} applies {applies})")


def check_model_outputs(likelihood, model, data, width):
    """A user's Keras model has the `width` outputs the data implies for its likelihood
    (make_data: two per label column for the TWO_OUTPUTS likelihoods, a
    logit per class for categorical, at least two and more allowed for class indices, else one
    per label column). A wrong width would broadcast into a wrong posterior without an error."""
    features, labels = data
    outputs = int(model.outputs(features[:1]).shape[-1])
    indices = likelihood == "categorical" and labels.shape[1] == 1  # class indices 0, 1, ...
    need = max(2, width) if indices else width
    if outputs == need or (indices and outputs > need):
        return
    what = {name: f"{pair} for each of the {width // 2} label column(s)" for name, pair in TWO_OUTPUTS.items()}
    what["categorical"] = "a logit per class" if indices else "a logit per one-hot label column"
    what = what.get(likelihood, "one per label column")
    if indices and outputs == 1:
        what += "; one logit for two classes is likelihood bernoulli"
    elif indices and outputs == need - 1 and np.min(labels) >= 1:
        what += f"; {FROM_ONE}"
    raise InputError(f"likelihood {likelihood}: the model has {outputs} output(s), it needs {need} ({what})")


def fix_and_prior(o, model):
    """fix_parameters (models/fixed.py), then the prior on the remaining parameters."""
    if o["fix_parameters"] is not None:
        from tati.models.fixed import parse_fixed
        groups = model.parameter_groups() if hasattr(model, "parameter_groups") else {}
        model.fix(parse_fixed(o["fix_parameters"], model.parameter_names, groups))
    from tati.models.priors import Prior
    # In Bayesian units (a likelihood) the Gaussian prior covers the biases too.
    model.prior = Prior.from_options(o, model.parameter_names, model.uses_data and o["likelihood"] == "none")


def make_ensemble(o, model):
    """The walkers' preconditioner and collapse (samplers/ensemble.py), or None."""
    if o["covariance_blending"] == 0 and not o["collapse_walkers"]:
        return None  # preflight.py checked the combinations
    blocks = covariance_blocks(o, model) if o["covariance_blending"] > 0 else None
    from tati.samplers.ensemble import Ensemble
    return Ensemble(model.num_walkers, model.num_parameters, o["covariance_blending"], o["covariance_after_steps"],
                    o["collapse_walkers"], blocks)


def covariance_blocks(o, model):
    """None for one full covariance, else the indices of each weight and bias tensor's free
    parameters; InputError if a covariance would exceed MAX_COVARIANCE parameters."""
    if o["covariance_blocks"] == "full":
        if model.num_parameters > MAX_COVARIANCE:
            raise InputError(f"covariance_blending: the full covariance of {model.num_parameters} parameters "
                             f"is too large (at most {MAX_COVARIANCE}); try covariance_blocks=layers")
        return None
    if not hasattr(model, "parameter_groups"):
        raise InputError("covariance_blocks=layers needs the built-in network or a Keras model, whose layers "
                         "give the blocks")
    index = {name: i for i, name in enumerate(model.parameter_names)}
    blocks = {group: [index[name] for name in names if name in index]
              for group, names in model.parameter_groups().items()}
    for group, block in blocks.items():
        if len(block) > MAX_COVARIANCE:
            raise InputError(f"covariance_blocks=layers: the covariance of {group} ({len(block)} "
                             f"parameters) is too large (at most {MAX_COVARIANCE})")
    return [block for block in blocks.values() if block]


def noise_mass_sizes(o, data):
    """adapt_mass noise's M_i = max(V_i B / c, floor), the loss being c times a batch's mean loss
    (c = N, the data's size, with a likelihood, else 1): then V B / c estimates c times the
    per-point Fisher information's diagonal, the posterior's precision. The floor is the prior's
    precision (1 without a prior: the mass never below the unit mass)."""
    sd = o["prior_standard_deviation"]
    size = data.size if o["likelihood"] != "none" else 1
    return dict(noise_mass_sizes=(o["batch_size"] / size, 1.0 if sd is None else sd ** -2.0))


def make_sampler(o, model, ensemble, first_walker=0, total_walkers=None, data=None):
    """The sampler of the options on the model, by its spec (tati/engine/registry.py): a Keras
    optimizer built on its variables, given its walkers' layout and the ensemble's
    preconditioner, or, for a kernel that evaluates the target itself (NUTS, RWMH), one made on
    the model. `data` (the Batches) sizes adapt_mass noise's mass."""
    spec = spec_of(o["sampler"])
    cls = load_kernel(spec)
    own = {name: o[name] for name in cls.parameters}
    layout = dict(first_walker=first_walker, total_walkers=total_walkers)
    if spec.evaluates_target:
        return cls(model, step_width=o["step_width"], seed=o["seed"], burn_in_steps=o["burn_in_steps"], **own,
                   **layout)
    # the burn-in's adaptations that it takes, over adaptation_steps (HMC's; the Langevin adapt_mass)
    extra = {name: o[name] for name in ADAPTATION if name in spec.option_names and name not in own}
    if extra:
        extra["adaptation_steps"] = o["burn_in_steps"]
    if extra.get("adapt_mass") == "noise":
        extra.update(noise_mass_sizes(o, data))
    preconditioner = ensemble if ensemble is not None and ensemble.blending else None
    sampler = cls(step_width=o["step_width"], seed=o["seed"], **own, **extra, walker_axis=model.walker_axis,
                  preconditioner=preconditioner, **layout)
    sampler.build(model.variables)
    return sampler
