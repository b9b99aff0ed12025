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

Every row also states its **tolerance** (:data:`TOLERANCE`): the threshold that decided it and where
that threshold comes from (``claims.yaml``'s ``tolerance_source``), or "–" where the claim is a plain
yes/no with none.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from repro.core import verdicts as V
from repro.core.errors import ReproError


class LedgerError(ReproError, ValueError):
    """A stored ledger that lacks the columns this checkout reads (one line)."""


COLUMNS = ["paper", "claim", "paper_value", "ours", "verdict", "category", "evidence", "basis", "runs"]
TOLERANCE = "tolerance"  # written after COLUMNS
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
            raise ValueError("ledger rows need every column: " + ", ".join(COLUMNS))
        if category(str(r["verdict"])) != r["category"] or r["basis"] not in BASES:
            raise ValueError(f"ledger row {r['claim']!r}: category {r['category']!r} / basis {r['basis']!r} "
                             f"do not fit verdict {r['verdict']!r}")
    return pd.DataFrame([{**r, TOLERANCE: str(r.get(TOLERANCE) or NO_VALUE[0])} for r in rows],
                        columns=COLUMNS + [TOLERANCE])


def collect(runs: dict[str, tuple[Path, str]]) -> pd.DataFrame:
    """All ledgers of the runs rendered in a book: {experiment: (run_dir, chapter page)}."""
    frames = []
    for experiment, (run_dir, page) in runs.items():
        path = Path(run_dir) / "ledger.csv"
        if path.is_file():
            df = pd.read_csv(path, keep_default_na=False, dtype=str)
            missing = [c for c in COLUMNS + [TOLERANCE] if c not in df]
            if missing:
                raise LedgerError(f"{path}: no column {', '.join(missing)} (re-derive it: repro rejudge {run_dir})")
            frames.append(df.assign(experiment=experiment, page=page))
    if not frames:
        return pd.DataFrame(columns=COLUMNS + [TOLERANCE, "experiment", "page"])
    return pd.concat(frames, ignore_index=True)


def overview(ledger: pd.DataFrame, by: str = "paper") -> str:
    """Verdict counts per ``by`` (paper or basis; rows) and category (columns), with totals."""
    cats = [c for c in CATEGORIES if c in set(ledger["category"])]
    table = pd.crosstab(ledger[by], ledger["category"]).reindex(columns=cats, fill_value=0)
    order = list(dict.fromkeys(ledger[by])) if by == "paper" else \
        [b for b in BASES if b in set(ledger[by])]
    table = table.reindex(order)
    label = (lambda v: f"{{cite:t}}`{v}`") if by == "paper" else (lambda v: v)
    lines = [f"| {by} | " + " | ".join(cats) + " | all |", "|---" * (len(cats) + 2) + "|"]
    for key, row in table.iterrows():
        lines.append(f"| {label(key)} | " + " | ".join(str(int(v)) for v in row) + f" | {int(row.sum())} |")
    lines.append("| **all** | " + " | ".join(f"**{int(v)}**" for v in table.sum()) + f" | **{len(ledger)}** |")
    return "\n".join(lines)


def markdown(ledger: pd.DataFrame, page_prefix: str = "../") -> str:
    """The front page's ledger: a summary count per verdict and one row per claim."""
    if ledger.empty:
        return "*No claims recorded by the rendered runs.*\n"
    counts = ledger["category"].value_counts()
    summary = ", ".join(f"**{counts[c]}** {c}" for c in CATEGORIES if c in counts)
    lines = [f"{len(ledger)} claims: {summary}.", "", "Per paper:", "", overview(ledger, "paper"), "",
             "Per basis (what stands behind the verdict):", "", overview(ledger, "basis"), "",
             "| paper | claim | paper says | we measured | verdict | basis (runs) | tolerance (its source) "
             "| evidence |",
             "|---|---|---|---|---|---|---|---|"]
    for r in ledger.itertuples():
        link = f'<a href="{page_prefix}{r.page}.html#{html.escape(r.evidence)}">{html.escape(r.experiment)}</a>'
        basis = r.basis if r.basis in ("none", "equations", "model") else f"{r.basis} ({r.runs})"
        verdict = f"**{r.category}**" + r.verdict[len(r.category):]
        cells = [f"{{cite:t}}`{r.paper}`", r.claim, r.paper_value, r.ours, verdict,
                 basis, r.tolerance, link]
        lines.append("| " + " | ".join(str(c).replace("|", "&#124;").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"
