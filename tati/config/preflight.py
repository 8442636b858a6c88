"""Everything about a run's options that can be checked before TensorFlow is imported.

`check(options)` converts every value (tati/config/options.py), applies the rules that combine
options, looks at the files (inputs exist, outputs are not replaced by mistake) and compares
restore_model's checkpoint with the options. The command-line tools call it first, so a bad
option or file answers in well under a second; `Simulation(...)` calls it too, so Python users
get the same answers. Nothing here writes or opens a file for writing.
"""

import os

from tati.config import options as option_table
from tati.config.compilation import UNROLLED_WALKERS
from tati.errors import InputError
from tati.data.csv import check_file, header_columns
from tati.engine.checkpoint_file import load as load_checkpoint
from tati.engine.registry import (canonical_optimizer, canonical_sampler, optimizer_spec, samplers_taking,
                                  samplers_where, spec_of)

OUTPUT_FILES = ("run_file", "trajectory_file", "averages_file", "momenta_file")

# Options that shape the saved state: a checkpoint resumes only with the values it was saved with.
STRUCTURE = ("number_walkers", "dtype", "hidden_dimension", "hidden_activation", "output_activation",
             "input_dimension", "input_columns", "output_dimension", "loss", "fix_parameters",
             "covariance_blocks", "collapse_walkers")
# Options of one call, not of the run, and starts that a resumed run does not use: changing
# them on resume says nothing.
PER_CALL = ("max_steps", "save_model", "restore_model", "overwrite", "progress",
            "jit_compile", "on_nan", "initial_parameters", "parse_parameters_file", "parse_steps",
            "summaries_path", "record_momenta", "xla_cache_directory") + OUTPUT_FILES
# Options that space a table's rows: a resumed run appending to a file needs the checkpoint's
# value (every analysis takes a file's rows as equally spaced); new files may have another.
ROW_SPACING = ("every_nth",)


def check(options, method=None):
    """(options with defaults, converted and checked; notes): the notes are one-line messages
    to show the user, such as tunables changed on resume. `method` is "sample" or "fit" when
    known (the tools); otherwise the checkpoint's sampler is compared when the run starts
    (`compare_checkpoint`). Raises InputError naming the option or file at fault."""
    values = option_table.resolve(options)
    if values["likelihood"] != "none" and "output_activation" not in options:
        values["output_activation"] = "linear"  # the option's help: tanh would bound logits and means
    option_table.check_sampler_options(options, values["sampler"])
    meta = None
    if values["restore_model"] is not None:
        meta, _ = load_checkpoint(values["restore_model"])
    values["burn_in_steps"] = burn_in_steps(values, meta)
    untuned = no_tuning(values, options)
    if untuned and values["burn_in_steps"] >= MIN_METRIC_BURN_IN and values["adapt_mass"] == "auto":
        values["adapt_mass"] = "noise"
    if untuned and "friction_constant" not in options and "friction_constant" in spec_of(values["sampler"]).option_names:
        values["friction_constant"] = "auto"  # SGLD has none
    values["measure_step_width"] = measures_step_width(values, options)
    _check_combinations(values)
    _check_record_momenta(values, method)
    _check_input_files(values)
    _check_input_columns(values)
    _check_inputs_not_outputs(values)
    notes, continuing = untuned_notes(values, options), False
    if meta is not None:
        notes = compare_checkpoint(values["restore_model"], meta, values, method)
        continuing = method is not None and meta["method"] == method
    if values["restore_model"] is None or method is not None:
        # else the Simulation checks when the run starts and knows whether it continues
        for name in OUTPUT_FILES:
            check_output_file(name, values[name], continuing, values["overwrite"], values["restore_model"] is None)
    _check_save_model(values)
    _check_summaries_path(values["summaries_path"])
    check_distinct_outputs({name: values[name] for name in OUTPUT_FILES + ("save_model", "summaries_path")})
    return values, notes


def burn_in_steps(o, meta=None):
    """The option burn_in_steps, where none was given: the restored checkpoint's, else half of
    max_steps for the samplers that adapt during burn-in (NUTS, RWMH, HMC1, HMC2; Stan warms up
    for half its iterations, 1000 of 2000), 0 for the others."""
    if o["burn_in_steps"] is not None:
        return o["burn_in_steps"]
    saved = (meta or {}).get("options", {}).get("burn_in_steps")
    if saved is not None:
        return saved
    return o["max_steps"] // 2 if spec_of(o["sampler"]).metropolis else 0


MIN_METRIC_BURN_IN = 20  # tati/adaptation/windows.py's, which imports TensorFlow (bad input exits before it)


def self_tuning():
    """The stochastic-gradient samplers that can tune themselves: those with a mass to adapt
    (SGLD, GLA1, GLA2, BAOAB, CCAdL, SGHMC, SGNHT, pSGLD)."""
    return [name for name in samplers_taking("adapt_mass") if not spec_of(name).metropolis]


def no_tuning(o, given):
    """Whether a run of a self_tuning() sampler tunes itself (options `given` by the user, `o`
    resolved): a likelihood (U grows with the data) and mini-batches, no step_width,
    measure_step_width auto, and (SGHMC) no gradient_noise_estimator. It then measures its step
    width (measure_step_width) and friction (friction_constant auto, unless given), and with
    burn_in_steps >= 20 its mass from the gradient noise (adapt_mass noise, unless adapt_mass was
    given), from a warm start (doc/samplers.md)."""
    return (o["sampler"] in self_tuning() and o["likelihood"] != "none" and o["batch_size"] is not None
            and "step_width" not in given and o["measure_step_width"] == "auto"
            and o["gradient_noise_estimator"] == "none")


def untuned_notes(o, given):
    """[a warning] where a stochastic-gradient sampler that cannot tune itself (pSGLD; SGHMC
    with a gradient_noise_estimator) meets a likelihood and mini-batches with no
    step_width: it steps with the option's default, which knows nothing of U's scale (U grows with
    the data: on yacht split 2, SGHMC with the adam estimator and this default left a walker at
    142,460 times its equipartition energy, issue #41)."""
    if (spec_of(o["sampler"]).metropolis or o["likelihood"] == "none" or o["batch_size"] is None
            or "step_width" in given or "measure_step_width" in given or o["measure_step_width"] is True
            or o["restore_model"] is not None):  # measure_step_width resolved: True where it tunes itself
        return []
    return [f"sampler {o['sampler']} does not tune itself here: it steps with the default step_width "
            f"{_show(o['step_width'])}, which knows nothing of this likelihood's scale (U grows with the data); "
            "give step_width, or a sampler that tunes itself with a likelihood and batch_size: "
            f"{', '.join(self_tuning())} (without gradient_noise_estimator)"]


def measures_step_width(o, given):
    """The option measure_step_width resolved: auto is on where the run tunes itself (`no_tuning`)."""
    choice = o["measure_step_width"]
    if choice == "auto":
        choice = no_tuning(o, given)
    if choice and o["friction_constant"] == 0:
        raise InputError("measure_step_width needs friction_constant > 0: without friction the gradient noise's "
                         "heat is never removed, at any step width")
    if o["friction_constant"] == "auto" and not (choice and o["sampler"] in self_tuning()):
        raise InputError("friction_constant auto is measured with the step width: it needs measure_step_width "
                         "(on, or auto with a likelihood, batch_size and no step_width) and sampler "
                         f"{', '.join(self_tuning())}")
    return choice


def _check_combinations(o):
    sources = [name for name in ("dataset", "batch_data_files") if o[name] is not None]
    if o["potential"] is not None:
        for name in sources + (["model"] if o["model"] is not None else []):
            raise InputError(f"{name} cannot be combined with potential (a potential uses no data)")
    if o["likelihood"] != "none" and o["potential"] is not None:
        raise InputError(f"likelihood {o['likelihood']} needs a network and data; a potential is already "
                         "its negative log-density")
    if len(sources) > 1:
        raise InputError("give either dataset or batch_data_files, not both")
    if o["parse_steps"] is not None and o["parse_parameters_file"] is None:
        raise InputError("parse_steps needs parse_parameters_file")
    if (o["jit_compile"] is True and o["potential"] is not None and o["number_walkers"] > UNROLLED_WALKERS
            and not o["potential_batched"]):
        raise InputError(f"jit_compile with more than {UNROLLED_WALKERS} walkers needs potential_batched=True (XLA "
                         "fails on the vectorised map of a one-walker potential, and unrolls it up to that)")
    if o["model"] is None and o["potential"] is None and not isinstance(o["loss"], str):
        raise InputError("loss must be one of the built-in names for the built-in network")
    if o["target_acceptance_rate"] is not None and not o["target_acceptance_rate"] < 1:
        raise InputError(f"target_acceptance_rate must be < 1, got {o['target_acceptance_rate']:g}")
    _check_full_batch(o)
    sampler = spec_of(o["sampler"])
    _check_noise_mass(o, sampler)
    if sampler.evaluates_target:
        if o["covariance_blending"] > 0 or o["collapse_walkers"]:
            option = "covariance_blending" if o["covariance_blending"] > 0 else "collapse_walkers"
            raise InputError(f"{option} is not available with sampler {o['sampler']} (adapt_mass "
                             "adapts its metric instead)")
    if o["covariance_blending"] == 0 and not o["collapse_walkers"]:
        return
    if sampler.metropolis:
        if o["collapse_walkers"]:  # it would move chains by a step no Metropolis test accepts
            raise InputError(f"collapse_walkers is not available with sampler {o['sampler']}")
        if o["covariance_after_steps"] < 2:
            raise InputError(f"covariance_after_steps must be at least 2 with sampler {o['sampler']} "
                             f"(a half moves by legs within its phase), got {o['covariance_after_steps']}")
    if o["covariance_blending"] > 0 and o["number_walkers"] < 4:
        raise InputError(f"covariance_blending needs number_walkers >= 4 (two halves of at least "
                         f"2 walkers), got {o['number_walkers']}")


def _check_noise_mass(o, sampler):
    """adapt_mass noise: the Langevin samplers' mass from the mini-batch gradient noise (samplers/mass.py)."""
    if o["adapt_mass"] != "noise":
        return
    if sampler.name not in self_tuning():
        raise InputError(f"adapt_mass noise is not available with sampler {sampler.name} (it is for "
                         f"{', '.join(self_tuning())})")
    if o["batch_size"] is None:
        raise InputError("adapt_mass noise needs batch_size: the mass comes from the mini-batch gradient's noise")
    if o["gradient_noise_estimator"] != "none":
        raise InputError(mass_and_estimator("noise", o["gradient_noise_estimator"]))


def mass_and_estimator(adapt_mass, estimator):
    """SGHMC's refusal of an adapted mass with a gradient_noise_estimator (here, and in the sampler)."""
    return (f"adapt_mass {adapt_mass} and gradient_noise_estimator '{estimator}' both answer the gradient noise "
            "(a mass, a noise term with its own mass rescaling): give one of them")


def _check_full_batch(o):
    """batch_size with an optimizer or sampler that needs the whole dataset (its spec's
    full_batch): refused, saying why."""
    if o["batch_size"] is None:
        return
    optimizer = optimizer_spec(o["optimizer"])
    if optimizer is not None and optimizer.full_batch:
        raise InputError(f"batch_size: optimizer {o['optimizer']} {optimizer.why_full_batch}; drop batch_size")
    sampler = spec_of(o["sampler"])
    if sampler.full_batch:
        raise InputError(f"batch_size: {sampler.name} {sampler.why_full_batch}; drop batch_size, or sample "
                         "mini-batches with a stochastic-gradient sampler (BAOAB, SGHMC)")


def _check_record_momenta(o, method):
    """record_momenta (momenta_file implies it: records_momenta): a sampler whose momenta
    persist, one device."""
    if not records_momenta(o):
        return
    if method == "fit":
        raise InputError("record_momenta: an optimizer has no momenta to record; drop record_momenta and momenta_file")
    sampler = spec_of(o["sampler"])
    if not sampler.persistent_momenta:
        why = "redraws its momenta at every leg" if sampler.redraws_momenta else "has no momenta"
        raise InputError(f"record_momenta: sampler {o['sampler']} {why}; momenta are recorded for "
                         f"{', '.join(samplers_where('persistent_momenta'))} only")
    if o["distribution"] != "none":
        raise InputError(f"record_momenta is not available with distribution={o['distribution']} yet; "
                         "use distribution=none")


def check_method(o, method):
    """The rules that depend on the method called, sample() or fit()."""
    if method == "fit" and o["covariance_blending"] > 0:
        raise InputError("covariance_blending applies to sample(), not to fit()")
    if method == "fit" and records_momenta(o):
        raise InputError("record_momenta applies to sample(), not to fit(): an optimizer has no momenta")


def records_momenta(o):
    """Whether a run records the momenta table: record_momenta, or a momenta_file to write it to."""
    return bool(o["record_momenta"]) or o["momenta_file"] is not None


def pools_walkers_in_burn_in(o):
    """Whether the sampler adapts during burn_in_steps from all walkers at once (HMC's and NUTS's
    and RWMH's step width, metric and leg length; the Langevin samplers' adapt_mass=True): a
    distributed run does that part on one device (tati/engine/distribute.py)."""
    if o["burn_in_steps"] == 0:
        return False
    spec = spec_of(o["sampler"])
    if spec.metropolis:  # the adaptations it takes (tati/engine/registry.py)
        return any(o[name] for name in ("adapt_step_width", "adapt_mass", "adapt_trajectory_length")
                   if name in spec.option_names)
    return o["adapt_mass"] in (True, "noise")  # the Langevin samplers' mass adapts only when asked (samplers/mass.py)


def _check_input_files(o):
    for path in o["batch_data_files"] or []:
        check_file(path)
    if o["parse_parameters_file"] is not None and not os.path.isfile(o["parse_parameters_file"]):
        raise InputError(f"parse_parameters_file '{o['parse_parameters_file']}' does not exist")
    if o["save_model"] is not None:
        _check_directory("save_model", o["save_model"])


def _check_input_columns(o):
    """input_columns needs data, and its terms the feature columns that the data will have, where
    these are known without reading the data: a built-in dataset's 2, input_dimension, or the
    first CSV file's header (all columns but the last)."""
    if o["input_columns"] is None:
        return
    if o["potential"] is not None:
        raise InputError("input_columns needs data; a potential uses none")
    columns = o["input_dimension"]
    if columns is None and o["batch_data_files"]:
        columns = header_columns(o["batch_data_files"][0])
        columns = None if columns is None else columns - 1
    elif columns is None and not isinstance(o["dataset"], tuple):
        columns = 2  # every built-in dataset
    if columns is not None and columns >= 1:
        from tati.data.input_columns import check_columns
        check_columns(o["input_columns"], columns)


def _check_directory(name, path):
    """The file's directory exists; where it does not, the nearest existing path above it says
    why: a directory missing, or a file (such as /dev/null) where a directory should be."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        above = directory
        while not os.path.exists(above):
            above = os.path.dirname(above)
        if os.path.isdir(above):
            raise InputError(f"{name} '{path}': the directory '{directory}' does not exist")
        raise InputError(f"{name} '{path}': '{above}' is not a directory")
    if os.path.isdir(path):
        raise InputError(f"{name} '{path}' is a directory, not a file")


def check_output_file(name, path, continuing, overwrite, resumable=True):
    """An output file may be written: a new file, or one continued by restore_model, or one the
    user asked to replace (overwrite). Returns whether to append. `resumable` False: a tool
    without restore_model (the hint leaves it out)."""
    if path is None:
        return False
    _check_directory(name, path)
    if continuing:
        return True
    if os.path.exists(path) and not overwrite:
        hint = ", or restore_model to continue the run that wrote it" if resumable else ""
        raise InputError(f"{name} '{path}' exists: give overwrite=true (--overwrite true) to replace it{hint}")
    return False


def _check_save_model(o):
    """save_model replaces its file at the end of every call: an existing file only when it is
    the checkpoint restored (the run goes on) or the user says overwrite."""
    path = o["save_model"]
    if path is None or not os.path.exists(path) or o["overwrite"]:
        return
    if o["restore_model"] is not None and os.path.realpath(o["restore_model"]) == os.path.realpath(path):
        return
    raise InputError(f"save_model '{path}' exists: give overwrite=true (--overwrite true) to replace it, "
                     "or restore_model the same file to continue the run that saved it")


def _check_inputs_not_outputs(o):
    """No output replaces or appends to a file the run reads (overwrite or not); save_model may
    name restore_model's file."""
    inputs = {os.path.realpath(path): f"batch_data_files '{path}'" for path in o["batch_data_files"] or []}
    for name in ("parse_parameters_file", "restore_model"):
        if o[name] is not None:
            inputs[os.path.realpath(o[name])] = f"{name} '{o[name]}'"
    for name in OUTPUT_FILES + ("save_model",):
        path = o[name] and os.path.realpath(o[name])
        if path in inputs and not (name == "save_model" and inputs[path].startswith("restore_model")):
            raise InputError(f"{name} '{o[name]}' is the run's input {inputs[path]}: give another file name")


def _check_summaries_path(path):
    """summaries_path is a directory, new or existing (TensorBoard adds event files to it), and
    a new one can be made: the nearest existing directory above it is one."""
    if path is None:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"summaries_path '{path}' is a file; TensorBoard summaries need a directory")
    above = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(above):
        above = os.path.dirname(above)
    if not os.path.isdir(above):
        raise InputError(f"summaries_path '{path}': '{above}' is a file, not a directory")


def check_distinct_outputs(paths):
    """InputError if two of {output option: path or None} name the same file."""
    seen = {}
    for name, given in paths.items():
        if given is None:
            continue
        path = os.path.realpath(given)
        if path in seen:
            raise InputError(f"{seen[path]} and {name} name the same file '{given}'")
        seen[path] = name


def saved_options(o):
    """The options a checkpoint records: those with a plain value (not Python objects)."""
    plain = (str, int, float, bool, type(None))
    return {option.name: o[option.name] for option in option_table.OPTIONS
            if option.on_command_line and option.name not in PER_CALL and (
                isinstance(o[option.name], plain)
                or isinstance(o[option.name], list) and all(isinstance(v, plain) for v in o[option.name]))}


def compare_checkpoint(path, meta, o, method):
    """InputError if the checkpoint's state cannot continue under these options (other sampler,
    walker count, network or dtype, or another every_nth for files appended to), naming the
    option, the saved and the requested value; else the notes on tunables that changed (one
    line, or none)."""
    def refuse(name, saved, requested):
        raise InputError(f"restore_model '{path}' was saved with {name} {saved}, this run asks for "
                         f"{name} {requested}: give the saved value to continue that run, or drop restore_model")

    if meta["walkers"] != o["number_walkers"]:
        refuse("number_walkers", meta["walkers"], o["number_walkers"])
    continuing = method is not None and meta["method"] == method
    if continuing:
        if method == "sample" and _saved_sampler(meta) != o["sampler"]:
            refuse("sampler", _saved_sampler(meta), o["sampler"])
        # mini-batches keep an order and a position that the whole dataset has not
        saved_batch = meta.get("options", {}).get("batch_size", o["batch_size"])
        if (saved_batch is None) != (o["batch_size"] is None):
            refuse("batch_size", _show(saved_batch), _show(o["batch_size"]))
        if method == "fit" and canonical_optimizer(meta["optimizer"]) != canonical_optimizer(o["optimizer"]):
            refuse("optimizer", meta["optimizer"], o["optimizer"])
    saved = meta.get("options", {})  # checkpoints of the first release do not record them
    for name in STRUCTURE:
        # none means "from the data" for the dimensions, but "the columns as they are" for input_columns
        if name in saved and (o[name] is not None or name == "input_columns") and saved[name] != o[name]:
            refuse(name, _show(saved[name]), _show(o[name]))
    if not continuing:  # only the parameters start a new run; unknown method: told when the run restores
        return []
    _check_row_spacing(path, saved, o)
    changed = [f"{name} {_show(saved[name])} -> {_show(value)}" for name, value in saved_options(o).items()
               if name in saved and name not in STRUCTURE + ROW_SPACING + ("sampler", "optimizer")
               and saved[name] != value]
    return [f"restore_model '{path}': continuing with changed options: {', '.join(changed)}"] if changed else []


def appended_files(o):
    """The output options whose files exist: a run that continues a restored one appends to them."""
    return [name for name in OUTPUT_FILES if o[name] is not None and os.path.isfile(o[name])]


def _check_row_spacing(path, saved, o):
    """InputError if a continued run would append rows spaced unlike a file's (checkpoints before
    this check record no every_nth)."""
    appended = appended_files(o)
    for name in ROW_SPACING:
        if appended and name in saved and saved[name] != o[name]:
            raise InputError(f"restore_model '{path}' was saved with {name} {saved[name]}, this run asks for "
                             f"{name} {o[name]}: the rows appended to {appended[0]} '{o[appended[0]]}' would be "
                             f"spaced unlike its rows; give {name} {saved[name]} to continue it, or new output files")


def _saved_sampler(meta):
    try:
        return canonical_sampler(meta["sampler"])
    except InputError:
        return meta["sampler"]


def _show(value):
    if isinstance(value, list):
        return ",".join(map(str, value)) or "empty"
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
