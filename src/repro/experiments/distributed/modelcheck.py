"""The chapter's section "The model on clusters it was never fitted to" (notebook 06): the analytic model's
leave-one-source-out check (:mod:`repro.predict.loso`; the sources of one lab held out together) as a figure, a
table and its residuals.

:func:`evaluate` runs the check once (about ten seconds: one fit of the per-step overheads per origin held out,
nothing trained) and adds to its per-point table the column the transport panel needs, ``transport`` (the link
between hosts, or inside the host where the point has none between); the check's table carries ``compute_s``
itself (the batch over the point's own one-GPU images/s). Every other function only reads that result:
:func:`plot_predicted_vs_measured`, :func:`loso_table`, :func:`plot_residuals`, the per-regime :func:`regime_table`
and :func:`regime_gaps`, and :func:`glue_numbers` (:func:`goal_words` reads issue 58's goals, no result).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from repro.book import report
from repro.book.plots import style

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h", "p"]
JITTER = 0.3  # half the width of a transport's column of points in the residual panel
TABLE_COLUMNS = {  # loso_table's columns and their labels (errors in percentage points; p90: 90th percentile)
    "points": "points", "model_median_pp": "model median", "model_p90_pp": "model p90",
    "model_worst_pp": "model worst", "constant_median_pp": "constant median", "constant_p90_pp": "constant p90",
    "constant_worst_pp": "constant worst", "coverage": "coverage", "rank_correlation": "rank corr."}


def evaluate(points: list | None = None) -> dict:
    """:func:`repro.predict.loso.evaluate` on the package's published measurements (or ``points``), its table
    with ``transport`` (:func:`with_transport`). Call it once per chapter."""
    from repro.predict import loso

    return with_transport(loso.evaluate(points))


def transport(table: pd.DataFrame) -> pd.Series:
    """Each point's transport: its ``inter_link``, or its ``intra_link`` where ``inter_link`` is ``none``."""
    return table["inter_link"].where(table["inter_link"] != "none", table["intra_link"])


def with_transport(result: dict) -> dict:
    """``result`` with its table's ``transport`` column."""
    return {**result, "table": result["table"].assign(transport=transport(result["table"]))}


def source_styles(sources) -> dict[str, tuple]:
    """One colour and one marker per source (sorted by name), the same in every figure of the section."""
    import matplotlib as mpl

    names = sorted(set(sources))
    cmap = mpl.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {s: (cmap(i % cmap.N), MARKERS[i % len(MARKERS)]) for i, s in enumerate(names)}


def _limits(t: pd.DataFrame) -> tuple[float, float]:
    values = pd.concat([t["measured"], t["predicted"], t["low"], t["high"]])
    lo, hi = float(values.min()), float(values.max())
    pad = 0.03 * max(hi - lo, 0.1)
    return lo - pad, hi + pad


def plot_predicted_vs_measured(result: dict):
    """Predicted vs measured scaling efficiency of every point with N > 1, each predicted with the overheads
    fitted on the other origins: one marker and colour per source, the point's 80 % interval as a vertical bar
    (``low`` to ``high``: a bar that crosses the 1:1 line holds its measurement), the 1:1 line."""
    import matplotlib.pyplot as plt

    style()
    t = result["table"]
    styles = source_styles(t["source"])
    fig, ax = plt.subplots(figsize=(7.6, 5.4))
    for source, g in t.groupby("source", sort=True):
        colour, marker = styles[source]
        mid, half = (g["low"] + g["high"]) / 2, (g["high"] - g["low"]) / 2
        ax.errorbar(g["measured"], mid, yerr=half, fmt="none", ecolor=colour, elinewidth=0.8, alpha=0.45,
                    label="_nolegend_")
        ax.scatter(g["measured"], g["predicted"], color=colour, marker=marker, s=26, edgecolor="white",
                   linewidth=0.4, label=f"{source} ({len(g)})", zorder=3)
    lo, hi = _limits(t)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--", label="1:1 (predicted = measured)", zorder=2)
    ax.set(xlim=(lo, hi), ylim=(lo, hi), xlabel="measured scaling efficiency (published)",
           ylabel="predicted scaling efficiency (origin left out)")
    ax.set_aspect("equal")
    ax.legend(title="source (points)", loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small",
              title_fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


def loso_table(result: dict) -> pd.DataFrame:
    """Per source, the model's absolute error (median and worst, percentage points of efficiency) beside the
    constant yardstick's median, and the share of the source's measurements inside their intervals; then one
    line over every point: median, 90th percentile and worst for the model and the constant, the rank
    correlation of predicted and measured efficiency, and the coverage. Every number is the result's own;
    ``–`` where the result gives none for one source."""
    per = result["per_source"]
    rows = pd.DataFrame({"source": per["source"], "points": per["points"].astype(int),
                         "model_median_pp": per["median_pp"], "model_p90_pp": math.nan,
                         "model_worst_pp": per["worst_pp"], "constant_median_pp": per["constant_median_pp"],
                         "constant_p90_pp": math.nan, "constant_worst_pp": math.nan, "coverage": per["coverage"],
                         "rank_correlation": math.nan})
    m, c = result["model"], result["constant"]
    overall = {"source": f"all {result['sources']} sources ({result['origins']} origins)",
               "points": int(result["points"]),
               "model_median_pp": m["median_pp"], "model_p90_pp": m["p90_pp"], "model_worst_pp": m["worst_pp"],
               "constant_median_pp": c["median_pp"], "constant_p90_pp": c["p90_pp"],
               "constant_worst_pp": c["worst_pp"], "coverage": result["coverage"],
               "rank_correlation": result["rank_correlation"]}
    out = pd.concat([rows, pd.DataFrame([overall])], ignore_index=True)
    return out.rename(columns=TABLE_COLUMNS)


REGIME_COLUMNS = {"regime": "regime", "points": "points", "origins": "origins", "median_pp": "model median",
                  "p90_pp": "model p90", "worst_pp": "model worst", "constant_median_pp": "constant median",
                  "vs_constant": "model / constant", "rank_correlation": "rank corr.", "coverage": "coverage",
                  "missed": "goals missed (issue 58)"}


def regime_table(result: dict) -> pd.DataFrame:
    """Per regime (:data:`repro.predict.loso.REGIMES`): points, origins, the model's absolute error (median, p90,
    worst; percentage points), the constant's median and the model's over it, the rank correlation, the coverage of
    the 80 % intervals and the goals of issue 58 it misses, in words (``–`` where it meets them all)."""
    reg = result["per_regime"]
    out = reg[list(REGIME_COLUMNS)].assign(missed=reg["missed"].where(reg["missed"] != "", "–"))
    return out.rename(columns=REGIME_COLUMNS)


def regime_gaps(result: dict) -> pd.DataFrame:
    """Per regime that misses a goal: what the model leaves out there (:data:`repro.predict.loso.REGIMES`)."""
    reg = result["per_regime"]
    return reg.loc[~reg["goals_met"], ["regime", "not_modelled"]].rename(
        columns={"not_modelled": "what the model leaves out there"})


def transport_order(names) -> list[str]:
    """The transports slowest first (their rate in ``links.yaml``); a name it lacks goes last, by name."""
    from repro.predict import hardware, measured

    links = measured.links()

    def rate(name: str) -> float:
        return hardware.rate_bits(links[name]["rate"]) if name in links else math.inf

    return sorted(set(names), key=lambda n: (rate(n), n))


def transport_positions(t: pd.DataFrame, order: list[str]) -> np.ndarray:
    """The x of each point in the transport panel: its transport's column (0, 1, ... in ``order``) plus a fixed
    jitter within +-:data:`JITTER`, the same on every build."""
    jitter = np.random.default_rng(0).uniform(-JITTER, JITTER, len(t))
    return t["transport"].map({name: i for i, name in enumerate(order)}).to_numpy(dtype=float) + jitter


def plot_residuals(result: dict):
    """The model's error (predicted - measured, pp) of every point against its transport (slowest link
    first), its number of GPUs N (log x) and its compute time per step (batch / one GPU's images/s, log x), one
    marker and colour per source as in :func:`plot_predicted_vs_measured`."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    style()
    t = result["table"].reset_index(drop=True)
    styles = source_styles(t["source"])
    order = transport_order(t["transport"])
    x_transport = transport_positions(t, order)
    fig, grid = plt.subplots(2, 2, figsize=(10.0, 7.6), sharey=True)
    axes = [grid[0, 0], grid[0, 1], grid[1, 0]]  # the fourth place holds the legend
    panels = [(x_transport, "transport (between hosts, else inside the host)"), (t["workers"].to_numpy(float),
              "GPUs N (log)"), (t["compute_s"].to_numpy(float), "compute per step, s (log)")]
    for ax, (x, label) in zip(axes, panels, strict=True):
        for source, idx in t.groupby("source", sort=True).groups.items():
            colour, marker = styles[source]
            ax.scatter(x[idx.to_numpy()], t.loc[idx, "error_pp"], color=colour, marker=marker, s=20, alpha=0.8,
                       edgecolor="white", linewidth=0.3, label=source)
        ax.axhline(0.0, color="grey", lw=1, ls="--")
        ax.set_xlabel(label)
        ax.set_ylabel("model error, predicted - measured (pp)")
    axes[0].set_xticks(range(len(order)), order, rotation=45, ha="right")
    axes[0].set_xlim(-0.5, len(order) - 0.5)
    axes[1].set_xscale("log", base=2)
    axes[1].xaxis.set_major_formatter(ScalarFormatter())
    axes[2].set_xscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.delaxes(grid[1, 1])
    fig.tight_layout()
    fig.legend(handles, labels, title="source", loc="center", bbox_to_anchor=(0.75, 0.27), ncol=2,
               fontsize="small", title_fontsize="small", frameon=False)
    return fig


def interval_words() -> str:
    """The prediction intervals in words (``"80 %: from the 10th to the 90th percentile"``), from
    :data:`repro.predict.loso.INTERVAL`."""
    from repro.predict import loso

    lo, hi = (round(100 * q) for q in loso.INTERVAL)

    def nth(k: int) -> str:
        return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"

    return f"{hi - lo} %: from the {nth(lo)} to the {nth(hi)} percentile"


def goal_words() -> str:
    """Issue 58's goals per regime in words, from :data:`repro.predict.loso.REGIME_GOALS`."""
    from repro.predict import loso

    g = loso.REGIME_GOALS
    return (f"the model's median error at most {g['vs_constant']:g} of the constant's where a regime has "
            f"{g['min_points']} points or more; on synthetic data a 90th percentile of at most {g['p90_pp']:g} and a "
            f"worst error of at most {g['worst_pp']:g} percentage points; intervals that hold "
            f"{100 * g['coverage'][0]:g}-{100 * g['coverage'][1]:g} % of a regime's measurements; a rank correlation "
            f"of at least {g['rank_float32']:g} in the float32 regime (and {g['rank_overall']:g} over every point)")


def correction_words(result: dict) -> str:
    """The learned correction's check in words (:func:`repro.predict.correction.words` of the result's)."""
    from repro.predict import correction

    return correction.words(result["correction"])


def regime_words(result: dict) -> str:
    """How many regimes meet issue 58's goals, in words, from ``result``'s per-regime table."""
    from repro.predict import loso

    reg, g = result["per_regime"], loso.REGIME_GOALS
    big = reg[reg["points"] >= g["min_points"]]
    beat = int((big["vs_constant"] <= g["vs_constant"]).sum())
    return (f"{int(reg['goals_met'].sum())} of the {len(reg)} regimes meet every goal; the model's median error is at "
            f"most {g['vs_constant']:g} of the constant's in {beat} of the {len(big)} regimes with at least "
            f"{g['min_points']} points")


def glue_numbers(result: dict) -> None:
    """The section's numbers for its prose, each from ``result``."""
    m, c = result["model"], result["constant"]
    report.glue("dist_loso_regimes", regime_words(result))
    report.glue("dist_loso_goals", goal_words())
    report.glue("dist_loso_correction", correction_words(result))
    report.glue("dist_loso_shape", f"{result['points']} points with N > 1 from {result['sources']} sources, "
                f"{result['origins']} independent origins")
    report.glue("dist_loso_interval", interval_words())
    report.glue("dist_loso_headline", f"the model misses a measurement by {m['median_pp']:.1f} percentage points in "
                f"the median ({m['p90_pp']:.1f} at the 90th percentile, {m['worst_pp']:.1f} at worst), the constant "
                f"by {c['median_pp']:.1f} ({c['p90_pp']:.1f}, {c['worst_pp']:.1f}); the rank correlation of "
                f"predicted and measured efficiency is {result['rank_correlation']:.2f}, and "
                f"{100 * result['coverage']:.0f} % of the measurements lie inside their intervals")
