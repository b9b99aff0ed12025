"""The chapter's tables, figures and glued numbers for a distributed run (notebook 06)."""

from __future__ import annotations

import pandas as pd

from repro.book import report
from repro.book.plots import style
from repro.core import paper
from repro.core.harness import Result
from repro.experiments.distributed.common import LABELS, METHODS, PAPER
from repro.experiments.distributed.paramtypes import DistributedParams


def throughput_table(result: Result[DistributedParams]) -> pd.DataFrame:
    df = result["throughput"]
    cols = ["method", "workers", "model", "image_size", "steps_total", "images_per_sec_mean", "images_per_sec_stderr",
            "total_images_per_sec", "updates", "all_updates", "optimizer_iterations", "replicas_identical"]
    return df[[c for c in cols if c in df]]


def _wrap(df: pd.DataFrame) -> int | None:
    """Panels per row: all of them up to three models, else three (five panels in a row are unreadable)."""
    return 3 if df["model"].nunique() > 3 else None


def plot_throughput(result: Result[DistributedParams], table: str = "throughput"):
    """The paper's Figures 9-11 for our runs: total images/sec vs processes, one panel per model
    (``table="emulated_throughput"``: the emulated cluster)."""
    import seaborn as sns

    style()
    df = result[table].assign(method=lambda d: d["method"].map(LABELS))
    grid = sns.relplot(data=df, x="workers", y="total_images_per_sec", hue="method", col="model", kind="line",
                       marker="o", height=3.2, aspect=1.1, col_wrap=_wrap(df), facet_kws={"sharey": False})
    grid.set_axis_labels("worker processes", "images/sec (total)")
    return grid


def plot_efficiency(result: Result[DistributedParams], table: str = "scaling"):
    """The paper's Figures 12-14: scaling efficiency (1 = ideal linear scaling; ``table`` as
    :func:`plot_throughput`)."""
    import seaborn as sns

    style()
    df = result[table].assign(method=lambda d: d["method"].map(LABELS))
    grid = sns.relplot(data=df, x="workers", y="efficiency", hue="method", col="model", kind="line", marker="o",
                       height=3.2, aspect=1.1, col_wrap=_wrap(df))
    for ax in grid.axes.flat:
        ax.axhline(1.0, color="grey", lw=1, ls="--")
    grid.set_axis_labels("worker processes", "efficiency vs linear")
    return grid


def plot_bandwidth(result: Result[DistributedParams]):
    """Bandwidth sweep: measured images/sec (points) and min(loopback, link bound) (lines) vs link rate."""
    import seaborn as sns

    style()
    df = result["bandwidth"].assign(method=lambda d: d["method"].map(LABELS))
    grid = sns.relplot(data=df, x="bandwidth_mbps", y="total_images_per_sec", hue="method", col="model",
                       kind="scatter", s=60, height=3.2, aspect=1.1, facet_kws={"sharey": False})
    for (model, ax) in grid.axes_dict.items():
        sub = df[df["model"] == model]
        for i, (method, g) in enumerate(sub.groupby("method", sort=False)):
            g = g.sort_values("bandwidth_mbps")
            ax.plot(g["bandwidth_mbps"], g["predicted_images_per_sec"], ls="--", lw=1, color=f"C{i}")
        ax.set_xscale("log")
        ax.set_yscale("log")
    grid.set_axis_labels("emulated link (Mb/s)", "total images/sec")
    return grid


def glue_numbers(result: Result[DistributedParams]) -> None:
    """Headline numbers for the chapter's prose."""
    glue = report.glue
    p = result.params
    t = result["throughput"]
    glue("dist_models", ", ".join(p.models))
    glue("dist_workers", ", ".join(map(str, p.workers)))
    glue("dist_batch", p.batch_size)
    glue("dist_steps", p.steps)
    glue("dist_warmup", p.warmup_steps)
    glue("dist_cores", result.summary["cores"])
    glue("dist_share", "share them with each other and with the PS/chief processes (no spare core per added worker)"
         if result.summary["workers_share_cores"] else "each have cores of their own")
    glue("dist_paper_batch", int(paper.value(PAPER, "bench_batch_size")))
    glue("dist_paper_steps", int(paper.value(PAPER, "bench_iterations")))
    nmax = max(p.workers)
    glue("dist_nmin", min(p.workers))
    glue("dist_nmax", nmax)
    model0 = p.models[0]
    for method in METHODS:
        for label, n in (("min", min(p.workers)), ("max", nmax)):
            sel = t[(t["method"] == method) & (t["workers"] == n) & (t["model"] == model0)]
            glue(f"dist_{method}_{label}", float(sel["total_images_per_sec"].iloc[0]) if len(sel) else float("nan"))
    glue("dist_model0", p.models[0])
    glue("dist_sweep_workers", p.sweep.workers)
    f = result["findings"]
    fault = f[f["finding"] == "fault_tolerance"]
    glue("dist_fault_summary", f"Measured: {fault['ours'].iloc[0]} (verdict: {fault['verdict'].iloc[0]})."
         if len(fault) and fault["ours"].iloc[0] != "–" else "Not run in this profile.")
    _glue_emulated(result)
    glue_model(result)
    glue_measured()
    glue("dist_n_findings", len(f))
    glue("dist_verdict_counts", verdict_counts(f))


def verdict_counts(findings: pd.DataFrame) -> str:
    """The findings' verdicts counted by category and basis, in words ("2 consistent (emulated), ...")."""
    from repro.core import verdicts as V

    cat = findings["verdict"].map(lambda v: V.category_of(v).value)
    counts = pd.DataFrame({"category": cat, "basis": findings["basis"]}).value_counts(sort=False)
    return ", ".join(f"{k} {c} ({b})" for (c, b), k in counts.items())


NOT_EMULATED = "not run in this profile (emulate = none)"


def _glue_emulated(result: Result[DistributedParams]) -> None:
    """The emulated grid's numbers, as text (a profile without it glues :data:`NOT_EMULATED`)."""
    from repro.predict import hardware

    glue, p = report.glue, result.params
    keys = ("dist_emu_profile", "dist_emu_shape", "dist_emu_dilations", "dist_emu_checks", "dist_emu_topology",
            "dist_emu_limits", "dist_emu_dilation_check")
    if p.emulate.hardware in (None, "none") or "emulated_throughput" not in result.tables:
        for key in keys:
            glue(key, NOT_EMULATED)
        return
    prof = hardware.load(p.emulate.hardware)
    tp, checks = result["emulated_throughput"], result["emulation_checks"]
    glue("dist_emu_profile", f"{prof.name} ({prof.description}; source: {prof.source})")
    glue("dist_emu_topology", prof.topology)
    glue("dist_emu_shape", f"{', '.join(p.emulate.models)} at the paper's sizes, batch {p.batch_size}, "
         f"{', '.join(p.emulate.methods)} at {', '.join(map(str, p.emulate.workers))} workers, "
         f"{p.emulate.steps} timed steps after {p.emulate.warmup_steps} warm-up, "
         f"{p.emulate.repeats} independent run(s) of the grid (the tables show their mean)")
    glue("dist_emu_dilations", ", ".join(f"{k:g}" for k in sorted(tp["dilation"].unique())))
    glue("dist_emu_checks", f"{int(checks['within'].sum())} of {len(checks)} (largest error "
         f"{100 * checks['error'].abs().max():.1f} %)" if len(checks) else "none run")
    glue("dist_emu_dilation_check", dilation_check_text(checks))
    lim = result.tables.get("emulated_limits")
    glue("dist_emu_limits", limits_text(lim) if lim is not None and len(lim) else "not computed in this run")


def dilation_check_text(checks) -> str:
    """The two-dilation checks in words (the rows of ``emulation_checks`` that compare two dilations)."""
    two = checks[checks["check"].str.startswith("two dilations")]
    if not len(two):
        return "not run in this run (dilation_check)"
    each = "; ".join(f"{r.check.removeprefix('two dilations: ')} for {r.model}: {100 * r.error:+.1f} %"
                     for r in two.itertuples())
    return f"{int(two['within'].sum())} of {len(two)} within 5 % ({each})"


def limits_text(lim) -> str:
    """Where the emulated grid stops here: the most workers each model fits in memory, and the ring's cost."""
    fit = lim[lim["fits_in_memory"]].groupby(["model", "method"])["workers"].max().unstack()
    most = ", ".join(f"{m} {int(r.get('ring', 0) or 0)} (ring or Horovod) / {int(r.get('ps_sync', 0) or 0)} (PS)"
                     for m, r in fit.iterrows())
    top = lim[(lim["method"] == "ring") & (lim["workers"] == lim["workers"].max())]
    ps = lim[lim["method"] == "ps_sync"]["dilation"]
    return (f"the most workers whose model copies fit in this machine's memory: {most}; a ring of "
            f"{int(top['workers'].iloc[0])} needs dilation {top['dilation'].iloc[0]:g}, "
            f"{top['minutes_warmup_and_step'].min():.0f}-{top['minutes_warmup_and_step'].max():.0f} min per model "
            f"for one warm-up and one timed step, while the PS link needs {ps.max():g} at any N")


def model_tables(result: Result[DistributedParams]) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The analytic model (:mod:`repro.predict.perfmodel`): its validation against the emulated grid, and what
    it predicts at the paper's process counts for the grid's models on the cluster's real topology (the
    emulated profile's ``topology_profile``: the model rows' table), beside the emulated profile's model
    (``efficiency_emulated_profile``), with Horovod / sync PS where both are predicted. None without an
    emulated grid."""
    if "emulated_throughput" not in result.tables:
        return None
    from repro.experiments.distributed import modelbasis
    from repro.predict import perfmodel

    tp, ps = result["emulated_throughput"], result.params.ps
    keys = ["method", "model", "workers"]
    old = modelbasis.paper_scale(tp, ps)[keys + ["efficiency"]]
    old = old.rename(columns={"efficiency": "efficiency_emulated_profile"})
    pred = modelbasis.paper_scale(tp, ps, real=True).merge(old, on=keys)
    wide = pred.pivot_table(index=["model", "workers"], columns="method", values="total_images_per_sec")
    pred = pred.merge((wide["horovod"] / wide["ps_sync"]).rename("horovod_over_ps_sync").reset_index(),
                      on=["model", "workers"], how="left")
    cols = keys + ["total_images_per_sec", "efficiency", "efficiency_emulated_profile", "horovod_over_ps_sync",
                   "hardware"]
    pred = pred[pred["workers"] >= 2]  # the paper's process counts (one process: the model's base only)
    return perfmodel.validate_table(tp, ps), pred[cols]


def measured_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The model against published real measurements (:mod:`repro.predict.measured`): per point with N > 1,
    and per source and method on the held-out half."""
    from repro.predict import measured

    table = measured.package_validation()[1]
    points = table[table["workers"] > 1][["id", "source", "method", "model", "gpu", "gpus_per_host", "inter_link",
                                          "workers", "split", "measured", "predicted", "error_pp"]]
    return points, measured.summary(table, "test")


def plot_measured(points: pd.DataFrame):
    """Predicted vs measured scaling efficiency, one marker per source, the held-out half filled; the 1:1 line."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    style()
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    sns.scatterplot(data=points, x="measured", y="predicted", hue="source", style="split", ax=ax, s=36)
    lo = min(points["measured"].min(), points["predicted"].min()) - 0.03
    ax.plot([lo, 1.05], [lo, 1.05], color="grey", lw=1, ls="--")
    ax.set(xlabel="measured scaling efficiency (published)", ylabel="predicted by the model", xlim=(lo, 1.05),
           ylim=(lo, 1.05))
    return fig


def glue_measured() -> None:
    """The held-out errors as text: overall and per method, with the goal."""
    from repro.predict import measured

    table = measured.package_validation()[1]
    o, per, b = measured.overall(table), measured.method_errors(table), measured.constant_baseline(table)
    goal = f"goal {measured.GOAL_MEDIAN_PP:g} and {measured.GOAL_WORST_PP:g}"
    report.glue("dist_measured_overall", f"{o['points']} held-out points, median {o['median_pp']:.1f} and worst "
                f"{o['worst_pp']:.1f} percentage points ({goal}); one constant, the train half's median efficiency "
                f"{b['constant']:.2f}, would miss them by {b['median_pp']:.1f} in the median and "
                f"{b['worst_pp']:.0f} at worst: the model's worth is in the points far from the typical efficiency, "
                "and it misses the spread among the typical ones (most of its predictions sit near one minus the "
                "fitted overhead)")
    report.glue("dist_measured_methods", "; ".join(f"{m}: median {r.median_pp:.1f}, worst {r.worst_pp:.1f} over "
                                                  f"{int(r.points)} points" for m, r in per.iterrows()))
    report.glue("dist_measured_sources", f"{table['source'].nunique()} sources, {int((table['workers'] > 1).sum())} "
                "points with N > 1")


def glue_model(result: Result[DistributedParams]) -> None:
    """The model's validation error and its Horovod / sync PS ratios at 10 processes, as text."""
    tables = model_tables(result)
    if tables is None:
        for key in ("dist_model_validation", "dist_model_ratio10"):
            report.glue(key, NOT_EMULATED)
        return
    val, pred = tables
    report.glue("dist_model_validation", f"{100 * val['error'].abs().max():.1f} % at most over {len(val)} emulated "
                f"clusters (model above the emulation by {100 * val['error'].median():+.1f} % in the median)")
    ten = pred[(pred["workers"] == 10) & (pred["method"] == "horovod")].set_index("model")["horovod_over_ps_sync"]
    report.glue("dist_model_ratio10", f"{ten.min():.1f} to {ten.max():.1f} ("
                + ", ".join(f"{m} {v:.2f}" for m, v in ten.sort_values().items()) + ")")
