"""What the run measured for each claim of ``claims.yaml`` (`savchenko2019`, digest §5).

:func:`measurements` computes one :class:`~repro.core.claims.Measured` per claim id from the
run's written tables, summary, parameters and provenance only, so a stored run can be
re-judged (:func:`repro.core.harness.rejudge`). The verdicts themselves come from
:func:`repro.core.claims.ledger`; :func:`claims_table` is the chapter's view of that ledger.

On a pipeline check (``pipeline_check``, e.g. the smoke profile) every stochastic claim that
would be compared becomes ``not comparable (<why>)``; exact and structural checks keep theirs.
"""

from __future__ import annotations

import pandas as pd

from repro.core import claims, paper
from repro.core.claims import Measured
from repro.experiments.staleness.async_sgd import MITIGATIONS
from repro.experiments.staleness.study import EQUIVALENCE_STEPS, EQUIVALENCE_TOLERANCE
from repro.experiments.staleness.summaries import paper_period

NAME = "staleness"
TIE = 0.005  # accuracy differences below half a percentage point are treated as ties (seed noise of these small runs)
THREAD_TOLERANCE = 0.5  # |mean staleness - N| allowed for "mean staleness equals N"
MITIGATION_IDS = {"scaling": "mitigation_scaling", "soft_sync": "mitigation_soft_sync",
                  "bounded": "mitigation_bounded", "scaling+soft_sync": "mitigation_scaling_soft_sync"}


def _pts(v: float) -> str:
    return f"{100 * v:+.1f} pts"


def _none(ours: str, gate: str) -> Measured:
    """A claim with nothing of ours behind it (not testable here / not measured)."""
    return Measured(ours=ours, gate=gate, basis="none", runs=0)


# k = 1 is arithmetic, not an experiment: what the check confirms is our averaging code ('consistent')
IDENTITY = ("an identity of plain SGD: the mean of N workers' steps on N minibatches is one step on their union; "
            "the run confirms our averaging code")


def equivalence(summary: dict, params: dict) -> dict:
    """The k = 1 check as the run recorded it (older runs: rebuilt from the parameters and the summary)."""
    if "equivalence" in summary:
        return summary["equivalence"]
    n_eq = max(2, max(params["workers"]))
    return {"workers": n_eq, "rounds": EQUIVALENCE_STEPS, "global_batch": n_eq * params["batch_size"],
            "max_abs_weight_difference": summary["equivalence_max_abs_difference"], "tolerance": EQUIVALENCE_TOLERANCE}


def cheap_reason(params: dict, provenance: dict) -> str | None:
    """Why the run is too small to judge accuracy or measured staleness (None: it is not)."""
    if not params["pipeline_check"]:
        return None
    n_train = provenance["datasets"][0]["n_train"]
    return f"{provenance['profile']} profile: {params['epochs']} epoch(s) on {n_train:,} images, a pipeline check"


def _averaging(t: dict, summary: dict, p: dict, runs: int) -> dict[str, Measured]:
    """A round per minibatch, the k = 1 equivalence, optimizer-state traffic."""
    eq = equivalence(summary, p)
    diff = eq["max_abs_weight_difference"]
    out = {"k1_equals_single_machine": Measured(
        ours=f"max |w_avg - w_single| = {diff:.1e} after {eq['rounds']} rounds (N = {eq['workers']}, plain SGD, "
             f"global batch {eq['global_batch']}, small CNN)",
        holds=diff <= eq["tolerance"], basis="equations", runs=0, note=IDENTITY if diff <= eq["tolerance"] else
        f"max difference {diff:.1e} > {eq['tolerance']:.0e}")}
    ps = t["period_summary"]
    nmax = int(ps["workers"].max())
    row_k1 = ps[(ps["workers"] == nmax) & (ps["period"] == 1)]
    if nmax > 1 and len(row_k1):
        kmax = int(ps[ps["workers"] == nmax]["period"].max())
        row_kmax = ps[(ps["workers"] == nmax) & (ps["period"] == kmax)]
        fin = t["averaging_final"]
        grid = fin[(fin["part"] == "grid") & (fin["workers"] == nmax)]
        steps = int(grid[grid["period"] == 1]["local_steps"].iloc[0])
        r1 = float(row_k1["rounds"].iloc[0])
        # our averaging sends a round per minibatch by design: counting them confirms the code, not the paper
        out["k1_round_per_minibatch"] = Measured(
            ours=f"N = {nmax}: k = 1 needs {r1:.0f} rounds for {steps} local steps ({float(row_k1['comm_mb'].iloc[0]):.2f} "
                 f"MB per worker and direction); k = {kmax}: {float(row_kmax['rounds'].iloc[0]):.0f} rounds "
                 f"({float(row_kmax['comm_mb'].iloc[0]):.2f} MB)",
            gate="not comparable (true by construction of our averaging: "
                 f"{'rounds = local steps' if r1 == steps else 'rounds != local steps, a bug'})", runs=runs)
    else:
        out["k1_round_per_minibatch"] = _none("no multi-worker run", "not testable here (no run with N > 1)")
    ratio = summary["state_optimizer_state_bytes"] / summary["weight_bytes"]
    wb = summary["weight_bytes"]
    out["state_adds_traffic"] = Measured(
        ours=f"{p['state_optimizer']} state is {ratio:.0f}x the weights: a round moves "
             f"{(1 + ratio) * wb / 1e6:.3f} MB instead of {wb / 1e6:.3f} MB per worker",
        gate="not comparable (true by construction: averaging the state sends its bytes too; the sizes are "
             f"{'counted' if ratio > 0 else 'zero: no state'}, nothing is measured)", runs=runs)
    return out


def period_measure(ps: pd.DataFrame, thr: float, runs: int) -> Measured:
    """"10-20 minibatches still work": every N > 1 must have both ends (k = 10 and k = 20) run, and every
    k in 10..20 run must lose at most ``thr`` (acceptable_drop) against k = 1 with the same N."""
    lo, hi = paper_period()
    multi = ps[ps["workers"] > 1]
    mid = multi[(multi["period"] >= lo) & (multi["period"] <= hi)]
    if not len(mid):
        return _none("no period between 10 and 20 in this profile",
                     "not testable here (no period in 10-20 in this profile)")
    parts = [f"N = {int(r.workers)}, k = {int(r.period)}: {_pts(-r.drop_vs_k1)}" for r in mid.itertuples()]
    bad = mid[~(mid["drop_vs_k1"] <= thr + 1e-12)]  # a missing k = 1 reference (NaN) is not acceptable either
    missing = [f"N = {int(n)}: k = {k}" for n in sorted(multi["workers"].unique()) for k in (lo, hi)
               if not ((mid["workers"] == n) & (mid["period"] == k)).any()]
    gate = None
    if bad.empty and missing:  # "10-20" is a range: both ends must be run for every N
        tested = sorted(int(k) for k in mid["period"].unique())
        gate = (f"partly (acceptable at k = {', '.join(map(str, tested))}; the range {lo}-{hi} needs k = {lo} and "
                f"k = {hi} for every N, missing {', '.join(missing)})")
    return Measured(ours=f"accuracy vs k = 1 (acceptable: within {100 * thr:.1f} pts): " + "; ".join(parts),
                    holds=bad.empty, gate=gate, runs=runs, note=", ".join(
                        f"N = {int(r.workers)}, k = {int(r.period)} loses {100 * r.drop_vs_k1:.1f} pts > {100 * thr:.1f}"
                        for r in bad.itertuples()))


def _period_and_state(t: dict, p: dict, runs: int) -> dict[str, Measured]:
    """The 10-20 period and whether averaging the optimizer state matters (accuracy, stochastic)."""
    thr = p["acceptable_drop"]
    ss = t["state_summary"]
    out = {"period_10_20_acceptable": period_measure(t["period_summary"], p["acceptable_drop"], runs)}
    if len(ss):
        piv = ss.pivot(index="period", columns="state_mode", values="acc_mean")
        gains = (piv["weights+state"] - piv["weights"]).dropna()
        ok = bool((gains > thr).any())
        out["state_averaging_needed"] = Measured(
            ours=f"{p['state_optimizer']}, N = {p['state_workers']}: weights+state minus weights-only accuracy: "
                 + "; ".join(f"k = {int(k)}: {_pts(g)}" for k, g in gains.items()),
            holds=ok, runs=runs, note="" if ok else
            f"averaging the {p['state_optimizer']} state gains at most {100 * gains.max():.1f} pts, threshold {100 * thr:.1f}")
    else:
        out["state_averaging_needed"] = _none("no state comparison in this profile",
                                              "not measured (no state_periods in this profile)")
    return out


def _threads(t: dict) -> Measured:
    """Mean staleness = N in the real multi-threaded run (one run per N)."""
    th = t["thread_staleness"]
    if not len(th):
        return _none("thread run skipped", "not measured (thread_updates = 0)")
    ratio = paper.value("savchenko2019", "async_mean_staleness_per_worker")  # mean staleness / N = 1
    # The paper's count (the one under which round-robin workers have mean exactly N): the version an update
    # creates minus the version its gradient read, i.e. our log's staleness (other workers' updates since the
    # read, N - 1 for round robin) plus the update itself.
    ok = all(abs(r.mean + 1 - ratio * r.workers) <= THREAD_TOLERANCE for r in th.itertuples())
    txt = "; ".join(f"N = {int(r.workers)}: mean {r.mean + 1:.2f}" for r in th.itertuples())
    return Measured(ours=txt + " (staleness = version created - version read; our log's updates-since-read + 1)",
                    holds=ok, runs=1, note="" if ok else ", ".join(
                        f"N = {int(r.workers)}: {r.mean + 1:.2f}" for r in th.itertuples())
                    + f"; within {THREAD_TOLERANCE} of N required")


def _staleness_hurts(t: dict, p: dict, runs: int) -> Measured:
    ts, thr = t["tau_summary"], p["acceptable_drop"]
    fixed = ts[ts["tau_dist"] == "fixed"] if (ts["tau_dist"] == "fixed").any() else ts
    if not (len(fixed) and (fixed["tau"] > 0).any()):
        return _none("no tau > 0 in this profile", "not measured (no tau > 0 in this profile)")
    top = fixed[fixed["tau"] == fixed["tau"].max()].iloc[0]
    over = fixed[(fixed["tau"] > 0) & (fixed["drop_vs_sync"] > thr)]
    first = f"; first tau losing more than {100 * thr:.1f} pts: {int(over['tau'].min())}" if len(over) else ""
    return Measured(ours=f"tau = {int(top.tau)} ({top.tau_dist}): {_pts(-top.drop_vs_sync)} vs tau = 0{first}",
                    holds=bool(len(over)), runs=runs, note="" if len(over) else
                    f"no tau up to {int(fixed['tau'].max())} loses more than {100 * thr:.1f} pts")


def _lr_mitigation(row, tmax: int, dist: str, runs: int) -> Measured:
    """scaling / soft_sync / scaling+soft_sync: beat plain async SGD at the same lr *and* its lr control."""
    g = float(row["gain_vs_none"])
    c = float(row.get("gain_vs_control", float("nan")))
    ours = f"tau = {tmax} ({dist}): {_pts(g)} vs no mitigation"
    if c == c:
        ours += f"; {_pts(c)} vs its lr control (plain async SGD at lr x {float(row.get('lr_factor_control', 0)):.3g})"
    if g <= TIE:
        return Measured(ours=ours, holds=False, runs=runs, note=f"{_pts(g)}, not above the {100 * TIE:.1f}-pt tie band")
    if c != c:
        return Measured(ours=ours, runs=runs, gate="not comparable (beats plain async SGD at the same learning rate, "
                                                  "but no learning-rate control was run: the gain may be a mere "
                                                  "learning-rate change)")
    if c <= TIE:
        return Measured(ours=ours, runs=runs, gate=f"partly (beats plain async SGD at the same learning rate, but not "
                                                   f"plain async SGD at the matching lower learning rate: {_pts(c)})")
    return Measured(ours=ours, holds=True, runs=runs)


def _bounded(row, none_row, tmax: int, dist: str, runs: int) -> Measured:
    """bounded: compared at equal emulated time, its waiting charged (older runs: not charged)."""
    g = float(row["gain_vs_none"])
    ours = f"tau = {tmax} ({dist}): {_pts(g)} vs no mitigation"
    if "wait_time" not in row.index or row["wait_time"] != row["wait_time"]:
        gate = None
        if g > TIE:  # accuracy per update, but bounding costs waiting this run did not charge
            gate = ("not comparable (accuracy per update improves, but the emulation delays the fastest workers for "
                    "free: the waiting that bounding costs is not charged)")
        return Measured(ours=ours, holds=g > TIE, gate=gate, runs=runs,
                        note="" if g > TIE else f"{_pts(g)}, not above the {100 * TIE:.1f}-pt tie band")
    t_b, t_0 = float(row["emulated_time"]), float(none_row["emulated_time"])
    ours += (f" at equal emulated time: bounded {float(row['arrivals']):.0f} gradients + "
             f"{float(row['wait_time']):.0f} slots of waiting charged = {t_b:.0f} slots "
             f"({float(row['held_back']):.0f} arrivals held back); no mitigation {t_0:.0f} slots")
    if t_b > t_0 + 1e-6:
        return Measured(ours=ours, runs=runs, gate="not comparable (bounded used more emulated time than no mitigation)")
    return Measured(ours=ours, holds=g > TIE, runs=runs,
                    note="" if g > TIE else f"{_pts(g)} at equal emulated time, not above the {100 * TIE:.1f}-pt tie band")


def _combined_best(ms: pd.DataFrame, runs: int) -> Measured:
    """scaling+soft_sync is the best mitigation (within TIE) at every tau > 0 and beats its lr control."""
    gaps, ctrl = [], []
    for tau_v, grp in ms[ms["tau"] > 0].groupby("tau"):
        g = grp.set_index("variant")
        best = g.loc[[v for v in MITIGATIONS if v in g.index], "acc_mean"]  # not the lr controls
        if "scaling+soft_sync" in best.index:
            gaps.append((int(tau_v), best.idxmax(), float(best["scaling+soft_sync"] - best.max())))
            ctrl.append(float(g.loc["scaling+soft_sync"].get("gain_vs_control", float("nan"))))
    ok = all(gap >= -TIE for _, _, gap in gaps)
    ours = "; ".join(f"tau = {tv}: best {b}, combined {_pts(gap)} vs best" for tv, b, gap in gaps)
    if not ok:
        return Measured(ours=ours, holds=False, runs=runs,
                        note=", ".join(f"best at tau = {tv}: {b}" for tv, b, gap in gaps if gap < -TIE))
    if not all(c == c and c > TIE for c in ctrl):
        return Measured(ours=ours, runs=runs, gate="partly (best of the mitigations, but not shown to beat plain "
                                                   "async SGD at its matching learning rate at every tau)")
    return Measured(ours=ours, holds=True, runs=runs)


def _mitigations(t: dict, p: dict, runs: int) -> dict[str, Measured]:
    ms = t["mitigation_summary"]
    missing = "not measured (no mitigation run with tau > 0 in this profile)"
    out = {cid: _none("–", missing) for cid in (*MITIGATION_IDS.values(), "scaling_soft_sync_best")}
    if not (len(ms) and (ms["tau"] > 0).any()):
        return out
    tmax = int(ms["tau"].max())
    at = ms[ms["tau"] == tmax].set_index("variant")
    dist = p["mitigation_tau_dist"]
    for variant in [v for v in MITIGATIONS if v != "none" and v in at.index]:
        row = at.loc[variant].copy()
        if "lr_control:" + variant in at.index and "lr_factor" in at.columns:
            row["lr_factor_control"] = at.loc["lr_control:" + variant, "lr_factor"]
        out[MITIGATION_IDS[variant]] = (_bounded(row, at.loc["none"], tmax, dist, runs) if variant == "bounded"
                                        else _lr_mitigation(row, tmax, dist, runs))
    if "scaling+soft_sync" in at.index and len(at) > 1:
        out["scaling_soft_sync_best"] = _combined_best(ms, runs)
    return out


def _equal_time_pairs(hist: pd.DataFrame) -> tuple[list[tuple], list[int]]:
    """One machine after E epochs vs each N-worker run after N x E epochs (same minibatch steps per worker),
    best k, largest E with N x E <= epochs: ([(N, E, acc_1, steps_1, k, acc_N, steps_N)], N without a pair)."""
    g = hist[hist["part"] == "grid"].groupby(["workers", "period", "epoch"])
    acc = g.agg(acc=("test_accuracy", "mean"), steps=("local_steps", "mean")).reset_index()
    epochs = int(acc["epoch"].max())
    one = acc[acc["workers"] == 1].set_index("epoch")
    pairs, unpaired = [], []
    for n in sorted(int(w) for w in acc["workers"].unique() if w > 1):
        e1 = epochs // n
        if e1 < 1:
            unpaired.append(n)
            continue
        cand = acc[(acc["workers"] == n) & (acc["epoch"] == n * e1)].sort_values("acc").iloc[-1]
        pairs.append((n, e1, float(one.loc[e1, "acc"]), float(one.loc[e1, "steps"]), int(cand.period),
                      float(cand.acc), float(cand.steps)))
    return pairs, unpaired


def _one_machine(t: dict, runs: int) -> Measured:
    """"Train on one machine as long as you can", at equal emulated time: equal minibatch steps per worker
    (workers in parallel, communication free, which favours the distributed runs)."""
    ps, hist = t["period_summary"], t.get("averaging_history")
    if not (len(ps[ps["workers"] == 1]) and (ps["workers"] > 1).any()) or hist is None or "local_steps" not in hist:
        return _none("no single-worker run in this profile", "not testable here (no N = 1 run in this profile)")
    pairs, unpaired = _equal_time_pairs(hist)
    parts = [f"N = {n}: one machine {a1:.3f} after {e} epoch(s) ({s1:.0f} steps) vs best k = {k}: {an:.3f} after "
             f"{n * e} epochs ({sn:.0f} steps per worker)" for n, e, a1, s1, k, an, sn in pairs]
    if unpaired:
        parts.append(f"N = {', '.join(map(str, unpaired))}: fewer epochs than N, no equal-time pair")
    ours = "equal emulated time (minibatch steps per worker; communication free): " + "; ".join(parts)
    if not pairs:
        return Measured(ours=ours, runs=runs, gate="not comparable (no N-worker run has N x an epoch of the one "
                                                   "machine: epochs < N for every N)")
    ahead = [(n, an - a1) for n, e, a1, s1, k, an, sn in pairs if an > a1 + TIE]
    if ahead:
        return Measured(ours=ours, runs=runs, gate="not comparable (at equal emulated time with free communication "
                        + ", ".join(f"N = {n} is ahead by {100 * d:.1f} pts" for n, d in ahead)
                        + "; whether communication eats that lead is not measured)")
    if unpaired:
        return Measured(ours=ours, runs=runs, gate=f"partly (one machine at least as accurate at equal emulated time "
                                                   f"for N = {', '.join(str(q[0]) for q in pairs)}; "
                                                   f"N = {', '.join(map(str, unpaired))} not compared)")
    return Measured(ours=ours, holds=True, runs=runs)


def measurements(tables: dict, summary: dict, params: dict, provenance: dict) -> dict[str, Measured]:
    """One measurement per claim id of ``claims.yaml``, from what the run wrote."""
    runs = len(params["seeds"])
    out = {"data_parallel_preferred": _none("only data parallelism is implemented here",
                                            "not testable here (no model-parallel implementation)"),
           "async_higher_throughput": _none("the emulation has no clock",
                                            "not testable here (needs the async parameter-server run)"),
           "staleness_equals_n_cluster": _none(
               "not measured yet: the async parameter-server run that logs per-update staleness is another experiment",
               "not measured yet (needs the async parameter-server run)"),
           **_averaging(tables, summary, params, runs), **_period_and_state(tables, params, runs),
           "staleness_equals_n_threads": _threads(tables), "staleness_hurts": _staleness_hurts(tables, params, runs),
           **_mitigations(tables, params, runs), "one_machine_first": _one_machine(tables, runs)}
    cheap = cheap_reason(params, provenance)
    for cid, claim in claims.load(NAME).items():
        if cheap and claim.stochastic and out[cid].gate is None:
            out[cid].gate, out[cid].note = f"not comparable ({cheap})", ""
    return out


def claims_table(ledger: pd.DataFrame) -> pd.DataFrame:
    """The chapter's claims table: the ledger's rows (same verdicts) without the bibliography key."""
    return ledger.drop(columns="paper").rename(columns={"paper_value": "paper"})[["claim", "paper", "ours", "verdict", "evidence", "basis",
                                                             "runs"]]
