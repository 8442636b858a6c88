"""Loss functions of the built-in network, by the original TATi's names, and accuracy rules.

Outputs carry a leading walker axis, [W, batch, outputs]; labels [batch, columns] are shared.
Every loss is a mean over the batch (and over output components) for each walker, so the
potential U(theta) = loss has the same scale for any batch size. Labels may be given as -1/+1 or 0/1 for
the two-class losses; `sigmoid_cross_entropy` and `softmax_cross_entropy` read the network
output as logits (use `output_activation="linear"` with them), `log_loss` as probabilities.
`softmax_cross_entropy` takes one-hot labels or a single column of class indices.
"""

import math

import tensorflow as tf

_EPS = 1e-7


def _as01(labels):
    return tf.cast(labels > 0, labels.dtype)


def _mean(values):
    """Mean over everything but the walker axis."""
    return tf.reduce_mean(tf.reshape(values, [tf.shape(values)[0], -1]), axis=1)


def _softmax(labels, outputs):
    labels = tf.broadcast_to(labels, tf.concat([tf.shape(outputs)[:1], tf.shape(labels)], 0))
    if labels.shape[-1] == 1 and outputs.shape[-1] != 1:
        return _mean(tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(labels[..., 0], tf.int32), outputs))
    return _mean(tf.nn.softmax_cross_entropy_with_logits(labels, outputs))


LOSSES = {
    "mean_squared": lambda y, f: _mean(tf.square(y - f)),
    "absolute_difference": lambda y, f: _mean(tf.abs(y - f)),
    "hinge_loss": lambda y, f: _mean(tf.nn.relu(1.0 - (2.0 * _as01(y) - 1.0) * f)),
    "log_loss": lambda y, f: -_mean(
        _as01(y) * tf.math.log(f + _EPS) + (1.0 - _as01(y)) * tf.math.log(1.0 - f + _EPS)),
    "sigmoid_cross_entropy": lambda y, f: _mean(
        tf.nn.sigmoid_cross_entropy_with_logits(tf.broadcast_to(_as01(y), tf.shape(f)), f)),
    "softmax_cross_entropy": _softmax,
    "cosine_distance": lambda y, f: _mean(1.0 - tf.reduce_sum(y * f, axis=-1)),
}

# Negative log-likelihoods per point, averaged over the batch per walker (option `likelihood`).
# The model's potential is then size x this mean: the data's whole negative log-likelihood, or
# its unbiased estimate N / n x sum over a mini-batch of n.
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def mean_and_variance(name, f, noise=1.0):
    """The predictive mean and variance of y given the outputs f, for the Gaussian likelihoods; for
    student_t its location and squared scale (sigma^2, not the variance nu sigma^2 / (nu - 2))."""
    if name == "gaussian":
        return f, tf.fill(tf.shape(f), tf.cast(noise, f.dtype) ** 2)
    columns = tf.shape(f)[-1] // 2  # heteroscedastic_gaussian, student_t: (mu, raw variance) per label column
    return f[..., :columns], tf.nn.softplus(f[..., columns:]) + 1e-6


def negative_binomial_parameters(f):
    """(log mean, r) of the negative binomial from its outputs (log mean, raw dispersion) per label column:
    the dispersion alpha = softplus(raw) + 1e-6 makes the variance mean + alpha mean^2, r = 1 / alpha."""
    columns = tf.shape(f)[-1] // 2
    return f[..., :columns], 1.0 / (tf.nn.softplus(f[..., columns:]) + 1e-6)


def point_nll(name, noise=1.0, degrees_of_freedom=4.0):
    """(labels, outputs [W, batch, outputs]) -> [W, batch]: each point's negative log-likelihood."""
    if name in ("gaussian", "heteroscedastic_gaussian"):
        def nll(y, f):
            mu, variance = mean_and_variance(name, f, noise)
            terms = 0.5 * tf.square(y - mu) / variance + 0.5 * tf.math.log(variance) + _HALF_LOG_2PI
            return tf.reduce_sum(terms, axis=-1)
    elif name == "student_t":  # heteroscedastic_gaussian's outputs, nu fixed: its limit as nu grows
        nu = float(degrees_of_freedom)
        constant = math.lgamma(nu / 2.0) - math.lgamma((nu + 1.0) / 2.0) + 0.5 * math.log(nu * math.pi)

        def nll(y, f):
            mu, scale2 = mean_and_variance(name, f)
            terms = (0.5 * (nu + 1.0) * tf.math.log1p(tf.square(y - mu) / (nu * scale2)) + 0.5 * tf.math.log(scale2)
                     + constant)
            return tf.reduce_sum(terms, axis=-1)
    elif name == "bernoulli":
        def nll(y, f):
            y = tf.broadcast_to(_as01(y), tf.shape(f))
            return tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(y, f), axis=-1)
    elif name == "poisson":  # f = log rate; exact log k! (tf.nn.log_poisson_loss approximates it by Stirling)
        def nll(y, f):
            return tf.reduce_sum(tf.exp(f) - y * f + tf.math.lgamma(y + 1.0), axis=-1)
    elif name == "negative_binomial":
        # Near Poisson's limit r is large (1e6 at the dispersion's floor), where lgamma(y + r) - lgamma(r)
        # and log(r / (r + mean)) cancel to nothing in float32 (errors up to 0.55 a point at r = 1e6);
        # log_gamma_difference and softplus(t), t = log(mean / r), keep every term accurate.
        from tensorflow_probability import math as tfp_math

        def nll(y, f):
            log_mean, r = negative_binomial_parameters(f)
            t = log_mean - tf.math.log(r)
            spread = tf.nn.softplus(t)  # log(1 + mean / r)
            terms = (tf.math.lgamma(y + 1.0) + tfp_math.log_gamma_difference(y, r) + r * spread
                     - y * (t - spread))
            return tf.reduce_sum(terms, axis=-1)
    else:  # categorical
        def nll(y, f):
            y = tf.broadcast_to(y, tf.concat([tf.shape(f)[:1], tf.shape(y)], 0))
            if y.shape[-1] == 1 and f.shape[-1] != 1:
                return tf.nn.sparse_softmax_cross_entropy_with_logits(tf.cast(y[..., 0], tf.int32), f)
            return tf.nn.softmax_cross_entropy_with_logits(y, f)
    return nll


def likelihood_loss(name, size, noise=1.0, degrees_of_freedom=4.0):
    """(labels, outputs) -> [W]: size x the mean negative log-likelihood of the batch."""
    nll = point_nll(name, noise, degrees_of_freedom)
    return lambda y, f: tf.cast(size, f.dtype) * tf.reduce_mean(nll(y, f), axis=1)


# The rule of `accuracy` for each likelihood (None: a regression, no accuracy column).
LIKELIHOOD_ACCURACY = {"gaussian": None, "heteroscedastic_gaussian": None, "student_t": None,
                       "bernoulli": "sigmoid_cross_entropy", "categorical": "softmax_cross_entropy", "poisson": None,
                       "negative_binomial": None}

ACTIVATIONS = {
    "tanh": tf.tanh, "sigmoid": tf.sigmoid, "softplus": tf.nn.softplus,
    "softsign": tf.nn.softsign, "elu": tf.nn.elu, "relu6": tf.nn.relu6, "relu": tf.nn.relu,
    "linear": tf.identity,
}


def accuracy(loss, labels, outputs):
    """Fraction of correctly classified points, per walker: [W].

    Several outputs: arg max against the class (one-hot or index column). One output: the
    output's side of the decision threshold against the label's, the threshold being 0 for
    logits and -1/+1 labels and 0.5 for probabilities and 0/1 labels.
    """
    if outputs.shape[-1] != 1:
        predicted = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        actual = (tf.cast(labels[:, 0], tf.int32) if labels.shape[-1] == 1
                  else tf.argmax(labels, axis=-1, output_type=tf.int32))
        return _mean(tf.cast(tf.equal(predicted, actual), outputs.dtype))
    label_middle = tf.where(tf.reduce_min(labels) < 0, 0.0, 0.5)
    if loss == "sigmoid_cross_entropy":
        threshold = 0.0
    elif loss == "log_loss":
        threshold = 0.5
    else:
        threshold = label_middle
    correct = tf.equal(outputs > tf.cast(threshold, outputs.dtype),
                       labels > tf.cast(label_middle, labels.dtype))
    return _mean(tf.cast(correct, outputs.dtype))
