"""Simulation: options -> data + model + sampler/optimizer + tables; sample() and fit().

    sim = tati.Simulation(potential=U, initial_parameters=x0, sampler="BAOAB", step_width=0.5)
    res = sim.sample()          # res.run_info, res.trajectory, res.averages: DataFrames

The Simulation is a facade over three parts: building (`building.py`: options to data, model,
ensemble, sampler), running (`running.py`: the run's step counter and compiled chunk, the calls
that drive it, signals, progress, non-finite stops) and recording (`recording/recorder.py`:
blocks of rows to tables and streams). The steps between two calls run inside one compiled
tf.function loop (`loop.py`, chosen by the kernel's kind, `kernels.py`); the running averages
accumulate in that graph; each call hands a block of rows to the recorder.

A *run* is a sequence of sample() (or fit()) calls: calling sample() again continues the run
(step numbers and averages go on, CSV files are appended to); switching between sample() and
fit() starts a new run with step 1 and fresh averages. `save_model` writes a checkpoint after
each call, `restore_model` continues a saved run in a new Simulation (checkpoint.py); without
save_model, a restored run that appends to its files updates the restored checkpoint.

SIGINT and SIGTERM stop a call at the next row boundary: the files are flushed, the checkpoint
is written if save_model is set (or updated, as above), and `Interrupted` (a KeyboardInterrupt) is raised. A
non-finite loss or gradient stops a Langevin sampler or optimizer with a `SamplingError`
naming step and walker (on_nan="stop"); every row written before stays.
"""

import contextlib
import signal
import time
import warnings

import numpy as np
import tensorflow as tf

from tati.config import building, compilation
from tati.config import options as option_table
from tati.config import preflight
from tati.diagnostics import data_scale, outliers
from tati.engine import checkpoint
from tati.adaptation import burn_in_notes, measured_width, warm_start
from tati.analysis import select
from tati.errors import InputError, Interrupted, RunWarning, SamplingError
from tati.engine.clock import FirstStep
from tati.engine.contract import load_kernel
from tati.engine.registry import optimizer_spec, spec_of, spec_of_kernel
from tati.engine.kernels import FULL_BATCH, kind_of
from tati.optimizers import make_optimizer
from tati.recording.recorder import Files, Recorder
from tati.recording.table import rows_beyond_memory
from tati.engine.running import Run, drive
from tati.models.flat import check_walkers, finite_walkers
from tati.samplers import get_sampler


# sample() calls of at least this many steps warn of walkers gone wrong or a hot run: reading a call's tables
# for it costs some milliseconds, which a loop of short calls would pay at every call
# (doc/benchmarks.md); summary() judges any call.
WARNED_STEPS = 1000


class Result:
    """The three tables of one sample() or fit() call; with record_momenta also the momenta
    table, and the model's parameter groups (name -> trajectory columns) for its diagnostics.

    A table may be given as a DataFrame or as a function that builds it: sample() and fit()
    hand over their tables' rows, and each DataFrame is built when first read (a loop of short
    calls that reads none pays nothing for them; doc/benchmarks.md)."""

    TABLES = ("run_info", "trajectory", "averages", "momenta")

    def __init__(self, run_info, trajectory, averages, momenta=None, parameter_groups=None):
        self._tables = dict(zip(self.TABLES, (run_info, trajectory, averages, momenta)))
        self.parameter_groups = parameter_groups
        # A run's first call: where the time to its first row went (tati/engine/clock.py FirstStep:
        # seconds, tracing, compiling, warm_start; .line()); None for a later call or a table read back.
        self.first_step = None
        # Whether the call's loop ran under XLA, and why (tati/config/compilation.py Compilation:
        # .xla, .reason, .line()); None for a table read back.
        self.compilation = None
        # The run's burn_in_steps and inverse_temperature where this is a sample() call's result (None
        # for a table read back): the defaults of the diagnostics below, so that by default they leave
        # out the burn-in and read the momenta at the run's temperature.
        self.burn_in_steps = None
        self.inverse_temperature = None

    def _burn_in(self, burn_in):
        return select.run_burn_in(self, burn_in)

    def _beta(self, inverse_temperature, unknown=1.0):
        return select.run_inverse_temperature(self, inverse_temperature, unknown)

    @property
    def first_step_seconds(self):
        """Seconds from Simulation(...) (or this run's first call) to the end of the first compiled
        call, tracing and compiling included; None where this call did not start the run."""
        return None if self.first_step is None else self.first_step.seconds

    def _table(self, name):
        table = self._tables[name]
        if callable(table):
            table = self._tables[name] = table()
        return table

    run_info = property(lambda self: self._table("run_info"))
    trajectory = property(lambda self: self._table("trajectory"))
    averages = property(lambda self: self._table("averages"))
    momenta = property(lambda self: self._table("momenta"))

    def __repr__(self):
        shown = ", ".join(f"{name}: {len(self._table(name))} rows" for name in self.TABLES
                          if self._tables[name] is not None)
        return f"Result({shown})"

    def convergence(self, burn_in=None, columns=None):
        """R-hat, ESS, mean and sd of each parameter (or of `columns`, e.g. ["loss"]) across
        walkers (tati.diagnostics.convergence), over each walker's last rows after burn_in (None:
        the run's burn_in_steps; for a table read back the averages' start, else 0), as many as
        every walker has (HMC's walkers differ)."""
        from tati.diagnostics.convergence import convergence, equal_rows
        return convergence(equal_rows(self.trajectory, self._burn_in(burn_in)), columns=columns)

    def momentum_test(self, inverse_temperature=None, burn_in=None, quantile=0.99, level=0.99):
        """T_quantile of the whole momentum vector from the run info's kinetic energies after
        burn_in, with its Clopper-Pearson interval (tati.diagnostics.momentum.momentum_test).
        None: the run's inverse_temperature and burn_in_steps (1, and the averages' start, for a
        table read back)."""
        from tati.diagnostics.momentum import momentum_test
        return momentum_test(self.run_info, len(self.trajectory.columns) - 3, self._beta(inverse_temperature),
                             self._burn_in(burn_in), quantile, level)

    def layer_temperatures(self, inverse_temperature=None, burn_in=None, quantile=0.99, level=0.99):
        """The momentum diagnostics of the whole vector ("all") and of each weight and bias
        tensor, from the momenta table (record_momenta) after burn_in: T_quantile with its
        Clopper-Pearson interval, the kinetic temperature with its interval, the configurational
        temperature q . grad U / d with its error, and the independent readings assumed; a
        DataFrame with a row per group (tati.diagnostics.momentum.layer_temperatures). None: the
        run's inverse_temperature and burn_in_steps (1, and the averages' start, for a table read
        back)."""
        from tati.diagnostics.momentum import layer_temperatures
        if self.momenta is None:
            raise InputError("layer_temperatures needs the momenta table: sample with record_momenta=True "
                             "(a run read back: load_run's momenta_file)")
        return layer_temperatures(self.momenta, self.trajectory, self.parameter_groups,
                                  self._beta(inverse_temperature), self._burn_in(burn_in), quantile, level)

    def to_inference_data(self, burn_in=None, inverse_temperature=None, log_likelihood=None,
                          posterior_predictive=None, predictions=None):
        """ArviZ's InferenceData: walkers as chains, rows after burn_in as draws, run info as
        sample_stats (tati/export/arviz.py; needs the extra: pip install tati[arviz]). None: the
        run's burn_in_steps (for a table read back the averages' start, else 0) and
        inverse_temperature (none read back: no lp). log_likelihood, the Simulation that ran (or one
        of the same model and data), adds each draw's pointwise log-likelihood of its data (az.loo);
        posterior_predictive, the same, a replicate of its data per draw (az.plot_ppc); predictions,
        new points' features, with posterior_predictive a replicate per draw at each of them."""
        from tati.export.arviz import to_inference_data
        return to_inference_data(self, self._burn_in(burn_in), self._beta(inverse_temperature, unknown=None),
                                 log_likelihood, posterior_predictive, predictions)


class Simulation:
    """Sample or optimise a network, a Keras model or a potential; see the module docstring.

    Every option of `tati.config.options.OPTIONS` is a keyword argument; `Simulation.help(name)`
    returns one option's help as a string.
    """

    # A shard of a distributed run (tati/engine/distribute.py): its walkers' first index in the whole
    # run and the run's walker count.
    _first_walker, _total_walkers = 0, None
    # Seconds to the first step (Result.first_step): the set-up's, until a run's first call counted
    # it, and the warm start's (a shard has neither).
    _setup_seconds, _warm_start_seconds = 0.0, None
    # Whether the user gave burn_in_steps: only a chosen burn-in is warned about as too short for
    # the metric's windows (the default follows max_steps, which a short trial run keeps short).
    _burn_in_given = False

    def __init__(self, **options):
        began = time.perf_counter()
        self._burn_in_given = options.get("burn_in_steps") is not None
        self.options, notes = preflight.check(options)
        for note in notes:
            warnings.warn(note, stacklevel=2)
        # jit_compile auto resolved once, for the whole run (tati/config/compilation.py)
        self.compilation = compilation.choose(self.options)
        self.options["jit_compile"] = self.compilation.xla
        from tati.engine import xla_cache
        xla_cache.apply(self.options["xla_cache_directory"])
        self._strategy, self._writes = None, True
        if self.options["distribution"] != "none":  # multi_worker: before TensorFlow runs anything
            from tati.engine.distribute import is_chief, make_strategy
            self._strategy = make_strategy(self.options["distribution"], self.options["devices"])
            self._writes = is_chief(self._strategy)
        self._build()
        for line in self.notes:  # here, not in _build: a distributed run's shards say nothing
            warnings.warn(line, stacklevel=2)
        computes = getattr(self.model, "computes_in", None)  # a Keras model's own float type
        if computes is not None and computes != tf.as_dtype(self.options["dtype"]).name:
            warnings.warn(f"dtype {self.options['dtype']}, but the Keras model's variables are {computes}: it "
                          f"computes in {computes} (make it after keras.config.set_dtype_policy("
                          f"'{self.options['dtype']}'), or give its layers dtype='{self.options['dtype']}')",
                          stacklevel=2)
        self._setup_seconds = time.perf_counter() - began  # the first run's first step counts from Simulation(...)

    def shard(self, first_walker, walkers):
        """A Simulation of walkers first_walker ... first_walker + walkers - 1 of this one, at
        their current parameters, that writes no files: one replica's share of a distributed
        run (tati/engine/distribute.py)."""
        shard = Simulation.__new__(Simulation)
        # Its walkers' rows of the whole run's parameters (fixed ones included, which the shard
        # fixes again): as given, drawn, read or dispersed.
        rows = self.model.full_parameters().numpy()
        shard.options = dict(self.options, number_walkers=walkers, initial_dispersion=0.0, parse_parameters_file=None,
                             parse_steps=None, restore_model=None, save_model=None, distribution="none",
                             run_file=None, trajectory_file=None, averages_file=None, summaries_path=None,
                             progress=False, initial_parameters=rows[first_walker:first_walker + walkers])
        shard._first_walker, shard._total_walkers = first_walker, self.model.num_walkers
        shard.compilation = self.compilation
        shard._strategy, shard._writes = None, False
        shard._build()
        if shard.ensemble is not None:
            shard.ensemble.refresh_in_loop = False
        return shard

    def _build(self):
        """The data, model and ensemble (tati/config/building.py); the sampler and optimizer when first used."""
        o = self.options
        parts = building.build(o)
        self.data, self.model, self.ensemble = parts.data, parts.model, parts.ensemble
        self.has_accuracy = parts.has_accuracy
        self.notes = list(parts.notes)  # lines on the data, warned of and repeated in the summary
        # The resolved options, with what the data implies (input and output widths): made once,
        # never written by tati afterwards.
        self.options = o = {**o, **parts.implied_options}
        self.record_momenta = preflight.records_momenta(o)
        self.restored = False
        get_sampler(o["sampler"])  # an unknown name fails here, not at the first sample()
        self._sampler = None
        from tati.optimizers.schedules import learning_rate_of  # a number or a schedule
        self._optimizer = make_optimizer(o["optimizer"], learning_rate_of(o))
        self._run = None
        self._last_sample = None  # the last sample() call's Result: predictive's default draws
        self._last_call = None  # (method, Result, seconds) of the last sample() or fit(): summary()'s
        self.warm_start = None  # what the warm start did (tati/adaptation/warm_start.py), once it ran
        self.measured_width = None  # measure_step_width's MeasuredWidth (tati/adaptation/measured_width.py)
        self._ensemble_failures = 0

    @property
    def sampler(self):
        """The sampler (a Keras optimizer built on the model's variables, or for NUTS and RWMH
        a samplers.proposal.ProposalKernel on the model)."""
        if self._sampler is None:
            self._sampler = building.make_sampler(self._sampler_options(), self.model, self.ensemble,
                                                  self._first_walker, self._total_walkers, self.data)
        return self._sampler

    @property
    def sampler_made(self):
        """The sampler where a run made one, else None: for the summary's readers, which must not make one."""
        return self._sampler

    @property
    def optimizer(self):
        if self._optimizer is None:  # a full-batch optimizer (L-BFGS), made on the model
            self._optimizer = load_kernel(optimizer_spec(self.options["optimizer"]))(self.model)
        if kind_of(self._optimizer) == FULL_BATCH:
            return self._optimizer
        if not self._optimizer.built:
            spec = spec_of_kernel(self._optimizer)
            if spec is not None and spec.walker_steps:  # a step width per walker
                self._optimizer.walker_axis = self.model.walker_axis
            self._optimizer.build(self.model.variables)
        return self._optimizer

    # -- running -------------------------------------------------------------------------------
    def sample(self):
        """Run max_steps sampler steps; returns a Result with this call's table rows."""
        with self._traced_user_code():  # in this frame: warnings' stack levels count from it
            began = time.perf_counter()
            # A sampling run starts: the first call, or the first after fit() (which runs a run of its own).
            # It tunes itself unless it continues a restored sampling run; a checkpoint of fit() gives its start.
            starts = fresh = self._run is None or self._run.method != "sample"
            if starts and self.options["restore_model"] is not None and not self.restored:
                fresh = self.restored = checkpoint.restore_start(self.options["restore_model"], self, "sample")
            if fresh and self.warm_start is None and warm_start.applies(self.options, self.model.num_walkers):
                self._start_warm()
                self._warm_start_seconds = time.perf_counter() - began
            elif fresh and spec_of(self.options["sampler"]).metropolis:
                self._check_start()
            if fresh and self.measured_width is None and self.options["measure_step_width"] is True:
                self._measure_width()
            if starts and self.options["measure_step_width"] is True:
                self._follow_width()
            result = self._go("sample", self.sampler, began)
            if fresh and self.warm_start is None:  # no warm start checked the data: the run's end does
                self._check_noise(None, "at the run's end", stacklevel=3)
            return result

    @contextlib.contextmanager
    def _traced_user_code(self):
        """A potential or loss written with numpy, or with a Python `if` on a tensor, passes the
        eager check at construction and fails where TensorFlow traces it into a graph: one line."""
        try:
            yield
        except (NotImplementedError, TypeError) as error:  # OperatorNotAllowedInGraphError is a TypeError
            if "symbolic" not in str(error):
                raise
            o = self.options
            what = "potential" if o["potential"] is not None else "loss" if callable(o["loss"]) else "model"
            raise InputError(f"{what} cannot run in TensorFlow's compiled graph ({str(error).split('. ')[0]}): "
                             "write it with TensorFlow operations (tf.reduce_sum, not np.sum; tf.where, not a "
                             "Python if on a tensor), as for tfp.mcmc") from None

    def _sampler_options(self):
        """The options the sampler is made with: friction_constant auto is the measured friction once
        measured (_measure_width), FRICTION_FLOOR until then."""
        if self.options["friction_constant"] != "auto":
            return self.options
        measured = self.measured_width.friction if self.measured_width is not None else None
        gamma = measured or measured_width.FRICTION_FLOOR  # per unit time: SGHMC's C is gamma M
        return dict(self.options, friction_constant=gamma * self._friction_unit())

    def _measure_width(self):
        """measure_step_width: the sampler's step width from the walkers' start (tati/adaptation/measured_width.py);
        friction_constant auto: its friction too, and the sampler is made anew with it (before any step)."""
        o = self.options
        mass = self._scalar_mass()
        sampler = self.sampler
        scales_of = sampler.noise_scales if getattr(sampler, "noise_mass", False) else None
        friction = None if o["friction_constant"] == "auto" else o["friction_constant"] / self._friction_unit()
        scheme = "overdamped" if sampler.overdamped else "euler" if sampler.euler_friction else "exact"
        self.measured_width = measured_width.measure(self.model, self.data, friction,
                                                     1.0 / o["inverse_temperature"], mass, o["seed"], scales_of, scheme)
        if friction is None:
            self._sampler = None
        self.sampler.step_width = self.measured_width.width

    def _scalar_mass(self):
        """The sampler's scalar mass option (SGHMC's, SGNHT's; 1 for the others)."""
        o = self.options
        return o["mass"] if "mass" in spec_of(o["sampler"]).option_names else 1.0

    def _friction_unit(self):
        """friction_constant / the friction rate gamma, by the sampler's class (SamplerBase.friction_unit)."""
        return load_kernel(spec_of(self.options["sampler"])).friction_unit(self._scalar_mass())

    def _follow_width(self):
        """With adapt_mass noise the measured width is measured again with each new mass, in the
        compiled loop (samplers/mass.py), with the friction the sampler steps with (after a
        restore_model, which measures nothing, the checkpoint's); friction_constant auto is measured
        again with it where the sampler's friction is its O step's (`fixed_friction`)."""
        sampler = self.sampler
        if getattr(sampler, "noise_mass", False):
            sampler.follows_width = True
            sampler.follows_friction = self.options["friction_constant"] == "auto" and sampler.fixed_friction
            sampler.measured_at_start = self.measured_width is not None

    def _start_warm(self):
        """The warm start (tati/adaptation/warm_start.py) before the first sample() call; a warning names
        the walkers it restarted or took back to the typical set, and a ridge of modes."""
        self.warm_start = warm_start.warm_start(self.model, self.data, self.options["inverse_temperature"])
        self.parameters = self.warm_start.positions
        report = self.warm_start
        if len(report.restarted) or len(report.no_mode) or len(report.narrow) or report.ridge is not None:
            warnings.warn(self.warm_start.line(), stacklevel=3)
        self._check_noise(self.warm_start.best, "at the warm start's end", stacklevel=4)

    def _check_start(self):
        """A Metropolis sampler's start without the warm start (which checks it): where U or its gradient is
        not finite every proposal is rejected, and the run would write NaN rows to its end."""
        model = self.model
        bad = np.flatnonzero(~self._finite_at(model.flat_parameters()))
        if len(bad):
            which = "the start" if model.num_walkers == 1 else f"the start of walker{'s' * (len(bad) > 1)} " + \
                ", ".join(map(str, bad[:5]))
            raise InputError(f"U or its gradient is not finite at {which}: give initial_parameters where it is "
                             f"({self.options['sampler']} cannot leave a start where it is not)")

    def _check_noise(self, walker, where, stacklevel):
        """The Gaussian likelihoods: gaussian's noise against the residuals of `walker` (None: the walker that
        fits best) `where` it stands (the warm start's end, or the run's), and their tails; poisson: the counts'
        spread about its rates. A warning and a summary line each where the data vary far more than the
        likelihood allows (diagnostics/data_scale.py)."""
        likelihood = self.options["likelihood"]
        if likelihood not in ("gaussian", "heteroscedastic_gaussian", "poisson") or not self.model.uses_data:
            return
        features, labels = self.data.all()
        outputs = self.model.outputs(features).numpy().astype(np.float64)
        for line in data_scale.misfit_lines(likelihood, labels.numpy(), outputs, walker,
                                            self.options["noise_standard_deviation"], where):
            self.notes.append(line)
            warnings.warn(line, stacklevel=stacklevel)

    def fit(self):
        """Run max_steps optimizer steps; returns a Result with this call's table rows."""
        with self._traced_user_code():
            return self._go("fit", self.optimizer, time.perf_counter())

    def _go(self, method, optimizer, began):
        o = self.options
        preflight.check_method(o, method)
        d = self.model.num_parameters  # the trajectory's id, step, loss and parameters; the momenta's two per parameter
        beyond = rows_beyond_memory(self.model.num_walkers, o["max_steps"], o["every_nth"],
                                    d + 3 + (2 * d + 2 if self.record_momenta and method == "sample" else 0))
        if beyond is not None:
            warnings.warn(beyond, stacklevel=3)  # at the user's sample() or fit()
        if self._run is None or self._run.method != method:
            for note in burn_in_notes.notes(o, self._burn_in_given) if method == "sample" else []:
                warnings.warn(note, stacklevel=3)  # at the user's sample()
            self._run = Run(method, optimizer, self)
            if self._strategy is not None and method == "sample":  # fit() keeps every walker here
                from tati.engine.distribute import Shards
                self._run.shards = Shards(self, self._run, self._strategy)
        run = self._run
        first_call = run.first_call is None
        # Files: the chief's (the only worker but with distribution=multi_worker).
        paths = {name: o[name] if self._writes else None for name in preflight.OUTPUT_FILES + ("summaries_path",)}
        paths["save_model"] = (o["save_model"] or run.updated_checkpoint) if self._writes else None
        files = Files(paths, run.calls > 0, o["overwrite"], self.record_momenta, int(run.step.numpy()),
                      rows_at_every_end=not run.metropolis)
        recorder = Recorder(self.model, self.data, run.info, self.has_accuracy, o["burn_in_steps"], files)
        run.calls += 1
        first_step = int(run.step.numpy())
        stopped_by = drive(run, recorder, o["max_steps"], o["every_nth"], o["progress"], getattr(run, "shards", None),
                           lambda block: self._nonfinite(block, run), self._warn_ensemble)
        if hasattr(self.model, "sync"):  # a Keras model's own variables: walker 0
            self.model.sync()
        if paths["save_model"] is not None:
            checkpoint.save(paths["save_model"], self, run, "save_model" if o["save_model"] else "restore_model")
        if stopped_by is not None:
            step = int(run.step.numpy())
            left = first_step + o["max_steps"] - step
            saved = (f"; checkpoint written to {paths['save_model']} (restore_model it with max_steps {left} "
                     "for the steps left)") if paths["save_model"] is not None else ""
            raise Interrupted(stopped_by, f"stopped by {signal.Signals(stopped_by).name} after step "
                              f"{step}{saved}")
        groups = self.model.parameter_groups() if hasattr(self.model, "parameter_groups") else None
        result = Result(*(table.frame for table in recorder.tables), parameter_groups=groups)
        result.compilation = self.compilation
        if method == "sample":
            result.burn_in_steps, result.inverse_temperature = o["burn_in_steps"], o["inverse_temperature"]
        if first_call:
            result.first_step = self._first_step(run, began)
        if method == "sample":
            self._last_sample = result
        self._last_call = (method, result, time.perf_counter() - began)
        if method == "sample" and self._writes and o["max_steps"] >= WARNED_STEPS:
            self._warn_wrong(result)
        return result

    def _warn_wrong(self, result):
        """A RunWarning where this call's numbers look wrong, as its summary says: rows with a
        non-finite loss (on_nan=continue), else each walker gone wrong (tati/diagnostics/outliers.py)
        and the kinetic energy or virial read hot."""
        from tati.diagnostics.outliers import walker_outliers
        from tati.diagnostics.summary import nonfinite_line
        from tati.diagnostics.summary.temperature import hot_readings
        if result.run_info.empty:  # HMC writes rows at the ends of legs: none ended in this call
            return
        broken = nonfinite_line(result.run_info)
        found = [] if broken else walker_outliers(result, self)  # with one walker only the warm start's check
        wrong = [broken] if broken else [outlier.line() for outlier in found] + [
            reading.warning() for reading in hot_readings(self, result, found)]
        if wrong:
            warnings.warn(RunWarning(f"{'; '.join(wrong)} (print(sim.summary()) for the whole run)"), stacklevel=4)

    def summary(self):
        """The summary of the last sample() or fit() call, as tati-sample and tati-optimize print it:
        what ran, how long it took, where it ended, and whether the numbers look right (the
        temperatures, each walker, R-hat and ESS), with the option that cures what does not;
        `print(sim.summary())` (a notebook shows it as it is)."""
        if self._last_call is None:
            raise InputError("summary() summarises a sample() or fit() call: call one first")
        from tati.diagnostics.summary import Summary, summarise
        method, result, seconds = self._last_call
        return Summary(summarise(f"{method}()", self, result, sampler=method == "sample", seconds=seconds))

    def _first_step(self, run, began):
        """The run's FirstStep (tati/engine/clock.py): from this call's start, and from Simulation(...)
        for the Simulation's first run (the one that paid for its set-up)."""
        ended, tracing, compiling = run.first_call
        setup, self._setup_seconds = self._setup_seconds, 0.0
        warm, self._warm_start_seconds = self._warm_start_seconds, None
        return FirstStep(ended - began + setup, tracing, compiling, warm)

    def _nonfinite(self, row, run):
        row = dict(row, nonfinite_step=int(row["nonfinite_step"]))
        walkers = np.flatnonzero(row["nonfinite_walkers"])
        which = f"walker {walkers[0]}" if len(walkers) == 1 else f"walkers {', '.join(map(str, walkers[:5]))}"
        width = "step_width" if run.is_sampler else "learning_rate"
        if row["nonfinite_step"] == 1 and self._not_finite_at_start(walkers):  # the start, not the width
            return SamplingError(f"non-finite loss or gradient at step 1 ({which}): U or its gradient is not "
                                 "finite at initial_parameters: give a start where it is")
        if width == "step_width" and self.measured_width is not None:  # not the user's: say where it came from
            see = "see the warning on the data above" if self.notes else None
            # as a blown-up walker's line: where the run measured its friction, a larger one is the second cure
            cure = data_scale.measured_cure(self.options, outliers.friction_cure(self))
            cause = data_scale.did_not_hold(cure, see, _shown(self._width_used(width)))
        else:
            cause = f"{width} {_shown(self._width_used(width))} is probably too large for this potential"
        return SamplingError(f"non-finite loss or gradient at step {row['nonfinite_step']} ({which}): {cause}; "
                             "every row before is kept (on_nan=continue runs on)")

    def _not_finite_at_start(self, walkers):
        """Whether U or its gradient is not finite at initial_parameters for one of `walkers`."""
        start = self.options["initial_parameters"]
        if start is None:
            return False
        model = self.model
        try:
            theta = check_walkers("initial_parameters", start, model.num_walkers, model.num_parameters, model.dtype)
        except InputError:  # one row per walker of all devices: this model holds fewer
            return False
        return not self._finite_at(tf.constant(theta, model.dtype))[walkers].all()

    def _finite_at(self, theta):
        """Per walker, whether U and its gradient are finite at theta [W, d] on the whole dataset."""
        losses, gradient, _ = self.model.loss_and_gradient(*self._full_data(), theta=theta)
        return finite_walkers(losses.numpy(), gradient.numpy())

    def _width_used(self, name):
        if name == "step_width" and self.measured_width is not None:  # measured, maybe again with each new mass
            return float(np.asarray(self.sampler.step_width))
        return self.options[name]

    def _warn_ensemble(self):
        if self.ensemble is not None and int(self.ensemble.failures.numpy()) > self._ensemble_failures:
            self._ensemble_failures = int(self.ensemble.failures.numpy())
            warnings.warn(f"ensemble preconditioner: Cholesky factorisation not finite, "
                          f"covariance_blending reduced to {float(self.ensemble.eta.numpy()):g}")

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
        return self._walker_view(self.model.loss_and_gradient(*self._full_data())[1].numpy())

    def predict(self, features):
        """The network's outputs for the given features ([W, points, outputs] with several walkers)."""
        if not self.model.uses_data:
            raise InputError("predict needs a network; this simulation samples a potential")
        features = self.inputs(np.asarray(features, dtype=tf.as_dtype(self.model.dtype).as_numpy_dtype))
        return self._walker_view(self.model.outputs(tf.constant(features)).numpy())

    def inputs(self, features):
        """The network's inputs for rows of feature columns: the input_columns terms computed from
        them (tati/data/input_columns.py), or the features as they are."""
        return building.network_inputs(self.options, features)

    def predictive(self, features, labels=None, trajectory=None, burn_in=None, draws=1000, level=0.95):
        """The posterior predictive at `features` from a trajectory's draws (tati/bayes/predictive.py):
        (DataFrame of mean_k, lower_k, upper_k per point, and log_predictive_density with
        labels; the summed log predictive density or None). `trajectory` defaults to the last
        sample() call's."""
        from tati.bayes.predictive import predictive
        if trajectory is None and self._last_sample is not None:
            trajectory = self._last_sample.trajectory
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
        from tati.models.flat import check_walkers, finite_walkers
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


def _shown(rate):
    """A step width or learning rate in a message: a number, or a schedule (fit's learning_rate)."""
    return f"{rate:g}" if isinstance(rate, float) else f"(a {type(rate).__name__})"
