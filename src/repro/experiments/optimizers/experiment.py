"""`polishchuk2019` part A: seven Keras optimizers on one CIFAR-10 CNN, and whether the verdict survives tuning.

Two variants:

* ``shared`` (the paper's protocol): one learning rate, momentum and batch size for all
  seven optimizers, trained on the full training set and evaluated on the test set;
* ``tuned`` (DeepOBS-style): per optimizer, the learning rate is chosen on a log grid by
  accuracy on a validation split carved from the training set (never the test set), then
  the best one is retrained on the full training set with every seed.

Every training run is checkpointed after each epoch under
``<results>/<profile>/optimizers/.checkpoints/<parameter hash>/``; running the same
parameters again (``resume: true``) skips finished runs and continues an unfinished one from
its last completed epoch, producing the same rows as an uninterrupted run. The checkpoints
are deleted once every training run has finished. Training is deterministic for a given seed, so a tuned
learning rate equal to the shared one reuses the shared run instead of repeating it.

Modules: ``measure`` (training, summary table), ``verdicts`` (one measurement per claim of
``claims.yaml``, the tables that show verdicts), ``plots`` (figures, glued numbers).
"""

from __future__ import annotations

import shutil

import pandas as pd

from repro.core import claims, harness, preflight
from repro.experiments.optimizers.paramtypes import OptimizersParams
from repro.ml import data as _data
from repro.ml import training

from .common import LABELS, NAME, OPTIMIZERS
from .measure import (
    build_model,
    check_trainer,
    checkpoint_root,
    summarize,
    train_all,
    tune,
    validation_split,
)
from .plots import (
    glue_numbers,
    plot_curves,
    plot_overlay,
    plot_sensitivity,
    summary_table,
)
from .verdicts import comparable, compare_with_paper, conclusions, measurements, with_final_loss

__all__ = ["NAME", "OPTIMIZERS", "LABELS", "EXPERIMENT", "run", "build_model", "checkpoint_root", "summarize",
           "tune", "validation_split", "compare_with_paper", "comparable", "conclusions", "measurements",
           "glue_numbers", "plot_curves", "plot_overlay", "plot_sensitivity", "summary_table"]


def _device(p: OptimizersParams) -> dict:
    """The device, the matmul precision and the mixed-precision policy (only on a GPU) set on it."""
    device = training.device_summary()
    # p.matmul_precision is None only in a stored run older than the parameter
    device["matmul_precision"] = training.set_matmul_precision(p.matmul_precision or "float32", device)
    device["matmul_precision_now"] = training.matmul_precision_now(device["backend"], device["gpus_visible"])
    if p.mixed_precision:
        import keras

        if device["device"] == "GPU":
            keras.mixed_precision.set_global_policy("mixed_float16")
            device["mixed_precision"] = "mixed_float16"
        else:
            device["mixed_precision"] = "requested, not used (no GPU)"
    return device


class Optimizers(harness.Experiment[OptimizersParams, _data.Dataset]):
    """The experiment, for the harness (:class:`repro.core.harness.Experiment`)."""

    name = NAME

    def prepare(self, p: OptimizersParams) -> _data.Dataset:
        check_trainer(p)
        return _data.load(p.dataset, p.train_samples or None, p.test_samples or None, seed=0)

    def measure(self, run, p: OptimizersParams, ds: _data.Dataset) -> harness.Output:
        """Train every optimizer (both variants, every seed); see the module docstring."""
        run.add_dataset(ds.info)
        run.note("device", _device(p))
        ckpt = checkpoint_root(run.dir, p)
        if not p.resume and ckpt.exists():
            shutil.rmtree(ckpt)
        run.note("checkpoints", str(ckpt))
        run.note("trainer", {"trainer": p.trainer, "steps_per_execution": p.steps_per_execution,
                             "what": "every optimizer and seed of a variant stacked in one compiled JAX program "
                                     "(one stacked forward/backward, each optimizer on its slice), data on the device"
                             if p.trainer == "fused" else "one Keras model.fit after another"})
        tables = {}
        plan = [("shared", {o: p.learning_rate for o in p.optimizers})]
        if p.tuned:
            tables["tuning"] = tune(p, ds, ckpt)
            t = tables["tuning"]
            plan.append(("tuned", t[t["best"]].set_index("optimizer")["learning_rate"].to_dict()))
        history = train_all(p, ds, plan, ckpt)
        summary = summarize(history, p.target_accuracy)
        ok, why = comparable(p, ds.info, run.record.get("device"))
        tables = {"history": history, "summary": summary, **tables}
        # every training run has finished: its results, not its checkpoints, are kept once the judge has run
        return harness.Output(tables, {"comparable": ok, "not_comparable_because": why}, discard=[ckpt])

    def preflight(self, p: OptimizersParams) -> preflight.Own:
        """The dataset (verified?), the time (every optimizer, seed and tuning trial at the probe's speed) and the
        claims a finished run decides (its protocol gate, forecast from the parameters and the data's check)."""
        from repro.ml import probe as _probe

        from .measure import build_model

        n = p.train_samples or _data.FULL_TRAIN.get(p.dataset, 0)
        images = n * p.epochs * len(p.optimizers) * len(p.seeds)
        if p.tuned:
            images += int(n * (1 - p.validation_fraction)) * p.tune_epochs * len(p.lr_grid) * len(p.optimizers)
        ok, why = comparable(p, _data.expected_info(p.dataset, n))
        # the probe times model.fit: the fused trainer's stacked program is another speed (the profile states it)
        estimate = None if p.trainer == "fused" else _probe.estimate(
            images, lambda: build_model(p, (32, 32, 3), 10, "adam", p.learning_rate, 0), (32, 32, 3), 10, p.batch_size)
        return preflight.Own([_data.preflight_item(p.dataset), preflight.forecast(NAME, ok, why, len(p.seeds))],
                             estimate)

    def judge(self, result: harness.Result[OptimizersParams]) -> dict[str, claims.Measured]:
        """From the summary table; a stored run's summary without the final test loss gets it from its history."""
        return measurements(with_final_loss(result.tables["summary"], result.tables.get("history")), result.params,
                            result.provenance["datasets"][0], result.provenance.get("device"))

    def verdict_views(self, result: harness.Result[OptimizersParams], measured: dict,
                      ledger: pd.DataFrame) -> harness.Output:
        """``paper_vs_ours`` (the ledger's verdict per optimizer) and the conclusions tested on our data,
        derived with the claims' bands (rejudge rewrites them)."""
        summary = with_final_loss(result.tables["summary"], result.tables.get("history"))
        return harness.Output({"paper_vs_ours": compare_with_paper(summary, result.params,
                                                                   result.provenance["datasets"][0],
                                                                   result.provenance.get("device")),
                               "claims": conclusions(summary)})


EXPERIMENT = Optimizers()
run = harness.entry(EXPERIMENT)
