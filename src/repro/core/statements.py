"""Verdicts that hold on a rerun, and one row per paper statement.

**A rerun.** A run's ledger judges a random quantity on the seeds of one process. Across runs, a decided
verdict of a stochastic claim on a basis with runs (``measured``, ``emulated``: an emulation's repeats inside one
process are not independent runs either) stands only when another finished run of the same
experiment, profile and parameters (a separate process) decided it the same way (:func:`confirm`): with no
such run the row is *not comparable* (one run), with a run that decided otherwise it is *unstable* and shows
both runs' numbers.

**A statement.** Several claims can judge one sentence of a paper (``claims.yaml``'s ``statement``: a measured
row, an emulated one, the model's, in several profiles). The front page counts statements, not rows
(:func:`statements`): a statement is *decided* when one of its rows is (the strongest basis is its headline:
measured, then emulated, then model, then the paper's own equations) and no other decided row says the
opposite (else *decided both ways*, counted as decided by neither), *undecidable by design* when every
claim behind it is ``decisive: false`` (each says why), else *not decided here* (the data or hardware it needs
is named by its experiment's ``profile.yaml``, ``to_decide``). Its tier is what the paper did
(``paper_did``: measured, derived, stated).

**Independent decisions.** Several statements can be decided by one quantity (the thesis' equations on one
network's two timings decide five statements about that network): a claim names it (``claims.yaml``'s
``decided_by``), a decided statement carries its deciding claim's (``decided_by``; else the statement itself), and
:func:`counts` gives the independent decisions beside the decided statements: one per quantity.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from repro.core import errors, results
from repro.core import ledger as _ledger
from repro.core import verdicts as V

StatementsError = errors.BadInput  # ledgers that cannot be put together (one line)

BY_DESIGN, ELSEWHERE, DECIDED = "undecidable by design", "not decided here", "decided"
CONFLICT = "decided both ways"  # decided rows that disagree (one agrees with the paper, another does not)
STATES = (DECIDED, CONFLICT, BY_DESIGN, ELSEWHERE)
AGREES = frozenset({V.Category.REPRODUCED.value, V.Category.CONSISTENT.value})
PAPER_DID = ("measured", "derived", "stated")
UNDECLARED = "undeclared"


def _decided(category: str) -> bool:
    return V.Category(category) in V.DECISIVE


def _true(value) -> bool:
    return str(value).strip().lower() in ("true", "1")


def same_protocol_runs(run_dir: Path) -> list[Path]:
    """The other finished runs beside ``run_dir`` (same experiment and profile) made with the same parameters,
    newest first: the independent reruns a decided random verdict is checked against."""
    run_dir = Path(run_dir)
    params = results.read_provenance(run_dir).get("parameters")
    out = []
    for other in sorted(run_dir.parent.iterdir(), reverse=True):
        if other == run_dir or not other.is_dir() or other.name.startswith(".") or not (other / "ledger.csv").is_file():
            continue
        record = json.loads((other / "provenance.json").read_text(encoding="utf-8"))
        if record.get("status", "complete") == "complete" and record.get("parameters") == params:
            out.append(other)
    return out


def _digests(run_dir: Path) -> dict:
    """The claim digests a run recorded when it measured (empty where it recorded none)."""
    record = results.read_provenance(run_dir)
    return (record.get("claims_measured_under") or {}).get("digests") or {}


def confirm(newest: pd.DataFrame, others: list[tuple], digests: dict | None = None) -> pd.DataFrame:
    """The newest run's ledger rows, each decided stochastic row of our runs (measured, emulated) checked against
    ``others`` (``(run id, its ledger[, the claim digests it measured under])``, same protocol:
    :func:`same_protocol_runs`): kept when
    another run decided it the same way (the detail names that run), *unstable* when one decided otherwise, *not
    comparable* when none decided it. Where ``digests`` (today's, by claim id) is given, another run counts for a
    claim only if it measured under today's digest of it (a run measured under an older rule confirms nothing)."""
    out = newest.copy()
    for i, r in newest.iterrows():
        if V.Basis(r["basis"]) not in V.RUN_BASES or not _true(r["stochastic"]) or not _decided(r["category"]):
            continue
        seen = [(o_run[0], o) for o_run in others for _, o in o_run[1][o_run[1]["id"] == r["id"]].iterrows()
                if _decided(o["category"]) and _same_rule(o_run, r["id"], digests)]
        now = f"{r['ours']} gave {r['verdict']}"
        if not seen:
            v = V.not_comparable(f"one independent run: {now}; a random quantity is decided only when a second run, "
                                 "in a separate process, gives the same verdict: none yet")
        elif against := [(run, o) for run, o in seen if o["category"] != r["category"]]:
            run, o = against[0]
            v = V.Verdict(V.Category.UNSTABLE, f"this run: {now}; run {run}: {o['ours']} gave {o['verdict']}")
        else:
            v = V.parse(r["verdict"]).with_note(f"confirmed by run {seen[0][0]} ({seen[0][1]['ours']})")
        out.loc[i, ["verdict", "category"]] = [str(v), v.category.value]
    return out


def _same_rule(other: tuple, claim_id: str, digests: dict | None) -> bool:
    return digests is None or len(other) < 3 or other[2].get(claim_id) == digests.get(claim_id)


def confirmed_ledger(run_dir: Path) -> pd.DataFrame:
    """``run_dir``'s ``ledger.csv`` (every stored column, as text) after :func:`confirm` against its reruns (those
    measured under today's claims; a rerun whose ledger an older checkout wrote, without today's columns, is
    left out)."""
    from repro.core import claims

    run_dir = Path(run_dir)
    others = []
    for p in same_protocol_runs(run_dir):
        try:
            others.append((p.name, _ledger.read_stored(p / "ledger.csv"), _digests(p)))
        except _ledger.LedgerError:
            continue
    experiment = results.read_provenance(run_dir)["experiment"]
    return confirm(_ledger.read_stored(run_dir / "ledger.csv"), others, claims.digests(experiment))


def _strength(row) -> int:
    return _ledger.BASIS_STRENGTH.get(row["basis"], -1)


def quantity_of(experiment: str, claim_id: str) -> str:
    """The quantity that decides claim ``claim_id`` of ``experiment`` where it decides others too (``decided_by``),
    else ""; "" for a claim this checkout does not know."""
    from repro.core import claims

    try:
        found = claims.load(str(experiment)).get(str(claim_id))
    except (errors.ReproError, ImportError):
        return ""
    return found.decided_by if found is not None else ""


def statements(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per statement of ``rows`` (ledgers of several experiments and profiles, columns
    :data:`repro.core.ledger.STORED` and ``experiment``, ``page``, ``profile``), in first-seen order: paper,
    statement, claim (its first claim's text), paper_value, paper_did, state (:data:`STATES`), headline
    (the deciding row's verdict, else ""), category, basis, headline_claim (the text of the claim of that row),
    decided_by (a decided statement's quantity: its deciding claim's ``decided_by``, else the statement itself; else
    ""), and ``rows`` (every row behind it, strongest first)."""
    if rows.empty:
        return pd.DataFrame(columns=["paper", "statement", "claim", "paper_value", "paper_did", "state", "headline",
                                     "category", "basis", "headline_claim", "decided_by", "experiment", "rows"])
    out = []
    for stmt, g in rows.groupby("statement", sort=False):
        ranked = sorted((r for _, r in g.iterrows()), key=lambda r: (not _decided(r["category"]), -_strength(r)))
        head = ranked[0]
        decided = {r["category"] in AGREES for r in ranked if _decided(r["category"])}
        if len(decided) > 1:
            state = CONFLICT  # counted as decided by neither: the rows say both
        elif _decided(head["category"]):
            state = DECIDED
        elif not any(_true(r["decisive"]) for r in ranked):
            state = BY_DESIGN
        else:
            state = ELSEWHERE
        did = next((r["paper_did"] for r in ranked if str(r["paper_did"]).strip()), UNDECLARED)
        first = g.iloc[0]
        out.append({"paper": first["paper"], "statement": stmt, "claim": first["claim"],
                    "paper_value": first["paper_value"], "paper_did": did, "state": state,
                    "headline": head["verdict"] if state == DECIDED else "",
                    "category": head["category"] if state == DECIDED else "", "basis": head["basis"],
                    "headline_claim": head["claim"],
                    "decided_by": (quantity_of(head["experiment"], head["id"]) or str(stmt)) if state == DECIDED
                    else "",
                    "experiment": first["experiment"], "rows": [dict(r) for r in ranked]})
    return pd.DataFrame(out)


INDEPENDENT = "independent decisions"  # the column of counts beside decided: one per deciding quantity


def counts(st: pd.DataFrame) -> pd.DataFrame:
    """Statements per tier (what the paper did) and state, with totals: rows measured, derived, stated (and
    undeclared where any), columns decided, the independent decisions among them (statements decided by one
    quantity count once), decided both ways, undecidable by design, not decided here, all."""
    tiers = [t for t in (*PAPER_DID, UNDECLARED) if t in set(st["paper_did"])]
    table = pd.crosstab(st["paper_did"], st["state"]).reindex(index=tiers, columns=list(STATES), fill_value=0)
    table["all"] = table.sum(axis=1)
    table.loc["all"] = table.sum()
    decided = st[st["state"] == DECIDED]
    by = decided["decided_by"] if "decided_by" in decided else decided["statement"]
    independent = {t: by[decided["paper_did"] == t].nunique() for t in tiers}
    table.insert(1, INDEPENDENT, [independent.get(t, by.nunique()) for t in table.index])
    return table.astype(int)
