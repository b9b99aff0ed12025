"""The distributed chapter's leave-one-source-out section (repro.experiments.distributed.modelcheck): its figures
and table built from a small result shaped as repro.predict.loso.evaluate's, and checked against it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from repro.experiments.distributed import modelcheck
from repro.predict import correction, loso  # noqa: E402

# three sources, seven points: links of links.yaml (10gbe is slower than pcie3, pcie3 than nvswitch-a100)
ROWS = [  # id, source, workers, batch, intra_link, inter_link, measured, predicted, low, high
    ("a-1", "alpha", 2, 32, "pcie3", "none", 0.95, 0.93, 0.88, 0.99),
    ("a-2", "alpha", 16, 64, "pcie3", "10gbe", 0.70, 0.82, 0.74, 0.90),
    ("b-1", "beta", 4, 128, "nvswitch-a100", "none", 0.98, 0.97, 0.92, 1.02),
    ("b-2", "beta", 8, 128, "nvswitch-a100", "none", 0.96, 0.95, 0.90, 1.00),
    ("b-3", "beta", 64, 256, "pcie3", "10gbe", 0.60, 0.52, 0.45, 0.58),
    ("c-1", "gamma", 2, 16, "pcie3", "none", 0.90, 0.99, 0.93, 1.05),
    ("c-2", "gamma", 32, 32, "pcie3", "10gbe", 0.81, 0.80, 0.72, 0.87),
]
SINGLE = {"a-1": 200.0, "a-2": 320.0, "b-1": 1280.0, "b-2": 640.0, "b-3": 512.0, "c-1": 160.0, "c-2": 100.0}


@pytest.fixture
def result():
    t = pd.DataFrame(ROWS, columns=["id", "source", "workers", "batch", "intra_link", "inter_link", "measured",
                                    "predicted", "low", "high"])
    t = t.assign(framework="horovod", method="horovod", gpu="v100", model="resnet50", precision="fp32",
                 data="synthetic", constant=0.9, error_pp=100 * (t["predicted"] - t["measured"]),
                 covered=(t["measured"] >= t["low"]) & (t["measured"] <= t["high"]))
    t = t.assign(constant_pp=100 * (t["constant"] - t["measured"]), compute_s=t["batch"] / t["id"].map(SINGLE))
    per_source = pd.DataFrame({"source": ["alpha", "beta", "gamma"], "points": [2, 3, 2],
                               "median_pp": [7.0, 1.0, 5.0], "worst_pp": [12.0, 8.0, 9.0],
                               "constant_median_pp": [12.5, 17.0, 4.5], "coverage": [0.5, 2 / 3, 0.5]})
    base = {"table": t, "per_source": per_source, "pair_table": pd.DataFrame(), "points": len(t), "sources": 3,
            "origins": 2,
            "model": {"median_pp": 2.0, "p90_pp": 10.4, "worst_pp": 12.0},
            "constant": {"median_pp": 9.0, "p90_pp": 24.0, "worst_pp": 30.0},
            "rank_correlation": 0.75, "coverage": 4 / 7}
    t = t.assign(regime=["mixed precision"] * 3 + [loso.FLOAT32] * 4, origin=t["source"], exposed_share=0.1)
    base = {**base, "table": t, "per_regime": loso.by_regime(t), "correction": correction.evaluate(t)}
    yield modelcheck.with_transport(base)
    plt.close("all")


def _series(ax) -> dict[str, PathCollection]:
    return {c.get_label().split(" (")[0]: c for c in ax.collections if isinstance(c, PathCollection)}


def test_predicted_vs_measured_has_one_marker_series_and_one_set_of_bars_per_source_and_the_identity(result):
    t = result["table"]
    ax = modelcheck.plot_predicted_vs_measured(result).axes[0]
    series = _series(ax)
    assert sorted(series) == ["alpha", "beta", "gamma"]
    markers = {s: c.get_paths()[0].vertices.tobytes() for s, c in series.items()}
    colours = {s: tuple(c.get_facecolor()[0]) for s, c in series.items()}
    assert len(set(markers.values())) == 3 and len(set(colours.values())) == 3
    for source, c in series.items():
        g = t[t["source"] == source]
        assert np.allclose(c.get_offsets(), g[["measured", "predicted"]].to_numpy())
        assert c.get_label() == f"{source} ({len(g)})"
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 3
    spans = sorted(tuple(np.round(seg[:, 1], 9)) + (round(seg[0, 0], 9),) for b in bars
                   for seg in b.lines[2][0].get_segments())
    assert spans == sorted((round(r.low, 9), round(r.high, 9), round(r.measured, 9)) for r in t.itertuples())
    (identity,) = [ln for ln in ax.get_lines() if ln.get_label().startswith("1:1")]
    assert np.allclose(identity.get_xdata(), identity.get_ydata())
    lo, hi = ax.get_xlim()
    assert lo <= t[["low", "measured"]].min().min() and hi >= t[["high", "measured"]].max().max()
    assert "measured" in ax.get_xlabel() and "predicted" in ax.get_ylabel()
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert legend == ["alpha (2)", "beta (3)", "gamma (2)", identity.get_label()]


def test_the_residual_panels_plot_the_error_against_transport_n_and_compute_time(result):
    t = result["table"]
    fig = modelcheck.plot_residuals(result)
    ax_link, ax_n, ax_compute = fig.axes
    order = ["10gbe", "pcie3", "nvswitch-a100"]  # slowest first
    assert [x.get_text() for x in ax_link.get_xticklabels()] == order
    assert ax_n.get_xscale() == "log" and ax_compute.get_xscale() == "log"
    for source, g in t.groupby("source"):
        link, n, compute = (_series(ax)[source].get_offsets() for ax in fig.axes)
        for xy in (link, n, compute):
            assert np.allclose(xy[:, 1], g["error_pp"])
        # the transport: inter_link, else intra_link; each point within its column
        want = [order.index(x if x != "none" else i) for x, i in zip(g["inter_link"], g["intra_link"])]
        assert np.allclose(np.round(link[:, 0]), want)
        assert np.all(np.abs(link[:, 0] - want) <= modelcheck.JITTER)
        assert np.allclose(n[:, 0], g["workers"])
        assert np.allclose(compute[:, 0], [b / SINGLE[i] for b, i in zip(g["batch"], g["id"])])
    assert all(any(ln.get_ydata()[0] == 0 for ln in ax.get_lines()) for ax in fig.axes)  # the zero line


def test_the_table_shows_the_results_own_numbers(result):
    tab = modelcheck.loso_table(result)
    per, last = tab.iloc[:-1], tab.iloc[-1]
    cols = modelcheck.TABLE_COLUMNS
    src = result["per_source"]
    assert list(per["source"]) == list(src["source"])
    for ours, theirs in [("points", "points"), ("model_median_pp", "median_pp"), ("model_worst_pp", "worst_pp"),
                         ("constant_median_pp", "constant_median_pp"), ("coverage", "coverage")]:
        assert list(per[cols[ours]]) == list(src[theirs])
    m, c = result["model"], result["constant"]
    assert last["source"] == "all 3 sources (2 origins)" and last[cols["points"]] == result["points"]
    assert [last[cols[k]] for k in ("model_median_pp", "model_p90_pp", "model_worst_pp")] == \
        [m["median_pp"], m["p90_pp"], m["worst_pp"]]
    assert [last[cols[k]] for k in ("constant_median_pp", "constant_p90_pp", "constant_worst_pp")] == \
        [c["median_pp"], c["p90_pp"], c["worst_pp"]]
    assert last[cols["rank_correlation"]] == result["rank_correlation"]
    assert last[cols["coverage"]] == result["coverage"]


def test_the_glued_prose_carries_the_results_numbers(result, monkeypatch):
    glued = {}
    monkeypatch.setattr(modelcheck.report, "glue", lambda k, v, display=False: glued.__setitem__(k, v))
    modelcheck.glue_numbers(result)
    assert glued["dist_loso_shape"] == "7 points with N > 1 from 3 sources, 2 independent origins"
    assert glued["dist_loso_interval"] == "80 %: from the 10th to the 90th percentile"
    for number in ("by 2.0 percentage points", "10.4 at the 90th", "12.0 at worst", "constant by 9.0 (24.0, 30.0)",
                   "is 0.75", "57 % of the measurements"):
        assert number in glued["dist_loso_headline"]


def test_the_regime_table_carries_each_regimes_numbers_and_names_each_missed_goal(result, monkeypatch):
    """The per-regime table (issue 58's goals) is the result's own numbers; a regime that meets every goal reads '–',
    and lowering a goal below what a regime reaches names that goal in its row (the counterfactual)."""
    reg = result["per_regime"].set_index("regime")
    shown = modelcheck.regime_table(result).set_index("regime")
    for ours, theirs in [("points", "points"), ("model median", "median_pp"), ("model worst", "worst_pp"),
                         ("model / constant", "vs_constant"), ("coverage", "coverage")]:
        assert list(shown[ours]) == list(reg[theirs])
    assert set(shown["goals missed (issue 58)"]) == {m or "–" for m in reg["missed"]}
    assert len(modelcheck.regime_gaps(result)) == int((~reg["goals_met"]).sum())
    monkeypatch.setitem(loso.REGIME_GOALS, "coverage", (0.99, 1.0))
    again = modelcheck.regime_table({**result, "per_regime": loso.by_regime(result["table"])})
    assert again["goals missed (issue 58)"].str.contains("coverage").all()
    words = modelcheck.regime_words(result)
    assert words.startswith(f"{int(reg['goals_met'].sum())} of the 2 regimes meet every goal")
    assert "0 regimes with at least 20 points" in words and "99-100 %" in modelcheck.goal_words()
    assert modelcheck.correction_words(result).startswith("a learned correction of the residuals")
