"""The staleness chapter's prose helpers: a practical guide and the glued numbers."""

from __future__ import annotations

from repro.core import verdicts as V
from repro.core.harness import Result
from repro.experiments.staleness.async_sgd import MITIGATIONS
from repro.experiments.staleness.paramtypes import StalenessParams
from repro.experiments.staleness.study import EQUIVALENCE_TOLERANCE
from repro.experiments.staleness.summaries import paper_period


def guide_markdown(result: Result[StalenessParams]) -> str:
    """A short practical guide, each point derived from this run's numbers (markdown bullets)."""
    p, t = result.params, result.tables
    thr = p.acceptable_drop
    out = []
    ps = t["period_summary"]
    for n, grp in ps[ps["workers"] > 1].groupby("workers"):
        if not (grp["period"] == 1).any():  # no k = 1 to compare with (the run's periods leave 1 out)
            continue
        ok = grp[grp["acceptable"]]
        kbest = int(ok["period"].max()) if len(ok) else 1
        r1 = float(grp[grp["period"] == 1]["rounds"].iloc[0])
        rk = float(grp[grp["period"] == kbest]["rounds"].iloc[0])
        out.append(f"- **Averaging period, N = {int(n)}**: the longest period within {100 * thr:.1f} points of "
                   f"k = 1 was k = {kbest} ({r1 / max(rk, 1):.0f}x fewer averaging rounds than k = 1).")
    ss = t["state_summary"]
    if len(ss):
        piv = ss.pivot(index="period", columns="state_mode", values="acc_mean")
        gain = (piv["weights+state"] - piv["weights"]).dropna()
        ratio = result.summary["state_optimizer_state_bytes"] / result.summary["weight_bytes"]
        worth = "worth its traffic here" if (gain > thr).any() else "not worth its traffic here"
        span = (f"{100 * gain.min():+.1f} points" if len(gain) == 1 or gain.min() == gain.max()
                else f"{100 * gain.min():+.1f} to {100 * gain.max():+.1f} points")
        out.append(f"- **Optimizer state ({p.state.optimizer})**: averaging it changed final accuracy by "
                   f"{span} and multiplies the bytes per round by "
                   f"{1 + ratio:.0f}: {worth}.")
    ts = t["tau_summary"]
    fixed = ts[ts["tau_dist"] == "fixed"]
    if len(fixed) > 1:
        fine = fixed[fixed["drop_vs_sync"] <= thr]
        tau_ok = int(fine["tau"].max()) if len(fine) else 0
        out.append(f"- **Asynchronous SGD** (plain SGD, lr {p.async_learning_rate:g}): fixed staleness up to tau = "
                   f"{tau_ok} stayed within {100 * thr:.1f} points of synchronous SGD; since mean staleness grows with "
                   f"the number of workers, that bounds the worker count at which plain async SGD is safe with this "
                   f"learning rate.")
    ms = t["mitigation_summary"]
    for tau_v, grp in ms[ms["tau"] > 0].groupby("tau"):
        g = grp.set_index("variant")["acc_mean"]
        g = g[[v for v in g.index if v in MITIGATIONS]]  # the learning-rate controls are no mitigation
        best = g.idxmax()
        none = g.get("none", float("nan"))
        out.append(f"- **Mitigation at mean tau = {int(tau_v)}** ({p.mitigation_tau_dist} delays): best was "
                   f"*{best}* ({g[best]:.3f} vs {none:.3f} without mitigation).")
    one = ps[ps["workers"] == 1]
    if len(one) and (ps["workers"] > 1).any():
        nmax = int(ps["workers"].max())
        many = ps[ps["workers"] == nmax]
        out.append(f"- **One machine first**: at equal epochs one machine reached "
                   f"{float(one['acc_mean'].iloc[0]):.3f}; N = {nmax} workers reached "
                   f"{float(many['acc_mean'].min()):.3f}-{float(many['acc_mean'].max()):.3f} "
                   f"depending on k, because they take {nmax}x fewer (larger-batch) steps per epoch. "
                   f"At equal emulated time "
                   f"(equal minibatch steps per worker, communication free) the claims table compares one machine "
                   f"with the N-worker runs that have enough epochs; the real cost of communication is not measured.")
    return "\n".join(out)


def glue_numbers(result: Result[StalenessParams]) -> None:
    """Headline numbers for the chapter's prose (names start with ``stale_``)."""
    from repro.book.report import glue

    p, s = result.params, result.summary
    ds = result.provenance["datasets"][0]
    tb = result.tables
    glue("stale_dataset", ds["name"])
    glue("stale_n_train", f"{ds['n_train']:,}")
    glue("stale_n_test", f"{ds['n_test']:,}")
    glue("stale_model", p.model)
    glue("stale_epochs", p.epochs)
    glue("stale_batch", p.batch_size)
    glue("stale_seeds", len(p.seeds))
    glue("stale_threshold_pts", 100 * p.acceptable_drop)
    glue("stale_eq_diff", f"{s['equivalence_max_abs_difference']:.1e}")
    glue("stale_eq_tol", f"{EQUIVALENCE_TOLERANCE:.0e}")
    glue("stale_weight_kb", s["weight_bytes"] / 1e3)
    glue("stale_state_ratio", s["state_optimizer_state_bytes"] / s["weight_bytes"])
    glue("stale_runs", s["runs_averaging"] + s["runs_async"])
    ps = tb["period_summary"]
    ps = ps[ps["drop_vs_k1"].notna()]  # a drop needs the N-worker run with k = 1 (periods without 1 have none)
    mid = ps[(ps["period"] >= paper_period()[0]) & (ps["period"] <= paper_period()[1]) & (ps["workers"] > 1)]
    glue("stale_mid_worst_drop_pts", 100 * float(mid["drop_vs_k1"].max()) if len(mid) else float("nan"))
    big = ps[(ps["workers"] > 1) & (ps["period"] > 1)]
    if len(big):
        worst = big.loc[big["drop_vs_k1"].idxmax()]
        glue("stale_worst_drop_pts", 100 * float(worst["drop_vs_k1"]))
        glue("stale_worst_drop_where", f"N = {int(worst.workers)}, k = {int(worst.period)}")
    glue("stale_sync_acc", s.get("sync_accuracy", float("nan")))
    glue("stale_max_tau", s.get("max_tau", 0))
    glue("stale_max_tau_acc_fixed", s.get("max_tau_accuracy", {}).get("fixed", float("nan")))
    glue("stale_mitigation_tau", s.get("mitigation_tau", 0))
    macc = s.get("mitigation_accuracy", {})
    glue("stale_mitigation_best", max(macc, key=macc.get) if macc else "-")
    glue("stale_mitigation_none_acc", macc.get("none", float("nan")))
    glue("stale_mitigation_best_acc", max(macc.values()) if macc else float("nan"))
    th = s.get("thread_mean_staleness", {})
    glue("stale_thread_means", ", ".join(f"{v:.2f} for N = {k}" for k, v in th.items()) or "not run")
    claims = tb["claims"]
    glue("stale_claims_reproduced", int(sum(V.category_of(v) is V.Category.REPRODUCED for v in claims["verdict"])))
    glue("stale_claims_total", int(len(claims)))
