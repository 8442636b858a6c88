"""Running averages accumulated inside the compiled loop, in constant memory.

After burn-in, over the N steps n of the run so far:
    average_kinetic_energy  (1/N) sum_n T(p_n)
    average_virials         (1/N) sum_n 1/2 q_n . grad U(q_n)
    average_inertia         (1/N) sum_n (q_n . p_n - q_{n-1} . p_{n-1})
    ensemble_average_loss   sum_n U_n exp(-beta U_n) / sum_n exp(-beta U_n)
The exponential weights are kept relative to their running maximum, so large losses or
large beta never overflow. Every quantity is kept per walker (vectors of length W).
"""

import tensorflow as tf

from tati.random.streams import PACKET


# The rows of RunningAverages.state, one column per walker: the count of steps averaged, the
# sums of kinetic energy, virial and inertia change, the log of the largest Boltzmann weight
# seen, and the sums of the weights and of weight x loss relative to it.
_ROWS = ("count", "kinetic_energy", "virial", "inertia_change", "log_scale", "weight", "weighted_loss")


def _exp(values):
    """exp of a [W] vector as within whole SIMD packets: TensorFlow's CPU kernel computes the
    elements that do not fill a packet by a scalar path that may differ in the last bit, so
    walker w's value would depend on the number of walkers (samplers/base.py, _walkerwise)."""
    walkers = values.shape[0]
    return tf.exp(tf.pad(values, [[0, -walkers % PACKET]]))[:walkers]


class RunningAverages:
    def __init__(self, walkers=1):
        f64 = tf.float64
        # One variable, read and written once per step: each separate one costs graph operations.
        self.state = tf.Variable(tf.zeros([len(_ROWS), walkers], f64), trainable=False, name="averages")
        self.last_inertia = tf.Variable(tf.zeros([walkers], f64), trainable=False, name="last_inertia")
        self.seen = tf.Variable(tf.constant(False), trainable=False, name="inertia_seen")

    def update(self, loss, virial, kinetic_energy, inertia, inverse_temperature, active):
        """Fold one step in ([W] values); `active` (scalar or [W]) is False during burn-in and,
        for HMC, for walkers that did not evaluate (the inertia is still tracked). `inertia`
        None: there is none (HMC), its average stays 0 at no cost."""
        change = None
        if inertia is not None:
            inertia = tf.cast(inertia, tf.float64)
            change = tf.where(self.seen, inertia - self.last_inertia, tf.zeros_like(inertia))
            self.last_inertia.assign(inertia)
            self.seen.assign(True)
        self.state.assign(folded(self.state, loss, virial, kinetic_energy, inverse_temperature, active, change))

    def values(self):
        """(ensemble_average_loss, average_kinetic_energy, average_virials, average_inertia),
        each [W]."""
        return values_of(self.state)


def folded(state, loss, virial, kinetic_energy, inverse_temperature, active, inertia_change=None):
    """RunningAverages.state [7, W] after one step, as `RunningAverages.update` (whose arguments
    these are, with the step's inertia change, None for none): a loop may carry the state as a
    tensor and write the variable once at its end."""
    loss = tf.cast(loss, tf.float64)
    active = tf.broadcast_to(active, tf.shape(loss))
    weight = tf.cast(active, tf.float64)
    old = dict(zip(_ROWS, tf.unstack(tf.convert_to_tensor(state))))
    new = dict(old)
    if inertia_change is not None:
        new["inertia_change"] = old["inertia_change"] + weight * inertia_change
    new["count"] = old["count"] + weight
    new["kinetic_energy"] = old["kinetic_energy"] + weight * tf.cast(kinetic_energy, tf.float64)
    new["virial"] = old["virial"] + weight * tf.cast(virial, tf.float64)
    log_weight = -tf.cast(inverse_temperature, tf.float64) * loss
    old_scale = tf.where(old["count"] > 0, old["log_scale"], log_weight)
    new["log_scale"] = tf.where(active, tf.maximum(old_scale, log_weight), old_scale)
    shrink = _exp(old_scale - new["log_scale"])
    boltzmann = weight * _exp(log_weight - new["log_scale"])
    new["weight"] = old["weight"] * shrink + boltzmann
    new["weighted_loss"] = old["weighted_loss"] * shrink + boltzmann * loss
    return tf.stack([new[row] for row in _ROWS])


def values_of(state):
    """RunningAverages.values() of a state [7, W]."""
    s = dict(zip(_ROWS, tf.unstack(tf.convert_to_tensor(state))))
    n = tf.maximum(s["count"], 1.0)
    return (s["weighted_loss"] / s["weight"], s["kinetic_energy"] / n, s["virial"] / n, s["inertia_change"] / n)
