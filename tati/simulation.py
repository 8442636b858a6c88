"""Simulation: options -> data + model + sampler/optimizer + tables; sample() and fit().

    sim = tati.Simulation(potential=U, initial_parameters=x0, sampler="BAOAB", step_width=0.5)
    res = sim.sample()          # res.run_info, res.trajectory, res.averages: DataFrames

The steps between two table rows run inside one compiled tf.function loop (`loop.py`); the
running averages accumulate in that graph; Python only turns the last step of each chunk
into one row per table and streams it to the CSV files.

A *run* is a sequence of sample() (or fit()) calls: calling sample() again continues the run
(step numbers and averages go on, CSV files are appended to); switching between sample() and
fit() starts a new run with step 1 and fresh averages. `save_model` writes a checkpoint after
each call, `restore_model` continues a saved run in a new Simulation (checkpoint.py).

SIGINT and SIGTERM stop a call at the next row boundary: the files are flushed, the checkpoint
is written if save_model is set, and `Interrupted` (a KeyboardInterrupt) is raised. A
non-finite loss or gradient stops a Langevin sampler or optimizer with a `SamplingError`
naming step and walker (on_nan="stop"); every row written before stays.
"""

import signal
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import tensorflow as tf

from tati import options as option_table
from tati import preflight
from tati.data.pipeline import Batches, NoData, check_arrays
from tati import checkpoint
from tati.errors import InputError, Interrupted, SamplingError
from tati.loop import make_chunk
from tati.models import MLP, KerasNetwork, Potential
from tati.optimizers import make_optimizer
from tati.optimizers.lbfgs import LBFGS, make_lbfgs_chunk
from tati.recording.averages import RunningAverages
from tati.recording.columns import (INTEGER_COLUMNS, PROPOSAL_RUN_INFO, averages_columns, momenta_columns,
                                    proposal_averages_columns, proposal_run_info_columns,
                                    run_info_columns, trajectory_columns)
from tati.recording.table import Table, check_header
from tati.samplers import HamiltonianMonteCarlo, SamplerBase, get_sampler
from tati.samplers.proposal import ProposalKernel


# Seconds one compiled call should take: interruption waits at most for the call under way.
CALL_SECONDS = 0.5

# Largest covariance matrix of the ensemble preconditioner (d^2 numbers are kept, and factorised
# at every swap).
MAX_COVARIANCE = 4000


@dataclass
class Result:
    """The three tables of one sample() or fit() call; with record_momenta also the momenta
    table, and the model's parameter groups (name -> trajectory columns) for its diagnostics."""
    run_info: pd.DataFrame
    trajectory: pd.DataFrame
    averages: pd.DataFrame
    momenta: pd.DataFrame = None
    parameter_groups: dict = field(default=None, repr=False)

    def convergence(self, burn_in=0):
        """R-hat, ESS, mean and sd of each parameter across walkers (tati.diagnostics.convergence),
        over each walker's last rows, as many as every walker has (HMC's walkers differ)."""
        from tati.diagnostics.convergence import convergence, equal_rows
        return convergence(equal_rows(self.trajectory, burn_in))

    def momentum_test(self, inverse_temperature=1.0, burn_in=0, quantile=0.99, level=0.99):
        """T_quantile of the whole momentum vector from the run info's kinetic energies after
        burn_in, with its Clopper-Pearson interval (tati.diagnostics.momentum.momentum_test)."""
        from tati.diagnostics.momentum import momentum_test
        return momentum_test(self.run_info, len(self.trajectory.columns) - 3, inverse_temperature, burn_in,
                             quantile, level)

    def layer_temperatures(self, inverse_temperature=1.0, burn_in=0, quantile=0.99, level=0.99):
        """The momentum diagnostics of the whole vector ("all") and of each weight and bias
        tensor, from the momenta table (record_momenta) after burn_in: T_quantile with its
        Clopper-Pearson interval, the kinetic temperature with its interval, the configurational
        temperature q . grad U / d with its error, and the independent readings assumed; a
        DataFrame with a row per group (tati.diagnostics.momentum.layer_temperatures)."""
        from tati.diagnostics.momentum import layer_temperatures
        if self.momenta is None:
            raise InputError("layer_temperatures needs the momenta table: sample with record_momenta=True "
                             "(a run read back: load_run's momenta_file)")
        return layer_temperatures(self.momenta, self.trajectory, self.parameter_groups, inverse_temperature,
                                  burn_in, quantile, level)

    def to_inference_data(self, burn_in=0, inverse_temperature=None):
        """ArviZ's InferenceData: walkers as chains, rows as draws, run info as sample_stats
        (tati/export/arviz.py; needs the extra: pip install tati[arviz])."""
        from tati.export.arviz import to_inference_data
        return to_inference_data(self, burn_in, inverse_temperature)


class _Run:
    """State of one run: its optimizer, step counter, running averages and compiled chunk."""

    def __init__(self, method, optimizer, simulation):
        self.method = method
        self.optimizer = optimizer
        self.proposal = isinstance(optimizer, ProposalKernel)  # NUTS, RWMH: TFP kernels
        self.lbfgs = isinstance(optimizer, LBFGS)
        self.is_sampler = self.proposal or isinstance(optimizer, SamplerBase)
        self.metropolis = getattr(optimizer, "metropolis", False)  # HMC
        self.step = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="step")
        self.averages = RunningAverages(simulation.model.num_walkers)
        self.calls = 0
        o = simulation.options
        if o["restore_model"] is not None and not simulation.restored:
            simulation.restored = True
            if checkpoint.restore(o["restore_model"], simulation, self):
                self.calls = 1  # continue the saved run: append to its files
        if self.lbfgs:
            self.chunk = make_lbfgs_chunk(simulation.model, simulation.data, optimizer, self.step, self.averages,
                                          simulation.has_accuracy, o["every_nth"])
        elif self.proposal:
            from tati.loop_proposal import make_proposal_chunk
            self.chunk = make_proposal_chunk(simulation.model, simulation.data, optimizer, self.step,
                                             self.averages, o["burn_in_steps"], simulation.has_accuracy,
                                             o["every_nth"], o["jit_compile"])
        else:
            self.chunk = make_chunk(simulation.model, simulation.data, optimizer, self.step,
                                    self.averages, o["burn_in_steps"], simulation.has_accuracy,
                                    simulation.ensemble, o["every_nth"], o["jit_compile"],
                                    o["on_nan"] == "stop", o["record_momenta"] and method == "sample")


class Simulation:
    """Sample or optimise a network, a Keras model or a potential; see the module docstring.

    Every option of `tati.options.OPTIONS` is a keyword argument; `Simulation.help(name)`
    returns one option's help as a string.
    """

    # A shard of a distributed run (tati/distribute.py): its walkers' first index in the whole
    # run and the run's walker count.
    _first_walker, _total_walkers = 0, None

    def __init__(self, **options):
        self.options, notes = preflight.check(options)
        for note in notes:
            warnings.warn(note, stacklevel=2)
        self._strategy, self._writes = None, True
        if self.options["distribution"] != "none":  # multi_worker: before TensorFlow runs anything
            from tati.distribute import is_chief, make_strategy
            self._strategy = make_strategy(self.options["distribution"], self.options["devices"])
            self._writes = is_chief(self._strategy)
        self._build()

    def shard(self, first_walker, walkers):
        """A Simulation of walkers first_walker ... first_walker + walkers - 1 of this one, at
        their current parameters, that writes no files: one replica's share of a distributed
        run (tati/distribute.py)."""
        shard = Simulation.__new__(Simulation)
        # Its walkers' rows of the whole run's parameters (fixed ones included, which the shard
        # fixes again): as given, drawn, read or dispersed.
        rows = self.model.full_parameters().numpy()
        shard.options = dict(self.options, number_walkers=walkers, initial_dispersion=0.0, parse_parameters_file=None,
                             parse_steps=None, restore_model=None, save_model=None, distribution="none",
                             run_file=None, trajectory_file=None, averages_file=None, summaries_path=None,
                             progress=False, initial_parameters=rows[first_walker:first_walker + walkers])
        shard._first_walker, shard._total_walkers = first_walker, self.model.num_walkers
        shard._strategy, shard._writes = None, False
        shard._build()
        if shard.ensemble is not None:
            shard.ensemble.refresh_in_loop = False
        return shard

    def _build(self):
        o = self.options
        self.data = self._make_data()
        self.model = self._make_model()
        self._likelihood()
        self._fix_and_prior()
        if o["parse_parameters_file"] is not None:
            from tati.models.start import parameters_from_trajectory
            self.model.set_parameters(parameters_from_trajectory(
                o["parse_parameters_file"], o["parse_steps"], self.model.parameter_names, self.model.num_walkers))
        if o["initial_dispersion"] > 0:
            self._disperse(o["initial_dispersion"])
        self.restored = False
        self.has_accuracy = self.model.uses_data and getattr(self.model, "loss_name", None) is not None
        if o["jit_compile"] and not getattr(self.data, "full", True):
            raise InputError("jit_compile cannot compile mini-batches (their shapes vary): "
                             "drop batch_size or jit_compile")
        self._sampler_class = get_sampler(o["sampler"])
        self.ensemble = self._make_ensemble()
        self._sampler = None
        from tati.optimizers.schedules import learning_rate_of  # a number or a schedule
        self._optimizer = make_optimizer(o["optimizer"], learning_rate_of(o))
        self._run = None
        self._ensemble_failures = 0

    # -- construction --------------------------------------------------------------------------
    def _make_data(self):
        o = self.options
        if o["potential"] is not None:
            return NoData()
        if o["batch_data_files"] is not None:
            from tati.data.csv import read_csv_files
            features, labels = read_csv_files(o["batch_data_files"], self._csv_input_dimension(), o["dtype"])
        elif isinstance(o["dataset"], tuple):
            features, labels = o["dataset"]
        else:
            from tati.data.datasets import make_dataset
            features, labels = make_dataset(o["dataset"] or "two_clusters", size=o["dataset_size"],
                                            noise=o["dataset_noise"], seed=o["dataset_seed"])
        features, labels = check_arrays(features, labels, o["dtype"])
        if o["input_dimension"] is None:
            o["input_dimension"] = features.shape[1]
        elif o["input_dimension"] != features.shape[1]:
            raise InputError(f"input_dimension {o['input_dimension']} does not match the "
                             f"{features.shape[1]} feature columns of the data")
        features = self.inputs(features)
        self.network_inputs = features.shape[1]  # the input width of the network
        classes = (o["loss"] == "softmax_cross_entropy" or o["likelihood"] == "categorical") and labels.shape[1] == 1
        if classes and not (np.all(labels >= 0) and np.all(labels == np.round(labels))):
            raise InputError("loss softmax_cross_entropy with one label column takes class indices 0, 1, ...; "
                             "these labels are not (e.g. the built-in datasets' -1/+1: use another loss, "
                             "or one-hot label columns)")
        implied = int(labels.max()) + 1 if classes else labels.shape[1]
        if o["likelihood"] == "heteroscedastic_gaussian":  # a mean and a variance per label column
            implied = 2 * labels.shape[1]
        if o["output_dimension"] is None:
            o["output_dimension"] = implied
        elif o["output_dimension"] != implied and not classes:
            if o["likelihood"] == "heteroscedastic_gaussian":
                raise InputError(f"output_dimension {o['output_dimension']} must be {implied} with likelihood "
                                 "heteroscedastic_gaussian (a mean and a variance per label column)")
            raise InputError(f"output_dimension {o['output_dimension']} does not match the "
                             f"{labels.shape[1]} label column(s) of the data")
        return Batches(features, labels, o["batch_size"], o["seed"])

    def _csv_input_dimension(self):
        """input_dimension, or all columns but the last of the first file's header."""
        if self.options["input_dimension"] is not None:
            return self.options["input_dimension"]
        import csv
        try:
            with open(self.options["batch_data_files"][0], encoding="utf-8-sig", newline="") as file:
                return max(1, len(next(csv.reader(file), [])) - 1)
        except (OSError, IndexError, UnicodeDecodeError, csv.Error):
            return 1  # read_csv_files reports the file's problem

    def _make_model(self):
        o = self.options
        if o["potential"] is not None:
            return Potential(o["potential"], o["initial_parameters"], o["dtype"], o["number_walkers"],
                             o["potential_batched"])
        if o["model"] is not None:
            return KerasNetwork(o["model"], o["loss"], self.network_inputs, o["dtype"], o["number_walkers"],
                                o["initial_parameters"], o["seed"], vectorize=not o["jit_compile"])
        return MLP(self.network_inputs, o["output_dimension"], o["hidden_dimension"],
                   o["hidden_activation"], o["output_activation"], o["loss"], o["seed"],
                   o["dtype"], o["initial_parameters"], o["number_walkers"])

    def _disperse(self, radius):
        """Each walker's start plus uniform(-radius, radius) draws of its own (seed, walker)."""
        largest = float(np.finfo(tf.as_dtype(self.model.dtype).as_numpy_dtype).max)
        if not radius < largest / 2:
            raise InputError(f"initial_dispersion {radius:g} would put initial parameters beyond the range "
                             f"of {self.options['dtype']}")
        theta = np.asarray(self.model.get_parameters(), dtype=np.float64).reshape(self.model.num_walkers, -1)
        for walker in range(len(theta)):
            theta[walker] += np.random.default_rng((self.options["seed"], walker, 2)).uniform(
                -radius, radius, theta.shape[1])
        if not np.all(np.abs(theta) < largest):
            raise InputError(f"initial_dispersion {radius:g} puts initial parameters beyond the range "
                             f"of {self.options['dtype']}")
        self.model.set_parameters(theta)

    def _likelihood(self):
        """With `likelihood`, the potential in Bayesian units: the data's negative log-likelihood
        (N / n x a batch's sum) replaces the mean loss."""
        o = self.options
        if o["likelihood"] == "none":
            return
        from tati.models.losses import LIKELIHOOD_ACCURACY, likelihood_loss
        self.model.loss_function = likelihood_loss(o["likelihood"], self.data.size, o["noise_standard_deviation"])
        self.model.loss_name = LIKELIHOOD_ACCURACY[o["likelihood"]]

    def _fix_and_prior(self):
        """fix_parameters (models/fixed.py), then the prior on the remaining parameters."""
        o = self.options
        if o["fix_parameters"] is not None:
            from tati.models.fixed import parse_fixed
            groups = self.model.parameter_groups() if hasattr(self.model, "parameter_groups") else {}
            self.model.fix(parse_fixed(o["fix_parameters"], self.model.parameter_names, groups))
        from tati.models.priors import Prior
        # In Bayesian units (a likelihood) the Gaussian prior covers the biases too.
        self.model.prior = Prior.from_options(o, self.model.parameter_names,
                                              self.model.uses_data and o["likelihood"] == "none")

    def _make_ensemble(self):
        """The walkers' preconditioner and collapse (samplers/ensemble.py), or None."""
        o = self.options
        if o["covariance_blending"] == 0 and not o["collapse_walkers"]:
            return None  # preflight.py checked the combinations
        blocks = self._covariance_blocks() if o["covariance_blending"] > 0 else None
        from tati.samplers.ensemble import Ensemble
        return Ensemble(self.model.num_walkers, self.model.num_parameters, o["covariance_blending"],
                        o["covariance_after_steps"], o["collapse_walkers"], blocks)

    def _covariance_blocks(self):
        """None for one full covariance, else the indices of each weight and bias tensor's free
        parameters; InputError if a covariance would exceed MAX_COVARIANCE parameters."""
        if self.options["covariance_blocks"] == "full":
            if self.model.num_parameters > MAX_COVARIANCE:
                raise InputError(f"covariance_blending: the full covariance of {self.model.num_parameters} parameters "
                                 f"is too large (at most {MAX_COVARIANCE}); try covariance_blocks=layers")
            return None
        if not hasattr(self.model, "parameter_groups"):
            raise InputError("covariance_blocks=layers needs the built-in network or a Keras model, whose layers "
                             "give the blocks")
        index = {name: i for i, name in enumerate(self.model.parameter_names)}
        blocks = {group: [index[name] for name in names if name in index]
                  for group, names in self.model.parameter_groups().items()}
        for group, block in blocks.items():
            if len(block) > MAX_COVARIANCE:
                raise InputError(f"covariance_blocks=layers: the covariance of {group} ({len(block)} "
                                 f"parameters) is too large (at most {MAX_COVARIANCE})")
        return [block for block in blocks.values() if block]

    @property
    def sampler(self):
        """The sampler (a Keras optimizer built on the model's variables, or for NUTS and RWMH
        a samplers.proposal.ProposalKernel on the model)."""
        if self._sampler is None:
            o = self.options
            cls = self._sampler_class
            if issubclass(cls, ProposalKernel):
                self._sampler = cls(self.model, step_width=o["step_width"], seed=o["seed"],
                                    burn_in_steps=o["burn_in_steps"], **{name: o[name] for name in cls.parameters})
                self._sampler.first_walker, self._sampler.total_walkers = self._first_walker, self._total_walkers
                return self._sampler
            extra = {}
            if issubclass(cls, HamiltonianMonteCarlo):  # the step width adapts during burn-in
                extra = dict(adaptation_steps=o["burn_in_steps"], adapt_step_width=o["adapt_step_width"],
                             target_acceptance_rate=o["target_acceptance_rate"], adapt_mass=o["adapt_mass"],
                             adapt_trajectory_length=o["adapt_trajectory_length"])
            elif "adapt_mass" in getattr(cls, "adaptation_options", ()):  # Langevin: samplers/mass.py
                extra = dict(adaptation_steps=o["burn_in_steps"], adapt_mass=o["adapt_mass"])
            self._sampler = cls(step_width=o["step_width"], seed=o["seed"],
                                **{name: o[name] for name in cls.parameters}, **extra)
            self._sampler.walker_axis = self.model.walker_axis
            self._sampler.first_walker, self._sampler.total_walkers = self._first_walker, self._total_walkers
            if self.ensemble is not None and self.ensemble.blending:
                self._sampler.preconditioner = self.ensemble
                self._sampler.moving = self.ensemble.moving
            self._sampler.build(self.model.variables)
        return self._sampler

    @property
    def optimizer(self):
        if self._optimizer is None:  # L-BFGS
            self._optimizer = LBFGS(self.model)
        if isinstance(self._optimizer, LBFGS):
            return self._optimizer
        if not self._optimizer.built:
            if hasattr(self._optimizer, "walker_axis"):  # Barzilai-Borwein: a step per walker
                self._optimizer.walker_axis = self.model.walker_axis
            self._optimizer.build(self.model.variables)
        return self._optimizer

    # -- running -------------------------------------------------------------------------------
    def sample(self):
        """Run max_steps sampler steps; returns a Result with this call's table rows."""
        return self._go("sample", self.sampler)

    def fit(self):
        """Run max_steps optimizer steps; returns a Result with this call's table rows."""
        return self._go("fit", self.optimizer)

    def _go(self, method, optimizer):
        o = self.options
        if method == "fit" and self.ensemble is not None and self.ensemble.blending:
            raise InputError("covariance_blending applies to sample(), not to fit()")
        if method == "fit" and o["record_momenta"]:
            raise InputError("record_momenta applies to sample(), not to fit(): an optimizer has no momenta")
        if self._run is None or self._run.method != method:
            self._run = _Run(method, optimizer, self)
            if self._strategy is not None and method == "sample":  # fit() keeps every walker here
                from tati.distribute import Shards
                self._run.shards = Shards(self, self._run, self._strategy)
        run = self._run
        shards = getattr(run, "shards", None)
        # Files: the chief's (the only worker but with distribution=multi_worker).
        paths = {name: o[name] if self._writes else None
                 for name in preflight.OUTPUT_FILES + ("summaries_path", "save_model")}
        momentum = run.is_sampler and optimizer.has_momentum
        if run.proposal:
            columns = {"run_file": proposal_run_info_columns(optimizer.name, self.has_accuracy),
                       "averages_file": proposal_averages_columns(optimizer.name)}
        else:
            columns = {"run_file": run_info_columns(run.is_sampler, self.has_accuracy, momentum, run.metropolis,
                                                    getattr(optimizer, "estimating", False)),
                       "averages_file": averages_columns(run.is_sampler, momentum, run.metropolis)}
        columns["trajectory_file"] = trajectory_columns(self.model.parameter_names)
        columns["momenta_file"] = momenta_columns(self.model.parameter_names)
        # The momenta table only with record_momenta (which momenta_file implies, preflight.py).
        outputs = [name for name in preflight.OUTPUT_FILES if name != "momenta_file" or o["record_momenta"]]
        append = {}
        for name in outputs:  # every file is checked before any is opened
            append[name] = preflight.check_output_file(name, paths[name], run.calls > 0, o["overwrite"])
            if append[name]:
                check_header(name, paths[name], columns[name])
        tables = [Table(columns[name], paths[name], append[name]) for name in outputs]
        run.calls += 1
        bar = _progress_bar(o["progress"], o["max_steps"])
        stop = _StopSignals()
        summaries = None
        try:
            summaries = _summaries(paths["summaries_path"], columns["run_file"], self.model)
            # A run's first call: one row's steps (it also compiles); a later sample() or fit() call
            # starts at the size its predecessor reached (each call has a fixed cost of a few ms).
            done, budget = 0, getattr(run, "budget", o["every_nth"])
            while done < o["max_steps"] and stop.signal is None:
                first = int(run.step.numpy())
                n = min(o["max_steps"] - done, budget)
                start = time.perf_counter()
                # HMC: rows where legs end, stopping early when its block is full; the others end
                # at a row (a multiple of every_nth or the call's last step) or a full block.
                if not run.metropolis and n < o["max_steps"] - done:  # to the next row at least
                    n = min(max((first + n) // o["every_nth"] * o["every_nth"] - first,
                                o["every_nth"] - first % o["every_nth"]), o["max_steps"] - done)
                n = tf.constant(n, tf.int32 if run.metropolis else tf.int64)
                if shards is not None:  # every replica's walkers, as one block
                    block = shards.chunk(n)
                else:
                    block = {k: np.asarray(v) for k, v in run.chunk(n).items()}
                elapsed = time.perf_counter() - start  # np.asarray: read-only views, no copy of the block
                step = int(run.step.numpy())
                self._append_rows(tables, block, first, step, elapsed, summaries)
                if step == first:  # nothing left to do (L-BFGS converged)
                    break
                if block["nonfinite_step"] >= 0:
                    raise self._nonfinite(block, run)
                done += step - first
                # Calls of about CALL_SECONDS: a signal is answered within one call.
                rate = (step - first) / max(elapsed, 1e-6)
                budget = run.budget = max(1, min(8 * budget, int(rate * CALL_SECONDS)))
                self._warn_ensemble()
                if bar is not None:
                    bar.update(step - first)
        finally:
            stop.release()
            for table in tables:
                table.close()
            if summaries is not None:
                summaries.close()
            if bar is not None:
                bar.close()
            if shards is not None:  # the whole run's state, for parameters and the checkpoint
                shards.gather()
        if hasattr(self.model, "sync"):  # a Keras model's own variables: walker 0
            self.model.sync()
        if paths["save_model"] is not None:
            checkpoint.save(paths["save_model"], self, run)
        if stop.signal is not None:
            saved = f"; checkpoint written to {o['save_model']}" if o["save_model"] is not None else ""
            raise Interrupted(stop.signal, f"stopped by {signal.Signals(stop.signal).name} after step "
                              f"{int(run.step.numpy())}{saved}")
        groups = self.model.parameter_groups() if hasattr(self.model, "parameter_groups") else None
        return Result(*(table.frame() for table in tables), parameter_groups=groups)

    def _nonfinite(self, row, run):
        row = dict(row, nonfinite_step=int(row["nonfinite_step"]))
        walkers = np.flatnonzero(row["nonfinite_walkers"])
        which = f"walker {walkers[0]}" if len(walkers) == 1 else f"walkers {', '.join(map(str, walkers[:5]))}"
        width = "step_width" if run.is_sampler else "learning_rate"
        return SamplingError(f"non-finite loss or gradient at step {row['nonfinite_step']} ({which}): "
                             f"{width} {_shown(self.options[width])} is probably too large for this "
                             "potential; every row before is kept (on_nan=continue runs on)")

    def _warn_ensemble(self):
        if self.ensemble is not None and int(self.ensemble.failures.numpy()) > self._ensemble_failures:
            self._ensemble_failures = int(self.ensemble.failures.numpy())
            warnings.warn(f"ensemble preconditioner: Cholesky factorisation not finite, "
                          f"covariance_blending reduced to {float(self.ensemble.eta.numpy()):g}")

    def _append_rows(self, tables, block, first, last, elapsed, summaries=None):
        """The block's rows, one per walker and table (HMC: per walker whose row is due); rows
        at or after a non-finite step are left out. `elapsed` seconds were spent on the steps
        first+1 ... last, shared out over the rows by their steps. `summaries`: TensorBoard's
        writers (summaries_path), which get every row."""
        rows = int(block["rows"])
        steps = np.asarray(block["step"][:rows], dtype=np.int64)
        due = np.asarray(block.get("due", np.ones((rows, self.model.num_walkers), bool))[:rows], bool)
        if block["nonfinite_step"] >= 0:
            due &= (steps < block["nonfinite_step"])[:, None]
        r, w = np.nonzero(due)  # row-major: step order, walkers ascending
        if not len(r):
            return
        previous = np.concatenate([[first], steps[:-1]])
        seconds = elapsed * (steps - previous) / max(last - first, 1)
        pick = lambda name: np.asarray(block[name][:rows], dtype=np.float64)[r, w]  # noqa: E731
        zero = np.zeros(len(r))
        loss = pick("loss")
        kinetic = pick("kinetic_energy") if "kinetic_energy" in block else zero
        averages = np.asarray(block["averages"][:rows], dtype=np.float64)[r, :, w]  # [K, 4]
        columns = {
            "id": w.astype(np.int64), "step": steps[r], "epoch": np.asarray(self.data.epoch(steps[r]), np.int64),
            "time_per_nth_step": seconds[r], "loss": loss,
            "accuracy": pick("accuracy") if "accuracy" in block else zero + np.nan,
            "total_energy": loss + kinetic, "kinetic_energy": kinetic,
            "scaled_momentum": np.sqrt(pick("momentum_sq")) if "momentum_sq" in block else zero,
            "scaled_gradient": pick("scaled_gradient") if "scaled_gradient" in block else zero,
            "virial": pick("virial"),
            "scaled_noise": np.sqrt(pick("noise_sq")) if "noise_sq" in block else zero,
            "ensemble_average_loss": averages[:, 0], "average_kinetic_energy": averages[:, 1],
            "average_virials": averages[:, 2], "average_inertia": averages[:, 3],
        }
        if self._run.proposal:  # NUTS, RWMH: the step's own fields
            columns.update({name: pick(name) for name in PROPOSAL_RUN_INFO[self._run.optimizer.name]
                            if name not in columns or name in block})
            columns.update({name: columns[name].astype(np.int64) for name in INTEGER_COLUMNS
                            if name in columns and columns[name].dtype != np.int64})
        else:  # one gradient per walker and step, and SGHMC's batch estimator's own
            columns["gradient_evaluations"] = (pick("gradient_evaluations").astype(np.int64)
                                               if "gradient_evaluations" in block else steps[r])
            if "total_energy" in block:  # HMC: the chain's state and its last decision
                columns.update(total_energy=pick("total_energy"), old_total_energy=pick("old_total_energy"),
                               average_rejection_rate=pick("rejection_rate"),
                               divergences=pick("divergences").astype(np.int64), step_width=pick("step_width"))
        if "gradient_noise_variance" in block:
            columns["gradient_noise_variance"] = pick("gradient_noise_variance")
        parameters = np.asarray(block["parameters"][:rows], dtype=np.float64)  # [rows, W, d]
        # [K, d]: with every walker's row due (not HMC) the rows are the block's in order, a view.
        parameters = parameters.reshape(len(r), parameters.shape[2]) if due.all() else parameters[r, w]
        kept = steps[r] > self.options["burn_in_steps"]
        run_table, trajectory, averages_table = tables[:3]
        if len(tables) > 3:  # record_momenta: the rows' momenta and gradients
            momenta = np.asarray(block["momenta"][:rows], dtype=np.float64)[r, w]
            gradients = np.asarray(block["gradients"][:rows], dtype=np.float64)[r, w]
            tables[3].extend_arrays(np.stack([columns["id"], columns["step"]], axis=1),
                                    np.concatenate([momenta, gradients], axis=1))
        run_table.extend({c: columns[c] for c in run_table.columns})
        if trajectory.integer_columns == ["id", "step"] and trajectory.float_columns[0] == "loss":
            # The parameters as one matrix: 100 column views of it cost more to stack than the rest.
            floats = np.empty((len(r), 1 + parameters.shape[1]))
            floats[:, 0], floats[:, 1:] = loss, parameters
            trajectory.extend_arrays(np.stack([columns["id"], columns["step"]], axis=1), floats)
        else:  # a parameter named like an integer column
            trajectory.extend({**columns, **dict(zip(self.model.parameter_names, parameters.T))})
        if kept.any():
            averages_table.extend({c: columns[c][kept] for c in averages_table.columns})
        if summaries is not None:
            summaries.write({**columns, **dict(zip(self.model.parameter_names, parameters.T))})

    # -- evaluation ----------------------------------------------------------------------------
    def _full_data(self):
        if not self.model.uses_data:
            return None, None
        return self.data.all()

    def loss(self):
        """U at the current parameters on the whole dataset (an array of W with several walkers)."""
        return self._walker_value(self.model.loss(*self._full_data()))

    def _walker_value(self, values):
        values = np.asarray(values, dtype=np.float64)
        return float(values[0]) if self.model.num_walkers == 1 else values

    def gradients(self):
        """grad U at the current parameters on the whole dataset, as a flat array."""
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.model.loss(*self._full_data()))
        grads = tape.gradient(loss, self.model.variables,
                              unconnected_gradients=tf.UnconnectedGradients.ZERO)
        walkers = self.model.num_walkers
        return self._walker_view(tf.concat([tf.reshape(g, [walkers, -1]) for g in grads], 1).numpy())

    def predict(self, features):
        """The network's outputs for the given features ([W, points, outputs] with several walkers)."""
        if not self.model.uses_data:
            raise InputError("predict needs a network; this simulation samples a potential")
        features = self.inputs(np.asarray(features, dtype=tf.as_dtype(self.model.dtype).as_numpy_dtype))
        return self._walker_view(self.model.outputs(tf.constant(features)).numpy())

    def inputs(self, features):
        """The network's inputs for rows of feature columns: the input_columns terms computed from
        them (tati/data/input_columns.py), or the features as they are."""
        if self.options["input_columns"] is None:
            return features
        from tati.data.input_columns import apply
        return apply(self.options["input_columns"], features)

    def predictive(self, features, labels=None, trajectory=None, burn_in=None, draws=1000, level=0.95):
        """The posterior predictive at `features` from a trajectory's draws (tati/predictive.py):
        (DataFrame of mean_k, lower_k, upper_k per point, and log_predictive_density with
        labels; the summed log predictive density or None)."""
        from tati.predictive import predictive
        return predictive(self, features, labels, trajectory, burn_in, draws, level)

    def score(self):
        """Accuracy of the network on the whole dataset (an array of W with several walkers)."""
        if not self.has_accuracy:
            raise InputError("score needs a network with a built-in loss")
        return self._walker_value(self.model.loss_and_accuracy(*self._full_data())[1])

    @property
    def num_parameters(self):
        return self.model.num_parameters

    @property
    def num_walkers(self):
        return self.model.num_walkers

    @property
    def parameters(self):
        """The flat parameter vector (a copy), [d]; with several walkers one row per walker,
        [W, d]. Assign an array of either shape to set it (a [d] vector sets every walker)."""
        return self._walker_view(self.model.get_parameters())

    def _walker_view(self, values):
        return values[0] if self.model.num_walkers == 1 else values

    @parameters.setter
    def parameters(self, values):
        self.model.set_parameters(values)
        for kernel in (self._sampler, self._optimizer):  # the new values are the state, not a leg's middle
            if kernel is not None and hasattr(kernel, "restart"):
                kernel.restart()
        self._scatter()

    def _scatter(self):
        """A distributed run's replicas take the state the user set."""
        shards = getattr(self._run, "shards", None)
        if shards is not None:
            shards.scatter()

    @property
    def momenta(self):
        """The sampler's momenta in the shape of `parameters` (a copy); assignable like them."""
        self._check_momenta()
        walkers = self.model.num_walkers
        return self._walker_view(tf.concat([tf.reshape(m, [walkers, -1]) for m in self.sampler.momenta], 1).numpy())

    @momenta.setter
    def momenta(self, values):
        from tati.models.flat import check_walkers
        self._check_momenta()
        walkers = self.model.num_walkers
        values = check_walkers("momenta", values, walkers, self.num_parameters, self.model.dtype)
        start = 0
        for m in self.sampler.momenta:
            size = int(np.prod(m.shape)) // walkers
            m.assign(values[:, start:start + size].reshape(m.shape))
            start += size
        self._scatter()

    def _check_momenta(self):
        if not self.sampler.has_momentum:
            raise InputError(f"sampler {self.options['sampler']} has no momenta")

    @staticmethod
    def help(name=None):
        """The help text of one option, or of all."""
        items = option_table.OPTIONS if name is None else [option_table.BY_NAME.get(name)]
        if items == [None]:
            raise option_table.unknown_option(name)
        return "\n".join(f"{o.name} (default {o.default!r}): {o.help}" for o in items)


class _StopSignals:
    """While alive, SIGINT and SIGTERM only record themselves (in `signal`): the loop stops at
    the next row boundary. Only the main thread can handle signals; elsewhere this does nothing."""

    def __init__(self):
        self.signal = None
        self._previous = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._record)

    def _record(self, number, frame):
        self.signal = number

    def release(self):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}


def _shown(rate):
    """A step width or learning rate in a message: a number, or a schedule (fit's learning_rate)."""
    return f"{rate:g}" if isinstance(rate, float) else f"(a {type(rate).__name__})"


def _summaries(path, run_info_columns, model):
    """TensorBoard's writers of one call (tati/export/tensorboard.py), or None without summaries_path."""
    if path is None:
        return None
    from tati.export.tensorboard import Summaries
    groups = model.parameter_groups() if hasattr(model, "parameter_groups") else None
    return Summaries(path, run_info_columns, model.parameter_names, model.num_walkers, groups)


_progress_warned = []


def _progress_bar(enabled, total):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # optional extra: run on without a bar, and say so once
        if not _progress_warned:
            _progress_warned.append(True)
            warnings.warn("progress needs tqdm, which is not installed (pip install tati[progress]); "
                          "running without a progress bar", stacklevel=3)
        return None
    return tqdm(total=total, unit="step", dynamic_ncols=True)
