"""The chapter's figures, its summary table and the numbers glued into its prose."""

from __future__ import annotations

import pandas as pd

from repro.book import plots
from repro.core.harness import Result
from repro.experiments.optimizers.paramtypes import OptimizersParams

from .common import LABELS
from .verdicts import comparable, with_final_loss


def _labelled(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(optimizer=df["optimizer"].map(LABELS))


def plot_curves(result: Result[OptimizersParams]):
    """The paper's Figures 2-8: loss and accuracy per epoch, train and test, one row per optimizer."""
    hist = _labelled(result["history"].query("variant == 'shared'"))
    grid = plots.training_curves(hist, title="Shared hyperparameters (the paper's protocol)", col="optimizer")
    return plots.stamp(grid, result.provenance)


def plot_overlay(result: Result[OptimizersParams]):
    """Test accuracy of all seven optimizers on one axis (bands: spread over seeds)."""
    import seaborn as sns

    plots.style()
    hist = _labelled(result["history"])
    grid = sns.relplot(data=hist, x="epoch", y="test_accuracy", hue="optimizer", col="variant", kind="line",
                       errorbar="sd", height=3.5, aspect=1.2)
    grid.set_axis_labels("epoch", "test accuracy")
    return plots.stamp(grid, result.provenance)


def plot_sensitivity(result: Result[OptimizersParams]):
    """Validation accuracy against learning rate, one line per optimizer (the tuning grid)."""
    import seaborn as sns

    plots.style()
    if "tuning" not in result.tables:  # a profile without the tuning grid (tuned: false)
        print("no tuning grid in this run (tuned: false)")
        return None
    tuning = _labelled(result["tuning"])
    ax = sns.lineplot(data=tuning, x="learning_rate", y="val_accuracy", hue="optimizer", marker="o")
    ax.set_xscale("log")
    ax.set(xlabel="learning rate", ylabel="validation accuracy", title="Learning-rate sensitivity")
    return plots.stamp(ax, result.provenance)


def summary_table(result: Result[OptimizersParams]) -> pd.DataFrame:
    """The final table of the chapter (both variants; the final test loss where the run's tables record it)."""
    s = _labelled(with_final_loss(result["summary"], result.tables.get("history")))
    loss = ["final_loss"] if "final_loss" in s else []
    cols = ["variant", "rank", "optimizer", "learning_rate", "final_accuracy", "final_accuracy_sd", "best_accuracy",
            *loss, "epochs_to_95pct_best", "train_time_s", "time_to_target_s", "reached_target", "seeds"]
    return s[cols]


def glue_numbers(result: Result[OptimizersParams]) -> None:
    from repro.book.report import glue

    p, s = result.params, result["summary"]
    shared = s[s["variant"] == "shared"].set_index("optimizer")
    winner = shared["final_accuracy"].idxmax()
    glue("opt_epochs", p.epochs)
    glue("opt_lr", p.learning_rate)
    glue("opt_momentum", p.momentum)
    glue("opt_batch", p.batch_size)
    glue("opt_seeds", len(p.seeds))
    glue("opt_dataset", result.provenance["datasets"][0]["name"])
    glue("opt_winner", LABELS[winner])
    glue("opt_winner_acc", float(shared.loc[winner, "final_accuracy"]))
    glue("opt_adam_acc", float(shared.loc["adam", "final_accuracy"]) if "adam" in shared.index else float("nan"))
    glue("opt_target", p.target_accuracy)
    per_run = result["history"].groupby(["variant", "optimizer", "seed"])["train_time_s"].max()
    glue("opt_total_time_min", float(per_run.sum() / 60))
    glue("opt_time_per_optimizer_min", float(per_run.loc["shared"].mean() / 60))
    ok = comparable(p, result.provenance["datasets"][0], result.provenance.get("device"))[0]
    glue("opt_comparable", "comparable with the paper" if ok else "not comparable with the paper")
    tuned = s[s["variant"] == "tuned"]
    if len(tuned):
        t = tuned.set_index("optimizer")
        glue("opt_tuned_winner", LABELS[t["final_accuracy"].idxmax()])
        glue("opt_tuned_winner_acc", float(t["final_accuracy"].max()))
    else:
        glue("opt_tuned_winner", "(tuning not run)")
        glue("opt_tuned_winner_acc", float("nan"))
