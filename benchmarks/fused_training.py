"""The optimizer comparison's two trainers on this machine: one model.fit after another vs all at once.

Same CNN (polishchuk2019's, 73,418 parameters), same optimizers, data, batch size and epochs. ``fit``:
``repro.ml.training.fit`` per optimizer, one after another (what ``trainer: fit`` does). ``fused``:
``repro.ml.fused.fit_many`` over all of them, ``steps_per_execution`` minibatches per compiled call, data
on the device (``trainer: fused``, JAX only). The first epoch of each (tracing, XLA compilation) is timed
apart and left out of the images/s. Prints and writes (benchmarks/results/fused_training-jax-<device>.json)
images/s per optimizer (each optimizer's own progress: images of its epochs / wall time) and in total,
and the ratio fused/fit. A benchmark, not a test: timings are never asserted.

    KERAS_BACKEND=jax python benchmarks/fused_training.py [--n-train 8192] [--epochs 3] [--steps 8]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
OPTIMIZERS = ["sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "nadam"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="mnist_subset_rgb32", help="a CIFAR-10 stand-in at 32x32x3")
    ap.add_argument("--n-train", type=int, default=4096)
    ap.add_argument("--epochs", type=int, default=3, help="the first is timed apart (compilation)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8, help="steps_per_execution of the fused trainer")
    ap.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()

    import keras

    from repro.core import provenance, results
    from repro.core.params import resolve
    from repro.experiments.optimizers import measure
    from repro.ml import data, fused, training

    if training.backend() != "jax":
        raise SystemExit("fused_training: the fused trainer compiles with JAX; run with KERAS_BACKEND=jax")
    opts = args.optimizers.split(",")
    p = resolve("optimizers", "rehearse", {"batch_size": args.batch_size})
    ds = data.load(args.dataset, args.n_train, 1000, seed=0)
    build = lambda o: measure.build_model(p, ds.input_shape, ds.num_classes, o, 1e-3, 0)  # noqa: E731
    n, timed = ds.info["n_train"], args.epochs - 1

    t0 = time.perf_counter()
    fit_hists = [training.fit(build(o), ds, epochs=args.epochs, batch_size=args.batch_size, verbose=0) for o in opts]
    fit_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    fused_hists = fused.fit_many([build(o) for o in opts], ds, epochs=args.epochs, batch_size=args.batch_size,
                                 steps_per_execution=args.steps, verbose=0)
    fused_wall = time.perf_counter() - t0

    per_opt = {}
    for o, hf, hu in zip(opts, fit_hists, fused_hists):
        per_opt[o] = {"fit": n * timed / float(hf["epoch_time_s"].iloc[1:].sum()),
                      "fused": n * timed / float(hu["epoch_time_s"].iloc[1:].sum())}
    total_fit = n * timed * len(opts) / sum(float(h["epoch_time_s"].iloc[1:].sum()) for h in fit_hists)
    total_fused = n * timed * len(opts) / float(fused_hists[0]["epoch_time_s"].iloc[1:].sum())
    for o, v in per_opt.items():
        print(f"{o:>9}: fit {v['fit']:,.0f} img/s, fused {v['fused']:,.0f} img/s (each optimizer's own progress)")
    print(f"all {len(opts)}: fit {total_fit:,.0f} img/s, fused {total_fused:,.0f} img/s, ratio fused/fit "
          f"{total_fused / total_fit:.2f}; first epoch (compilation) fit {sum(h['epoch_time_s'].iloc[0] for h in fit_hists):.1f} s, "
          f"fused {fused_hists[0]['epoch_time_s'].iloc[0]:.1f} s; wall fit {fit_wall:.0f} s, fused {fused_wall:.0f} s")
    device = training.device_summary()
    out = Path(args.out) / f"fused_training-{device['backend']}-{device['device'].lower()}.json"
    results.atomic_write_json(out, {
        "args": vars(args), "backend": device, "dataset": ds.info, "images_per_second_per_optimizer": per_opt,
        "images_per_second_total": {"fit": total_fit, "fused": total_fused}, "ratio_fused_over_fit": total_fused / total_fit,
        "first_epoch_s": {"fit": [float(h["epoch_time_s"].iloc[0]) for h in fit_hists],
                          "fused": float(fused_hists[0]["epoch_time_s"].iloc[0])},
        "wall_s": {"fit": fit_wall, "fused": fused_wall}, "keras": keras.__version__,
        "hardware": provenance.hardware(), "packages": provenance.package_versions(),
    })
    print(f"written: {out}")


if __name__ == "__main__":
    main()
