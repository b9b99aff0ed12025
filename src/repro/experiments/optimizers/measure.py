"""Training: the model, the validation split, the learning-rate search, every (variant, optimizer, seed) run,
and the per-optimizer summary table."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from repro.core.params import ParameterError
from repro.experiments.optimizers.paramtypes import OptimizersParams
from repro.ml import data as _data
from repro.ml import models, optim, training


def build_model(p: OptimizersParams, input_shape, num_classes: int, optimizer: str, learning_rate: float, seed: int):
    import keras

    keras.utils.set_random_seed(seed)  # the same initial weights for every optimizer at a given seed
    model = models.polishchuk_cnn(input_shape, num_classes, p.filters, p.dense_units, p.dropout)
    return optim.compile_classifier(model, optimizer, learning_rate, p.momentum)


def checkpoint_root(run_dir: Path, p: OptimizersParams) -> Path:
    """Where this parameter set's per-epoch checkpoints live (shared by reruns of the same parameters)."""
    key = p.model_dump(exclude={"resume"})
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(run_dir).parent / ".checkpoints" / digest


def validation_split(ds: _data.Dataset, fraction: float, seed: int) -> _data.Dataset:
    """Carve a validation set out of the training set; it takes the place of the test set."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(ds.y_train))
    n_val = max(1, int(round(fraction * len(idx))))
    val, train = idx[:n_val], idx[n_val:]
    info = {**ds.info, "n_train": int(len(train)), "n_test": int(len(val)),
            "split": f"validation ({fraction:.0%} of train)"}
    return _data.Dataset(ds.x_train[train], ds.y_train[train], ds.x_train[val], ds.y_train[val], info)


def check_trainer(p: OptimizersParams) -> None:
    """What the run would refuse after training, refused before it, in one line naming the parameter: an optimizer
    without a label or a builder (:mod:`repro.ml.optim`); ``trainer: fused`` (it compiles with JAX) on another
    backend."""
    from repro.ml import optim

    from .common import LABELS

    unknown = [o for o in p.optimizers if o not in LABELS or o not in optim.OPTIMIZERS]
    if unknown:
        raise ParameterError(f"parameter 'optimizers': {', '.join(unknown)} has no label in optimizers/common.py "
                             "or no builder in repro.ml.optim (add both first)")
    if p.trainer == "fused" and training.backend() != "jax":
        raise ParameterError(f"parameter 'trainer': 'fused' trains under KERAS_BACKEND=jax only; this is "
                             f"{training.backend()} (use trainer: fit)")


def train_group(p: OptimizersParams, ds: _data.Dataset, jobs: list[tuple], epochs: int) -> list[pd.DataFrame]:
    """One history per job ``(optimizer, learning rate, checkpoint dir, label, seed)``: one after another with
    ``model.fit`` (``trainer: fit``) or all at once in one compiled program (``fused``: every optimizer and
    seed of the group stacked, :mod:`repro.ml.fused`)."""
    if not jobs:
        return []
    build = lambda opt, lr, seed: build_model(p, ds.input_shape, ds.num_classes, opt, lr, seed)  # noqa: E731
    if p.trainer == "fused":
        from repro.ml import fused

        one_lr, seeds = len({j[1] for j in jobs}) == 1, sorted({j[4] for j in jobs})
        labels = [(opt if one_lr else f"{opt}@{lr:g}") + (f"/{seed}" if len(seeds) > 1 else "")
                  for opt, lr, _, _, seed in jobs]
        return fused.fit_many([build(opt, lr, seed) for opt, lr, _, _, seed in jobs], ds, epochs=epochs,
                              batch_size=p.batch_size, seed=[j[4] for j in jobs],
                              steps_per_execution=p.steps_per_execution,
                              checkpoint_dirs=[j[2] for j in jobs], labels=labels,
                              log_prefix=f"[{jobs[0][3].split(' ')[0]} seed{'s' * (len(seeds) > 1)}="
                                         f"{','.join(map(str, seeds))}, {len(jobs)} models fused] ")
    return [training.fit(build(opt, lr, seed), ds, epochs=epochs, batch_size=p.batch_size, seed=seed,
                         checkpoint_dir=ckpt, log_prefix=f"[{label}] ") for opt, lr, ckpt, label, seed in jobs]


def tune(p: OptimizersParams, ds: _data.Dataset, ckpt_root: Path) -> pd.DataFrame:
    """Learning-rate search per optimizer on the validation split; one row per (optimizer, lr)."""
    val_ds = validation_split(ds, p.validation_fraction, p.seeds[0])
    seed = p.seeds[0]
    jobs = [(opt, lr, ckpt_root / "tuning" / opt / f"lr{lr:g}", f"tune {opt} lr={lr:g}", seed)
            for opt in p.optimizers for lr in p.lr_grid]
    rows = []
    for (opt, lr, _, _, _), hist in zip(jobs, train_group(p, val_ds, jobs, p.tune_epochs)):
        last = hist.iloc[-1]
        rows.append({"optimizer": opt, "learning_rate": lr, "val_accuracy": float(last["test_accuracy"]),
                     "val_loss": float(last["test_loss"]), "train_accuracy": float(last["accuracy"])})
    table = pd.DataFrame(rows)
    best = table.fillna({"val_accuracy": -1}).groupby("optimizer")["val_accuracy"].transform("max")
    table["best"] = table["val_accuracy"] == best
    # ties: the smallest learning rate wins, so "best" marks exactly one row per optimizer
    table.loc[table["best"] & table.duplicated(["optimizer", "best"]), "best"] = False
    return table


def train_all(p: OptimizersParams, ds: _data.Dataset, plan: list[tuple[str, dict]], ckpt_root: Path) -> pd.DataFrame:
    """Every (variant, seed, optimizer) of ``plan`` ([(variant, {optimizer: learning rate})]): the history."""
    frames = []
    done: dict[tuple, pd.DataFrame] = {}
    together: dict[tuple, int] = {}
    fused = p.trainer == "fused"
    for variant, lrs in plan:
        # a tuned lr equal to the shared one is the same (deterministic) run: trained once
        jobs = [(opt, lrs[opt], ckpt_root / variant / opt / f"seed{seed}", f"{variant} {opt} seed={seed}", seed)
                for seed in p.seeds for opt in p.optimizers if (opt, lrs[opt], seed) not in done]
        for (opt, lr, _, _, seed), hist in zip(jobs, train_group(p, ds, jobs, p.epochs)):
            done[(opt, lr, seed)] = hist
            together[(opt, lr, seed)] = len(jobs) if fused else 1
        for seed in p.seeds:
            for opt in p.optimizers:
                key = (opt, lrs[opt], seed)
                frames.append(done[key].assign(variant=variant, optimizer=opt, seed=seed, learning_rate=lrs[opt],
                                               trained_together=together[key]))
    history = pd.concat(frames, ignore_index=True)
    return history[["variant", "optimizer", "seed", "learning_rate", *training.HISTORY_COLUMNS, "trained_together"]]


def final_losses(history: pd.DataFrame) -> pd.DataFrame:
    """Per variant and optimizer: the test loss at the last epoch, mean and sd over seeds (``final_loss``,
    ``final_loss_sd``; a seed whose last loss is not a number, a diverged run, makes the mean NaN); no rows
    where the history records no test loss."""
    keys = ["variant", "optimizer"]
    if "test_loss" not in history:
        return pd.DataFrame(columns=[*keys, "final_loss", "final_loss_sd"])
    last = history.sort_values("epoch", kind="stable").groupby([*keys, "seed"]).tail(1)
    return last.groupby(keys).agg(final_loss=("test_loss", lambda x: x.mean(skipna=False)),
                                  final_loss_sd=("test_loss", "std")).reset_index()


def summarize(history: pd.DataFrame, target_accuracy: float) -> pd.DataFrame:
    """Per variant and optimizer: final/best test accuracy (mean, sd over seeds), final test loss (mean, sd;
    where the history has it), epochs to 95 % of best, wall time in total and to reach ``target_accuracy``."""

    def per_seed(g: pd.DataFrame) -> pd.Series:
        g = g.sort_values("epoch")
        acc = g["test_accuracy"].to_numpy()
        best = np.nanmax(acc)
        reach95 = g["epoch"].to_numpy()[np.argmax(acc >= 0.95 * best)]
        hit = np.flatnonzero(acc >= target_accuracy)
        return pd.Series({
            "final_accuracy": acc[-1], "best_accuracy": best, "epochs_to_95pct_best": reach95,
            "train_time_s": g["train_time_s"].iloc[-1],
            "time_to_target_s": g["train_time_s"].to_numpy()[hit[0]] if len(hit) else np.nan,
            "learning_rate": g["learning_rate"].iloc[0],
            **({"trained_together": g["trained_together"].max()} if "trained_together" in g else {}),
        })

    seeds = history.groupby(["variant", "optimizer", "seed"]).apply(per_seed, include_groups=False).reset_index()
    agg = seeds.groupby(["variant", "optimizer"]).agg(
        learning_rate=("learning_rate", "first"),
        seeds=("seed", "count"),
        final_accuracy=("final_accuracy", "mean"),
        final_accuracy_sd=("final_accuracy", "std"),
        best_accuracy=("best_accuracy", "mean"),
        best_accuracy_sd=("best_accuracy", "std"),
        epochs_to_95pct_best=("epochs_to_95pct_best", "mean"),
        train_time_s=("train_time_s", "mean"),
        time_to_target_s=("time_to_target_s", "mean"),
        reached_target=("time_to_target_s", lambda s: int(s.notna().sum())),
        **({"trained_together": ("trained_together", "max")} if "trained_together" in seeds else {}),
    ).reset_index()
    if "test_loss" in history:
        agg = agg.merge(final_losses(history), on=["variant", "optimizer"], how="left")
    agg["rank"] = agg.groupby("variant")["final_accuracy"].rank(ascending=False, method="min").astype(int)
    return agg.sort_values(["variant", "rank"]).reset_index(drop=True)
