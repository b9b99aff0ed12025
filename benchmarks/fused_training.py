"""The optimizer comparison's two trainers on this machine: one model.fit after another vs all at once.

Same CNN (polishchuk2019's, 73,418 parameters), same optimizers and seeds, data, batch size and epochs.
``fit``: ``repro.ml.training.fit`` per (optimizer, seed), one after another (what ``trainer: fit`` does).
``fused``: ``repro.ml.fused.fit_many`` over all of them at once (``trainer: fused``, JAX only): weights
stacked, one stacked forward/backward (``repro.ml.stacked``; ``fused_vmap``: the whole model vmapped),
``steps_per_execution`` minibatches per compiled step, on an accelerator the epoch's chunks in one
``lax.scan`` dispatch, data on the device. The first epoch of each (tracing, XLA compilation) is timed apart
and left out of the images/s. Prints and writes (benchmarks/results/fused_training-jax-<device>.json)
images/s per model and in total, compiled dispatches per epoch, and the ratio fused/fit. A benchmark, not a
test: timings are never asserted.

    KERAS_BACKEND=jax python benchmarks/fused_training.py [--n-train 4096] [--epochs 3] [--steps 8] [--seeds 2]
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
    ap.add_argument("--seeds", type=int, default=2, help="each optimizer at seeds 0..N-1 (the gpu profile: 2)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()

    import keras

    from repro.core import provenance, results
    from repro.core.params import resolve
    from repro.experiments.optimizers import measure
    from repro.ml import data, fused, training

    if training.backend() != "jax":
        raise SystemExit("fused_training: the fused trainer compiles with JAX; run with KERAS_BACKEND=jax")
    jobs = [(o, seed) for seed in range(args.seeds) for o in args.optimizers.split(",")]
    p = resolve("optimizers", "rehearse", {"batch_size": args.batch_size})
    ds = data.load(args.dataset, args.n_train, 1000, seed=0)
    build = lambda o, seed: measure.build_model(p, ds.input_shape, ds.num_classes, o, 1e-3, seed)  # noqa: E731
    n, timed, b = ds.info["n_train"], args.epochs - 1, args.batch_size

    t0 = time.perf_counter()
    fit_hists = [training.fit(build(o, s), ds, epochs=args.epochs, batch_size=b, seed=s, verbose=0) for o, s in jobs]
    fit_wall = time.perf_counter() - t0
    def run_fused(stack):
        t0 = time.perf_counter()
        hists = fused.fit_many([build(o, s) for o, s in jobs], ds, epochs=args.epochs, batch_size=b,
                               seed=[s for _, s in jobs], steps_per_execution=args.steps, verbose=0, stack=stack)
        return hists, time.perf_counter() - t0

    fused_hists, fused_wall = run_fused(None)  # stacked layers (repro.ml.stacked), the default
    vmap_hists, vmap_wall = run_fused(False)  # the whole model vmapped (grouped convolutions)
    total_vmap = n * timed * len(jobs) / float(vmap_hists[0]["epoch_time_s"].iloc[1:].sum())

    per_model = {f"{o}/{s}": {"fit": n * timed / float(hf["epoch_time_s"].iloc[1:].sum()),
                              "fused": n * timed / float(hu["epoch_time_s"].iloc[1:].sum())}
                 for (o, s), hf, hu in zip(jobs, fit_hists, fused_hists)}
    total_fit = n * timed * len(jobs) / sum(float(h["epoch_time_s"].iloc[1:].sum()) for h in fit_hists)
    total_fused = n * timed * len(jobs) / float(fused_hists[0]["epoch_time_s"].iloc[1:].sum())
    calls = {"fit": len(jobs) * -(-n // b),
             "fused": fused.dispatches_per_epoch(n, b, args.steps, fused.on_accelerator())}
    for k, v in per_model.items():
        print(f"{k:>11}: fit {v['fit']:,.0f} img/s, fused {v['fused']:,.0f} img/s (each model's own progress)")
    print(f"all {len(jobs)} models: fit {total_fit:,.0f} img/s, fused {total_fused:,.0f} img/s, ratio fused/fit "
          f"{total_fused / total_fit:.2f} (vmapped: {total_vmap:,.0f} img/s, {total_vmap / total_fit:.2f}); "
          f"dispatches per epoch fit {calls['fit']}, fused {calls['fused']}; first "
          f"epoch (compilation) fit {sum(h['epoch_time_s'].iloc[0] for h in fit_hists):.1f} s, fused "
          f"{fused_hists[0]['epoch_time_s'].iloc[0]:.1f} s; wall fit {fit_wall:.0f} s, fused {fused_wall:.0f} s")
    device = training.device_summary()
    out = Path(args.out) / f"fused_training-{device['backend']}-{device['device'].lower()}.json"
    results.atomic_write_json(out, {
        "args": vars(args), "backend": device, "dataset": ds.info, "images_per_second_per_model": per_model,
        "dispatches_per_epoch": calls,
        "images_per_second_total": {"fit": total_fit, "fused": total_fused, "fused_vmap": total_vmap},
        "ratio_fused_over_fit": total_fused / total_fit, "ratio_fused_vmap_over_fit": total_vmap / total_fit,
        "first_epoch_s": {"fit": [float(h["epoch_time_s"].iloc[0]) for h in fit_hists],
                          "fused": float(fused_hists[0]["epoch_time_s"].iloc[0])},
        "wall_s": {"fit": fit_wall, "fused": fused_wall, "fused_vmap": vmap_wall}, "keras": keras.__version__,
        "hardware": provenance.hardware(), "packages": provenance.package_versions(),
    })
    print(f"written: {out}")


if __name__ == "__main__":
    main()
