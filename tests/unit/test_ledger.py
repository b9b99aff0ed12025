"""The claims ledger: verdict categories, validation, the generated front-page table, publishing."""

from types import SimpleNamespace

import pandas as pd
import pytest

from repro.book import build as book
from repro.book import front
from repro.core import ledger, results, statements


def _row(verdict="reproduced", **kw):
    from repro.core import verdicts as V
    row = {"paper": "p", "claim": "c", "paper_value": "1", "ours": "2", "verdict": verdict,
           "category": V.category_of(verdict).value, "evidence": "t", "basis": "measured", "runs": 3, **kw}
    tier = V.tier(row["basis"]).value if row["basis"] in ledger.BASES else "measured"
    return {"tier": tier, **row}


def test_verdict_categories():
    assert ledger.category("reproduced") == "reproduced"
    assert ledger.category("not comparable (stand-in data)") == "not comparable"
    assert ledger.category("not testable here (no GPU)") == "not testable here"
    assert ledger.category("differs (+0.12 vs paper)") == "differs"
    assert ledger.category("inconsistent (x)") == "inconsistent"
    for text in ("looks fine", "not measured yet (x)", "reproducedish"):
        with pytest.raises(ValueError, match="does not start with one of"):
            ledger.category(text)


def test_frame_rejects_incomplete_rows_and_mismatched_categories():
    assert list(ledger.frame([_row()]).columns) == ledger.STORED
    for col in ("evidence", "basis", "category"):
        with pytest.raises(ValueError, match="every column"):
            ledger.frame([{k: v for k, v in _row().items() if k != col}])
    with pytest.raises(ValueError):
        ledger.frame([_row("probably", category="reproduced")])
    with pytest.raises(ValueError, match="do not fit"):
        ledger.frame([_row("differs (x)", category="reproduced")])
    with pytest.raises(ValueError, match="do not fit"):
        ledger.frame([_row(basis="guess")])
    with pytest.raises(ValueError, match="tier 'strong' is not one of"):
        ledger.frame([_row(tier="strong")])
    # the tolerance column: given, or "–"
    assert ledger.frame([_row()]).loc[0, ledger.TOLERANCE] == "–"
    assert ledger.frame([_row(tolerance="±1: rounding")]).loc[0, ledger.TOLERANCE] == "±1: rounding"


def _stmt(verdict, **kw):
    row = _row(verdict, **kw)
    return {**row, "id": kw.get("id", row["claim"]), "statement": kw.get("statement", "p:" + row["claim"]),
            "paper_did": kw.get("paper_did", "measured"), "stochastic": str(kw.get("stochastic", False)),
            "decisive": str(kw.get("decisive", True))}


def test_collect_and_the_front_page_link_to_the_evidence(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    ledger.frame([_stmt("differs (rank 3)", paper="polishchuk2019", claim="Adam | best", paper_value="best",
                        ours="rank 3", evidence="optimizers-claims", runs=2,
                        tolerance="rank 1 or 2: the paper's wording")]).to_csv(a / "ledger.csv", index=False)
    ledger.frame([_stmt("consistent (own equations)", paper="slampa2017", claim="VGG16E < 1", paper_value="prediction",
                        ours="0.34", evidence="speedup-claims", basis="equations", runs=0, paper_did="derived"),
                  _stmt("not measured (cluster)", paper="slampa2017", claim="measured", paper_value="m", ours="–",
                        evidence="speedup-claims", basis="none", runs=0)]).to_csv(b / "ledger.csv", index=False)
    df = ledger.collect({"optimizers": (a, "notebooks/03_optimizers"), "speedup": (b, "notebooks/04_speedup"),
                         "mnist_cnn": (tmp_path / "none", "notebooks/01_mnist_cnn")}, "cpu")
    assert df["category"].tolist() == ["differs", "consistent", "not measured"]
    assert ledger.tier_counts(df) == "*measured*: 1 decided of 2; *papers' own numbers*: 1 decided of 1"
    st = statements.statements(df)
    pages = {("optimizers", "cpu"): "notebooks/03_optimizers", ("speedup", "cpu"): "notebooks/04_speedup"}
    md = front.statements_table(st, pages)
    # a pipe inside a cell cannot break the table; each statement is one line under its paper's, its verdict names
    # the kind of evidence, and it links every row of its evidence, named by profile and marked by its verdict
    assert "Adam &#124; best" in md and "| measured | **differs** (our measurement) |" in md
    assert "| **{cite:t}`polishchuk2019`** | | | |" in md
    assert ('our measurement: <a href="../notebooks/03_optimizers.html#optimizers-claims" '
            'title="our measurement · cpu, 2 runs: differs">cpu ✗</a>') in md
    assert "| derived | **consistent** (paper's own numbers) |" in md
    assert '| measured | <span title="cluster">not decided here</span> |' in md
    assert len([line for line in md.splitlines() if line.startswith("|")]) == 2 + 2 + 3  # head, papers, statements
    counts = front.counts_table(st)
    assert "| measured: the paper measured it | 1 | 1 | 0 | 0 | 1 | 2 |" in counts
    assert "| derived: the paper derived it (equations, arithmetic) | 1 | 1 | 0 | 0 | 0 | 1 |" in counts
    assert "| **all** | 2 | 2 | 0 | 0 | 1 | 3 |" in counts
    rows = front.all_rows(df, pages)
    assert "| rank 3 | **differs** (rank 3) |" in rows and "rank 1 or 2: the paper's wording |" in rows


def test_a_statement_judged_by_several_rows_is_one_statement_with_the_strongest_decided_row():
    df = pd.DataFrame([{**_stmt(v, basis=b, runs=r, statement="p:s", claim=c), "experiment": "e", "page": "x",
                        "profile": prof}
                       for prof, c, v, b, r in (("cpu", "s measured", "not comparable (stand-in)", "measured", 2),
                                                ("emulated", "s emulated", "consistent", "emulated", 2),
                                                ("emulated", "s model", "consistent (x)", "model", 0))])
    st = statements.statements(df)
    assert len(st) == 1 and st.loc[0, "state"] == "decided"
    assert (st.loc[0, "category"], st.loc[0, "basis"]) == ("consistent", "emulated")  # emulated before model
    assert [r["basis"] for r in st.loc[0, "rows"]] == ["emulated", "model", "measured"]
    # decided rows that disagree: decided both ways, counted as decided by neither
    both = df.assign(category=["reproduced", "consistent", "inconsistent"],
                     verdict=["reproduced", "consistent", "inconsistent (x)"], basis=["measured", "emulated", "model"])
    assert statements.statements(both).loc[0, "state"] == "decided both ways"
    assert statements.counts(statements.statements(both)).loc["all", "decided"] == 0
    # the counterfactual: no row decided; every claim decisive: false -> by design, else not decided here
    gated = df.assign(verdict="not comparable (x)", category="not comparable")
    assert statements.statements(gated).loc[0, "state"] == "not decided here"
    assert statements.statements(gated.assign(decisive="False")).loc[0, "state"] == "undecidable by design"


def test_statements_decided_by_one_quantity_are_one_independent_decision():
    # the thesis' equations on Resnet34's two timings decide these three statements: one decision
    ids = ["resnet34_split_below_one", "resnet34_async_central_below_one", "resnet34_join_central_above_one"]
    df = pd.DataFrame([{**_stmt("consistent (x)", basis="equations", runs=0, statement=f"slampa2017:{i}", claim=i,
                                id=i, paper_did="derived"), "experiment": "speedup", "page": "x", "profile": "cpu"}
                       for i in ids + ["t_grad_similar"]])
    st = statements.statements(df)
    assert st["decided_by"].nunique() == 2 and len(st) == 4
    counts = statements.counts(st)
    assert (counts.loc["all", "decided"], counts.loc["all", statements.INDEPENDENT]) == (4, 2)
    md = front.statements_table(st, {})
    assert md.count("one decision with 2 other statements") == 3
    assert "in **2 independent decisions**" in front.bottom_line(st, df)
    # the counterfactual: a quantity no other statement shares is its own decision
    alone = statements.statements(df[df["id"].isin(["t_grad_similar", ids[0]])])
    assert statements.counts(alone).loc["all", statements.INDEPENDENT] == 2


def test_a_book_takes_the_other_profiles_of_its_root_but_not_the_cheap_ones(tmp_path):
    root = tmp_path / "published"
    for prof, verdict, basis in (("cpu", "not comparable (x)", "measured"), ("emulated", "consistent", "emulated"),
                                 ("smoke", "reproduced", "measured")):
        run = root / prof / "exp" / f"2026-{prof}"
        run.mkdir(parents=True)
        (run / "provenance.json").write_text("{}")
        ledger.frame([_stmt(verdict, basis=basis, runs=2)]).to_csv(run / "ledger.csv", index=False)
    used = {"exp": (root / "cpu" / "exp" / "2026-cpu", "notebooks/x")}
    assert list(book.companion_runs("cpu", root, used)) == [("exp", "emulated")]
    assert book.companion_runs("smoke", root, {"exp": (root / "smoke" / "exp" / "2026-smoke", "x")}) == {}


def test_a_ledger_without_the_basis_columns_is_refused_in_one_line_naming_the_file(tmp_path):
    pd.DataFrame([{"paper": "p", "claim": "c", "paper_value": "1", "ours": "2", "verdict": "reproduced",
                   "evidence": "t"}]).to_csv(tmp_path / "ledger.csv", index=False)
    with pytest.raises(ValueError) as err:
        ledger.collect({"x": (tmp_path, "notebooks/x")})
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / "ledger.csv") in msg and "repro rejudge" in msg
    assert all(col in msg for col in ("category", "basis", "runs", "tier", "tolerance"))


def test_publish_copies_the_newest_runs_in_the_same_layout(tmp_path, monkeypatch):
    res, pub = tmp_path / "results", tmp_path / "published"
    monkeypatch.setattr(book, "published_root", lambda: pub)
    fake = {n: SimpleNamespace(name=n, notebook=f"0{i}_{n}.ipynb") for i, n in enumerate(("exp_a", "exp_b"))}
    monkeypatch.setattr(book._params, "experiments", lambda: fake)
    monkeypatch.setattr(book, "toc_experiments", lambda: list(fake.values()))
    def made(name, params):
        run = results.Run(name, "cpu", params, root=res)
        (run.dir / "notebook.ipynb").write_text("{}")
        run.write_csv("table", pd.DataFrame({"x": [1]}))
        return run.finish()

    for name in ("exp_a", "exp_b"):
        for _ in range(2):
            newest = made(name, {})
    copied = book.publish("cpu", results_dir=res)
    assert len(copied) == 2
    for name in ("exp_a", "exp_b"):
        runs = results.finished_runs(name, "cpu", pub)
        assert len(runs) == 1 and (runs[0] / "table.csv").is_file() and (runs[0] / "notebook.ipynb").is_file()
    assert results.latest_run("exp_b", "cpu", pub).name == newest.name
    # a rerun with the same parameters joins the published one (the rerun rule); one with others replaces both
    rerun = made("exp_a", {})
    book.publish("cpu", results_dir=res)
    assert [r.name for r in results.finished_runs("exp_a", "cpu", pub)][-1] == rerun.name
    assert len(results.finished_runs("exp_a", "cpu", pub)) == 2
    other = made("exp_a", {"epochs": 3})
    book.publish("cpu", results_dir=res)
    assert [r.name for r in results.finished_runs("exp_a", "cpu", pub)] == [other.name]
    assert book.default_published_profile() == "cpu"
    with pytest.raises(book.BookError, match="nothing to publish for profile 'paper': run `repro run all"):
        book.publish("paper", results_dir=res)


def test_the_bottom_line_is_short_and_has_one_line_per_paper():
    df = pd.DataFrame([{**_stmt(v, basis=b, runs=0, statement=f"{p}:{i}", claim=f"claim {i}", id=str(i), paper=p),
                        "experiment": "e", "page": "x", "profile": "cpu"}
                       for i, (p, v, b) in enumerate((("slampa2017", "consistent (x)", "equations"),
                                                      ("slampa2017", "inconsistent (y)", "equations"),
                                                      ("polishchuk2019", "not comparable (z)", "measured")))])
    st = statements.statements(df)
    text = front.bottom_line(st, df)
    assert "| {cite:t}`slampa2017` | 2 | 2 (2) | 1 | 1 | 0 | 0 | 0 |" in text
    assert "| {cite:t}`polishchuk2019` | 1 | 0 (0) | 0 | 0 | 0 | 1 | 0 |" in text
    assert "the papers' own equations and tables **2** (1 agree, 1 do not)" in text  # the kinds, in words
    assert len(text.splitlines()) <= 20 and "| chapter | not decided here |" not in text  # what it needs is below
    assert "| chapter | not decided here | needs | command |" in front.the_rest(st.assign(experiment="mnist_cnn"), df)


def test_the_package_begins_with_the_books_first_words():
    import repro
    from repro.core.paths import project_root

    title = (project_root() / "book" / "intro.md").read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    assert repro.__doc__.split(": ", 1)[1].lower().startswith(title.lower())
