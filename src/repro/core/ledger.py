"""The claims ledger: every claim of the papers, our measured value, a verdict, its basis, the evidence.

Each experiment writes ``ledger.csv`` (columns :data:`COLUMNS`) into its run directory; the
book's front page is generated from those files, so it cannot drift from the data.

Every row has a **basis** (:data:`BASES`): ``measured`` (our runs), ``emulated`` (our runs on a
declared emulation of the paper's hardware), ``equations`` (the paper's own equations re-computed on
its own inputs) or ``none`` (nothing of ours behind the number), and ``runs``, the independent
seeds or repetitions behind it. :func:`frame` is the one place where the verdict rules are applied:

* *reproduced* needs basis ``measured`` or ``emulated``, and at least two runs where the quantity is
  stochastic (a row passes ``stochastic=True``); so do *partly* and *differs*: one run of a stochastic
  quantity decides nothing either way, and the row becomes *not comparable*, saying what that run gave;
* a statement checked only by re-computing the paper's equations (or its arithmetic, e.g. a model's
  parameter count) is *consistent*, never *reproduced*.

Every row also states its **tolerance** (:data:`TOLERANCE`): the threshold that decided it and where
that threshold comes from (``claims.yaml``'s ``tolerance_source``), or "–" where the claim is a plain
yes/no with none.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

COLUMNS = ["paper", "claim", "paper_value", "ours", "verdict", "evidence", "basis", "runs"]
TOLERANCE = "tolerance"  # written after COLUMNS; a row may leave it out (then "–")
# A verdict starts with one of these (details may follow in parentheses).
CATEGORIES = ("reproduced", "consistent", "partly", "differs", "not comparable", "not testable here", "not measured")
BASES = ("measured", "emulated", "equations", "none")
UNRECORDED = "not recorded"  # ledgers written before the basis column existed (older published runs)
MIN_RUNS = 2  # independent runs behind a decisive verdict on a stochastic quantity
DECISIVE = ("reproduced", "partly", "differs")  # what one run of a stochastic quantity cannot decide


def category(verdict: str) -> str:
    """The verdict's category, e.g. 'not comparable (stand-in data)' -> 'not comparable'."""
    for cat in sorted(CATEGORIES, key=len, reverse=True):
        if verdict.startswith(cat):
            return cat
    raise ValueError(f"verdict {verdict!r} does not start with one of: {', '.join(CATEGORIES)}")


def settle(verdict: str, basis: str, runs: int, stochastic: bool) -> str:
    """The verdict as the ledger's rules allow it (see the module docstring); raises on a contradiction."""
    cat = category(verdict)
    if basis not in BASES:
        raise ValueError(f"basis {basis!r} is not one of: {', '.join(BASES)}")
    if int(runs) < 0:
        raise ValueError(f"runs must be >= 0, got {runs}")
    if cat == "reproduced" and basis not in ("measured", "emulated"):
        raise ValueError(f"'reproduced' needs basis measured or emulated, not {basis!r}: {verdict!r}")
    if cat == "consistent" and basis != "equations":
        raise ValueError(f"'consistent' is the verdict of basis 'equations', not {basis!r}")
    if cat in DECISIVE and stochastic and basis in ("measured", "emulated") and int(runs) < MIN_RUNS:
        return (f"not comparable ({int(runs)} run of a stochastic quantity; a verdict needs >= {MIN_RUNS} "
                f"independent runs; the one run: {verdict})")
    return verdict


NO_VALUE = ("–", "-", "")  # what an experiment writes in "ours" when it has no number


def basis_of(ours, runs: int, nothing: bool = False) -> tuple[str, int]:
    """``("measured", runs)`` where a value of ours stands behind a row, else ``("none", 0)``
    (``ours`` empty, or ``nothing``: the experiment knows nothing was measured for it)."""
    return ("none", 0) if nothing or str(ours).strip() in NO_VALUE else ("measured", int(runs))


def frame(rows: list[dict]) -> pd.DataFrame:
    """Validated ledger rows (``evidence`` is the HTML id of the table that shows the evidence).

    Each row has every column of :data:`COLUMNS` and may say ``stochastic`` (default False) and
    :data:`TOLERANCE` (default "–")."""
    rows = [dict(r) for r in rows]
    for r in rows:
        if any(r.get(c) is None or (isinstance(r.get(c), float) and pd.isna(r.get(c))) for c in COLUMNS):
            raise ValueError("ledger rows need every column: " + ", ".join(COLUMNS))
        r["verdict"] = settle(r["verdict"], r["basis"], r["runs"], bool(r.pop("stochastic", False)))
        r["runs"] = int(r["runs"])
        r[TOLERANCE] = str(r.get(TOLERANCE) or NO_VALUE[0])
    return pd.DataFrame(rows, columns=COLUMNS + [TOLERANCE])


def collect(runs: dict[str, tuple[Path, str]]) -> pd.DataFrame:
    """All ledgers of the runs rendered in a book: {experiment: (run_dir, chapter page)}."""
    frames = []
    for experiment, (run_dir, page) in runs.items():
        path = Path(run_dir) / "ledger.csv"
        if path.is_file():
            df = pd.read_csv(path, keep_default_na=False, dtype=str)
            for col in ("basis", "runs", TOLERANCE):  # a run older than these columns
                if col not in df:
                    df[col] = UNRECORDED if col != "runs" else "–"
            frames.append(df.assign(experiment=experiment, page=page))
    if not frames:
        return pd.DataFrame(columns=COLUMNS + [TOLERANCE, "experiment", "page", "category"])
    out = pd.concat(frames, ignore_index=True)
    out["category"] = out["verdict"].map(category)
    return out


def overview(ledger: pd.DataFrame, by: str = "paper") -> str:
    """Verdict counts per ``by`` (paper or basis; rows) and category (columns), with totals."""
    cats = [c for c in CATEGORIES if c in set(ledger["category"])]
    table = pd.crosstab(ledger[by], ledger["category"]).reindex(columns=cats, fill_value=0)
    order = list(dict.fromkeys(ledger[by])) if by == "paper" else \
        [b for b in (*BASES, UNRECORDED) if b in set(ledger[by])]
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
             "| paper | claim | paper says | we measured | verdict | basis (runs) | tolerance (its source) | evidence |",
             "|---|---|---|---|---|---|---|---|"]
    for r in ledger.itertuples():
        link = f'<a href="{page_prefix}{r.page}.html#{html.escape(r.evidence)}">{html.escape(r.experiment)}</a>'
        basis = r.basis if r.basis in (UNRECORDED, "none", "equations") else f"{r.basis} ({r.runs})"
        cells = [f"{{cite:t}}`{r.paper}`", r.claim, r.paper_value, r.ours, f"**{r.category}**" + r.verdict[len(r.category):],
                 basis, r.tolerance, link]
        lines.append("| " + " | ".join(str(c).replace("|", "&#124;").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"
