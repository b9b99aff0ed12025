"""Is the fused trainer's scanned path (:mod:`repro.ml.fused`, ``scan=True``) the same computation as
``model.fit``, or does it only round differently? A study, not a test: run under Keras's JAX backend, it
trains the case of ``tests/jax_cases/fused_cases.py::test_scan_with_one_step_per_chunk_is_fit`` (the polishchuk
CNN on 250 MNIST digits, one epoch at batch 32) three ways, ``model.fit``, fused unscanned and fused
scanned, in float32 and in float64, and prints the largest gap in weights and in the epoch's metrics.

A real difference in the scanned path (a batch skipped or repeated, a wrong seed, optimizer state not
carried) shows in float64 as it does in float32; rounding shrinks from ~1e-7 relative in float32 to
~1e-16 in float64. Run it under other instruction sets with ``XLA_FLAGS=--xla_cpu_max_isa=AVX2`` (what an
AMD EPYC without AVX-512 gets) to see what another x86-64 CPU does to the float32 gaps.

    KERAS_BACKEND=jax python benchmarks/fused_rounding.py [--dtype float32 float64] [--opt adam momentum]
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
METRICS = ["loss", "accuracy", "test_loss", "test_accuracy"]


def _build(ds, opt: str):
    import keras

    from repro.ml import models, optim

    keras.utils.set_random_seed(0)
    model = models.polishchuk_cnn(ds.input_shape, ds.num_classes, [8, 16, 16], 16, 0.5)
    return optim.compile_classifier(model, opt, 1e-2, 0.9)


def _gaps(a, b, ha, hb) -> dict:
    import numpy as np

    w = max(float(np.max(np.abs(np.asarray(x, "float64") - np.asarray(y, "float64"))))
            for x, y in zip(a.get_weights(), b.get_weights()))
    m = {k: float(abs(ha[k].iloc[-1] - hb[k].iloc[-1])) for k in METRICS}
    return {"weights": w, **m}


def study(dtype: str, opt: str, epochs: int) -> dict:
    import jax
    import keras

    from repro.ml import data, fused, training

    jax.config.update("jax_enable_x64", dtype == "float64")
    keras.config.set_floatx(dtype)
    ds = data.load("mnist_subset_rgb32", 250, 100, seed=0)
    alone = _build(ds, opt)
    h_fit = training.fit(alone, ds, epochs=epochs, batch_size=32, seed=5, verbose=0)
    out = {}
    for scan in (False, True):
        model = _build(ds, opt)
        other = _build(ds, "momentum" if opt != "momentum" else "adam")  # a second optimizer slice, as in the test
        h = fused.fit_many([model, other], ds, epochs=epochs, batch_size=32, seed=5, steps_per_execution=1,
                           scan=scan, verbose=0)[0]
        out["scanned" if scan else "unscanned"] = _gaps(alone, model, h_fit, h)
    return out


def noise_floor(dtype: str, opt: str, epochs: int, trials: int) -> dict:
    """``model.fit`` against ``model.fit`` from initial weights moved by one ulp each (a random direction per
    element, ``trials`` draws): how far rounding-sized differences carry after ``epochs`` epochs. The
    largest gap over the draws, per quantity."""
    import jax
    import keras
    import numpy as np

    from repro.ml import data, training

    jax.config.update("jax_enable_x64", dtype == "float64")
    keras.config.set_floatx(dtype)
    ds = data.load("mnist_subset_rgb32", 250, 100, seed=0)
    ref = _build(ds, opt)
    h_ref = training.fit(ref, ds, epochs=epochs, batch_size=32, seed=5, verbose=0)
    worst: dict = {}
    for trial in range(trials):
        rng = np.random.default_rng(trial)
        model = _build(ds, opt)
        model.set_weights([np.nextafter(w, np.where(rng.random(w.shape) < 0.5, -np.inf, np.inf).astype(w.dtype))
                           for w in model.get_weights()])
        h = training.fit(model, ds, epochs=epochs, batch_size=32, seed=5, verbose=0)
        for k, v in _gaps(ref, model, h_ref, h).items():
            worst[k] = max(worst.get(k, 0.0), v)
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", nargs="+", default=["float32", "float64"])
    ap.add_argument("--opt", nargs="+", default=["adam", "momentum"])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--noise-floor", type=int, default=0, metavar="TRIALS",
                    help="instead: fit against fit from weights moved by one ulp, TRIALS draws")
    args = ap.parse_args()
    for dtype in args.dtype:
        for opt in args.opt:
            res = (noise_floor(dtype, opt, args.epochs, args.noise_floor) if args.noise_floor
                   else study(dtype, opt, args.epochs))
            print(json.dumps({"dtype": dtype, "opt": opt, "noise_floor_trials": args.noise_floor, "xla_flags": os.environ.get("XLA_FLAGS", ""), **res}),
                  flush=True)


if __name__ == "__main__":
    main()
