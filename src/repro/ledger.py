"""The claims ledger: every claim of the papers, our measured value, a verdict, a link to the evidence.

Each experiment writes ``ledger.csv`` (columns :data:`COLUMNS`) into its run directory; the
book's front page is generated from those files, so it cannot drift from the data.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

COLUMNS = ["paper", "claim", "paper_value", "ours", "verdict", "evidence"]
# A verdict starts with one of these (details may follow in parentheses).
CATEGORIES = ("reproduced", "partly", "differs", "not comparable", "not testable here", "not measured")


def category(verdict: str) -> str:
    """The verdict's category, e.g. 'not comparable (stand-in data)' -> 'not comparable'."""
    for cat in sorted(CATEGORIES, key=len, reverse=True):
        if verdict.startswith(cat):
            return cat
    raise ValueError(f"verdict {verdict!r} does not start with one of: {', '.join(CATEGORIES)}")


def frame(rows: list[dict]) -> pd.DataFrame:
    """Validated ledger rows (``evidence`` is the HTML id of the table that shows the evidence)."""
    df = pd.DataFrame(rows, columns=COLUMNS)
    if df[COLUMNS].isna().any().any():
        raise ValueError("ledger rows need every column: " + ", ".join(COLUMNS))
    df["verdict"].map(category)  # raises on an unknown verdict
    return df


def collect(runs: dict[str, tuple[Path, str]]) -> pd.DataFrame:
    """All ledgers of the runs rendered in a book: {experiment: (run_dir, chapter page)}."""
    frames = []
    for experiment, (run_dir, page) in runs.items():
        path = Path(run_dir) / "ledger.csv"
        if path.is_file():
            df = pd.read_csv(path, keep_default_na=False, dtype=str)
            frames.append(df.assign(experiment=experiment, page=page))
    if not frames:
        return pd.DataFrame(columns=COLUMNS + ["experiment", "page", "category"])
    out = pd.concat(frames, ignore_index=True)
    out["category"] = out["verdict"].map(category)
    return out


def overview(ledger: pd.DataFrame) -> str:
    """Verdict counts per paper (rows) and category (columns), with totals: the ledger at a glance."""
    cats = [c for c in CATEGORIES if c in set(ledger["category"])]
    table = pd.crosstab(ledger["paper"], ledger["category"]).reindex(columns=cats, fill_value=0)
    table = table.reindex(list(dict.fromkeys(ledger["paper"])))  # papers in ledger order
    lines = ["| paper | " + " | ".join(cats) + " | all |", "|---" * (len(cats) + 2) + "|"]
    for paper, row in table.iterrows():
        lines.append(f"| {{cite:t}}`{paper}` | " + " | ".join(str(int(v)) for v in row) + f" | {int(row.sum())} |")
    lines.append("| **all** | " + " | ".join(f"**{int(v)}**" for v in table.sum()) + f" | **{len(ledger)}** |")
    return "\n".join(lines)


def markdown(ledger: pd.DataFrame, page_prefix: str = "../") -> str:
    """The front page's ledger: a summary count per verdict and one row per claim."""
    if ledger.empty:
        return "*No claims recorded by the rendered runs.*\n"
    counts = ledger["category"].value_counts()
    summary = ", ".join(f"**{counts[c]}** {c}" for c in CATEGORIES if c in counts)
    lines = [f"{len(ledger)} claims: {summary}.", "", overview(ledger), "",
             "| paper | claim | paper says | we measured | verdict | evidence |", "|---|---|---|---|---|---|"]
    for r in ledger.itertuples():
        link = f'<a href="{page_prefix}{r.page}.html#{html.escape(r.evidence)}">{html.escape(r.experiment)}</a>'
        cells = [f"{{cite:t}}`{r.paper}`", r.claim, r.paper_value, r.ours, f"**{r.category}**" + r.verdict[len(r.category):], link]
        lines.append("| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines) + "\n"
