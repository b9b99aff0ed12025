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
are deleted once the run has completed. Training is deterministic for a given seed, so a tuned
learning rate equal to the shared one reuses the shared run instead of repeating it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from repro.book import plots
from repro.core import ledger, paper
from repro.core.harness import Result
from repro.core.harness import legacy_start as start
from repro.ml import data as _data
from repro.ml import models, optim, training

EXPERIMENT = "optimizers"
OPTIMIZERS = ("sgd", "momentum", "nesterov", "rmsprop", "adam", "adagrad", "nadam")
LABELS = {"sgd": "SGD", "momentum": "SGD + momentum", "nesterov": "SGD + Nesterov", "rmsprop": "RMSprop",
          "adam": "Adam", "adagrad": "Adagrad", "nadam": "Nadam"}
ACCURACY_TOLERANCE = 0.05  # the paper gives rounded figures ("~80 %"): within 5 points counts as reproduced
NADAM_CLOSE = 0.02  # "almost the same as Adam": within 2 accuracy points


def build_model(p: dict, input_shape, num_classes: int, optimizer: str, learning_rate: float, seed: int):
    import keras

    keras.utils.set_random_seed(seed)  # the same initial weights for every optimizer at a given seed
    model = models.polishchuk_cnn(input_shape, num_classes, p["filters"], p["dense_units"], p["dropout"])
    return optim.compile_classifier(model, optimizer, learning_rate, p["momentum"])


def checkpoint_root(run_dir: Path, p: dict) -> Path:
    """Where this parameter set's per-epoch checkpoints live (shared by reruns of the same parameters)."""
    key = {k: v for k, v in p.items() if k != "resume"}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(run_dir).parent / ".checkpoints" / digest


def validation_split(ds: _data.Dataset, fraction: float, seed: int) -> _data.Dataset:
    """Carve a validation set out of the training set; it takes the place of the test set."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(ds.y_train))
    n_val = max(1, int(round(fraction * len(idx))))
    val, train = idx[:n_val], idx[n_val:]
    info = {**ds.info, "n_train": int(len(train)), "n_test": int(len(val)), "split": f"validation ({fraction:.0%} of train)"}
    return _data.Dataset(ds.x_train[train], ds.y_train[train], ds.x_train[val], ds.y_train[val], info)


def _train(p, ds, optimizer, lr, seed, epochs, ckpt: Path, label: str) -> pd.DataFrame:
    model = build_model(p, ds.input_shape, ds.num_classes, optimizer, lr, seed)
    return training.fit(model, ds, epochs=epochs, batch_size=p["batch_size"], seed=seed,
                        checkpoint_dir=ckpt, log_prefix=f"[{label}] ")


def tune(p: dict, ds: _data.Dataset, ckpt_root: Path) -> pd.DataFrame:
    """Learning-rate search per optimizer on the validation split; one row per (optimizer, lr)."""
    val_ds = validation_split(ds, p["validation_fraction"], p["seeds"][0])
    rows = []
    for opt in p["optimizers"]:
        for lr in p["lr_grid"]:
            hist = _train(p, val_ds, opt, lr, p["seeds"][0], p["tune_epochs"],
                          ckpt_root / "tuning" / opt / f"lr{lr:g}", f"tune {opt} lr={lr:g}")
            last = hist.iloc[-1]
            rows.append({"optimizer": opt, "learning_rate": lr, "val_accuracy": float(last["test_accuracy"]),
                         "val_loss": float(last["test_loss"]), "train_accuracy": float(last["accuracy"])})
    table = pd.DataFrame(rows)
    best = table.fillna({"val_accuracy": -1}).groupby("optimizer")["val_accuracy"].transform("max")
    table["best"] = table["val_accuracy"] == best
    # ties: the smallest learning rate wins, so "best" marks exactly one row per optimizer
    table.loc[table["best"] & table.duplicated(["optimizer", "best"]), "best"] = False
    return table


def summarize(history: pd.DataFrame, target_accuracy: float) -> pd.DataFrame:
    """Per variant and optimizer: final/best test accuracy (mean, sd over seeds), epochs to 95 % of best,
    wall time in total and to reach ``target_accuracy``."""

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
    ).reset_index()
    agg["rank"] = agg.groupby("variant")["final_accuracy"].rank(ascending=False, method="min").astype(int)
    return agg.sort_values(["variant", "rank"]).reset_index(drop=True)


def comparable(params: dict, dataset: dict) -> tuple[bool, str]:
    """Is this run the paper's protocol (CIFAR-10, 50k train, 150 epochs)? If not, why not."""
    paper_epochs = int(paper.value("polishchuk2019", "epochs"))
    paper_train = int(paper.value("polishchuk2019", "train_images"))
    why = []
    if dataset["name"] != "cifar10":
        why.append(f"{dataset['name']}" + (f" stands in for {dataset['stand_in_for']}" if dataset.get("stand_in_for") else ", not CIFAR-10"))
    if dataset["n_train"] != paper_train:
        why.append(f"{dataset['n_train']:,} training images, not {paper_train:,}")
    if params["epochs"] != paper_epochs:
        why.append(f"{params['epochs']} epochs, not {paper_epochs}")
    return not why, "; ".join(why)


def compare_with_paper(summary: pd.DataFrame, params: dict, dataset: dict) -> pd.DataFrame:
    """The paper's reported results next to our `shared` run, a verdict per optimizer."""
    ok, why = comparable(params, dataset)
    ours = summary[summary["variant"] == "shared"].set_index("optimizer")
    reported = paper.reported()
    reported = reported[(reported["paper"] == "polishchuk2019") & reported["id"].str.startswith("final_acc_")]
    rows = []
    for opt in params["optimizers"]:
        rec = reported[reported["id"] == f"final_acc_{opt}"].iloc[0]
        acc, rank = float(ours.loc[opt, "final_accuracy"]), int(ours.loc[opt, "rank"])
        if rec["unit"] == "fraction":
            ref = float(rec["value"])
            paper_text = f"~{ref:.0%}"
            verdict = paper.verdict(ref, acc, ACCURACY_TOLERANCE, comparable=ok, why_not=why, fmt="{:.2f}")
        elif opt == "adam":
            paper_text = "best of all seven"
            verdict = f"not comparable ({why})" if not ok else ("reproduced" if rank == 1 else f"differs (rank {rank})")
        else:  # nadam: almost the same as Adam
            paper_text = "almost the same as Adam"
            gap = abs(acc - float(ours.loc["adam", "final_accuracy"])) if "adam" in ours.index else np.nan
            verdict = f"not comparable ({why})" if not ok else (
                "reproduced" if gap <= NADAM_CLOSE else f"differs ({gap:.3f} from Adam)")
        rows.append({"optimizer": LABELS[opt], "paper": paper_text, "ours_final_accuracy": acc,
                     "ours_rank": rank, "verdict": verdict})
    return pd.DataFrame(rows)


def claims(summary: pd.DataFrame) -> pd.DataFrame:
    """The paper's conclusion tested on our data, for the shared and the tuned variant."""
    rows = []
    for variant in ("shared", "tuned"):
        s = summary[summary["variant"] == variant].set_index("optimizer")
        if s.empty or not {"adam", "nadam"} <= set(s.index):
            continue
        top2 = set(s.sort_values("final_accuracy", ascending=False).index[:2])
        gap = abs(s.loc["adam", "final_accuracy"] - s.loc["nadam", "final_accuracy"])
        rows += [
            {"variant": variant, "claim": "Adam is the most accurate of the seven",
             "holds": bool(s.loc["adam", "rank"] == 1), "evidence": f"Adam ranks {int(s.loc['adam', 'rank'])} of {len(s)}"},
            {"variant": variant, "claim": "Adam and Nadam are the two most accurate",
             "holds": top2 == {"adam", "nadam"}, "evidence": "top two: " + ", ".join(LABELS[o] for o in sorted(top2))},
            {"variant": variant, "claim": "Nadam is almost the same as Adam (within 2 points)",
             "holds": bool(gap <= NADAM_CLOSE), "evidence": f"gap {gap:.3f}"},
        ]
    return pd.DataFrame(rows)


def run(profile: str | None = None, overrides: dict | None = None, run_dir=None) -> Result:
    """Train every optimizer (both variants, every seed); see the module docstring."""
    p, profile, open_run = start(EXPERIMENT, profile, overrides, run_dir)
    ds = _data.load(p["dataset"], p["train_samples"] or None, p["test_samples"] or None, seed=0)
    run = open_run()
    run.add_dataset(ds.info)
    device = training.device_summary()
    if p["mixed_precision"]:
        import keras

        if device["device"] == "GPU":
            keras.mixed_precision.set_global_policy("mixed_float16")
            device["mixed_precision"] = "mixed_float16"
        else:
            device["mixed_precision"] = "requested, not used (no GPU)"
    run.note("device", device)
    ckpt = checkpoint_root(run.dir, p)
    if not p["resume"] and ckpt.exists():
        shutil.rmtree(ckpt)
    run.note("checkpoints", str(ckpt))

    frames, tuning = [], None
    plan = [("shared", {o: p["learning_rate"] for o in p["optimizers"]})]
    if p["tuned"]:
        tuning = tune(p, ds, ckpt)
        run.write_csv("tuning", tuning)
        best = tuning[tuning["best"]].set_index("optimizer")["learning_rate"].to_dict()
        plan.append(("tuned", best))
    done: dict[tuple, pd.DataFrame] = {}
    for variant, lrs in plan:
        for seed in p["seeds"]:
            for opt in p["optimizers"]:
                key = (opt, lrs[opt], seed)
                if key not in done:  # a tuned lr equal to the shared one is the same (deterministic) run
                    done[key] = _train(p, ds, opt, lrs[opt], seed, p["epochs"], ckpt / variant / opt / f"seed{seed}",
                                       f"{variant} {opt} seed={seed}")
                frames.append(done[key].assign(variant=variant, optimizer=opt, seed=seed, learning_rate=lrs[opt]))
    history = pd.concat(frames, ignore_index=True)
    history = history[["variant", "optimizer", "seed", "learning_rate", *training.HISTORY_COLUMNS]]
    run.write_csv("history", history)
    summary = summarize(history, p["target_accuracy"])
    run.write_csv("summary", summary)
    comparison = compare_with_paper(summary, p, ds.info)
    run.write_csv("paper_vs_ours", comparison)
    claim_table = claims(summary)
    run.write_csv("claims", claim_table)
    run.write_csv("ledger", ledger_rows(comparison, claim_table, summary, p, ds.info))
    tables = {"history": history, "summary": summary, "paper_vs_ours": comparison, "claims": claim_table}
    if tuning is not None:
        tables["tuning"] = tuning
    final = run.finish()
    shutil.rmtree(ckpt, ignore_errors=True)  # the run is complete: its results, not its checkpoints, are kept
    return Result(final, p, run.record, tables, {"comparable": comparable(p, ds.info)[0]})


def ledger_rows(comparison: pd.DataFrame, claim_table: pd.DataFrame, summary: pd.DataFrame, p: dict,
                dataset: dict) -> pd.DataFrame:
    """This chapter's claims for the book's ledger."""
    ok, why = comparable(p, dataset)
    rows = [{"paper": "polishchuk2019", "claim": f"{r.optimizer}: final test accuracy", "paper_value": r.paper,
             "ours": f"{r.ours_final_accuracy:.1%} (rank {r.ours_rank})", "verdict": r.verdict,
             "evidence": "optimizers-paper-vs-ours"} for r in comparison.itertuples()]
    shared = claim_table[claim_table["variant"] == "shared"].set_index("claim") if len(claim_table) else None
    if shared is not None and "Adam and Nadam are the two most accurate" in shared.index:
        c = shared.loc["Adam and Nadam are the two most accurate"]
        verdict = ("reproduced" if c["holds"] else "differs (" + c["evidence"] + ")") if ok else f"not comparable ({why})"
        rows.append({"paper": "polishchuk2019", "claim": "conclusion: Adam and Nadam are the most accurate",
                     "paper_value": "Adam, Nadam", "ours": c["evidence"], "verdict": verdict,
                     "evidence": "optimizers-claims"})
    s = summary[summary["variant"] == "shared"]
    epochs95 = s["epochs_to_95pct_best"].max()
    rows.append({"paper": "polishchuk2019", "claim": "models need about 140 epochs to converge",
                 "paper_value": f"{paper.value('polishchuk2019', 'epochs_to_converge'):.0f} epochs",
                 "ours": f"<= {epochs95:.0f} of {p['epochs']} epochs to 95 % of the best accuracy",
                 "verdict": "not comparable (" + (why or "different convergence criterion") + ")" if not ok
                 else ("reproduced" if abs(epochs95 - 140) <= 15 else f"differs ({epochs95:.0f} epochs)"),
                 "evidence": "optimizers-summary"})
    rows.append({"paper": "polishchuk2019", "claim": "about 1.5 h of training per optimizer",
                 "paper_value": "1.5 h", "ours": f"{s['train_time_s'].mean() / 3600:.2f} h",
                 "verdict": "not comparable (the paper's hardware is not stated)", "evidence": "optimizers-summary"})
    runs = len(p["seeds"])  # accuracies and epochs are stochastic: one run per seed
    return ledger.frame([dict(r, basis="measured", runs=runs, stochastic=True) for r in rows])


# --- figures ---------------------------------------------------------------------------------

def _labelled(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(optimizer=df["optimizer"].map(LABELS))


def plot_curves(result: Result):
    """The paper's Figures 2-8: loss and accuracy per epoch, train and test, one row per optimizer."""
    hist = _labelled(result["history"].query("variant == 'shared'"))
    return plots.training_curves(hist, title="Shared hyperparameters (the paper's protocol)", col="optimizer")


def plot_overlay(result: Result):
    """Test accuracy of all seven optimizers on one axis (bands: spread over seeds)."""
    import seaborn as sns

    plots.style()
    hist = _labelled(result["history"])
    grid = sns.relplot(data=hist, x="epoch", y="test_accuracy", hue="optimizer", col="variant", kind="line",
                       errorbar="sd", height=3.5, aspect=1.2)
    grid.set_axis_labels("epoch", "test accuracy")
    return grid


def plot_sensitivity(result: Result):
    """Validation accuracy against learning rate, one line per optimizer (the tuning grid)."""
    import seaborn as sns

    plots.style()
    tuning = _labelled(result["tuning"])
    ax = sns.lineplot(data=tuning, x="learning_rate", y="val_accuracy", hue="optimizer", marker="o")
    ax.set_xscale("log")
    ax.set(xlabel="learning rate", ylabel="validation accuracy", title="Learning-rate sensitivity")
    return ax


def summary_table(result: Result) -> pd.DataFrame:
    """The final table of the chapter (both variants)."""
    s = _labelled(result["summary"])
    cols = ["variant", "rank", "optimizer", "learning_rate", "final_accuracy", "final_accuracy_sd", "best_accuracy",
            "epochs_to_95pct_best", "train_time_s", "time_to_target_s", "reached_target", "seeds"]
    return s[cols]


def glue_numbers(result: Result) -> None:
    from repro.book.report import glue

    p, s = result.params, result["summary"]
    shared = s[s["variant"] == "shared"].set_index("optimizer")
    winner = shared["final_accuracy"].idxmax()
    glue("opt_epochs", p["epochs"])
    glue("opt_lr", p["learning_rate"])
    glue("opt_momentum", p["momentum"])
    glue("opt_batch", p["batch_size"])
    glue("opt_seeds", len(p["seeds"]))
    glue("opt_dataset", result.provenance["datasets"][0]["name"])
    glue("opt_winner", LABELS[winner])
    glue("opt_winner_acc", float(shared.loc[winner, "final_accuracy"]))
    glue("opt_adam_acc", float(shared.loc["adam", "final_accuracy"]) if "adam" in shared.index else float("nan"))
    glue("opt_target", p["target_accuracy"])
    per_run = result["history"].groupby(["variant", "optimizer", "seed"])["train_time_s"].max()
    glue("opt_total_time_min", float(per_run.sum() / 60))
    glue("opt_time_per_optimizer_min", float(per_run.loc["shared"].mean() / 60))
    glue("opt_comparable", "comparable with the paper" if result.summary["comparable"] else "not comparable with the paper")
    tuned = s[s["variant"] == "tuned"]
    if len(tuned):
        t = tuned.set_index("optimizer")
        glue("opt_tuned_winner", LABELS[t["final_accuracy"].idxmax()])
        glue("opt_tuned_winner_acc", float(t["final_accuracy"].max()))
    else:
        glue("opt_tuned_winner", "(tuning not run)")
        glue("opt_tuned_winner_acc", float("nan"))
