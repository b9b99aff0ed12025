"""The claims ledger: every claim of the papers, our measured value, a verdict, its basis, the evidence.

Each experiment writes ``ledger.csv`` (columns :data:`COLUMNS`) into its run directory; the
book's front page is generated from those files, so it cannot drift from the data.

Every row has a **basis** (:class:`repro.core.verdicts.Basis`): ``measured`` (our runs on real
hardware), ``emulated`` (our runs on a declared emulation of the paper's hardware), ``model`` (an
analytic model of the paper's hardware, validated against our runs), ``equations`` (the paper's
own equations or arithmetic re-computed on its own inputs) or ``none`` (nothing of ours behind the
row), and ``runs``, the independent seeds or repetitions behind it. Which verdict a basis allows is
decided in :mod:`repro.core.verdicts` (applied by :func:`repro.core.claims.row`): *reproduced*,
*partly*, *differs* only for ``measured``; *consistent*, *inconsistent* for the other three.

Every row has a **tier** (:class:`repro.core.verdicts.Tier`), the kind of question its verdict answers:
*measured* (our runs decide), *papers' own numbers* (does a paper agree with itself), *predictions* (what
the papers' hardware implies, by emulation or the analytic model). The front page counts paper statements,
each with every row behind it (:mod:`repro.core.statements`).

Every row also states its **tolerance** (:data:`TOLERANCE`): the threshold that decided it and where
that threshold comes from (``claims.yaml``'s ``tolerance_source``), or "–" where the claim is a plain
yes/no with none.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from repro.core import errors
from repro.core import verdicts as V

LedgerError = errors.BadInput  # A stored ledger that lacks the columns this checkout reads (one line).


COLUMNS = ["paper", "claim", "paper_value", "ours", "verdict", "category", "evidence", "basis", "runs"]
TIER = "tier"  # written after COLUMNS
TOLERANCE = "tolerance"  # written after TIER
# the claim's id, the paper statement it judges, what the paper did, and whether it is random and can be decided
IDENTITY = ["id", "statement", "paper_did", "stochastic", "decisive"]
STORED = COLUMNS + [TIER, TOLERANCE] + IDENTITY  # what ledger.csv holds
TIERS = tuple(t.value for t in V.Tier)
# the strength of a row's evidence: a statement's headline is its decided row of the strongest basis
BASIS_STRENGTH = {"measured": 3, "emulated": 2, "model": 1, "equations": 0, "none": -1}
CATEGORIES = tuple(c.value for c in V.Category)
BASES = tuple(b.value for b in V.Basis)
NO_VALUE = ("–", "-", "")  # what an experiment writes in "ours" when it has no number


def category(verdict: str) -> str:
    """The category of a stored verdict text, e.g. 'not comparable (stand-in data)' -> 'not comparable'."""
    return V.category_of(verdict).value


def frame(rows: list[dict]) -> pd.DataFrame:
    """Ledger rows (:func:`repro.core.claims.row`; ``evidence`` is the HTML id of the table that
    shows the evidence), checked for every column and a category that matches the verdict."""
    for r in rows:
        if any(r.get(c) is None or (isinstance(r.get(c), float) and pd.isna(r.get(c))) for c in COLUMNS):
            raise LedgerError("ledger rows need every column: " + ", ".join(COLUMNS))
        if category(str(r["verdict"])) != r["category"] or r["basis"] not in BASES:
            raise LedgerError(f"ledger row {r['claim']!r}: category {r['category']!r} / basis {r['basis']!r} "
                             f"do not fit verdict {r['verdict']!r}")
        if r.get(TIER) not in TIERS:
            raise LedgerError(f"ledger row {r['claim']!r}: tier {r.get(TIER)!r} is not one of {', '.join(TIERS)}")
    return pd.DataFrame([{**{k: "" for k in IDENTITY}, **r, TOLERANCE: str(r.get(TOLERANCE) or NO_VALUE[0])}
                         for r in rows], columns=STORED)


def read_stored(path: Path) -> pd.DataFrame:
    """A stored ``ledger.csv`` as text columns; one line naming the file when it lacks a column of
    :data:`STORED` (a ledger of an older checkout: ``repro rejudge`` re-derives it)."""
    df = pd.read_csv(path, keep_default_na=False, dtype=str)
    missing = [c for c in STORED if c not in df]
    if missing:
        raise LedgerError(f"{path}: no column {', '.join(missing)} (re-derive it: repro rejudge {Path(path).parent})")
    return df


def collect(runs: dict[str, tuple[Path, str]], profile: str = "", reader=None) -> pd.DataFrame:
    """All ledgers of the runs rendered in a book: {experiment: (run_dir, chapter page)}, each row tagged
    with ``profile``. ``reader``: run directory -> its ledger (default: ``ledger.csv`` as stored; the book
    passes :func:`repro.core.statements.confirmed_ledger`)."""
    frames = []
    for experiment, (run_dir, page) in runs.items():
        path = Path(run_dir) / "ledger.csv"
        if path.is_file():
            df = reader(Path(run_dir)) if reader else read_stored(path)
            frames.append(df.assign(experiment=experiment, page=page, profile=profile))
    if not frames:
        return pd.DataFrame(columns=STORED + ["experiment", "page", "profile"])
    return pd.concat(frames, ignore_index=True)


def tier_counts(ledger: pd.DataFrame) -> str:
    """One line: decisive verdicts of all rows, per tier (a chapter's summary)."""
    parts = []
    for t in TIERS:
        rows = ledger[ledger[TIER] == t]
        if len(rows):
            decided = int(rows["category"].map(lambda c: V.Category(c) in V.DECISIVE).sum())
            parts.append(f"*{t}*: {decided} decided of {len(rows)}")
    return "; ".join(parts) if parts else "no claims"
