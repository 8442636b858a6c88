"""Built-in synthetic 2-D classification datasets with labels -1 and +1, as in TATi's dataset writer.

``two_clusters`` is two Gaussian blobs centred at (+2, +2) and (-2, -2); ``two_circles`` is a disc
(label +1) inside a ring (label -1); ``four_squares`` is the square [-r, r]^2 labelled by the sign
of x*y, so that opposite quadrants share a label (the XOR problem); ``two_spirals`` is two
interleaved Archimedean spirals, the second being the first rotated by pi. The radius r is 5,
``noise`` scales Gaussian noise added to the coordinates, and each class gets half of the points.
"""

import difflib

import numpy as np

from tati.errors import InputError

DATASETS = ("two_clusters", "two_circles", "four_squares", "two_spirals")
RADIUS = 5.0


def make_dataset(name, size=500, noise=0.1, seed=0, dtype=np.float32):
    """Return (X, Y): X of shape [size, 2], Y of shape [size, 1] holding -1.0 or +1.0.

    Half of the points are in each class (for odd ``size`` label +1 gets one more) and the rows
    are shuffled. The same arguments give bitwise identical arrays (``np.random.default_rng(seed)``).

    two_clusters: standard deviation 0.5 + 7*noise per coordinate, the original TATi formula. We
        kept it because the best linear rule sign(x1 + x2) still classifies Phi(2*sqrt(2)/1.2) =
        99.1% of the points at the default noise 0.1 (std 1.2), so the data stay learnable.
    two_circles: angle uniform; radius uniform in [0, 0.5 r] (label +1) or [0.7 r, r] (label -1).
    four_squares: points uniform in [-r, r]^2, label sign(x*y); noise is added after labelling,
        so with noise some points lie in the "wrong" quadrant.
    two_spirals: t uniform in [0, 1], angle 3.5 pi t, radius r t (1.75 turns); label -1 is the
        label +1 spiral rotated by pi.
    All but two_clusters add Gaussian noise of standard deviation noise * r to each coordinate.
    """
    if name not in DATASETS:
        close = difflib.get_close_matches(str(name), DATASETS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise InputError(f"dataset '{name}' is unknown; choose one of {', '.join(DATASETS)}{hint}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise InputError(f"dataset_size must be an integer of at least 2 (one point per class), got {size!r}")
    if not noise >= 0:  # also rejects NaN
        raise InputError(f"dataset_noise must be >= 0, got {noise!r}")

    rng = np.random.default_rng(seed)
    n_pos, n_neg = (size + 1) // 2, size // 2
    r = RADIUS
    if name == "two_clusters":
        std = 0.5 + 7 * noise
        positive = rng.normal(2.0, std, (n_pos, 2))
        negative = rng.normal(-2.0, std, (n_neg, 2))
    elif name == "two_circles":
        positive = _polar(rng.uniform(0.0, 0.5 * r, n_pos), rng.uniform(0.0, 2 * np.pi, n_pos))
        negative = _polar(rng.uniform(0.7 * r, r, n_neg), rng.uniform(0.0, 2 * np.pi, n_neg))
    elif name == "four_squares":
        # Draw each class inside its own quadrants to get an exact half/half split. Magnitudes in
        # (0, r] keep points off the axes, where x*y = 0 would mean label +1 for either class.
        positive = r * (1.0 - rng.random((n_pos, 2))) * rng.choice([-1.0, 1.0], (n_pos, 1))
        negative = r * (1.0 - rng.random((n_neg, 2))) * rng.choice([-1.0, 1.0], (n_neg, 1)) * [1.0, -1.0]
    else:  # two_spirals
        t_pos, t_neg = rng.random(n_pos), rng.random(n_neg)
        positive = _polar(r * t_pos, 3.5 * np.pi * t_pos)
        negative = -_polar(r * t_neg, 3.5 * np.pi * t_neg)  # rotation by pi
    X = np.concatenate([positive, negative])
    if name != "two_clusters":
        X = X + rng.normal(0.0, noise * r, X.shape)
    Y = np.concatenate([np.ones(n_pos), -np.ones(n_neg)])[:, None]
    # Shuffle so that any prefix of the rows (a train/test split, a first batch) holds both classes.
    order = rng.permutation(size)
    dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))  # also accept a tf.DType
    with np.errstate(over="ignore", invalid="ignore"):
        X = X[order].astype(dtype)
    if not np.all(np.isfinite(X)):  # a finite noise can still overflow the points
        raise InputError(f"dataset_noise {noise:g} is too large: the points overflow {dtype.name}")
    return X, Y[order].astype(dtype)


def _polar(radius, angle):
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
