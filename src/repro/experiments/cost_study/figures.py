"""Figures of the cost study's chapter (seaborn/matplotlib are imported inside, when a figure is drawn)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from repro.book import plots
from repro.core.harness import Result
from repro.experiments.cost_study import sweep
from repro.experiments.cost_study.paramtypes import CostStudyParams


def load_samples(run_dir) -> pd.DataFrame:
    """All sampler CSVs of a run in one tidy table (column ``label`` names the child)."""
    frames = []
    for path in sorted(Path(run_dir, "samples").glob("*.csv")):
        df = pd.read_csv(path)
        df.insert(0, "label", path.stem)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["label", *sweep.SAMPLE_COLUMNS])


def plot_time_vs_cores(result: Result[CostStudyParams]):
    """Training time and measured total vs cores, mean with sd error bars, one panel per network."""
    import seaborn as sns

    plots.style()
    runs = result["runs"]
    long = runs[runs["device"] == "cpu"].melt(id_vars=["network", "cores", "rep"],
                                               value_vars=["t_learn_s", "t_measured_s"],
                                               var_name="time", value_name="seconds")
    long["time"] = long["time"].map({"t_learn_s": "training (t_learn)", "t_measured_s": "all measured phases"})
    grid = sns.catplot(data=long, x="cores", y="seconds", hue="time", col="network", kind="point", errorbar="sd",
                       capsize=0.1, sharey=False, height=3.4, aspect=1.2)
    grid.figure.suptitle("Run time vs CPU cores (mean ± sd over repetitions)", y=1.04)
    return plots.stamp(grid, result.provenance)


def plot_scaling(result: Result[CostStudyParams]):
    """Speedup vs cores: measured points, the fitted Amdahl curve, extrapolated points (hollow)."""
    import matplotlib.pyplot as plt

    plots.style()
    sc = result["scaling"]
    fits = json.loads(Path(result.run_dir, "amdahl.json").read_text())
    nets = list(sc["network"].unique())
    fig, axes = plt.subplots(1, max(1, len(nets)), figsize=(5.2 * max(1, len(nets)), 3.6), squeeze=False)
    for ax, net in zip(axes[0], nets):
        s = sc[sc["network"] == net]
        kmax = max(int(s["cores"].max()), 2)
        ks = np.linspace(1, kmax, 200)
        ax.plot(ks, ks, color="grey", lw=1, ls=":", label="ideal")
        f = fits.get(net, {})
        if f.get("t1_s") is not None and f.get("serial_fraction") is not None:  # null: no fit
            ax.plot(ks, 1 / (f["serial_fraction"] + (1 - f["serial_fraction"]) / ks), color="C0", lw=1.2,
                    label=f"Amdahl fit (serial fraction {f['serial_fraction']:.2f})")
        m = s[s["kind"] == "measured"]
        ax.errorbar(m["cores"], m["speedup"], yerr=m["speedup_sd"].fillna(0), fmt="o", color="C1", capsize=3,
                    label="measured")
        e = s[s["kind"] != "measured"]
        if len(e):
            ax.plot(e["cores"], e["speedup"], "o", mfc="none", color="C2", label="extrapolation")
        ax.set(title=net, xlabel="cores", ylabel="speedup over 1 core")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return plots.stamp(fig, result.provenance)


def plot_resources(result: Result[CostStudyParams], rep: int = 1):
    """The sampler's time series (CPU %, RSS, disk read/write) of one repetition of every configuration."""
    import seaborn as sns

    plots.style()
    samples = load_samples(result.run_dir)
    labels = result["runs"].loc[result["runs"]["rep"] == rep, "label"]
    samples = samples[samples["label"].isin(labels)].copy()
    samples["disk_rw_mb"] = (samples["disk_read_bytes"].fillna(0) + samples["disk_write_bytes"].fillna(0)) / 2**20
    long = samples.melt(id_vars=["label", "t_s"], value_vars=["child_cpu_percent", "child_rss_mb", "disk_rw_mb"],
                        var_name="metric", value_name="value")
    grid = sns.relplot(data=long, x="t_s", y="value", hue="label", row="metric", kind="line", height=2.2, aspect=3.2,
                       facet_kws={"sharey": False})
    grid.set_axis_labels("seconds since the child started", "")
    return plots.stamp(grid, result.provenance)


def plot_time_vs_cost(result: Result[CostStudyParams]):
    """Billed cost against total time for every configuration and provider (hollow: extrapolation)."""
    import seaborn as sns

    plots.style()
    c = result["costs"].copy()
    c["t_sum_min"] = c["t_sum_mean_s"] / 60
    c["config"] = c["device"] + " k=" + c["cores"].astype(str) + " g=" + c["gpus"].astype(str)
    grid = sns.relplot(data=c, x="t_sum_min", y="cost_mean", hue="provider", style="kind", col="network",
                       kind="scatter", s=60, height=3.6, aspect=1.2, facet_kws={"sharex": False, "sharey": False})
    grid.set_axis_labels("t_sum of formula (1), minutes", f"billed cost ({result.summary['currency']})")
    return plots.stamp(grid, result.provenance)


def plot_cost_vs_step(result: Result[CostStudyParams]):
    """Cost vs cores of the reference provider's instances under different billing steps."""
    import seaborn as sns

    plots.style()
    s = result["step_sensitivity"].copy()
    s["billing step"] = s["billing_step_s"].map(lambda v: f"{v / 60:g} min" if v >= 60 else f"{v:g} s")
    grid = sns.relplot(data=s, x="cores", y="cost", hue="billing step", style="kind", col="network", kind="line",
                       markers=True, height=3.4, aspect=1.2, facet_kws={"sharey": False})
    grid.set(yscale="log")
    grid.set_axis_labels("cores", f"billed cost ({result.summary['currency']}, log scale)")
    return plots.stamp(grid, result.provenance)
