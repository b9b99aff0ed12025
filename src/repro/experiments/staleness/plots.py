"""Figures of the staleness chapter (``notebooks/05_staleness.ipynb``)."""

from __future__ import annotations

import pandas as pd

from repro.book import plots
from repro.core.harness import Result
from repro.experiments.staleness.async_sgd import MITIGATIONS
from repro.experiments.staleness.paramtypes import StalenessParams
from repro.experiments.staleness.summaries import paper_period


def _int_ticks(ax, values) -> None:
    """Ticks at the measured values, labelled as integers (log axes otherwise show powers of ten)."""
    from matplotlib.ticker import NullLocator

    ax.set_xticks([float(v) for v in values])
    ax.set_xticklabels([str(int(v)) for v in values])
    ax.xaxis.set_minor_locator(NullLocator())


def plot_accuracy_vs_period(result: Result[StalenessParams]):
    """Final test accuracy vs averaging period k, one line per N (mean, error bars = sd over seeds),
    and the communication volume per worker vs k."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    fin = result["averaging_final"]
    grid = fin[(fin["part"] == "grid") & (fin["workers"] > 1)].copy()
    grid["N"] = grid["workers"].astype(str)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    sns.lineplot(data=grid, x="period", y="test_accuracy", hue="N", marker="o", errorbar="sd",
                 err_style="bars", ax=axes[0])
    one = fin[(fin["part"] == "grid") & (fin["workers"] == 1)]
    if len(one):
        axes[0].axhline(one["test_accuracy"].mean(), color="k", ls="--", lw=1, label="one machine (N = 1)")
    lo, hi = paper_period()
    axes[0].axvspan(lo, hi, color="0.85", zorder=0, label=f"paper: {lo}-{hi} still fine")
    axes[0].set(xscale="log", xlabel="averaging period k (local minibatches per round)", ylabel="final test accuracy")
    axes[0].legend(fontsize=8, title="N")
    sns.lineplot(data=grid, x="period", y="comm_mb", hue="N", marker="o", ax=axes[1], errorbar=None)
    axes[1].set(xscale="log", yscale="log", xlabel="averaging period k", ylabel="MB per worker and direction")
    for ax in axes:
        _int_ticks(ax, sorted(grid["period"].unique()))
    fig.suptitle("Synchronous parameter averaging: accuracy and communication vs period", y=1.02)
    fig.tight_layout()
    return plots.stamp(fig, result.provenance)


def plot_averaging_curves(result: Result[StalenessParams]):
    """Test accuracy per epoch for every (N, k) of the grid (mean over seeds, band = sd)."""
    import seaborn as sns

    plots.style()
    h = result["averaging_history"]
    h = h[(h["part"] == "grid") & (h["workers"] > 1)].copy()
    if not len(h):  # a profile without a multi-worker grid (threads): say so instead of an empty facet grid
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no multi-worker averaging run in this profile", ha="center", va="center")
        return plots.stamp(fig, result.provenance)
    h["k"] = h["period"].astype(str)
    grid = sns.relplot(data=h, x="epoch", y="test_accuracy", hue="k", col="workers", kind="line", marker="o",
                       errorbar="sd", height=3, aspect=1.1)
    grid.set_titles("N = {col_name}")
    grid.figure.suptitle("Test accuracy per epoch by averaging period k", y=1.04)
    return plots.stamp(grid, result.provenance)


def plot_state_comparison(result: Result[StalenessParams]):
    """Weights-only vs weights+state averaging with the stateful optimizer, final accuracy vs k."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    fin = result["averaging_final"]
    st = fin[fin["part"] == "state"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    sns.lineplot(data=st, x="period", y="test_accuracy", hue="state_mode", marker="o", errorbar="sd",
                 err_style="bars", ax=ax)
    ax.set(xscale="log", xlabel="averaging period k", ylabel="final test accuracy",
           title=f"{result.params.state.optimizer}, N = {result.params.state.workers}: what is averaged")
    _int_ticks(ax, sorted(st["period"].unique()))
    fig.tight_layout()
    return plots.stamp(fig, result.provenance)


def plot_accuracy_vs_tau(result: Result[StalenessParams]):
    """Final test accuracy vs staleness tau (emulation), one line per delay distribution."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    fin = result["async_final"]
    sw = fin[fin["part"] == "tau_sweep"].copy()
    zero = sw[sw["tau"] == 0]
    rows = [sw[sw["tau"] > 0]] + [zero.assign(tau_dist=d) for d in sw["tau_dist"].unique() if d != "fixed"]
    sw = pd.concat(rows + [zero], ignore_index=True)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    sns.lineplot(data=sw, x="tau", y="test_accuracy", hue="tau_dist", marker="o", errorbar="sd", err_style="bars",
                 ax=ax)
    ax.set_xscale("symlog", linthresh=1)
    _int_ticks(ax, sorted(sw["tau"].unique()))
    ax.set(xlabel="staleness tau (fixed) or its mean (random)", ylabel="final test accuracy",
           title="Asynchronous SGD emulation: accuracy vs staleness")
    fig.tight_layout()
    return plots.stamp(fig, result.provenance)


def plot_mitigations(result: Result[StalenessParams]):
    """Test accuracy per epoch for each mitigation variant (columns: mean staleness tau)."""
    import seaborn as sns

    plots.style()
    h = result["async_history"]
    h = h[(h["part"] == "mitigation") & h["variant"].isin(MITIGATIONS)]  # the lr controls are in the table
    grid = sns.relplot(data=h, x="epoch", y="test_accuracy", hue="variant", col="tau", kind="line", marker="o",
                       errorbar="sd", height=3.2, aspect=1.2,
                       hue_order=[v for v in MITIGATIONS if v in set(h["variant"])])
    grid.set_titles("mean tau = {col_name} (" + result.params.mitigation_tau_dist + ")")
    grid.figure.suptitle("Mitigations of stale gradients", y=1.04)
    return plots.stamp(grid, result.provenance)


def plot_staleness_distribution(result: Result[StalenessParams]):
    """Staleness distribution of the real multi-threaded runs (one panel per N)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    d = result["thread_staleness_distribution"]
    if not len(d):
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.text(0.5, 0.5, "thread run skipped (thread_updates = 0)", ha="center")
        ax.axis("off")
        return fig
    grid = sns.catplot(data=d, x="staleness", y="fraction", col="workers", kind="bar", height=3, aspect=1.1,
                       sharex=False, color="C0")
    grid.set_titles("N = {col_name} threads")
    for ax, (_, row) in zip(grid.axes.flat, result["thread_staleness"].iterrows()):
        ax.set_title(f"N = {int(row.workers)} threads: mean {row['mean']:.2f}")
    grid.figure.suptitle("Real asynchronous run (Python threads): updates since read", y=1.05)
    return plots.stamp(grid, result.provenance)


def period_table(result: Result[StalenessParams]) -> pd.DataFrame:
    """The N x k summary, for display."""
    df = result["period_summary"].copy()
    return df[["workers", "period", "acc_mean", "acc_sd", "seeds", "rounds", "comm_mb", "drop_vs_k1", "acceptable"]]
