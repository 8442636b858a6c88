"""The data batches of tati/data/pipeline.py: an epoch visits every point once, in an order
keyed by (seed, epoch) alone; the extra batches of SGHMC's estimator are keyed by (seed, step,
index) and leave the training batches alone; the full batch is the whole data."""

import numpy as np
import tensorflow as tf

from tati.data.pipeline import Batches


def dataset(size=23):
    features = np.arange(size, dtype=np.float32)[:, None] * np.array([[1.0, -1.0]], np.float32)
    return features, np.arange(size, dtype=np.float32)[:, None]


def epoch_labels(batches):
    return [batches.next()[1].numpy().ravel() for _ in range(batches.batches_per_epoch)]


def test_every_epoch_is_a_permutation_cut_into_batches():
    batches = Batches(*dataset(), batch_size=5, seed=4)
    assert batches.batches_per_epoch == 5 and not batches.full
    for epoch in range(3):
        assert bool(batches.starts_epoch())
        parts = epoch_labels(batches)
        assert [len(p) for p in parts] == [5, 5, 5, 5, 3]  # the last one smaller
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(23))
        assert batches.epoch(int(batches.position.numpy())) == epoch + 1


def test_the_order_depends_on_seed_and_epoch_only():
    first, again, other = (Batches(*dataset(), batch_size=5, seed=s) for s in (4, 4, 5))
    a, b = np.concatenate(epoch_labels(first)), np.concatenate(epoch_labels(again))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, np.concatenate(epoch_labels(other)))
    assert not np.array_equal(np.concatenate(epoch_labels(first)), a)  # a new epoch, a new order
    # A fresh object moved to the same position reads the same next batch (what a checkpoint restores).
    resumed = Batches(*dataset(), batch_size=5, seed=4)
    resumed.position.assign(first.position)
    np.testing.assert_array_equal(resumed.next()[1].numpy(), first.next()[1].numpy())


def test_features_stay_with_their_labels():
    batches = Batches(*dataset(), batch_size=7, seed=1)
    features, labels = batches.next()
    np.testing.assert_array_equal(features.numpy()[:, 0], labels.numpy()[:, 0])
    np.testing.assert_array_equal(features.numpy()[:, 1], -labels.numpy()[:, 0])


def test_extra_batches_are_keyed_and_leave_training_batches_alone():
    batches = Batches(*dataset(), batch_size=6, seed=2)
    before = int(batches.position.numpy())
    one = batches.extra_batch(tf.constant(10, tf.int64), 0)[1].numpy().ravel()
    assert len(one) == 6 and len(set(one)) == 6  # distinct points
    np.testing.assert_array_equal(one, batches.extra_batch(tf.constant(10, tf.int64), 0)[1].numpy().ravel())
    assert not np.array_equal(np.sort(one), np.sort(batches.extra_batch(tf.constant(10, tf.int64), 1)[1].numpy().ravel()))
    assert int(batches.position.numpy()) == before


def test_a_batch_as_large_as_the_data_is_the_full_batch():
    features, labels = dataset()
    batches = Batches(features, labels, batch_size=23)
    assert batches.full and batches.batches_per_epoch == 1
    np.testing.assert_array_equal(batches.next()[0].numpy(), features)
    assert batches.epoch(7) == 7


def test_covering_batches_cut_one_permutation_per_epoch_keyed_by_the_step():
    """The noise mass's and the measured width's batches: each run of batches_per_epoch of them
    holds every point once, the next run another order; keyed by (seed, step) and the index,
    leaving the training batches alone."""
    batches = Batches(*dataset(), batch_size=5, seed=2)
    before = int(batches.position.numpy())

    def labels(step, indices):
        return [batches.covering_batch(tf.constant(step, tf.int64), k)[1].numpy().ravel() for k in indices]

    first, second = labels(7, range(5)), labels(7, range(5, 10))
    for run in (first, second):
        assert [len(p) for p in run] == [5, 5, 5, 5, 3]
        np.testing.assert_array_equal(np.sort(np.concatenate(run)), np.arange(23))
    assert not np.array_equal(np.concatenate(first), np.concatenate(second))
    np.testing.assert_array_equal(np.concatenate(first), np.concatenate(labels(7, range(5))))
    assert not np.array_equal(np.concatenate(first), np.concatenate(labels(8, range(5))))
    assert int(batches.position.numpy()) == before
