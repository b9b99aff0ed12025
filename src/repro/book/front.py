"""The front page, generated from the ledgers: the bottom line (a sentence, the decided statements per kind of
evidence, one line per paper, where the evidence disagrees), the statements per tier, one line per statement (its
text cut, in full on hover; every row of evidence as a marked link), the flagged rows and what deciding the rest
takes, and a page with every ledger row in full. Nothing here is typed by hand: every count and verdict comes from the
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
KIND = {"measured": "our measurements on real hardware", "emulated": "our emulation of the papers' hardware",
        "model": "the analytic model of the papers' hardware", "equations": "the papers' own equations and tables"}
# each kind of evidence as the statements table names it (a row's basis, in words)
SHORT = {"measured": "our measurement", "emulated": "our emulation", "model": "analytic model",
         "equations": "paper's own numbers", "none": "nothing of ours"}
MARK = {"reproduced": "✓", "consistent": "✓", "differs": "✗", "inconsistent": "✗", "partly": "≈",
        V.Category.RULE_CHANGED.value: "!", V.Category.UNSTABLE.value: "!"}  # else "–": decided nothing
STATEMENT_CHARS = 60  # a statement's text in the one-line table (in full on hover and on the rows page)


def _cell(text) -> str:
    return str(text).replace("|", "&#124;").replace("\n", " ")


def link(row: dict, pages: dict[tuple[str, str], str], prefix: str = "../", label: str | None = None,
         title: str = "", short: bool = False) -> str:
    """A link to the chapter table behind ``row`` in this book (``pages``: (experiment, profile) -> page, or ->
    (page, the staged chapter's text): a table the chapter left out, e.g. a section its profile does not run,
    gets a link to the chapter alone), else the run named as text."""
    found = pages.get((row["experiment"], row["profile"]))
    label = label or f"{row['basis']} · {row['profile']}"
    if found is None:  # ``short``: the words on hover only (the one-line statements table)
        return _hover(label, f"{title} (not in this book)") if short else f"{label} (not in this book)"
    page, text = found if isinstance(found, tuple) else (found, None)
    has = text is None or f'id=\\"{row["evidence"]}\\"' in text  # the table's id in the staged notebook's JSON
    anchor = f"#{html.escape(row['evidence'])}" if has else ""
    hover = f' title="{html.escape(title, quote=True)}"' if title else ""
    return f'<a href="{prefix}{page}.html{anchor}"{hover}>{html.escape(label)}</a>'


def _evidence(rows: list[dict], pages: dict) -> str:
    """Every row of evidence on one line, grouped by kind: each a link to its chapter table named by its profile and
    marked by its verdict (✓ agrees, ✗ does not, ≈ partly, ! flagged, – decided nothing; in full on hover); rows of
    one kind, profile and mark (two claims of one statement in one run) are one link."""
    groups: dict[str, dict[str, str]] = {}
    for r in rows:
        n = int(r["runs"]) if str(r["runs"]).isdigit() else 0
        runs = f", {n} run{'' if n == 1 else 's'}" if r["basis"] in ("measured", "emulated") else ""
        title = f"{SHORT.get(r['basis'], r['basis'])} · {r['profile']}{runs}: {r['category']}"
        label = f"{r['profile']} {MARK.get(r['category'], '–')}"
        groups.setdefault(r["basis"], {}).setdefault(label, link(r, pages, label=label, title=title, short=True))
    return "; ".join(f"{SHORT.get(b, b)}: {', '.join(links.values())}" for b, links in groups.items())


def _cut(text: str, limit: int) -> str:
    text = str(text)
    return (text[:limit].rsplit(" ", 1)[0] + " …") if len(text) > limit else text


def _hover(shown: str, full: str) -> str:
    """``shown`` with ``full`` on hover (the same where nothing was cut)."""
    return shown if shown == full else f'<span title="{html.escape(full, quote=True)}">{shown}</span>'


def _why(row: dict, limit: int = 140) -> str:
    """The reason a row gives for its gate, cut to ``limit`` characters (the full text is on the rows page)."""
    detail = V.parse(row["verdict"]).detail
    return (detail[:limit].rsplit(" ", 1)[0] + " …") if len(detail) > limit else detail


def statements_table(st: pd.DataFrame, pages: dict) -> str:
    """One line per statement, under a line per paper: the statement (cut to :data:`STATEMENT_CHARS`, in full on
    hover), what the paper did, our verdict and the kind of evidence behind it, every row of evidence (linked to its
    chapter table)."""
    lines = ["| statement (the paper says) | paper did | our verdict | our evidence |", "|---|---|---|---|"]
    shared = st.loc[st["state"] == S.DECIDED, "decided_by"].value_counts() if "decided_by" in st else pd.Series()
    for paper, group in st.groupby("paper", sort=False):
        lines.append(f"| **{{cite:t}}`{paper}`** | | | |")
        for r in group.itertuples():
            if r.state == S.DECIDED:
                verdict = f"**{r.category}** ({SHORT.get(r.basis, r.basis)})"
                if shared.get(r.decided_by, 1) > 1:  # one quantity decides it with others: one decision
                    verdict = _hover(verdict + " ¹", f"one decision with {shared[r.decided_by] - 1} other "
                                                     f"statements ({r.decided_by})")
            elif r.state == S.CONFLICT:
                verdict = _hover(f"**{r.state}**", "the decided rows disagree; see them beside")
            else:
                verdict = _hover(str(r.state), _why(r.rows[0], 400) or str(r.state))
            full = f"{r.claim} ({r.paper_value})"
            shown = _hover(_cell(_cut(r.claim, STATEMENT_CHARS)), _cell(full))
            lines.append("| " + " | ".join(_cell(c) for c in (shown, r.paper_did, verdict,
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


def _disagrees(r) -> str:
    return f"{_cut(r.headline_claim, 90)} ({{cite:t}}`{r.paper}`): **{r.category}** ({SHORT.get(r.basis, r.basis)})"


def _flagged(rows: pd.DataFrame, category: V.Category) -> pd.DataFrame:
    return rows[rows["category"] == category.value]


def _side(text: str) -> str:
    """A verdict's outcome: agrees (with the paper), disagrees, or undecided (by its first words: a verdict recorded
    before the ledger's format, "reproduced, not recorded …", has no bracket after its category)."""
    cat = next((c for c in sorted(V.Category, key=lambda c: len(c.value), reverse=True)
                if text.strip().startswith(c.value)), None)
    if cat is None or cat not in V.DECISIVE:
        return "undecided"
    return "agrees" if cat.value in S.AGREES else "disagrees"


def same_outcome(verdict: str) -> bool:
    """Whether a *rule changed after the data* verdict gives today the outcome it gave under the rule of its data
    (the rule moved, the outcome did not)."""
    both = V.halves(str(verdict))
    return both is not None and _side(both[0]) == _side(both[1]) != "undecided"


def evidence_line(decided: pd.DataFrame) -> str:
    """Decided statements per kind of evidence, on one line: how many, how many agree with the paper."""
    parts = []
    for basis, words in KIND.items():
        part = decided[decided["basis"] == basis]
        agree = int(part["category"].isin(AGREES).sum())
        split = f" ({agree} agree, {len(part) - agree} do not)" if len(part) else ""
        parts.append(f"{words} **{len(part)}**{split}")
    return "Decided by " + "; ".join(parts) + "."


def papers_table(st: pd.DataFrame, rows: pd.DataFrame) -> str:
    """One line per paper: its statements, decided (independent decisions), agreeing, not, by design, not decided
    here, and its flagged rows."""
    lines = ["| paper | statements | decided (independent) | agree | do not | by design | not decided here | "
             "flagged rows |", "|---|---|---|---|---|---|---|---|"]
    flagged = rows["category"].isin([V.Category.RULE_CHANGED.value, V.Category.UNSTABLE.value])
    for paper, g in st.groupby("paper", sort=False):
        d = g[g["state"] == S.DECIDED]
        agree = int(d["category"].isin(AGREES).sum())
        by = d["decided_by"].nunique() if "decided_by" in d else len(d)
        cells = [f"{{cite:t}}`{paper}`", len(g), f"{len(d)} ({by})", agree, len(d) - agree,
                 int((g["state"] == S.BY_DESIGN).sum()), int((g["state"] == S.ELSEWHERE).sum()),
                 int((flagged & (rows["paper"] == paper)).sum())]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def bottom_line(st: pd.DataFrame, rows: pd.DataFrame) -> str:
    """What the ledger adds up to, per kind of evidence and per paper, where it disagrees with the papers, and how
    many rows are flagged; the flagged rows by name and what deciding the rest would take are :func:`the_rest`."""
    decided = st[st["state"] == S.DECIDED]
    measured = decided[decided["basis"] == "measured"]
    independent = int(S.counts(st).loc["all", S.INDEPENDENT])
    by_design, rest = int((st["state"] == S.BY_DESIGN).sum()), int((st["state"] == S.ELSEWHERE).sum())
    lines = [f"**{len(st)} statements** of the papers are judged here ({len(rows)} ledger rows behind them); "
             f"**{len(decided)}** are decided, in **{independent} independent decisions** (statements that one "
             f"quantity decides count once), **{len(measured)}** of them by our own measurements on real hardware; "
             f"**{by_design}** are undecidable by design and **{rest}** not decided on this machine (what they need "
             "is below the statements).", "", evidence_line(decided), "", papers_table(st, rows)]
    against = decided[~decided["category"].isin(AGREES)]
    if len(against):
        lines += ["**Where the evidence does not agree with the paper:**", ""]
        lines += [f"- {_disagrees(r)}" for r in against.itertuples()] + [""]
    moved = _flagged(rows, V.Category.RULE_CHANGED)
    same = sum(same_outcome(v) for v in moved["verdict"])
    counted = (f"**{V.Category.RULE_CHANGED.value}** {len(moved)} rows ({same} of them give today the outcome they "
               "gave under the rule of their data: the rule moved after the data, the outcome did not); "
               f"**{V.Category.UNSTABLE.value}** {len(_flagged(rows, V.Category.UNSTABLE))} rows")
    both = int((st["state"] == S.CONFLICT).sum())
    lines.append(f"**Flagged, and not counted as decided**: {counted}; **{S.CONFLICT}** {both} statements "
                 "(each named below the statements).")
    return "\n".join(lines) + "\n"


def the_rest(st: pd.DataFrame, rows: pd.DataFrame) -> str:
    """The flagged rows by name, and what each chapter's undecided statements need with the one command that
    decides them."""
    lines = ["**Flagged, and not counted as decided:**", ""]
    for cat, words in ((V.Category.RULE_CHANGED, "judged under a claim, rule or judging code that changed after its "
                        "data was measured, not counted as decided until a run under today's rule exists"),
                       (V.Category.UNSTABLE, "decided differently by two independent runs")):
        flagged = _flagged(rows, cat)
        names = "; ".join(f"{r.claim} (`{r.profile}`)" for r in flagged.itertuples()) or "none"
        lines.append(f"- **{cat.value}**: {len(flagged)} rows {words}: {names}.")
    both = st[st["state"] == S.CONFLICT]
    lines.append(f"- **{S.CONFLICT}**: {len(both)} statements whose decided rows disagree (counted as decided by "
                 f"neither): " + ("; ".join(f"{r.claim} ({{cite:t}}`{r.paper}`)" for r in both.itertuples()) or "none")
                 + ".")
    lines += ["", "**Undecidable by design**: statements that no run of this package can decide (advice, a property "
              "of our own code, a part not implemented: each row says why).", "",
              "**The rest cannot be decided on this machine** (no CIFAR-10 or full MNIST offline, two CPU "
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
