"""The claims ledger: verdict categories, validation, the generated front-page table, publishing."""

from types import SimpleNamespace

import pandas as pd
import pytest

from repro.book import build as book
from repro.core import ledger, results


def _row(verdict="reproduced", **kw):
    from repro.core import verdicts as V
    return {"paper": "p", "claim": "c", "paper_value": "1", "ours": "2", "verdict": verdict,
            "category": V.category_of(verdict).value, "evidence": "t", "basis": "measured", "runs": 3, **kw}


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
    assert list(ledger.frame([_row()]).columns) == ledger.COLUMNS + [ledger.TOLERANCE]
    for col in ("evidence", "basis", "category"):
        with pytest.raises(ValueError, match="every column"):
            ledger.frame([{k: v for k, v in _row().items() if k != col}])
    with pytest.raises(ValueError):
        ledger.frame([_row("probably", category="reproduced")])
    with pytest.raises(ValueError, match="do not fit"):
        ledger.frame([_row("differs (x)", category="reproduced")])
    with pytest.raises(ValueError, match="do not fit"):
        ledger.frame([_row(basis="guess")])
    # the tolerance column: given, or "–"
    assert ledger.frame([_row()]).loc[0, ledger.TOLERANCE] == "–"
    assert ledger.frame([_row(tolerance="±1: rounding")]).loc[0, ledger.TOLERANCE] == "±1: rounding"


def test_collect_and_markdown_link_to_the_evidence(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    ledger.frame([_row("differs (rank 3)", paper="polishchuk2019", claim="Adam | best", paper_value="best",
                       ours="rank 3", evidence="optimizers-claims", runs=2,
                       tolerance="rank 1 or 2: the paper's wording")]).to_csv(a / "ledger.csv", index=False)
    ledger.frame([_row("consistent (own equations)", paper="slampa2017", claim="VGG16E < 1", paper_value="prediction",
                       ours="0.34", evidence="speedup-claims", basis="equations", runs=0),
                  _row("not measured (cluster)", paper="slampa2017", claim="measured", paper_value="m", ours="–",
                       evidence="speedup-claims", basis="none", runs=0)]).to_csv(b / "ledger.csv", index=False)
    df = ledger.collect({"optimizers": (a, "notebooks/03_optimizers"), "speedup": (b, "notebooks/04_speedup"),
                         "mnist_cnn": (tmp_path / "none", "notebooks/01_mnist_cnn")})
    assert df["category"].tolist() == ["differs", "consistent", "not measured"]
    md = ledger.markdown(df)
    assert md.startswith("3 claims: **1** consistent, **1** differs, **1** not measured.")
    # the overviews above the rows: verdict counts per paper (ledger order) and per basis, with totals
    assert "| paper | consistent | differs | not measured | all |" in md
    assert "| {cite:t}`polishchuk2019` | 0 | 1 | 0 | 1 |" in md
    assert "| {cite:t}`slampa2017` | 1 | 0 | 1 | 2 |" in md
    assert "| basis | consistent | differs | not measured | all |" in md
    assert "| measured | 0 | 1 | 0 | 1 |" in md and "| equations | 1 | 0 | 0 | 1 |" in md
    assert md.count("| **all** | **1** | **1** | **1** | **3** |") == 2
    assert md.index("| **all** |") < md.index("Adam &#124; best")
    assert '<a href="../notebooks/03_optimizers.html#optimizers-claims">optimizers</a>' in md
    # a pipe inside a cell cannot break the table; every row says its tolerance and where it comes from
    assert "| rank 3 | **differs** (rank 3) | measured (2) | rank 1 or 2: the paper's wording |" in md
    assert "| 0.34 | **consistent** (own equations) | equations | – |" in md
    assert "Adam &#124; best" in md
    assert "| {cite:t}`slampa2017` | VGG16E < 1 |" in md


def test_a_ledger_without_the_basis_columns_is_refused_in_one_line_naming_the_file(tmp_path):
    pd.DataFrame([{"paper": "p", "claim": "c", "paper_value": "1", "ours": "2", "verdict": "reproduced",
                   "evidence": "t"}]).to_csv(tmp_path / "ledger.csv", index=False)
    with pytest.raises(ValueError) as err:
        ledger.collect({"x": (tmp_path, "notebooks/x")})
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / "ledger.csv") in msg and "repro rejudge" in msg
    assert all(col in msg for col in ("category", "basis", "runs", "tolerance"))


def test_publish_copies_the_newest_runs_in_the_same_layout(tmp_path, monkeypatch):
    res, pub = tmp_path / "results", tmp_path / "published"
    monkeypatch.setattr(book, "published_root", lambda: pub)
    fake = {n: SimpleNamespace(name=n, notebook=f"0{i}_{n}.ipynb") for i, n in enumerate(("exp_a", "exp_b"))}
    monkeypatch.setattr(book._params, "experiments", lambda: fake)
    monkeypatch.setattr(book, "toc_experiments", lambda: list(fake.values()))
    for name in ("exp_a", "exp_b"):
        for _ in range(2):
            run = results.Run(name, "cpu", {}, root=res)
            (run.dir / "notebook.ipynb").write_text("{}")
            run.write_csv("table", pd.DataFrame({"x": [1]}))
            newest = run.finish()
    copied = book.publish("cpu", results_dir=res)
    assert len(copied) == 2
    for name in ("exp_a", "exp_b"):
        runs = results.finished_runs(name, "cpu", pub)
        assert len(runs) == 1 and (runs[0] / "table.csv").is_file() and (runs[0] / "notebook.ipynb").is_file()
    assert results.latest_run("exp_b", "cpu", pub).name == newest.name
    assert book.default_published_profile() == "cpu"
    with pytest.raises(book.BookError, match="nothing to publish for profile 'paper': run `repro run all"):
        book.publish("paper", results_dir=res)
