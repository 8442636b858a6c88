"""Walkers spread over the replicas of a tf.distribute strategy (option `distribution`).

distribution="mirrored" (a tf.distribute.MirroredStrategy over `devices`) or "multi_worker"
(MultiWorkerMirroredStrategy over TF_CONFIG's machines) runs sample()'s compiled chunk on every
replica at once, each replica advancing its own share of the walkers: replica r holds walkers
r W/R ... (r+1) W/R - 1 in a shard of its own (model, data, sampler, step counter and running
averages, all on its device). Nothing crosses replicas during a call: every draw is keyed by
(seed, walker, step, stream) (the sampler's `first_walker`, samplers/base.py, and for NUTS and
RWMH random/walker_draws.py), so a shard's walkers are bitwise those of the same walkers on
one device; the replicas' blocks of rows are gathered (a collective, so every worker has them)
and joined along the walker axis.

The Simulation's own model, sampler and run state keep all W walkers, as on one device: they
give each shard its part when the run starts (`scatter`, after a restored checkpoint too)
and take the shards' state back after each call (`gather`), so `parameters`, `predictive`
and the checkpoint see the whole run, and a checkpoint restores on any layout. The ensemble
preconditioner, which needs every walker, is refreshed there too: the calls end at its refresh
steps. Burn-in with adaptation (step width, metric, leg length: pooled over all walkers at
every step) runs on the Simulation's own run, on one device of every worker alike, and the
shards take their part where it ends. Only the chief (`is_chief`) writes files. fit() runs
every walker in the one process.
"""

import numpy as np
import tensorflow as tf

from tati.engine.rows import block_rows
from tati.errors import InputError
from tati.config.preflight import pools_walkers_in_burn_in


def split_cpu(devices):
    """Split the CPU into `devices` logical devices, so that distribution=mirrored can be tried
    (and tested) on one machine; must run before TensorFlow initialises its devices."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * devices)
    except RuntimeError:
        raise InputError("split_cpu must run before TensorFlow initialises its devices "
                         "(before the first Simulation or tensor)") from None


def replica_devices(devices):
    """The devices' names: the given ones, or every GPU, or every CPU device."""
    if devices:
        known = {d.name.split("device:")[-1]: d.name for d in tf.config.list_logical_devices()}
        unknown = [name for name in devices if name.split("device:")[-1].upper() not in known]
        if unknown:
            raise InputError(f"devices: '{unknown[0]}' is not a device here; there are {', '.join(known)}")
        return [known[name.split("device:")[-1].upper()] for name in devices]
    gpus = tf.config.list_logical_devices("GPU")
    return [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]


def _shape_split(whole, part, walkers):
    """The walker axis of a variable of the whole run (shape `whole`) and of a shard (`part`),
    or None for a variable every shard shares (the same shape)."""
    if tuple(whole) == tuple(part):
        return None
    differing = [axis for axis, (a, b) in enumerate(zip(whole, part)) if a != b]
    if len(whole) != len(part) or len(differing) != 1 or whole[differing[0]] != walkers:
        raise AssertionError(f"a shard's variable of shape {part} is not a part of {whole}")
    return differing[0]


# One strategy per layout for the whole process: each strategy numbers its collective
# operations from the same start, so two strategies' gathers would take each other's keys.
_STRATEGIES = {}


def make_strategy(distribution, devices):
    """The tf.distribute strategy of a run: MirroredStrategy over the devices (none: every GPU,
    or every CPU device), or MultiWorkerMirroredStrategy from TF_CONFIG."""
    if distribution == "multi_worker" and devices:
        raise InputError("devices: distribution=multi_worker uses each worker's GPUs (or its CPU); drop devices")
    names = () if distribution == "multi_worker" else tuple(replica_devices(devices))
    if (distribution, names) not in _STRATEGIES:
        if len(_STRATEGIES):
            raise InputError(f"distribution={distribution}: this process already runs walkers on "
                             f"{_describe(next(iter(_STRATEGIES)))}; TensorFlow's collectives allow one layout "
                             "per process")
        if distribution == "mirrored":
            _STRATEGIES[distribution, names] = tf.distribute.MirroredStrategy(list(names))
        else:
            try:
                _STRATEGIES[distribution, names] = tf.distribute.MultiWorkerMirroredStrategy()
            except RuntimeError:  # "Collective ops must be configured at program startup"
                raise InputError("distribution=multi_worker must start before TensorFlow runs anything: create "
                                 "the Simulation first, or call tati.engine.distribute.make_strategy('multi_worker') "
                                 "at the start of the program") from None
    return _STRATEGIES[distribution, names]


def _describe(layout):
    distribution, names = layout
    return "the workers of TF_CONFIG" if distribution == "multi_worker" else ", ".join(
        name.split("device:")[-1] for name in names)


def is_chief(strategy):
    """Whether this process writes the files: the only one, or worker 0 of TF_CONFIG's."""
    resolver = getattr(strategy, "cluster_resolver", None)
    return resolver is None or not resolver.task_type or resolver.task_id == 0


def _as_float64(value):
    """A tensor as float64 for the replicas' gather (collectives take floats; every integer of
    a block or a state is far below 2^53, so the cast is exact)."""
    return value if value.dtype == tf.float64 else tf.cast(value, tf.float64)


class Shards:
    """The replicas' shards of one sample() run of `simulation` (its `_Run` is `run`) on this
    worker, and the collective calls that join all workers' shards."""

    def __init__(self, simulation, run, strategy):
        from tati.engine.checkpoint import state_groups  # the named state of a run, as the checkpoint holds it
        self._groups = state_groups
        self.simulation, self.run, self.strategy = simulation, run, strategy
        walkers = simulation.model.num_walkers
        replicas = strategy.num_replicas_in_sync
        devices = strategy.extended.worker_devices
        if walkers % replicas:
            where = ", ".join(d.split("device:")[-1] for d in devices) if replicas == len(devices) else "the workers"
            raise InputError(f"number_walkers {walkers} does not divide over {replicas} devices ({where}): "
                             f"give a multiple of {replicas}")
        self.share = walkers // replicas
        self.metropolis = run.metropolis
        # Adaptation pools every walker at every step of burn-in: the whole run's own chunk does
        # those steps (`_whole_run`), the shards the rest.
        o = simulation.options
        self.pooled_until = o["burn_in_steps"] if pools_walkers_in_burn_in(o) else 0
        self._shards_current = False  # whether the shards hold the run's state (else: the whole run)
        ids = strategy.experimental_distribute_values_from_function(lambda context: context.replica_id_in_sync_group)
        self.shards = {}  # this worker's, by replica
        for replica, device in zip(strategy.experimental_local_results(ids), devices):
            with tf.device(device):
                shard = simulation.shard(replica * self.share, self.share)
                shard._run = type(run)(run.method, shard.sampler, shard)
            self.shards[replica] = shard
        self.scatter()
        chunks = {replica: shard._run.chunk for replica, shard in self.shards.items()}
        self._dtypes = {}

        def gathered(values_of):
            """Every replica's values (`values_of(replica)`, a dict of tensors of static shapes) as
            [R, ...] float64 arrays, on every worker: packed into one row per replica, for one
            collective (each costs about 0.5 s to build, and a call of ~20 fields had one each)."""
            shapes = {}

            def packed(replica):
                values = values_of(replica)
                self._dtypes.update({name: value.dtype for name, value in values.items()})  # while tracing
                shapes.update({name: value.shape for name, value in values.items()})
                # (no values: one replica holds every walker, so no state is split)
                return tf.concat([tf.zeros([1, 0], tf.float64)]
                                 + [tf.reshape(_as_float64(value), [1, -1]) for value in values.values()], 1)

            rows = strategy.gather(strategy.run(packed, args=(ids,)), axis=0)
            parts, start = {}, 0
            for name, shape in shapes.items():
                size = shape.num_elements()
                parts[name] = tf.reshape(rows[:, start:start + size], [-1] + shape.as_list())
                start += size
            return parts

        @tf.function(autograph=False)
        def chunk(n):
            return gathered(lambda replica: chunks[replica](n))

        states = {replica: [piece for _, piece, _ in self._walker_pairs(shard)] for replica, shard in self.shards.items()}

        @tf.function(autograph=False)
        def state():
            return gathered(lambda replica: {str(i): tf.convert_to_tensor(part)
                                             for i, part in enumerate(states[replica])})

        @tf.function(autograph=False)
        def smallest(n):
            return tf.reduce_min(strategy.gather(strategy.run(lambda replica: tf.reshape(n, [1]), args=(ids,)), axis=0))

        self._chunk, self._state, self._smallest = chunk, state, smallest
        # Several processes size their calls by their own clocks: they take the smallest size.
        self._agree = getattr(getattr(strategy, "cluster_resolver", None), "task_type", None) is not None

    # -- state ---------------------------------------------------------------------------------
    def _pairs(self, shard):
        """(whole-run variable, the shard's, walker axis or None when every shard holds it whole)
        of the state a checkpoint holds."""
        whole = self._groups(self.simulation, self.run)
        part = self._groups(shard, shard._run)
        walkers = self.simulation.model.num_walkers
        for group, named in whole.items():
            for (_, variable), (_, piece) in zip(named, part[group]):
                yield variable, piece, _shape_split(variable.shape, piece.shape, walkers)

    def _walker_pairs(self, shard):
        """(whole-run variable, the shard's, walker axis) of the state whose walkers are split."""
        return [pair for pair in self._pairs(shard) if pair[2] is not None]

    def scatter(self):
        """Each shard takes its walkers' part of the whole run's state (every worker has it)."""
        self._shards_current = True
        for replica, shard in self.shards.items():
            walkers = range(replica * self.share, (replica + 1) * self.share)
            for variable, piece, axis in self._pairs(shard):
                value = variable.numpy()
                piece.assign(value if axis is None else np.take(value, walkers, axis=axis))

    def gather(self):
        """The whole run's state from every replica's shard (on every worker); the state every
        shard holds whole from this worker's first (the replicas keep it alike); nothing while
        the whole run is ahead of them (burn-in with adaptation)."""
        if not self._shards_current:
            return
        first = self.shards[min(self.shards)]
        parts = self._state()
        for variable, piece, axis in self._pairs(first):
            if axis is None:
                variable.assign(piece.numpy())
        for i, (variable, _, axis) in enumerate(self._walker_pairs(first)):
            value = np.concatenate(list(parts[str(i)].numpy()), axis=axis)
            variable.assign(value.astype(tf.as_dtype(variable.dtype).as_numpy_dtype))

    # -- running -------------------------------------------------------------------------------
    def _step(self):
        return int(self.shards[min(self.shards)]._run.step.numpy())

    def chunk(self, n):
        """Up to n steps on every replica; the rows as one block of all walkers (numpy), as
        the one-device chunk returns them. HMC's calls are at most a block of steps long, so
        no replica's block fills early and the replicas stay at the same step.

        During a burn-in with adaptation the Simulation's own run does the steps (`_whole_run`),
        and the shards take the state where it ends.

        With the ensemble preconditioner (or collapse_walkers), whose refresh needs every
        walker, the calls end at each refresh step, where the whole run's ensemble is refreshed
        from the gathered state by the same operations as in the loop and the replicas take
        their part; a row the cut adds (not at a multiple of every_nth) is left out."""
        if self._agree:
            n = tf.cast(self._smallest(tf.cast(n, tf.float64)), n.dtype)
        if int(self.run.step.numpy()) < self.pooled_until:
            return self._whole_run(n)
        if not self._shards_current:  # burn-in has just ended
            self.scatter()
        if self.metropolis:
            n = tf.minimum(n, tf.cast(self._capacity(), n.dtype))
        ensemble = self.simulation.ensemble
        if ensemble is None:
            return self._call(n)
        every_nth = self.simulation.options["every_nth"]
        wanted, blocks = int(n), []
        first = done = self._step()
        while done - first < wanted:
            if done % ensemble.every == 0:  # as the loop's step does first (HMC: an evaluation step)
                self.gather()
                if self.metropolis:  # from the chains' states; its iteration counter is the step
                    ensemble.maybe_refresh(self.run.optimizer.chain_positions()[0], self.run.optimizer.iterations)
                else:
                    ensemble.maybe_refresh(self.simulation.model.theta, tf.constant(done, tf.int64))
                self.scatter()
            steps = min(wanted - (done - first), ensemble.every - done % ensemble.every)
            block = self._call(tf.constant(steps, n.dtype))
            now = self._step()
            rows = int(block["rows"])
            if (not self.metropolis and now - first < wanted and rows and block["step"][rows - 1] % every_nth
                    and block["nonfinite_step"] < 0):
                block["rows"] = rows - 1  # the cut's row
            blocks.append(block)
            if now - done < steps or block["nonfinite_step"] >= 0:  # a full block, or a stop
                break
            done = now
        return _concatenate(blocks)

    def _whole_run(self, n):
        """Up to n steps, at most to the end of burn-in, of the Simulation's own run: all walkers
        on one device, as without distribution (every worker computes the same). A row the cut
        adds (not at a multiple of every_nth) is left out, as at the ensemble's refresh."""
        wanted = int(n)
        first = int(self.run.step.numpy())
        n = tf.minimum(n, tf.cast(self.pooled_until - first, n.dtype))
        block = {name: np.asarray(value) for name, value in self.run.chunk(n).items()}
        self._shards_current = False
        rows = int(block["rows"])
        cut = int(self.run.step.numpy()) - first < wanted
        if (not self.metropolis and cut and rows and block["step"][rows - 1] % self.simulation.options["every_nth"]
                and block["nonfinite_step"] < 0):
            block["rows"] = np.int32(rows - 1)
        return block

    def _call(self, n):
        gathered = {name: value.numpy() for name, value in self._chunk(n).items()}
        blocks = [{name: value[r].astype(self._dtypes[name].as_numpy_dtype) for name, value in gathered.items()}
                  for r in range(self.strategy.num_replicas_in_sync)]
        block = _join_by_step(blocks) if self.metropolis else _join(blocks)
        self.run.step.assign(self._step())
        return block

    def _capacity(self):
        return block_rows(self.share, self.simulation.model.num_parameters)


def _walker_axis(name):
    """The walker axis of a block's field (after its rows), None for the block's own fields."""
    if name in ("rows", "step", "nonfinite_step"):
        return None
    if name == "nonfinite_walkers":
        return 0
    return 2 if name == "averages" else 1


def _join(blocks):
    """One block from the replicas' blocks of the same rows (same steps)."""
    first = blocks[0]
    if any(int(b["rows"]) != int(first["rows"]) or not np.array_equal(b["step"], first["step"]) for b in blocks):
        raise AssertionError("the replicas' rows are at different steps")
    joined = {}
    for name, value in first.items():
        axis = _walker_axis(name)
        if axis is not None:
            joined[name] = np.concatenate([b[name] for b in blocks], axis=axis)
        elif name == "nonfinite_step":
            bad = [int(b[name]) for b in blocks if int(b[name]) >= 0]
            joined[name] = np.int64(min(bad) if bad else -1)
        else:
            joined[name] = value
    return joined


def _concatenate(blocks):
    """One block of the rows of consecutive blocks."""
    if len(blocks) == 1:
        return blocks[0]
    used = [int(b["rows"]) for b in blocks]
    joined = {"rows": np.int32(sum(used)), "nonfinite_step": blocks[-1]["nonfinite_step"],
              "nonfinite_walkers": blocks[-1]["nonfinite_walkers"]}
    for name in blocks[0]:
        if name not in joined:
            joined[name] = np.concatenate([b[name][:k] for b, k in zip(blocks, used)])
    return joined


def _join_by_step(blocks):
    """One block from HMC's replica blocks, whose rows are where some walker of theirs ends a
    leg: the union of their steps, a walker's row where its replica has one (`due` else 0)."""
    used = [int(b["rows"]) for b in blocks]
    steps = np.unique(np.concatenate([b["step"][:k] for b, k in zip(blocks, used)]))
    joined = {"rows": np.int32(len(steps)), "step": steps, "nonfinite_step": np.int64(-1),
              "nonfinite_walkers": np.concatenate([b["nonfinite_walkers"] for b in blocks])}
    for name, value in blocks[0].items():
        axis = _walker_axis(name)
        if name in joined or axis is None:
            continue
        shape = list(value.shape)
        shape[0] = len(steps)
        shape[axis] = sum(b[name].shape[axis] for b in blocks)
        field = np.zeros(shape, value.dtype)
        start = 0
        for b, k in zip(blocks, used):
            width = b[name].shape[axis]
            rows = np.searchsorted(steps, b["step"][:k])
            index = [rows] + [slice(None)] * (len(shape) - 1)
            index[axis] = slice(start, start + width)
            field[tuple(index)] = b[name][:k]
            start += width
        joined[name] = field
    return joined
