"""The distributed experiment's claims that are not findings of a throughput grid: the kill-a-worker runs, Table 1
(the audit's counts; its top-5 column), the bandwidth sweep (the PS's bytes, the bandwidth effect on sync PS) and
the paper's reason for async PS matching sync PS. Each builds one :class:`~repro.core.claims.Measured` from a run's
tables; :mod:`.verdicts` hands them to the ledger with the grid's findings."""

from __future__ import annotations

import math

import pandas as pd

from repro.core import claims, paper
from repro.core import verdicts as V
from repro.experiments.distributed.common import NAME, PAPER, TABLE1
from repro.experiments.distributed.models import PAPER_SIZE

Measured = claims.Measured
NO = "–"  # "ours" where nothing was measured


def _outcome(rows: pd.DataFrame) -> str:
    """One method's outcome over its trials: the outcome alone for one trial, with counts for more."""
    if len(rows) == 1:
        return rows["outcome"].iloc[0]
    counts = rows["outcome"].value_counts()
    return ", ".join(f"{o} ({k} of {len(rows)} trials)" for o, k in counts.items())


def fault_tolerance(faults: pd.DataFrame | None) -> Measured:
    """A worker killed mid-run: what async PS, the ring all-reduce and sync PS (the control) did, over the
    trials. Not comparable whatever happened (claims.yaml, why_not_decisive): the ring half is true by
    construction and the paper gives no experiment to compare with."""
    if faults is None or faults.empty:
        return Measured(NO, gate=V.not_measured("fault_tolerance off in this profile"))
    f = faults.assign(trial=faults["trial"] if "trial" in faults else 1)
    trials = int(f["trial"].nunique())
    a, r = f[f["method"] == "ps_async"], f[f["method"] == "ring"]
    done = ("" if a["completed"].isna().all() else
            f", {int(a['completed'].min())} of {int(a['scheduled'].max())} steps completed"
            + (" at least" if trials > 1 else ""))
    control = ""
    c = f[f["method"] == "ps_sync"]
    if len(c):  # the control: sync PS killed the same way
        survived = c["outcome"].str.startswith("finished").all()
        control = (f"; sync PS (control): {_outcome(c)}"
                   + (" too: the coordinator re-queues a dead worker's closures, so the tolerance is the PS "
                      "design's, not asynchrony's" if survived else ""))
    orphans = int(f["orphans"].sum())
    ours = f"async PS: {_outcome(a)}{done}; ring (MWMS): {_outcome(r)}{control}; orphan processes: {orphans}"
    return Measured(ours, runs=trials, gate=V.not_comparable(
        "the ring half is true by construction: the supervisor fails the whole job when a program exits "
        "non-zero, so the surviving MWMS worker is never observed; the paper gives no experiment"))


def table1_row(model: str, row: dict | None) -> Measured:
    """Parameters and GFLOPs of our Keras model against the paper's Table 1 (counted: exact, one build;
    basis ``equations``: the architecture's arithmetic, so agreement is *consistent*, not reproduced).
    Parameters are Keras' ``count_params`` (batch norm's moving statistics included); GFLOPs are 2 x the
    multiply-accumulates of conv and dense layers per image, forward pass (Table 1's column, printed 'GFLOPS', a
    rate, read as per-image FLOPs: the convention under which VGG16's printed 30.9 agrees).
    A row that disagrees says which of the two is off, against which printed figure. A claim marked ``decisive:
    false`` (a figure free to move x0.2-x5 almost never lands in the band: claims.yaml) is shown, gated not
    testable with its reason. ``row`` None: the run's audit table has no row for the model."""
    if row is None or math.isnan(row["ours_params_m"]):
        return Measured(NO, gate=V.not_measured(f"{model} not audited in this run; "
                                                "audit_models lists the models audited"))
    ours = f"{row['ours_params_m']:.1f} M params, {row['ours_gflops']:.1f} GFLOPs"
    ref = TABLE1[model]
    rp = row["ours_params_m"] / paper.value(PAPER, f"params_m_{ref}")
    rg = row["ours_gflops"] / paper.value(PAPER, f"gflops_{ref}")
    note = f"ours/paper: parameters {rp:.3f}, GFLOPs {rg:.3f}"
    claim = claims.load(NAME)[f"table1_{ref}"]
    band = claim.band
    if band is None:
        raise claims.ClaimsError(f"distributed/claims.yaml: table1_{ref} needs a band")
    lo, hi = band
    if not lo <= rp <= hi:  # the parameters disagree: say what was counted
        note += (f"; Table 1 {ref} parameters ({paper.value(PAPER, f'params_m_{ref}'):g} M) against "
                 f"{row['ours_params_m']:.1f} M counted by Keras for {model} at {PAPER_SIZE[model]} px "
                 f"(batch-norm moving statistics included)")
    if not lo <= rg <= hi:  # the GFLOPs disagree: say under which convention
        note += (f"; Table 1 {ref} GFLOPs ({paper.value(PAPER, f'gflops_{ref}'):g}) under the convention that "
                 f"gives VGG16's {paper.value(PAPER, 'gflops_vgg16'):g} (2 x multiply-accumulates) is "
                 f"{row['ours_gflops']:.1f}")
    value = max((rp, rg), key=lambda x: abs(x - 1))
    if not claim.decisive:  # shown, gated not testable with the claim's reason (its flip sampler's shares)
        shown = "it holds" if lo <= value <= hi else "it does not hold"
        return Measured(ours, value=value, basis="equations", runs=0, note=note,
                        gate=V.not_testable(f"{claim.why_not_decisive}; here {shown}"))
    return Measured(ours, value=value, basis="equations", runs=0, note=note)


def analytic_ps_ratio(n: int) -> float:
    """The PS link's bytes per step over a ring worker's with one PS and ``n`` workers: N copies of the
    gradients against 2 (N - 1) / N of one, N^2 / (2 (N - 1)) (2 at N = 2, more beyond)."""
    return n * n / (2 * (n - 1))


def ps_extra_data(bandwidth: pd.DataFrame | None) -> Measured:
    """The paper's reason for PS's low efficiency, every process sending its data to the PS, as the bandwidth
    sweep's byte counters show it: per step, the PS's link (its busier direction) against a ring all-reduce
    worker's, at every (bandwidth, model, workers) point where the sweep ran the ring and a PS method. Not
    comparable whatever they show (claims.yaml, why_not_decisive): with one PS the ratio is the topology's
    arithmetic, :func:`analytic_ps_ratio`, so no run of ours could give the other outcome."""
    if bandwidth is None or bandwidth.empty:
        return Measured(NO, gate=V.not_measured("no bandwidth sweep in this profile"))
    b = bandwidth.assign(mb=bandwidth[["measured_sent_mb_per_step", "measured_received_mb_per_step"]].max(axis=1))
    keys = ["bandwidth", "model", "workers"]
    ring = b[b["method"] == "ring"][keys + ["mb"]]
    both = b[b["method"].isin(["ps_sync", "ps_async"])].merge(ring, on=keys, suffixes=("", "_ring"))
    if both.empty:
        return Measured(NO, gate=V.not_measured("the sweep ran no ring and PS method at the same point"))
    both = both.assign(ratio=both["mb"] / both["mb_ring"])
    parts = [f"{model} (N = {n}), {method}: PS link {g['mb'].min():.1f}-{g['mb'].max():.1f} MB vs ring worker "
             f"{g['mb_ring'].min():.1f}-{g['mb_ring'].max():.1f} MB"
             for (model, n, method), g in both.groupby(["model", "workers", "method"])]
    low = both.loc[both["ratio"].idxmin()]
    ours = (f"bytes per step, {len(both)} sweep point(s): " + "; ".join(parts)
            + f"; least ratio {low['ratio']:.2f} ({low['model']}, {low['method']}, {low['bandwidth']})")
    ns = sorted(int(n) for n in both["workers"].unique() if n > 1)
    analytic = f" ({', '.join(f'{analytic_ps_ratio(n):.2f} at N = {n}' for n in ns)})" if ns else ""
    return Measured(ours, runs=1, evidence="distributed-bandwidth", gate=V.not_comparable(
        f"true by construction with one PS: its link carries N copies of the gradients against a ring worker's "
        f"2 (N - 1) / N of one, N^2 / (2 (N - 1)) as much{analytic}, whatever the run; a sharded PS, one per "
        f"worker, would test it, relating PS efficiency to the bytes on the busiest link"))


def ps_bandwidth(bandwidth: pd.DataFrame | None) -> Measured:
    """The bandwidth effect on sync PS, which the paper says it evaluated and shows nothing of: sync PS's images/sec
    at each swept link rate, with the rate below which the link binds (``critical_mbps``). Not comparable whatever
    they show (claims.yaml, why_not_decisive): the paper states no outcome to compare with."""
    if bandwidth is None or bandwidth.empty:
        return Measured(NO, gate=V.not_measured("no bandwidth sweep in this profile"))
    ps = bandwidth[bandwidth["method"] == "ps_sync"]
    if ps.empty:
        return Measured(NO, gate=V.not_measured("the bandwidth sweep ran no sync PS"))
    parts = []
    ps = ps.sort_values("bandwidth_mbps") if "bandwidth_mbps" in ps else ps
    for (model, n), t in ps.groupby(["model", "workers"], sort=False):
        ips = t["total_images_per_sec"] if "total_images_per_sec" in t else pd.Series(float("nan"), index=t.index)
        rates = ", ".join(f"{b} {v:.1f}" for b, v in zip(t["bandwidth"], ips))
        binds = (f" (the link binds below {t['critical_mbps'].iloc[0]:.0f} Mbit/s)"
                 if "critical_mbps" in t and pd.notna(t["critical_mbps"].iloc[0]) else "")
        parts.append(f"{model} (N = {n}): {rates} images/sec{binds}")
    return Measured("sync PS: " + "; ".join(parts), runs=1, evidence="distributed-bandwidth", gate=V.not_comparable(
        "the paper says its sync PS experiments evaluated the bandwidth's effect but gives no figure, direction or "
        "size of it; on our sweep the link's arithmetic sets sync PS's rate below the critical rate and the rate "
        "does not change above it"))


def async_equal_start(ratios: pd.DataFrame | None, nmax: int) -> Measured:
    """The paper's reason for async PS matching sync PS (workers that start together with equal resources): what
    our grid shows of async / sync, gated: no grid of ours runs workers of unequal speed (claims.yaml)."""
    r = (ratios[ratios["workers"] == nmax].dropna(subset=["ps_async_over_ps_sync"])
         if ratios is not None and "ps_async_over_ps_sync" in ratios else pd.DataFrame())
    r = r[r["model"] != "tiny"] if len(r) else r
    ours = (f"equal workers only: async/sync images/sec at {nmax} workers: "
            + ", ".join(f"{m}: {v:.2f}" for m, v in zip(r["model"], r["ps_async_over_ps_sync"]))) if len(r) else NO
    return Measured(ours, runs=1 if len(r) else 0, gate=V.not_testable(
        "every worker of our grids runs at the same speed (the emulated ones wait the same t_grad, the real ones share "
        "a machine's cores): the reason is testable only with workers of unequal speed (an emulated grid with one "
        "worker's t_grad scaled, not built)"))


def table1_top5() -> Measured:
    """Table 1's top-5 accuracies: nothing here measures an ImageNet accuracy (claims.yaml, why_not_decisive)."""
    printed = ", ".join(f"{ref} {100 * paper.value(PAPER, f'top5_{ref}'):.1f} %" for ref in TABLE1.values())
    return Measured(NO, gate=V.not_testable(
        f"as printed: {printed}; no ImageNet accuracy is measured here (synthetic data, no ImageNet validation set, "
        "no trained weights) and the paper names no evaluation protocol"))


def stated_conclusions() -> dict[str, Measured]:
    """The conclusions' statements that no run measures (claims.yaml, why_not_decisive): what each would take."""
    return {"ps_easier_to_deploy": Measured(NO, gate=V.not_testable(
                "ease of deployment is not a quantity the paper or any run here measures (no setup time, steps or "
                "failures of deployment are reported)")),
            "no_method_best_in_all_aspects": Measured(NO, gate=V.not_testable(
                "its aspects are scaling (ring_scales_best), ease of deployment (measured by no one) and fault "
                "tolerance (fault_tolerance: true by construction here): it is decided only where all three are")),
            "choice_tradeoff_scaling_failure": Measured(NO, gate=V.not_testable(
                "advice: it weighs scaling (ring_scales_best) against tolerance of failures (fault_tolerance), "
                "each its own statement; the weighing itself is the user's")),
            "choice_by_model_size": Measured(NO, gate=V.not_testable(
                "advice, not a result: its measurable part (VGG16's scaling limited by the network) is vgg_worst's "
                "and model_vgg_worst's; PCIe speed and GPU placement are varied by no run of the paper's or ours"))}
