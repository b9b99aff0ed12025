"""The optimizer comparison's two trainers on this machine: one model.fit after another vs all at once.

Same CNN (polishchuk2019's, 73,418 parameters), same optimizers and seeds, data, batch size and epochs.
``fit``: ``repro.ml.training.fit`` per (optimizer, seed), one after another (what ``trainer: fit`` does, and
what a user without this package would run), in ``--fit-precision`` (float32, the paper's, by default).
``fused``: ``repro.ml.fused.fit_many`` over all of them at once (``trainer: fused``, JAX only): weights
stacked, one stacked forward/backward (``stacked``: ``repro.ml.stacked``; ``vmap``: the whole model
vmapped), ``steps_per_execution`` minibatches per compiled step, on an accelerator the epoch's chunks in one
``lax.scan`` dispatch, data on the device; once per ``--variants`` x ``--precisions`` (``float32``: JAX's
``highest``; ``tf32``: TF32 products on an Ampere or later GPU). The first epoch of each (tracing, XLA
compilation) is timed apart and left out of the images/s. Prints and writes
(benchmarks/results/fused_training-jax-<device>.json) images/s per model and in total, compiled dispatches per
epoch, and each fused program's ratio to fit. A benchmark, not a test: timings are never asserted.

    KERAS_BACKEND=jax python benchmarks/fused_training.py [--n-train 4096] [--epochs 3] [--steps 8] [--seeds 2]
        [--variants stacked,vmap] [--precisions float32,tf32] [--fused-epochs 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
OPTIMIZERS = ["sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "nadam"]
log = logging.getLogger("fused_training")


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="mnist_subset_rgb32", help="a CIFAR-10 stand-in at 32x32x3")
    ap.add_argument("--n-train", type=int, default=4096)
    ap.add_argument("--epochs", type=int, default=3, help="of each fit; the first is timed apart (compilation)")
    ap.add_argument("--fused-epochs", type=int, default=None, help="of each fused program (default: --epochs)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8, help="steps_per_execution of the fused trainer")
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    ap.add_argument("--seeds", type=int, default=2, help="each optimizer at seeds 0..N-1 (the gpu profile: 2)")
    ap.add_argument("--variants", default="stacked,vmap", help="fused programs: stacked layers, vmapped model")
    ap.add_argument("--precisions", default="float32", help="of the fused programs: float32, tf32")
    ap.add_argument("--fit-precision", default="float32", choices=["float32", "tf32"])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    for v in args.variants.split(","):
        if v not in ("stacked", "vmap"):
            ap.error(f"--variants: '{v}' is not stacked or vmap")
    for p in args.precisions.split(","):
        if p not in ("float32", "tf32"):
            ap.error(f"--precisions: '{p}' is not float32 or tf32")
    return args


def _per_second(n: int, hists: list) -> float:
    """Images/s of ``hists`` (one per model, trained one after another) after each one's first epoch."""
    return n * (len(hists[0]) - 1) * len(hists) / sum(float(h["epoch_time_s"].iloc[1:].sum()) for h in hists)


def _write(out: Path, report: dict, total: dict, per_model: dict, first: dict, wall: dict) -> None:
    from repro.core import results

    results.atomic_write_json(out, {**report, "images_per_second_total": total,
                                    "ratio_over_fit": {k: v / total["fit"] for k, v in total.items() if k != "fit"},
                                    "images_per_second_per_model": per_model, "first_epoch_s": first, "wall_s": wall})


def main() -> None:
    args = _args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    import keras

    from repro.core import provenance
    from repro.core.params import resolve
    from repro.experiments.optimizers import measure
    from repro.ml import data, fused, training

    if training.backend() != "jax":
        raise SystemExit("fused_training: the fused trainer compiles with JAX; run with KERAS_BACKEND=jax")
    jobs = [(o, seed) for seed in range(args.seeds) for o in args.optimizers.split(",")]
    p = resolve("optimizers", "rehearse", {"batch_size": args.batch_size})
    ds = data.load(args.dataset, args.n_train, 1000, seed=0)
    build = lambda o, seed: measure.build_model(p, ds.input_shape, ds.num_classes, o, 1e-3, seed)  # noqa: E731
    n, b, device = ds.info["n_train"], args.batch_size, training.device_summary()
    fused_epochs = args.fused_epochs or args.epochs

    out = Path(args.out) / f"fused_training-{device['backend']}-{device['device'].lower()}.json"
    calls = {"fit": len(jobs) * -(-n // b),
             "fused": fused.dispatches_per_epoch(n, b, args.steps, fused.on_accelerator())}
    precision = {"fit": training.set_matmul_precision(args.fit_precision, device)}
    report = {"args": vars(args), "backend": device, "dataset": ds.info, "matmul_precision": precision,
              "dispatches_per_epoch": calls, "keras": keras.__version__, "hardware": provenance.hardware(),
              "packages": provenance.package_versions()}
    t0 = time.perf_counter()
    fit_hists = []
    for i, (o, s) in enumerate(jobs):
        fit_hists.append(training.fit(build(o, s), ds, epochs=args.epochs, batch_size=b, seed=s, verbose=0))
        done = time.perf_counter() - t0
        log.info("fit %d/%d (%s, seed %d) done, %.0f s; ETA %.0f s", i + 1, len(jobs), o, s, done,
                 done / (i + 1) * (len(jobs) - i - 1))
    wall = {"fit": time.perf_counter() - t0}
    total = {"fit": _per_second(n, fit_hists)}
    first = {"fit": [float(h["epoch_time_s"].iloc[0]) for h in fit_hists]}
    per_model = {f"{o}/{s}": {"fit": n * (args.epochs - 1) / float(h["epoch_time_s"].iloc[1:].sum())}
                 for (o, s), h in zip(jobs, fit_hists)}
    _write(out, report, total, per_model, first, wall)  # each program's figures as soon as it has them
    for prec in args.precisions.split(","):
        for variant in args.variants.split(","):
            key = f"{variant}/{prec}"
            precision[key] = training.set_matmul_precision(prec, device)
            t0 = time.perf_counter()
            hists = fused.fit_many([build(o, s) for o, s in jobs], ds, epochs=fused_epochs, batch_size=b,
                                   seed=[s for _, s in jobs], steps_per_execution=args.steps, verbose=0,
                                   stack=None if variant == "stacked" else False)
            wall[key] = time.perf_counter() - t0
            total[key] = _per_second(n, hists[:1]) * len(jobs)  # one program: its epochs are every model's
            first[key] = float(hists[0]["epoch_time_s"].iloc[0])
            for (o, s), h in zip(jobs, hists):
                per_model[f"{o}/{s}"][key] = n * (fused_epochs - 1) / float(h["epoch_time_s"].iloc[1:].sum())
            log.info("%s: %.0f img/s over the %d models, %.2fx fit; first epoch %.1f s; wall %.0f s", key,
                     total[key], len(jobs), total[key] / total["fit"], first[key], wall[key])
            _write(out, report, total, per_model, first, wall)
    print(f"all {len(jobs)} models: " + ", ".join(f"{k} {v:,.0f} img/s ({v / total['fit']:.2f}x fit)"
                                                  for k, v in total.items())
          + f"; dispatches per epoch fit {calls['fit']}, fused {calls['fused']}; first epoch (compilation) fit "
          f"{sum(first['fit']):.1f} s in all; wall " + ", ".join(f"{k} {v:.0f} s" for k, v in wall.items()))
    print(f"written: {out}")


if __name__ == "__main__":
    main()
