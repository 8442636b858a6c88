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


class RunningAverages:
    def __init__(self, walkers=1):
        f64 = tf.float64
        self.count = tf.Variable(tf.zeros([walkers], tf.int64), trainable=False, name="average_count")
        self.sums = tf.Variable(tf.zeros([3, walkers], f64), trainable=False, name="average_sums")
        self.log_scale = tf.Variable(tf.zeros([walkers], f64), trainable=False, name="log_weight_max")
        self.weights = tf.Variable(tf.zeros([2, walkers], f64), trainable=False, name="boltzmann_weights")
        self.last_inertia = tf.Variable(tf.zeros([walkers], f64), trainable=False, name="last_inertia")
        self.seen = tf.Variable(tf.constant(False), trainable=False, name="inertia_seen")

    def update(self, loss, virial, kinetic_energy, inertia, inverse_temperature, active):
        """Fold one step in ([W] values); `active` (scalar or [W]) is False during burn-in and,
        for HMC, for walkers that did not evaluate (the inertia is still tracked). `inertia`
        None: there is none (HMC), its average stays 0 at no cost."""
        active = tf.broadcast_to(active, tf.shape(loss))
        loss = tf.cast(loss, tf.float64)
        if inertia is None:
            change = tf.zeros_like(loss)
        else:
            inertia = tf.cast(inertia, tf.float64)
            change = tf.where(self.seen, inertia - self.last_inertia, tf.zeros_like(inertia))
            self.last_inertia.assign(inertia)
            self.seen.assign(True)
        weight = tf.cast(active, tf.float64)
        self.sums.assign_add(weight * tf.stack([tf.cast(kinetic_energy, tf.float64),
                                                tf.cast(virial, tf.float64), change]))
        log_weight = -tf.cast(inverse_temperature, tf.float64) * loss
        old_scale = tf.where(self.count > 0, self.log_scale, log_weight)
        new_scale = tf.where(active, tf.maximum(old_scale, log_weight), old_scale)
        shrink = tf.exp(old_scale - new_scale)
        boltzmann = weight * tf.exp(log_weight - new_scale)
        self.weights.assign(self.weights * shrink + boltzmann * tf.stack([tf.ones_like(loss), loss]))
        self.log_scale.assign(new_scale)
        self.count.assign_add(tf.cast(active, tf.int64))

    def values(self):
        """(ensemble_average_loss, average_kinetic_energy, average_virials, average_inertia),
        each [W]."""
        n = tf.cast(tf.maximum(self.count, 1), tf.float64)
        means = self.sums / n
        return (self.weights[1] / self.weights[0], means[0], means[1], means[2])
