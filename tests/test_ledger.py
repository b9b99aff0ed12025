"""The claims ledger: verdict categories, validation, the generated front-page table, publishing."""

from types import SimpleNamespace

import pandas as pd
import pytest

from repro import book, ledger, results


def test_verdict_categories():
    assert ledger.category("reproduced") == "reproduced"
    assert ledger.category("not comparable (stand-in data)") == "not comparable"
    assert ledger.category("not testable here (no GPU)") == "not testable here"
    assert ledger.category("differs (+0.12 vs paper)") == "differs"
    with pytest.raises(ValueError, match="does not start with one of"):
        ledger.category("looks fine")


def test_frame_rejects_incomplete_rows_and_unknown_verdicts():
    row = {"paper": "p", "claim": "c", "paper_value": "1", "ours": "2", "verdict": "reproduced", "evidence": "t"}
    assert list(ledger.frame([row]).columns) == ledger.COLUMNS
    with pytest.raises(ValueError, match="every column"):
        ledger.frame([{k: v for k, v in row.items() if k != "evidence"}])
    with pytest.raises(ValueError):
        ledger.frame([dict(row, verdict="probably")])


def test_collect_and_markdown_link_to_the_evidence(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    ledger.frame([{"paper": "polishchuk2019", "claim": "Adam | best", "paper_value": "best", "ours": "rank 3",
                   "verdict": "differs (rank 3)", "evidence": "optimizers-claims"}]).to_csv(a / "ledger.csv", index=False)
    ledger.frame([{"paper": "slampa2017", "claim": "VGG16E < 1", "paper_value": "prediction", "ours": "0.34",
                   "verdict": "reproduced", "evidence": "speedup-claims"},
                  {"paper": "slampa2017", "claim": "measured", "paper_value": "m", "ours": "–",
                   "verdict": "not measured yet (cluster)", "evidence": "speedup-claims"}]).to_csv(b / "ledger.csv", index=False)
    df = ledger.collect({"optimizers": (a, "notebooks/03_optimizers"), "speedup": (b, "notebooks/04_speedup"),
                         "mnist_cnn": (tmp_path / "none", "notebooks/01_mnist_cnn")})
    assert df["category"].tolist() == ["differs", "reproduced", "not measured"]
    md = ledger.markdown(df)
    assert md.startswith("3 claims: **1** reproduced, **1** differs, **1** not measured.")
    # the overview above the rows: verdict counts per paper, in ledger order, with totals
    assert "| paper | reproduced | differs | not measured | all |" in md
    assert "| {cite:t}`polishchuk2019` | 0 | 1 | 0 | 1 |" in md
    assert "| {cite:t}`slampa2017` | 1 | 0 | 1 | 2 |" in md
    assert "| **all** | **1** | **1** | **1** | **3** |" in md
    assert md.index("| **all** |") < md.index("Adam / best")
    assert '<a href="../notebooks/03_optimizers.html#optimizers-claims">optimizers</a>' in md
    assert "Adam / best" in md  # a pipe inside a cell cannot break the table
    assert "| {cite:t}`slampa2017` | VGG16E < 1 |" in md


def test_publish_copies_the_newest_runs_in_the_same_layout(tmp_path, monkeypatch):
    res, pub = tmp_path / "results", tmp_path / "published"
    monkeypatch.setattr(book, "published_root", lambda: pub)
    fake = {n: SimpleNamespace(name=n, notebook=f"0{i}_{n}.ipynb") for i, n in enumerate(("exp_a", "exp_b"))}
    monkeypatch.setattr(book._params, "experiments", lambda: fake)
    monkeypatch.setattr(book, "toc_experiments", lambda: list(fake.values()))
    for name in ("exp_a", "exp_b"):
        for _ in range(2):
            run = results.Run(name, "cpu", {}, run_dir=results.create_run_dir(name, "cpu", res))
            (run.dir / "notebook.ipynb").write_text("{}")
            run.write_csv("table", pd.DataFrame({"x": [1]}))
            run.finish()
            newest = results.finalize_run_dir(run.dir)
    copied = book.publish("cpu", results_dir=res)
    assert len(copied) == 2
    for name in ("exp_a", "exp_b"):
        runs = results.finished_runs(name, "cpu", pub)
        assert len(runs) == 1 and (runs[0] / "table.csv").is_file() and (runs[0] / "notebook.ipynb").is_file()
    assert results.latest_run("exp_b", "cpu", pub).name == newest.name
    assert book.default_published_profile() == "cpu"
    with pytest.raises(book.BookError, match="nothing to publish for profile 'paper': run `repro run all"):
        book.publish("paper", results_dir=res)
