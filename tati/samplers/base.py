"""SamplerBase: what every tati sampler shares, on top of a Keras 3 optimizer.

A sampler is a Keras optimizer whose `update_step` moves a variable (the positions q) and,
for the second-order samplers, its momentum slot (p) by a composition of the split steps in
`splitting.py`. The base class owns:

* the user's parameters: `step_width` (Keras' `learning_rate`, so schedules work) and the
  names in the class's `parameters` (e.g. `inverse_temperature` beta, `friction_constant`
  gamma), kept in optimizer variables so that changing them does not retrace a compiled
  loop; their defaults and checks come from the option table (`tati.config.options`);
* momentum slots, drawn from N(0, M / beta) at build time with the sampler's seed;
* seeded noise: standard normals by Box-Muller from one Philox draw of uniforms keyed by
  (seed, iteration, variable index, stream), walker-major, so that a walker's numbers do not
  depend on the number of walkers. The iteration counter is an optimizer variable, so a
  checkpoint restores the noise stream;
* the per-step report (`step_info`): kinetic energy, |p|^2, inertia q.p and |noise|^2, summed
  over all variables of one step, for the run-info and averages tables; with `walker_axis`
  set (as the Simulation does for its [W, d] parameters) they are per walker, shape [W];
* validation: every option error is an `InputError` naming the option and the value, and base
  options that would change the dynamics (weight decay, clipping, EMA, gradient accumulation)
  are refused.
"""

import math

import keras
import tensorflow as tf

from tati.config import options as option_table
from tati.errors import InputError
from tati.recording.columns import LANGEVIN_INFO
from tati.random.seed import seed_variable
from tati.random.streams import BOX_MULLER_SIZE, NOISE_STREAMS, PACKET, box_muller, packed_pairs

# Base-optimizer options that would silently change the sampled dynamics.
_REFUSED = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "use_ema",
            "gradient_accumulation_steps")
# Companions of refused options that Keras' own get_config emits; harmless once those are off.
_IGNORED = ("ema_momentum", "ema_overwrite_frequency")

INFO_NAMES = ("kinetic_energy", "momentum_sq", "inertia", "noise_sq")

def parameter_property(name, doc=""):
    """A property reading the parameter's variable (once built) and assigning it on set."""

    def get(self):
        return self._parameter_variables[name] if self.built else self._parameter_values[name]

    def set_(self, value):
        self._parameter_values[name] = option_table.check(name, value)
        if self.built:
            self._parameter_variables[name].assign(self._parameter_values[name])

    return property(get, set_, doc=doc)


class SamplerBase(keras.optimizers.Optimizer):
    """Base class of tati's samplers. Subclasses implement `update_step` with `self._report`.

    Class attributes: `parameters`, the option names the sampler takes besides step_width
    and seed; `has_momentum`, whether it keeps momentum slots.
    """

    parameters = ("inverse_temperature",)
    has_momentum = True
    # Its run-info and averages columns (tati/engine/kernels.py): what row_info delivers, and the loop
    # delivers scaled_gradient, virial and gradient_evaluations.
    info = LANGEVIN_INFO
    # Whether update_step also measures |noise|^2, which only table rows need; the compiled
    # loop turns it off (while tracing) for the steps between rows to save a pass over q.
    report_details = True
    # Batches of its own whose gradients estimate the gradient noise at an epoch's start (SGHMC's
    # estimator; tati/engine/gradient.py then calls estimate_noise and reads noise_evaluations).
    noise_batches = 0
    # Whether those batches cover the data (Batches.covering_batch, at least noise_batches of
    # them): the noise mass's (samplers/mass.py); SGHMC's are random (extra_batch).
    noise_covers = False
    # Whether estimate_noise also measures the step width again, with the sampler's own friction and
    # temperature (the noise mass with measure_step_width: samplers/mass.py); the engine then passes
    # the curvature.
    follows_width = False
    # Whether it measures friction_constant again with the width (friction_constant auto; the
    # Simulation sets it where `fixed_friction`).
    follows_friction = False
    # Whether friction_constant is the fixed friction of the O step (BAOAB, GLA1/2, SGHMC), which
    # friction_constant auto measures again with each noise mass; CCAdL's and SGNHT's thermostats
    # adapt their own friction xi from it.
    fixed_friction = False
    # Whether its friction step is Euler's, p <- (1 - gamma h) p (SGHMC), whose own heat the measured
    # width and friction count (tati/adaptation/measured_width.py); else exp(-gamma h), exact.
    euler_friction = False
    # Whether it has no momenta and no friction (SGLD): its measured width takes the overdamped rules
    # (tati/adaptation/measured_width.py, 5.).
    overdamped = False
    # Whether friction_constant is per unit of the scalar mass (SGHMC's C: the momentum decays by
    # 1 - h C / M); else it is the friction rate gamma itself (alpha = exp(-gamma h), SGNHT's A).
    friction_per_mass = False

    @classmethod
    def friction_unit(cls, mass):
        """friction_constant / the friction rate gamma: the scalar mass where the friction is per
        unit mass (friction_per_mass), else 1; floats or tensors."""
        return mass if cls.friction_per_mass else 1.0
    # Whether the leading axis of the variables is the walker: reports are then kept per walker.
    walker_axis = False
    # Ensemble preconditioner (ensemble.Ensemble: force(g) = B^T g, velocity(p) = B p, per
    # walker, with B kept up to date by the Simulation), or None. Only for one variable [W, d].
    preconditioner = None
    # Which walkers move ([W] bool variable, the ensemble's halves), or None for all: the others
    # keep their positions, momenta and `_walker_state()` through the step.
    moving = None
    # This sampler's walkers as part of a larger run (a replica's share of a distributed run,
    # tati/engine/distribute.py): its first walker's index there and the run's walker count (None: its
    # own). Every draw is then this part of the whole run's draw.
    first_walker = 0
    total_walkers = None
    # While `apply_reading_momenta` runs: the list `_report` appends each variable's momentum to.
    _momentum_readings = None
    # While `_backend_update_step` runs: the values its variables' updates share (`_once`).
    _step_values = None

    def __init__(self, step_width, seed, name, kwargs):
        cls_name = type(self).__name__
        if "learning_rate" in kwargs:  # Keras' name for the step width, e.g. from its configs
            step_width = kwargs.pop("learning_rate")
        for option in _REFUSED:
            value = kwargs.pop(option, None)
            if value not in (None, False):
                raise InputError(f"{cls_name}: option {option}={value!r} would change the sampled "
                                 "dynamics and is refused")
        for option in _IGNORED:
            kwargs.pop(option, None)
        values = {p: kwargs.pop(p) for p in self.parameters}
        # The walkers' layout, not configuration (get_config leaves it out): given by whoever
        # lays the walkers out (tati/config/building.py), read when the sampler is built.
        layout = {name: kwargs.pop(name) for name in ("walker_axis", "preconditioner", "first_walker", "total_walkers")
                  if name in kwargs}
        if not callable(step_width):
            step_width = option_table.check("step_width", step_width)
        seed = option_table.check("seed", seed)
        super().__init__(learning_rate=step_width, name=name, **kwargs)
        self.seed = seed
        for name, value in layout.items():
            setattr(self, name, value)
        if self.preconditioner is not None:
            self.moving = self.preconditioner.moving
        self._parameter_values = {p: option_table.check(p, v) for p, v in values.items()}

    inverse_temperature = parameter_property("inverse_temperature", "beta: the target is exp(-beta U).")

    @property
    def step_width(self):
        return self.learning_rate

    @step_width.setter
    def step_width(self, value):
        self.learning_rate = option_table.check("step_width", value)

    # -- state ---------------------------------------------------------------------------------
    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        # Initialised from float64 tensors: keras' Constant would round them through float32.
        self._parameter_variables = {
            p: self.add_variable((), initializer=lambda shape, dtype, v=v: tf.constant(
                0.0 if v is None else v, dtype, shape), dtype="float64", name=p)
            for p, v in self._parameter_values.items()}
        # Philox's key: the seed's 64 bits (bitcast back to uint64 in _philox).
        self._seed_key = seed_variable(self.seed if self.seed < 2 ** 63 else self.seed - 2 ** 64)
        self._walkers = int(variables[0].shape[0]) if self.walker_axis else None
        shape = (len(INFO_NAMES),) if self._walkers is None else (self._walkers, len(INFO_NAMES))
        self._step_info = self.add_variable(shape, dtype="float64", name="step_info")
        self._momenta = []
        if self.has_momentum:
            scale = self.initial_momentum_scale()
            self._momenta = [
                self.add_variable_from_reference(
                    v, name="momentum",
                    initializer=lambda shape, dtype, i=i: scale * self._walker_part(tf.random.stateless_normal(
                        self._run_shape(shape), seed=[self.seed, -1 - i], dtype=dtype)))
                for i, v in enumerate(variables)]

    def _run_shape(self, shape):
        """A variable's shape with the whole run's walkers (see first_walker)."""
        if self.total_walkers is None or not self.walker_axis:
            return shape
        return (self.total_walkers,) + tuple(shape)[1:]

    def _walker_part(self, values):
        """This sampler's walkers' rows of a draw for the whole run's walkers."""
        if self.total_walkers is None or not self.walker_axis:
            return values
        return values[self.first_walker:self.first_walker + self._walkers]

    def initial_momentum_scale(self):
        """Standard deviation of the initial momenta: sqrt(M / beta), unit mass here."""
        return 1.0 / math.sqrt(self._parameter_values["inverse_temperature"])

    @property
    def momenta(self):
        """The momentum slots, one per variable (in the order the optimizer was built with)."""
        return list(self._momenta)

    @property
    def step_info(self):
        """Quantities of the last step, summed over variables: a dict of float64 scalars (or of
        [W] vectors with walker_axis)."""
        return dict(zip(INFO_NAMES, tf.unstack(self._step_info, axis=-1)))

    def row_info(self, loss, per_walker):
        """The columns of a row this sampler reports from its last step (`step_info`), as
        float64 [W] tensors: the loss, given, is U(q_n) at the step's start. `per_walker(values)`
        sums a list of per-variable tensors over all but the walker axis."""
        info = self.step_info
        kinetic = info["kinetic_energy"]
        return {"total_energy": tf.cast(loss, tf.float64) + kinetic, "kinetic_energy": kinetic,
                "scaled_momentum": tf.sqrt(info["momentum_sq"]), "scaled_noise": tf.sqrt(info["noise_sq"])}

    def _sum(self, values):
        """Sum over everything, or over everything but the walker axis."""
        if self._walkers is None:
            return tf.reduce_sum(values)
        if values.shape.rank == 2:  # [W, d]: no reshape (each operation costs graph time)
            return tf.reduce_sum(values, axis=1)
        return tf.reduce_sum(tf.reshape(values, [self._walkers, -1]), axis=1)

    def _thermostat(self, name, variables):
        """A thermostat's friction xi, one per walker ([W]; a scalar without walkers) starting at
        friction_constant, as a float64 variable `name` (CCAdL, SGNHT), and the degrees of freedom
        per walker whose kinetic temperature it holds."""
        shape = () if self._walkers is None else (self._walkers,)
        xi = self.add_variable(shape, initializer=keras.initializers.Constant(
            self._parameter_values["friction_constant"]), dtype="float64", name=name)
        size = float(sum(math.prod(v.shape) for v in variables))
        return xi, size if self._walkers is None else size / self._walkers

    def _per_walker(self, value, variable):
        """A scalar or [W] value shaped to broadcast against the variable."""
        if self._walkers is None:
            return value
        return tf.reshape(value, [self._walkers] + [1] * (len(variable.shape) - 1))

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        """Each variable's update_step, as Keras does without a tf.distribute strategy: in a
        distributed run (tati/engine/distribute.py) a replica's gradients are its own walkers', not
        parts of one gradient for Keras to sum over the replicas."""
        if self.total_walkers is None and tf.distribute.has_strategy() and \
                tf.distribute.get_strategy().num_replicas_in_sync > 1:  # a user's strategy, not tati's
            raise InputError(f"{type(self).__name__} under a tf.distribute strategy of several replicas (model.fit "
                             "in strategy.scope()): its step does not combine the replicas' gradients, so their "
                             "copies would drift apart; use tati.Simulation(distribution='mirrored') instead")
        # The values every variable's update shares (the parameters cast to its dtype, the noise
        # counter's base, the reports' sum) are made once per step, not one set of graph
        # operations per variable: the same numbers, fewer operations (doc/benchmarks.md).
        self._step_values = {}
        try:
            for grad, variable in zip(grads, trainable_variables):
                self.update_step(grad, variable.value if isinstance(variable, keras.Variable) else variable,
                                 learning_rate)
            if "report" in self._step_values:
                self._step_info.assign(self._step_values["report"])
        finally:
            self._step_values = None

    def _once(self, key, compute):
        """compute(), made once per step while `_backend_update_step` runs (the same tensor for
        each variable's update_step), else at each call."""
        if self._step_values is None:
            return compute()
        if key not in self._step_values:
            self._step_values[key] = compute()
        return self._step_values[key]

    def apply(self, grads, trainable_variables=None):
        if self.moving is None or not self.built:
            if self.built:
                self._before_step()
                self._step_info.assign(tf.zeros_like(self._step_info))
            return super().apply(grads, trainable_variables)
        variables = self._trainable_variables if trainable_variables is None else list(trainable_variables)
        held = list(variables) + self._momenta + self._walker_state()
        before = [tf.identity(v) for v in held]
        self._before_step()
        self._step_info.assign(tf.zeros_like(self._step_info))
        super().apply(grads, trainable_variables)
        for variable, old in zip(held, before):
            variable.assign(tf.where(self._per_walker(self.moving, variable), variable, old))

    def apply_reading_momenta(self, grads, trainable_variables=None):
        """apply(), returning the momenta the step reports (those of its kinetic energy, paired
        with the positions the gradients were taken at) times M^{-1/2}, so that beta |p|^2 is
        chi-square in equilibrium: a float64 tensor [W, d] (walker_axis) or [1, d], the
        variables' flat order (the table rows of record_momenta, tati/engine/gradient.py)."""
        self._momentum_readings = []
        try:
            self.apply(grads, trainable_variables)
            readings = self._momentum_readings
        finally:
            self._momentum_readings = None
        if len(readings) != len(self._trainable_variables):
            raise ValueError(f"{type(self).__name__} reported no momenta to read")
        rows = 1 if self._walkers is None else self._walkers
        return tf.concat([tf.reshape(p, [rows, -1]) for p in readings], axis=1)

    def _walker_state(self):
        """Per-walker variables besides momenta that a standing walker keeps (e.g. CCAdL's xi)."""
        return []

    def _before_step(self):
        """Hook for global updates between steps (e.g. CCAdL's thermostat); reads last step's info."""
        return None

    # -- helpers for update_step ---------------------------------------------------------------
    def _parameter(self, name, dtype):
        return self._once((name, tf.as_dtype(dtype)), lambda: tf.cast(self._parameter_variables[name], dtype))

    def _step_width(self, learning_rate, dtype):
        """The step's width (Keras' learning rate, the same for every variable of a step) in dtype."""
        return self._once(("step_width", tf.as_dtype(dtype)), lambda: tf.cast(learning_rate, dtype))

    def _momentum(self, variable):
        return self._momenta[self._get_variable_index(variable)]

    def _philox(self, op, shape, dtype, index, stream, walker_numbers=0):
        """One draw by a stateless Philox op (tf.raw_ops.StatelessRandomUniformV2 or ...NormalV2,
        the same algorithm on every device), keyed by (seed, iteration, index, stream).

        The seed is the key, and the 128-bit counter starts at (low word 0, high word
        (iteration * variables + index) * NOISE_STREAMS + stream). A draw of n numbers advances
        the low word by at most n and never reaches the high word, so every (iteration, index,
        stream) has its own counters: no overlap, and no seed scrambling (`stateless_fold_in`
        and the seeded `stateless_*` ops cost a draw each).

        A walker-major draw of `walker_numbers` numbers per walker by a sampler whose walkers
        start at first_walker > 0 starts its low word there: Philox makes 128 bits per counter
        value, so its numbers are the same as those rows of the whole run's draw."""
        if not 0 <= stream < NOISE_STREAMS:
            raise ValueError(f"noise stream {stream} not in [0, {NOISE_STREAMS})")
        first = self._once("philox_block", lambda: tf.cast(self.iterations, tf.int64) * len(self._trainable_variables))
        block = (first + index) * NOISE_STREAMS + stream
        skip = 0
        if self.first_walker:
            per_counter = 128 // (8 * tf.as_dtype(dtype).size)
            if walker_numbers % per_counter:
                raise ValueError(f"{walker_numbers} numbers per walker are not whole Philox counters")
            skip = self.first_walker * walker_numbers // per_counter
        counter = tf.stack([tf.constant(skip, tf.uint64), tf.cast(block, tf.uint64)])
        key = tf.reshape(tf.bitcast(tf.convert_to_tensor(self._seed_key), tf.uint64), [1])
        return op(shape=shape, key=key, counter=counter, alg=1, dtype=dtype)

    def _normal(self, variable, stream=0):
        """Standard normal draw of the variable's shape, keyed by (seed, iteration, variable, stream)
        (`_philox`). Large variables: Box-Muller on uniforms; small ones: TensorFlow's normal
        kernel, one operation. Walkers are rows of one variable and take consecutive parts of
        one draw, walker w the w-th: its numbers depend on (seed, iteration, variable, stream, w)
        only, not on the number of walkers. With walkers always Box-Muller: under XLA
        TensorFlow's normal kernel pairs its numbers in a way that depends on the whole shape."""
        dtype = tf.as_dtype(variable.dtype)
        work = tf.float64 if dtype == tf.float64 else tf.float32  # float16/bfloat16: cast at the end
        shape = tf.TensorShape(variable.shape).as_list()  # variables have static shapes
        walkers = 1 if self._walkers is None else self._walkers
        size = math.prod(shape) // walkers  # numbers per walker
        index = self._get_variable_index(variable)
        if size < BOX_MULLER_SIZE and self._walkers is None:
            return tf.cast(self._philox(tf.raw_ops.StatelessRandomNormalV2, shape, work, index, stream), dtype)
        # Rows padded to whole SIMD packets: log, cos and sin compute the last few elements of
        # an array by another code path, which must not depend on where the walkers end.
        half = packed_pairs(size)
        normal = box_muller(self._philox(tf.raw_ops.StatelessRandomUniformV2, [walkers, 2 * half], work, index,
                                         stream, 2 * half))
        if 2 * half != size:
            normal = normal[:, :size]
        return tf.cast(tf.reshape(normal, shape), dtype)

    def _walkerwise(self, function, values):
        """function (elementwise, e.g. tf.exp) of a [W] tensor, computed the same for walker w
        however many walkers there are: the vector is padded to whole SIMD packets, whose
        transcendental kernels differ in the last bit from the scalar ones that do a tail."""
        if self._walkers is None:
            return function(values)
        padded = tf.pad(values, [[0, -self._walkers % PACKET]], constant_values=0)
        return function(padded)[:self._walkers]

    def _force(self, gradient):
        """B^T grad U: the gradient as the (preconditioned) kicks use it."""
        if self.preconditioner is None:
            return gradient
        return self.preconditioner.force(gradient)

    def _velocity(self, momentum):
        """B p: the momentum as the (preconditioned) drifts use it."""
        if self.preconditioner is None:
            return momentum
        return self.preconditioner.velocity(momentum)

    def _report(self, position, momentum, noise, mass=1.0):
        """Add this variable's share of the kinetic energy |p|^2 / 2M, |p|^2, the inertia q.p
        and |noise|^2 (zero unless report_details); momentum None for samplers without momenta."""
        noise_sq = self._sum(tf.square(noise))
        zero = tf.zeros_like(noise_sq)
        if not self.report_details:
            noise_sq = zero
        if momentum is None:
            values = tf.stack([zero, zero, zero, noise_sq], axis=-1)
        else:
            momentum_sq = self._sum(tf.square(momentum))
            inertia = self._sum(position * momentum)
            if self._momentum_readings is not None:
                self._momentum_readings.append(tf.cast(momentum, tf.float64) / tf.sqrt(tf.cast(mass, tf.float64)))
            values = tf.stack([0.5 * momentum_sq / mass, momentum_sq, inertia, noise_sq], axis=-1)
        values = tf.cast(values, tf.float64)
        if self._step_values is None:
            self._step_info.assign_add(values)
        else:  # one assignment per step: the same additions, in the same order, as one assign_add each
            total = self._step_values["report"] if "report" in self._step_values else tf.convert_to_tensor(
                self._step_info)
            self._step_values["report"] = total + values

    # -- serialization -------------------------------------------------------------------------
    def get_config(self):
        config = super().get_config()
        config["step_width"] = config.pop("learning_rate")
        for option in _REFUSED + _IGNORED:
            config.pop(option, None)
        config.update(self._parameter_values, seed=self.seed)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("step_width"), dict):
            config["step_width"] = keras.saving.deserialize_keras_object(
                config["step_width"], custom_objects=custom_objects)
        return cls(**config)
