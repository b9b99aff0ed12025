"""Summary tables of the study's runs (mean and sd over seeds) and the run's ``summary.json``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from repro.core import paper
from repro.experiments.staleness.async_sgd import MITIGATIONS
from repro.experiments.staleness.paramtypes import StalenessParams


def paper_period() -> tuple[int, int]:
    """The paper's "averaging every 10-20 minibatches per worker still works acceptably" (paperdata)."""
    return (int(paper.value("savchenko2019", "avg_period_ok_min")),
            int(paper.value("savchenko2019", "avg_period_ok_max")))


def _mean_sd(df: pd.DataFrame, keys: list[str], value: str = "test_accuracy") -> pd.DataFrame:
    g = df.groupby(keys, sort=True)[value]
    out = g.agg(acc_mean="mean", acc_sd="std", seeds="count").reset_index()
    return out


def period_summary(avg_final: pd.DataFrame, p: StalenessParams) -> pd.DataFrame:
    grid = avg_final[avg_final["part"] == "grid"]
    out = _mean_sd(grid, ["workers", "period"])
    extra = grid.groupby(["workers", "period"])[["rounds", "comm_mb"]].mean().reset_index()
    out = out.merge(extra, on=["workers", "period"])
    k1 = out[out["period"] == 1].set_index("workers")["acc_mean"]
    out["drop_vs_k1"] = [k1.get(n, np.nan) - a for n, a in zip(out["workers"], out["acc_mean"])]
    out["acceptable"] = out["drop_vs_k1"] <= p.acceptable_drop + 1e-12
    return out


def state_summary(avg_final: pd.DataFrame) -> pd.DataFrame:
    st = avg_final[avg_final["part"] == "state"]
    out = _mean_sd(st, ["period", "state_mode"])
    extra = st.groupby(["period", "state_mode"])[["rounds", "comm_mb"]].mean().reset_index()
    return out.merge(extra, on=["period", "state_mode"])


def tau_summary(async_final: pd.DataFrame) -> pd.DataFrame:
    sw = async_final[async_final["part"] == "tau_sweep"]
    out = _mean_sd(sw, ["tau_dist", "tau"])
    out = out.merge(sw.groupby(["tau_dist", "tau"])["mean_staleness"].mean().reset_index(), on=["tau_dist", "tau"])
    base = out[out["tau"] == 0]["acc_mean"]
    out["drop_vs_sync"] = (float(base.iloc[0]) - out["acc_mean"]) if len(base) else np.nan
    return out


def mitigation_summary(async_final: pd.DataFrame) -> pd.DataFrame:
    """Mean/sd per (tau, variant) of the mitigation runs, with the emulated time each used (arrivals plus
    the waiting charged to ``bounded``), the gain over no mitigation and, for a mitigation that has a
    learning-rate control row (``lr_control:<variant>``, plain async SGD at lr x ``lr_factor``), the gain
    over that control."""
    mi = async_final[async_final["part"] == "mitigation"]
    out = _mean_sd(mi, ["tau", "variant"])
    cols = [c for c in ("updates", "arrivals", "mean_staleness", "mean_scale", "held_back", "wait_time",
                        "emulated_time", "lr_factor") if c in mi.columns]
    extra = mi.groupby(["tau", "variant"])[cols].mean().reset_index()
    out = out.merge(extra, on=["tau", "variant"])
    acc = out.set_index(["tau", "variant"])["acc_mean"]
    out["gain_vs_none"] = [a - acc.get((t, "none"), np.nan) for t, a in zip(out["tau"], out["acc_mean"])]
    out["gain_vs_control"] = [a - acc.get((t, "lr_control:" + v), np.nan)
                              for t, v, a in zip(out["tau"], out["variant"], out["acc_mean"])]
    order = {v: i for i, v in enumerate(MITIGATIONS)}
    order.update({"lr_control:" + v: len(MITIGATIONS) + i for i, v in enumerate(MITIGATIONS)})
    return out.sort_values(["tau", "variant"],
                           key=lambda c: c.map(order) if c.name == "variant" else c).reset_index(drop=True)


def run_summary(t: dict, eq: dict, sizes: dict) -> dict:
    """``summary.json``: headline numbers of the tables, the k = 1 check and the byte counts."""
    ps, ts, ms, th = t["period_summary"], t["tau_summary"], t["mitigation_summary"], t["thread_staleness"]
    out = {"equivalence_max_abs_difference": eq["max_abs_weight_difference"], "equivalence": eq, **sizes,
           "runs_averaging": int(len(t["averaging_final"])), "runs_async": int(len(t["async_final"]))}
    if (ps["period"] == 1).any():
        out["k1_accuracy_max_workers"] = float(ps[(ps["period"] == 1)].sort_values("workers")["acc_mean"].iloc[-1])
    mid = ps[(ps["period"] >= paper_period()[0]) & (ps["period"] <= paper_period()[1]) & (ps["workers"] > 1)
             & ps["drop_vs_k1"].notna()]  # a drop needs the N-worker run with k = 1 (periods without 1 have none)
    if len(mid):
        out["period_mid_worst_drop"] = float(mid["drop_vs_k1"].max())
    if len(ts):
        out["sync_accuracy"] = float(ts[ts["tau"] == 0]["acc_mean"].iloc[0]) if (ts["tau"] == 0).any() else float("nan")
        top = ts[ts["tau"] == ts["tau"].max()]
        out["max_tau"] = int(ts["tau"].max())
        out["max_tau_accuracy"] = {r.tau_dist: float(r.acc_mean) for r in top.itertuples()}
    if len(ms):
        tmax = ms["tau"].max()
        out["mitigation_tau"] = int(tmax)
        out["mitigation_accuracy"] = {r.variant: float(r.acc_mean) for r in ms[ms["tau"] == tmax].itertuples()
                                      if r.variant in MITIGATIONS}  # not the learning-rate controls
    if len(th):
        out["thread_mean_staleness"] = {int(r.workers): float(r.mean) for r in th.itertuples()}
    return out
