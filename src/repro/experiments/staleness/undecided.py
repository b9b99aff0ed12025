"""The staleness claims that no run of ours decides (``decisive: false`` in ``claims.yaml``): what each run shows
for them, always behind a gate (`savchenko2019`, digest §5).

:func:`state_measure` (the state is about network load, not accuracy), :func:`one_machine_measure` (the advice
turns on communication, which is not measured), :func:`sync_no_staleness_measure` (zero staleness by the
definition of synchronous averaging) and :func:`benefit_earlier_measure` (a question of time, and the
emulation has no clock). :mod:`.verdicts` gathers them with the decisive judges.
"""

from __future__ import annotations

import pandas as pd

from repro.core import verdicts as V
from repro.core.claims import Measured
from repro.experiments.staleness.paramtypes import StalenessParams


def pts(v: float) -> str:
    return f"{100 * v:+.1f} pts"


def nothing(ours: str, gate: V.Verdict) -> Measured:
    """A claim with nothing of ours behind it (not testable here / not measured)."""
    return Measured(ours=ours, gate=gate, basis="none", runs=0)


def state_measure(ss: pd.DataFrame, p: StalenessParams, runs: int) -> Measured:
    """Weights+state vs weights-only accuracy, reported; the claim is about network load (not comparable)."""
    if not len(ss):
        return nothing("no state comparison in this profile", V.not_measured("no state_periods in this profile"))
    piv = ss.pivot(index="period", columns="state_mode", values="acc_mean")
    gains = (piv["weights+state"] - piv["weights"]).dropna()
    return Measured(ours=f"{p.state.optimizer}, N = {p.state.workers}: "
                         "weights+state minus weights-only accuracy: "
                         + "; ".join(f"k = {int(k)}: {pts(g)}" for k, g in gains.items()), runs=runs,
                    gate=V.not_comparable("the paper's sentence is about what must be distributed and the network load "
                                          "it adds, not about accuracy; our accuracy comparison is shown for context"))


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


def one_machine_measure(t: dict, runs: int) -> Measured:
    """"Train on one machine as long as you can", shown at equal emulated time (equal minibatch steps per worker,
    communication free); always a gate: the cost of communication that decides the advice is not measured."""
    ps, hist = t["period_summary"], t.get("averaging_history")
    if not (len(ps[ps["workers"] == 1]) and (ps["workers"] > 1).any()) or hist is None or "local_steps" not in hist:
        return nothing("no single-worker run beside a multi-worker one in this profile",
                       V.not_testable("needs an N = 1 and an N > 1 run in this profile"))
    pairs, unpaired = _equal_time_pairs(hist)
    parts = [f"N = {n}: one machine {a1:.3f} after {e} epoch(s) ({s1:.0f} steps) vs best k = {k}: {an:.3f} after "
             f"{n * e} epochs ({sn:.0f} steps per worker)" for n, e, a1, s1, k, an, sn in pairs]
    if unpaired:
        parts.append(f"N = {', '.join(map(str, unpaired))}: fewer epochs than N, no equal-time pair")
    ours = "equal emulated time (minibatch steps per worker; communication free): " + "; ".join(parts)
    if not pairs:
        return Measured(ours=ours, runs=runs, gate=V.not_comparable(
            "no N-worker run has N x an epoch of the one machine: epochs < N for every N"))
    lead = ", ".join(f"N = {n}: {pts(an - a1)} vs one machine" for n, e, a1, s1, k, an, sn in pairs)
    return Measured(ours=ours, runs=runs, gate=V.not_comparable(
        f"with free communication {lead}; whether communication eats a lead or widens a gap is not measured"))


def sync_no_staleness_measure(ts: pd.DataFrame, runs: int) -> Measured:
    """"No staleness in synchronous averaging": zero by the definition of our averaging (every round starts from
    the average) and of the emulation's tau = 0 (shown where the run has it); a gate, never a finding."""
    sync = ts[ts["tau"] == 0] if len(ts) and "tau" in ts else ts.iloc[:0]
    emu = (f"; the emulation's tau = 0 (synchronous SGD): mean staleness {float(sync['mean_staleness'].iloc[0]):.2f}"
           if len(sync) and "mean_staleness" in sync else "")
    return Measured(ours="averaging: every round starts from the weights all workers have just averaged" + emu,
                    runs=runs, gate=V.not_comparable(
                        "true by construction: synchronous averaging and the emulation's tau = 0 compute every "
                        "gradient on the weights it is applied to, so their staleness is 0 by definition"))


def benefit_earlier_measure() -> Measured:
    """"Workers benefit from the others' updates earlier than with synchronous SGD": a question of time that
    needs clocked async and sync runs on workers of unequal speed; nothing of ours answers it."""
    return nothing("the emulation counts arrivals, not time; the thread run has no synchronous counterpart",
                   V.not_testable("needs asynchronous and synchronous runs on a clock, with workers of unequal speed"))
