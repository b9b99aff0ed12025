"""The front page, generated from the ledgers: the bottom line, the statements per tier, one row per statement,
and a page with every ledger row in full. Nothing here is typed by hand: every count and verdict comes from the
ledger rows (:mod:`repro.core.statements`), and each experiment's ``profile.yaml`` says what deciding the rest
would take (``to_decide``)."""

from __future__ import annotations

import html

import pandas as pd

from repro.core import params as _params
from repro.core import statements as S
from repro.core import verdicts as V

TIER_WORDS = {"measured": "the paper measured it", "derived": "the paper derived it (equations, arithmetic)",
              "stated": "the paper states it (no experiment, no derivation)", S.UNDECLARED: "not yet declared"}
KIND = {"measured": "our measurements on real hardware", "emulated": "an emulation of the papers' hardware",
        "model": "the analytic model of the papers' hardware", "equations": "the papers' own numbers"}


def _cell(text) -> str:
    return str(text).replace("|", "&#124;").replace("\n", " ")


def link(row: dict, pages: dict[tuple[str, str], str], prefix: str = "../") -> str:
    """A link to the chapter table behind ``row`` in this book (``pages``: (experiment, profile) -> page, or ->
    (page, the staged chapter's text): a table the chapter left out, e.g. a section its profile does not run,
    gets a link to the chapter alone), else the run named as text."""
    found = pages.get((row["experiment"], row["profile"]))
    label = f"{row['basis']} · {row['profile']}"
    if found is None:
        return f"{label} (not in this book)"
    page, text = found if isinstance(found, tuple) else (found, None)
    has = text is None or f'id=\\"{row["evidence"]}\\"' in text  # the table's id in the staged notebook's JSON
    anchor = f"#{html.escape(row['evidence'])}" if has else ""
    return f'<a href="{prefix}{page}.html{anchor}">{html.escape(label)}</a>'


def _evidence(rows: list[dict], pages: dict) -> str:
    parts = []
    for r in rows:
        n = int(r["runs"]) if str(r["runs"]).isdigit() else 0
        runs = f", {n} run{'' if n == 1 else 's'}" if r["basis"] in ("measured", "emulated") else ""
        parts.append(f"{link(r, pages)}{runs}: **{r['category']}**")
    return "<br>".join(parts)


def _why(row: dict, limit: int = 140) -> str:
    """The reason a row gives for its gate, cut to ``limit`` characters (the full text is on the rows page)."""
    detail = V.parse(row["verdict"]).detail
    return (detail[:limit].rsplit(" ", 1)[0] + " …") if len(detail) > limit else detail


def statements_table(st: pd.DataFrame, pages: dict) -> str:
    """One row per statement: the paper, the statement and its number, what the paper did, our verdict, every
    row of evidence (linked to its chapter table)."""
    lines = ["| paper | statement (the paper says) | paper did | verdict | our evidence |", "|---|---|---|---|---|"]
    shared = st.loc[st["state"] == S.DECIDED, "decided_by"].value_counts() if "decided_by" in st else pd.Series()
    for r in st.itertuples():
        if r.state == S.DECIDED:
            verdict = f"**{r.category}** ({r.basis})"
            if shared.get(r.decided_by, 1) > 1:  # one quantity decides it with others: one decision
                verdict += f"; one decision with {shared[r.decided_by] - 1} other statements ({r.decided_by})"
        elif r.state == S.CONFLICT:
            verdict = f"**{r.state}** (the decided rows disagree; see them beside)"
        else:
            verdict = f"{r.state}: {_why(r.rows[0])}"
        lines.append("| " + " | ".join(_cell(c) for c in (
            f"{{cite:t}}`{r.paper}`", f"{r.claim} (*{r.paper_value}*)", r.paper_did, verdict,
            _evidence(r.rows, pages))) + " |")
    return "\n".join(lines) + "\n"


def counts_table(st: pd.DataFrame) -> str:
    table = S.counts(st)
    lines = ["| what the paper did | " + " | ".join(table.columns) + " |", "|---" * (len(table.columns) + 1) + "|"]
    for tier, row in table.iterrows():
        name = "**all**" if tier == "all" else f"{tier}: {TIER_WORDS.get(str(tier), '')}"
        lines.append(f"| {name} | " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


AGREES = ("reproduced", "consistent")


def _short(r) -> str:
    return f"{r.headline_claim} ({{cite:t}}`{r.paper}`): **{r.category}**"


def _flagged(rows: pd.DataFrame, category: V.Category) -> pd.DataFrame:
    return rows[rows["category"] == category.value]


def evidence_table(decided: pd.DataFrame) -> str:
    """Decided statements per kind of evidence: how many agree with the paper and how many do not."""
    lines = ["| decided by | statements | agree with the paper | do not |", "|---|---|---|---|"]
    for basis, words in KIND.items():
        part = decided[decided["basis"] == basis]
        agree = int(part["category"].isin(AGREES).sum())
        lines.append(f"| {words} | {len(part)} | {agree} | {len(part) - agree} |")
    return "\n".join(lines) + "\n"


def bottom_line(st: pd.DataFrame, rows: pd.DataFrame) -> str:
    """What the ledger adds up to, per kind of evidence, where it disagrees with the papers, what is flagged, and
    what deciding the rest would take."""
    decided = st[st["state"] == S.DECIDED]
    measured = decided[decided["basis"] == "measured"]
    independent = int(S.counts(st).loc["all", S.INDEPENDENT])
    lines = [f"**{len(st)} statements** of the papers are judged here ({len(rows)} ledger rows behind them); "
             f"**{len(decided)}** are decided, in **{independent} independent decisions** (statements that one "
             f"quantity decides count once), **{len(measured)}** of them by our own measurements on real hardware.",
             "", evidence_table(decided)]
    against = decided[~decided["category"].isin(AGREES)]
    if len(against):
        lines += ["**Where the evidence does not agree with the paper:**", ""]
        lines += [f"- {_short(r)} ({r.basis})" for r in against.itertuples()] + [""]
    lines += ["**Flagged, and not counted as decided:**", ""]
    for cat, words in ((V.Category.RULE_CHANGED, "judged under a claim or rule that changed after its data was "
                        "measured, not counted as decided until a run under today's rule exists"),
                       (V.Category.UNSTABLE, "decided differently by two independent runs")):
        flagged = _flagged(rows, cat)
        names = "; ".join(f"{r.claim} (`{r.profile}`)" for r in flagged.itertuples()) or "none"
        lines.append(f"- **{cat.value}**: {len(flagged)} rows {words}: {names}.")
    both = st[st["state"] == S.CONFLICT]
    lines.append(f"- **{S.CONFLICT}**: {len(both)} statements whose decided rows disagree (counted as decided by "
                 f"neither): " + ("; ".join(f"{r.claim} ({{cite:t}}`{r.paper}`)" for r in both.itertuples()) or "none")
                 + ".")
    by_design = int((st["state"] == S.BY_DESIGN).sum())
    lines += ["", f"**Undecidable by design**: {by_design} statements that no run of this package can decide "
                 "(advice, a property of our own code, a part not implemented: each row says why)."]
    lines += ["", "**The rest cannot be decided on this machine** (no CIFAR-10 or full MNIST offline, two CPU "
              "cores, no GPU cluster). What each chapter's statements need, and the one command a user who has it "
              "runs:", "", "| chapter | not decided here | needs | command |", "|---|---|---|---|"]
    rest = st[st["state"] == S.ELSEWHERE]
    for name, n in rest.groupby("experiment").size().items():
        todo = _params.spec(str(name)).to_decide
        needs, cmd = (todo.needs, f"`{todo.command}`") if todo else ("(not stated)", "")
        lines.append(f"| {name} | {n} | {_cell(needs)} | {cmd} |")
    return "\n".join(lines) + "\n"


def all_rows(rows: pd.DataFrame, pages: dict) -> str:
    """Every ledger row in full (the verdict's detail and the tolerance with its source), per chapter."""
    out = []
    for experiment, g in rows.groupby("experiment", sort=False):
        out += [f"## {experiment}", "", "| claim | we measured | verdict | evidence | tolerance (its source) |",
                "|---|---|---|---|---|"]
        for r in g.to_dict("records"):
            verdict = f"**{r['category']}**" + r["verdict"][len(r["category"]):]
            out.append("| " + " | ".join(_cell(c) for c in (r["claim"], r["ours"], verdict, link(r, pages),
                                                             r["tolerance"])) + " |")
        out.append("")
    return "\n".join(out) + "\n"
