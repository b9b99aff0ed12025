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
the papers' hardware implies, by emulation or the analytic model). The front page counts each tier apart
and shows each claim once across the profiles it merges (:func:`one_per_claim`).

Every row also states its **tolerance** (:data:`TOLERANCE`): the threshold that decided it and where
that threshold comes from (``claims.yaml``'s ``tolerance_source``), or "–" where the claim is a plain
yes/no with none.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from repro.core import errors
from repro.core import verdicts as V

LedgerError = errors.BadInput  # A stored ledger that lacks the columns this checkout reads (one line).


COLUMNS = ["paper", "claim", "paper_value", "ours", "verdict", "category", "evidence", "basis", "runs"]
TIER = "tier"  # written after COLUMNS
TOLERANCE = "tolerance"  # written after TIER
STORED = COLUMNS + [TIER, TOLERANCE]  # what ledger.csv holds
TIERS = tuple(t.value for t in V.Tier)
# the strength of a row's evidence, to keep one row per claim: decisive before not, then by basis, then by runs
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
    return pd.DataFrame([{**r, TOLERANCE: str(r.get(TOLERANCE) or NO_VALUE[0])} for r in rows], columns=STORED)


def collect(runs: dict[str, tuple[Path, str]], profile: str = "") -> pd.DataFrame:
    """All ledgers of the runs rendered in a book: {experiment: (run_dir, chapter page)}, each row tagged
    with ``profile``."""
    frames = []
    for experiment, (run_dir, page) in runs.items():
        path = Path(run_dir) / "ledger.csv"
        if path.is_file():
            df = pd.read_csv(path, keep_default_na=False, dtype=str)
            missing = [c for c in STORED if c not in df]
            if missing:
                raise LedgerError(f"{path}: no column {', '.join(missing)} (re-derive it: repro rejudge {run_dir})")
            frames.append(df.assign(experiment=experiment, page=page, profile=profile))
    if not frames:
        return pd.DataFrame(columns=STORED + ["experiment", "page", "profile"])
    return pd.concat(frames, ignore_index=True)


def one_per_claim(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per claim (experiment and claim text) of ledgers of several profiles: the strongest evidence
    (a decisive verdict before a gate, then basis measured > emulated > model > equations, then the fewer
    stated deviations from the paper's protocol (:func:`deviations`: a full-scale run on a stand-in before
    a cut-down one), then more runs; on a tie the row that comes first, the book's own profile's), the other
    profiles' verdicts in ``also``."""
    if ledger.empty:
        return ledger.assign(also=pd.Series(dtype=str))
    df = ledger.reset_index(drop=True).copy()
    df["_decisive"] = df["category"].map(lambda c: V.Category(c) in V.DECISIVE)
    df["_basis"] = df["basis"].map(BASIS_STRENGTH)
    df["_deviations"] = df["verdict"].map(deviations)
    df["_runs"] = pd.to_numeric(df["runs"], errors="coerce").fillna(0)
    df["_order"] = range(len(df))
    df = df.sort_values(["_decisive", "_basis", "_deviations", "_runs", "_order"],
                        ascending=[False, False, True, False, True])
    kept, also = [], []
    for _, group in df.groupby(["experiment", "claim"], sort=False):
        best, rest = group.iloc[0], group.iloc[1:]
        kept.append(best)
        also.append("; ".join(f"{r.profile}: {r.category} ({r.basis})" for r in rest.itertuples()) or NO_VALUE[0])
    out = pd.DataFrame(kept).assign(also=also).sort_values("_order")
    return out.drop(columns=["_decisive", "_basis", "_deviations", "_runs", "_order"]).reset_index(drop=True)


def deviations(verdict: str) -> int:
    """How many reasons a gated verdict states (``not comparable (a; b; c)`` -> 3; the experiments join
    their deviations from the paper's protocol with "; "); 0 for a verdict without a gate's reasons."""
    if V.category_of(verdict) in V.DECISIVE or "(" not in verdict:
        return 0
    return verdict[verdict.index("(") + 1:].rstrip(")").count("; ") + 1


def tier_counts(ledger: pd.DataFrame) -> str:
    """One line: decisive verdicts of all rows, per tier (a chapter's summary)."""
    parts = []
    for t in TIERS:
        rows = ledger[ledger[TIER] == t]
        if len(rows):
            decided = int(rows["category"].map(lambda c: V.Category(c) in V.DECISIVE).sum())
            parts.append(f"*{t}*: {decided} decided of {len(rows)}")
    return "; ".join(parts) if parts else "no claims"


def overview(ledger: pd.DataFrame, by: str = "paper") -> str:
    """Verdict counts per ``by`` (paper, tier or basis; rows) and category (columns), with totals."""
    cats = [c for c in CATEGORIES if c in set(ledger["category"])]
    table = pd.crosstab(ledger[by], ledger["category"]).reindex(columns=cats, fill_value=0)
    known = {"basis": BASES, "tier": TIERS}.get(by)
    order = list(dict.fromkeys(ledger[by])) if known is None else [b for b in known if b in set(ledger[by])]
    table = table.reindex(order)
    label = (lambda v: f"{{cite:t}}`{v}`") if by == "paper" else (lambda v: v)
    decisive = [c for c in cats if V.Category(c) in V.DECISIVE]
    lines = [f"| {by} | " + " | ".join(cats) + " | decided | all |", "|---" * (len(cats) + 3) + "|"]
    for key, row in table.iterrows():
        lines.append(f"| {label(key)} | " + " | ".join(str(int(v)) for v in row)
                     + f" | {int(row[decisive].sum())} | {int(row.sum())} |")
    total = table.sum()
    lines.append("| **all** | " + " | ".join(f"**{int(v)}**" for v in total)
                 + f" | **{int(total[decisive].sum())}** | **{len(ledger)}** |")
    return "\n".join(lines)


def _evidence_link(r, page_prefix: str, profile: str | None) -> str:
    """A link to the chapter table behind a row; a row kept from another profile's run names that run instead
    (its table is in that profile's book, not this one)."""
    if profile and getattr(r, "profile", profile) != profile:
        return f"{html.escape(r.experiment)} (the `{html.escape(r.profile)}` run: its book)"
    return f'<a href="{page_prefix}{r.page}.html#{html.escape(r.evidence)}">{html.escape(r.experiment)}</a>'


def markdown(ledger: pd.DataFrame, page_prefix: str = "../", profile: str | None = None) -> str:
    """The front page's ledger: counts per tier, paper and basis, and one row per claim (``ledger`` holds one
    row per claim already: :func:`one_per_claim`). ``profile``: the book's own, whose chapters hold the
    evidence that rows of its runs link to."""
    if ledger.empty:
        return "*No claims recorded by the rendered runs.*\n"
    profiles = sorted(set(ledger["profile"])) if "profile" in ledger else []
    merged = (f" across the profiles {', '.join(f'`{p}`' for p in profiles)} (where several judge a claim, the "
              "strongest evidence is shown and the others are named under *also*)") if len(profiles) > 1 else ""
    lines = [f"{len(ledger)} claims, each counted once{merged}. Per tier (the kind of question the verdict "
             "answers; a verdict is *decided* when it is one of reproduced, partly, differs, consistent, "
             "inconsistent):", "", overview(ledger, "tier"), "",
             "Per paper:", "", overview(ledger, "paper"), "",
             "Per basis (what stands behind the verdict):", "", overview(ledger, "basis"), "",
             "| paper | claim | paper says | we measured | verdict | tier | basis (runs) | tolerance (its source) "
             "| evidence | also |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in ledger.itertuples():
        link = _evidence_link(r, page_prefix, profile)
        basis = r.basis if r.basis in ("none", "equations", "model") else f"{r.basis} ({r.runs})"
        verdict = f"**{r.category}**" + r.verdict[len(r.category):]
        cells = [f"{{cite:t}}`{r.paper}`", r.claim, r.paper_value, r.ours, verdict, r.tier,
                 basis, r.tolerance, link, getattr(r, "also", NO_VALUE[0])]
        lines.append("| " + " | ".join(str(c).replace("|", "&#124;").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"
