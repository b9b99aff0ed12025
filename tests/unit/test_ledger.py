"""The claims ledger: verdict categories, validation, the generated front-page table, publishing."""

from types import SimpleNamespace

import pandas as pd
import pytest

from repro.book import build as book
from repro.core import ledger, results


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
    assert md.startswith("3 claims, each counted once. Per tier")
    # the overviews above the rows: verdict counts per tier, per paper (ledger order) and per basis, with
    # the decided verdicts and all rows
    assert "| tier | consistent | differs | not measured | decided | all |" in md
    assert "| measured | 0 | 1 | 1 | 1 | 2 |" in md and "| papers' own numbers | 1 | 0 | 0 | 1 | 1 |" in md
    assert "| paper | consistent | differs | not measured | decided | all |" in md
    assert "| {cite:t}`polishchuk2019` | 0 | 1 | 0 | 1 | 1 |" in md
    assert "| {cite:t}`slampa2017` | 1 | 0 | 1 | 1 | 2 |" in md
    assert "| basis | consistent | differs | not measured | decided | all |" in md
    assert "| measured | 0 | 1 | 0 | 1 | 1 |" in md and "| equations | 1 | 0 | 0 | 1 | 1 |" in md
    assert md.count("| **all** | **1** | **1** | **1** | **2** | **3** |") == 3
    assert md.index("| **all** |") < md.index("Adam &#124; best")
    assert '<a href="../notebooks/03_optimizers.html#optimizers-claims">optimizers</a>' in md
    # a pipe inside a cell cannot break the table; every row says its tier, its tolerance and where it comes from
    assert "| rank 3 | **differs** (rank 3) | measured | measured (2) | rank 1 or 2: the paper's wording |" in md
    assert "| 0.34 | **consistent** (own equations) | papers' own numbers | equations | – |" in md
    assert "Adam &#124; best" in md
    assert "| {cite:t}`slampa2017` | VGG16E < 1 |" in md
    assert ledger.tier_counts(df) == "*measured*: 1 decided of 2; *papers' own numbers*: 1 decided of 1"


def _profiles(*rows):
    return pd.DataFrame([{**_row(v, basis=b, runs=r), "experiment": "e", "page": "p", "profile": prof, "claim": c,
                          "tolerance": "–"}
                         for prof, c, v, b, r in rows])


def test_one_row_per_claim_keeps_the_strongest_evidence_and_names_the_others():
    df = _profiles(("cpu", "a", "not comparable (stand-in)", "measured", 1),
                   ("emulated", "a", "consistent", "emulated", 2),
                   ("cpu", "b", "consistent", "equations", 0), ("emulated", "b", "consistent", "equations", 0),
                   ("cpu", "c", "differs (x)", "measured", 2), ("emulated", "c", "consistent", "emulated", 2),
                   ("cpu", "d", "not testable here (2 cores)", "measured", 1),
                   ("emulated", "d", "not comparable (x)", "emulated", 3))
    one = ledger.one_per_claim(df)
    assert one["claim"].tolist() == ["a", "b", "c", "d"]  # each claim once, in the book's order
    # a decided verdict beats a gate; on equal ground the book's own profile (first) stays; measured beats emulated
    assert one["profile"].tolist() == ["emulated", "cpu", "cpu", "cpu"]
    assert one["also"].tolist() == ["cpu: not comparable (measured)", "emulated: consistent (equations)",
                                    "emulated: consistent (emulated)", "emulated: not comparable (emulated)"]
    md = ledger.markdown(one, profile="cpu")
    assert md.startswith("4 claims, each counted once across the profiles `cpu`, `emulated`")
    # a row kept from the other profile's run cannot link into this book's chapter (its table is not there)
    assert md.count('<a href="../p.html#t">e</a>') == 3 and md.count("e (the `emulated` run: its book)") == 1
    # the counterfactual: counted per profile, the same claims would be eight rows
    assert len(df) == 8 and "| **all** |" in md and md.count(" | **4** |") == 3


def test_among_gated_rows_the_run_nearer_the_papers_protocol_is_shown():
    full = "not comparable (fashion_mnist_rgb32 stands in for cifar10)"
    cut = "not comparable (fashion_mnist_rgb32 stands in for cifar10; 8,000 training images, not 50,000; 4 epochs)"
    assert [ledger.deviations(v) for v in (full, cut, "consistent", "not comparable")] == [1, 3, 0, 0]
    one = ledger.one_per_claim(_profiles(("cpu", "a", cut, "measured", 2), ("gpu-h100", "a", full, "measured", 2)))
    assert one[["profile", "also"]].values.tolist() == [["gpu-h100", "cpu: not comparable (measured)"]]
    # the counterfactual: the GPU run cut down as much as the CPU's, the book's own profile stays first
    same = ledger.one_per_claim(_profiles(("cpu", "a", cut, "measured", 2), ("gpu-h100", "a", cut, "measured", 2)))
    assert same["profile"].tolist() == ["cpu"]
    # more runs still decide among rows with the same deviations; a decided verdict beats any gate
    more = ledger.one_per_claim(_profiles(("cpu", "a", full, "measured", 2), ("gpu-h100", "a", full, "measured", 3)))
    assert more["profile"].tolist() == ["gpu-h100"]
    decided = ledger.one_per_claim(_profiles(("cpu", "a", "differs (x)", "measured", 2),
                                             ("gpu-h100", "a", full, "measured", 3)))
    assert decided["profile"].tolist() == ["cpu"]


def test_a_book_merges_the_other_profiles_of_its_root_but_not_the_cheap_ones(tmp_path):
    root = tmp_path / "published"
    for prof, verdict, basis in (("cpu", "not comparable (x)", "measured"), ("emulated", "consistent", "emulated"),
                                 ("smoke", "reproduced", "measured")):
        run = root / prof / "exp" / f"2026-{prof}"
        run.mkdir(parents=True)
        (run / "provenance.json").write_text("{}")
        ledger.frame([_row(verdict, basis=basis, runs=2)]).to_csv(run / "ledger.csv", index=False)
    used = {"exp": (root / "cpu" / "exp" / "2026-cpu", "notebooks/x")}
    front = book.front_ledger("cpu", root, used)
    assert front[["profile", "category", "also"]].values.tolist() == [
        ["emulated", "consistent", "cpu: not comparable (measured)"]]
    assert book.front_ledger("smoke", root, {"exp": (root / "smoke" / "exp" / "2026-smoke", "x")})[
        "profile"].tolist() == ["smoke"]


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
