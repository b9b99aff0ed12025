"""The GPU campaign's first look at the optimizer comparison's program (``tools/gpu_campaign.sh``'s probe step):
``python -m repro.experiments.optimizers.probe OUT.json [N_TRAIN N_TEST [PROFILE]]``. It lives with the experiment
whose profile it builds (the fused trainer in :mod:`repro.ml.fused` stays below the experiments)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from repro.core.params import resolve
from repro.experiments.optimizers.paramtypes import OptimizersParams
from repro.ml import stacked, training
from repro.ml.data import Dataset
from repro.ml.fused import fit_many, on_accelerator


def probe(out: Path, n_train: int | None = None, n_test: int | None = None, profile: str = "gpu-h100",
          epochs: int = 2) -> dict:
    """The GPU campaign's first look: the JAX devices (written to ``out`` at once), then the optimizer
    comparison's fused program as its ``profile`` builds it (the CNN, every optimizer and seed stacked,
    its batch size and ``steps_per_execution``), on random data of that profile's sizes (or ``n_train``,
    ``n_test``): compile time (first epoch minus a timed one) and images/s over all models. Writes ``out``
    (JSON) again, prints one line. The program is the profile's own, so with a persistent compilation
    cache (``JAX_COMPILATION_CACHE_DIR``) the run after it loads the compiled program instead of compiling
    it again."""
    import jax
    import keras

    from repro.ml import models as _models
    from repro.ml import optim

    Path(out).write_text(json.dumps({"jax": jax.__version__, "backend": jax.default_backend(),
                                     "devices": [str(d) for d in jax.devices()]}, indent=1))
    p: OptimizersParams = resolve("optimizers", profile)  # a profile as this checkout defines it
    precision = training.set_matmul_precision(p.matmul_precision or "float32", training.device_summary())
    n_train, n_test = n_train or p.train_samples or 50_000, n_test or p.test_samples or 10_000
    rng = np.random.default_rng(0)
    data = Dataset(rng.random((n_train, 32, 32, 3), dtype="float32"), rng.integers(0, 10, n_train),
                   rng.random((n_test, 32, 32, 3), dtype="float32"), rng.integers(0, 10, n_test),
                   {"name": "random", "classes": 10, "n_train": n_train, "n_test": n_test})
    jobs = [(opt, seed) for seed in p.seeds for opt in p.optimizers]  # the order measure.train_all uses
    built = []
    for opt, seed in jobs:
        keras.utils.set_random_seed(seed)
        model = _models.polishchuk_cnn(data.input_shape, 10, p.filters, p.dense_units, p.dropout)
        built.append(optim.compile_classifier(model, opt, p.learning_rate, p.momentum))
    t0 = time.perf_counter()
    hist = fit_many(built, data, epochs=epochs, batch_size=p.batch_size, seed=[s for _, s in jobs],
                    steps_per_execution=p.steps_per_execution, verbose=0)[0]
    timed = float(hist["epoch_time_s"].iloc[1:].mean())
    report = {"jax": jax.__version__, "backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()],
              "device_kind": jax.devices()[0].device_kind, "profile": profile, "models": len(built),
              "n_train": n_train, "batch_size": p.batch_size, "steps_per_execution": p.steps_per_execution,
              "scan": on_accelerator(), "stacked": stacked.stackable(built[0]) == "", "matmul_precision": precision,
              "compile_s": float(hist["epoch_time_s"].iloc[0]) - timed, "epoch_s": timed,
              "images_per_s_all_models": len(built) * n_train / timed, "wall_s": time.perf_counter() - t0}
    Path(out).write_text(json.dumps(report, indent=1))
    print(f"probe: {report['device_kind']} ({report['backend']}), {len(built)} models fused "
          f"({'stacked' if report['stacked'] else 'vmapped'}, {precision['effective']}): compile "
          f"{report['compile_s']:.1f} s, epoch {timed:.2f} s, {report['images_per_s_all_models']:,.0f} img/s "
          f"over all models", flush=True)
    return report


if __name__ == "__main__":  # python -m repro.experiments.optimizers.probe OUT.json [N_TRAIN N_TEST [PROFILE]]
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m repro.experiments.optimizers.probe OUT.json [N_TRAIN N_TEST [PROFILE]]")
    sizes: list[int | None] = [*(int(a) for a in sys.argv[2:4]), None, None]
    named: dict[str, Any] = {"profile": sys.argv[4]} if len(sys.argv) > 4 else {}
    probe(Path(sys.argv[1]), sizes[0], sizes[1], **named)
