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


def stamp(obj, record: dict | None):
    """Put the run's backend, its version and device (:func:`repro.core.provenance.backend_label`) on a
    figure's title: appended to the suptitle (a figure or seaborn grid) or to the axes' title (an
    Axes); returns ``obj``. Older runs without a ``device`` record get their backend (TensorFlow)
    or nothing; never raises."""
    from repro.core.provenance import backend_label

    label = backend_label(record)
    if not label:
        return obj
    text = f"Keras on {label}"
    if hasattr(obj, "set_title") and hasattr(obj, "get_title"):  # one Axes
        title = obj.get_title()
        obj.set_title(f"{title}\n{text}" if title else text)
        return obj
    fig = getattr(obj, "figure", obj)
    current = getattr(fig, "_suptitle", None)
    if current is not None and current.get_text():
        current.set_text(f"{current.get_text()}\n{text}")
    else:
        fig.suptitle(text, y=1.03)
    return obj
