"""Figures: the thesis' predicted speedups, and one configuration's estimate (``repro estimate --output plot``)."""

from __future__ import annotations

import pandas as pd

from repro.book import plots as book_plots
from repro.core.harness import Result
from repro.experiments.speedup.paramtypes import SpeedupParams


def plot_predictions(result: Result[SpeedupParams], dpi: int | None = None):
    """Predicted (mean-case) speedup vs workers: one facet per network, lines per mode and server."""
    import seaborn as sns
    from matplotlib.ticker import MaxNLocator

    book_plots.style()
    grid = result["predictions"]
    g = sns.relplot(data=grid, x="workers", y="speedup", hue="mode", style="server", col="network",
                    col_wrap=2, kind="line", marker="o", height=3.2, aspect=1.35,
                    facet_kws={"sharex": False, "sharey": False})
    for ax in g.axes.flat:
        ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    g.set_axis_labels("workers N", "predicted speedup S")
    g.set_titles("{col_name}")
    g.figure.suptitle(f"slampa2017: predicted speedup from Table 6.1 (D = {result.params.batches} batches)", y=1.02)
    g.figure.set_dpi(dpi or result.params.plot_dpi)
    return g


def plot_estimate(df: pd.DataFrame, title: str = ""):
    """One configuration: the estimate with the best / worst schedule as a band (CLI ``--output plot``)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    book_plots.style()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.fill_between(df["workers"], df["speedup_worst"], df["speedup_best"], alpha=0.25, label="worst..best schedule")
    ax.plot(df["workers"], df["speedup"], marker="o", label="estimate (mean)")
    ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("workers N")
    ax.set_ylabel("speedup S")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig

