"""Figures shared by the chapters (seaborn, one style)."""

from __future__ import annotations

import pandas as pd


def style() -> None:
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid")


def training_curves(history: pd.DataFrame, title: str = "", hue: str | None = None, col: str | None = None):
    """Loss and accuracy per epoch, train and test, in two facets (one row per ``col`` value)."""
    import seaborn as sns

    style()
    id_vars = ["epoch"] + [c for c in (hue, col) if c]
    long = history.melt(id_vars=id_vars, value_vars=["loss", "test_loss", "accuracy", "test_accuracy"],
                        var_name="series", value_name="value")
    long["metric"] = long["series"].str.replace("test_", "", regex=False)
    long["split"] = long["series"].str.startswith("test_").map({True: "test", False: "train"})
    grid = sns.relplot(
        data=long, x="epoch", y="value", hue=hue or "split", style="split" if hue else None,
        col="metric", row=col, kind="line", marker="o" if len(history["epoch"].unique()) < 30 else None,
        facet_kws={"sharey": False}, height=3.2, aspect=1.3,
    )
    if title:
        grid.figure.suptitle(title, y=1.03)
    return grid
