"""Does repro.ml.training.fit cost anything over a bare model.fit? Prints images/s of both and the ratio.

Same network (the cloudcost2017 MNIST CNN), same data, same epochs, same batch size, same
per-epoch test evaluation; the two are interleaved (bare, helper, bare, helper, ...) after a
warm-up so that machine noise hits both alike. Target: ratio >= 0.97. A benchmark, not a test:
timings are printed and written to benchmarks/results/, never asserted.

    python benchmarks/training_overhead.py [--dataset fashion_mnist] [--n-train 20000] [--epochs 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="fashion_mnist")
    ap.add_argument("--n-train", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()

    import keras

    from repro.core import provenance, results
    from repro.experiments.mnist_cnn import experiment as mnist_cnn
    from repro.ml import data, training

    ds = data.load(args.dataset, n_train=args.n_train, n_test=2000)
    n = ds.info["n_train"]

    def fresh():
        keras.utils.set_random_seed(0)
        return mnist_cnn.build_model(ds.input_shape, ds.num_classes, 1e-3)

    def bare() -> float:
        model = fresh()
        # the same input as the helper's on this backend (tf.data under TensorFlow, NumPy arrays otherwise)
        train = training.epoch_input(ds.x_train, ds.y_train, ds.num_classes, args.batch_size, shuffle_seed=0)
        val = training.epoch_input(ds.x_test, ds.y_test, ds.num_classes, args.batch_size)
        val = val["x"] if "y" not in val else (val["x"], val["y"])
        t0 = time.perf_counter()
        model.fit(**train, validation_data=val, epochs=args.epochs, verbose=0, shuffle=False)
        return n * args.epochs / (time.perf_counter() - t0)

    def helper() -> float:
        model = fresh()
        t0 = time.perf_counter()
        training.fit(model, ds, epochs=args.epochs, batch_size=args.batch_size, seed=0, verbose=0)
        return n * args.epochs / (time.perf_counter() - t0)

    bare(), helper()  # warm-up: tracing, oneDNN kernels, caches
    runs = {"bare": [], "helper": []}
    for i in range(args.repeats):
        runs["bare"].append(bare())
        runs["helper"].append(helper())
        print(f"repeat {i + 1}/{args.repeats}: bare {runs['bare'][-1]:.0f} img/s, helper {runs['helper'][-1]:.0f} img/s", flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    ratio = med["helper"] / med["bare"]
    print(f"median images/s: bare model.fit {med['bare']:.0f}, repro.ml.training.fit {med['helper']:.0f}")
    print(f"ratio helper/bare = {ratio:.3f} (target >= 0.97)")
    backend = training.backend()
    print(f"backend: {backend}")
    gpu = "-gpu" if training.device_summary()["device"] == "GPU" else ""
    out = Path(args.out) / ("training_overhead.json" if backend == "tensorflow" and not gpu
                            else f"training_overhead-{backend}{gpu}.json")
    results.atomic_write_json(out, {
        "args": vars(args), "backend": training.device_summary(), "dataset": ds.info, "images_per_second": runs,
        "median": med, "ratio": ratio,
        "hardware": provenance.hardware(), "packages": provenance.package_versions(),
    })
    print(f"written: {out}")


if __name__ == "__main__":
    main()
