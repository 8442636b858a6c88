"""A tati sampler inside Keras' `model.fit`, against Keras' own SGD step (issue #42, item 1).

The network and data of the issue: an MLP 64-256-256-10 (85,002 parameters) on scikit-learn's
digits, the 1,797 images' 64 features / 16, four copies each with N(0, 0.1^2) noise added (7,188
points), batches of 128, softmax cross-entropy. One model per case, the same initial weights,
compiled in graph mode (jit_compile=False, as Keras' "auto" picks on CPU; --xla: all with
jit_compile=True, where the samplers' numbers are not graph mode's):

  keras-sgd         keras.optimizers.SGD
  baoab             tati BAOAB
  baoab+recorder    tati BAOAB with tati.callbacks.TrajectoryRecorder(every_nth=100)
  sghmc-adam        tati SGHMC, gradient_noise_estimator="adam"

Each timed call is one `model.fit` of --epochs epochs; a callback takes the time of the epochs
after the first (so fit's per-call set-up and the first epoch's iterator are left out) and the
call gives its seconds per step (the first call's first epoch traces: no untimed call is needed).
The cases are called in turn --repeats times (interleaved: machine noise hits them alike) and the median is kept;
ratio = a case's time per step / Keras SGD's.

    python tools/benchmark_fit.py [--repeats 7] [--epochs 4] [--xla] [--threads N] [--quick]

--quick: 256 points, batches of 32, 2 epochs, 1 repeat (a smoke run of a few seconds).
"""

import argparse
import math
import statistics
import time

import keras
import numpy as np

import tati
from benchmark import set_threads

HIDDEN = (256, 256)
STEP = 1e-3  # SGD's learning rate and the samplers' step width
COPIES, NOISE = 4, 0.1  # digits x 4 with noise: 7,188 points
CASES = ("keras-sgd", "baoab", "baoab+recorder", "sghmc-adam")


def digits(quick):
    from sklearn.datasets import load_digits
    features, labels = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    features = np.concatenate([features / 16.0 + NOISE * rng.standard_normal(features.shape)
                               for _ in range(COPIES)]).astype(np.float32)
    labels = np.tile(labels, COPIES).astype(np.int32)
    return (features[:256], labels[:256]) if quick else (features, labels)


def network():
    keras.utils.set_random_seed(0)  # the same initial weights in every case
    return keras.Sequential([keras.Input((64,))] + [keras.layers.Dense(w, activation="relu") for w in HIDDEN]
                            + [keras.layers.Dense(10)])


def optimizer(case):
    if case == "keras-sgd":
        return keras.optimizers.SGD(learning_rate=STEP)
    if case.startswith("baoab"):
        return tati.samplers.BAOAB(step_width=STEP, seed=1)
    return tati.samplers.SGHMC(step_width=STEP, gradient_noise_estimator="adam", seed=1)


class EpochTimer(keras.callbacks.Callback):
    """Seconds of the epochs after the first of one fit call."""

    def on_train_begin(self, logs=None):
        self.seconds = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if epoch > 0:
            self.seconds += time.perf_counter() - self._start


def fitting(case, data, batch, epochs, xla=False):
    """A callable: one model.fit of `epochs` epochs, returning seconds per step after the first."""
    model = network()
    model.compile(optimizer=optimizer(case), jit_compile=xla,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    timer = EpochTimer()
    callbacks = [timer] + ([tati.callbacks.TrajectoryRecorder(every_nth=100)] if case.endswith("recorder") else [])
    steps = (epochs - 1) * math.ceil(len(data[0]) / batch)

    def run():
        model.fit(*data, batch_size=batch, epochs=epochs, shuffle=False, verbose=0, callbacks=callbacks)
        return timer.seconds / steps
    return run, model.count_params()


def interleaved_medians(runs, repeats):
    """No untimed call first: each call's first epoch, which traces, is not timed."""
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name].append(run())
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, help="timed fit calls of each case (default 7; --quick 1)")
    parser.add_argument("--epochs", type=int, help="epochs per fit call, the first untimed (default 4; --quick 2)")
    parser.add_argument("--xla", action="store_true", help="compile every case with jit_compile=True")
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 256 points, few steps, one repeat")
    args = parser.parse_args(argv)
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"--repeats takes a positive integer, not {args.repeats}")
    if args.epochs is not None and args.epochs < 2:
        parser.error(f"--epochs takes an integer >= 2 (the first is not timed), not {args.epochs}")
    repeats = args.repeats or (1 if args.quick else 7)
    epochs = args.epochs or (2 if args.quick else 4)
    batch = 32 if args.quick else 128
    set_threads(args.threads)
    data = digits(args.quick)
    runs, parameters = {}, None
    for case in CASES:
        runs[case], parameters = fitting(case, data, batch, epochs, args.xla)
    median = interleaved_medians(runs, repeats)
    print(f"64-{'-'.join(map(str, HIDDEN))}-10 ({parameters} parameters), {len(data[0])} points, batch {batch}, "
          f"{'XLA' if args.xla else 'graph mode'}, median of {repeats} interleaved fit calls, epochs 2-{epochs} timed")
    print("| case | us per step | ratio to Keras SGD |")
    print("|---|---|---|")
    for case in CASES:
        print(f"| {case} | {1e6 * median[case]:.0f} | {median[case] / median['keras-sgd']:.2f} |", flush=True)
    return median


if __name__ == "__main__":
    main()
