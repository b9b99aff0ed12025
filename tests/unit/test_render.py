"""Runs made without Jupyter are rendered later from their files; a book may leave chapters out."""

import pandas as pd
import pytest
import yaml

from repro.book import build
from repro.core import claims, harness, params
from repro.core import verdicts as V


class Counting(harness.Experiment):
    """A stand-in experiment named like mnist_cnn (its claims.yaml) that counts its trainings."""

    name = "mnist_cnn"

    def __init__(self):
        self.trained = 0

    def prepare(self, p):
        return None

    def measure(self, run, p, inputs):
        self.trained += 1
        run.add_dataset({"name": "mnist_subset", "n_train": 4000, "n_test": 1000, "source": "test"})
        return harness.Output({"history": pd.DataFrame({"epoch": [1], "test_accuracy": [0.9]})},
                              {"final_test_accuracy": 0.9})

    def judge(self, result):
        acc = float(result.tables["history"]["test_accuracy"].iloc[-1])
        return {"accuracy_12ep": claims.Measured(f"{acc:.2%}", value=acc, gate=V.not_comparable("a test"))}

    def verdict_views(self, result, measured, ledger):
        return harness.Output({})


def test_a_finished_run_is_read_back_not_trained_again(results_root):
    exp = Counting()
    first = harness.run(exp, "smoke")
    again = harness.entry(exp)("smoke", run_dir=first.run_dir)  # what the notebook does under repro run
    assert exp.trained == 1  # rendering the notebook of a stored run never retrains
    assert again.summary == first.summary and list(again["ledger"]["verdict"]) == list(first["ledger"]["verdict"])
    assert again.provenance["experiment"] == "mnist_cnn"
    other = Counting()
    other.name = "optimizers"
    with pytest.raises(params.ParameterError, match="holds a mnist_cnn run, not optimizers"):
        harness.load(other, first.run_dir)


def test_left_out_chapters_leave_the_table_of_contents(tmp_path):
    toc = {"format": "jb-book", "root": "book/intro",
           "parts": [{"caption": "Experiments", "chapters": [{"file": "notebooks/01_mnist_cnn"},
                                                             {"file": "notebooks/04_speedup"}]},
                     {"caption": "Reference", "chapters": [{"file": "book/reproduce"}]}]}
    path = tmp_path / "_toc.yml"
    path.write_text(yaml.safe_dump(toc, sort_keys=False))
    build.drop_chapters(path, {"notebooks/04_speedup"})
    files = [c["file"] for part in yaml.safe_load(path.read_text())["parts"] for c in part["chapters"]]
    assert files == ["notebooks/01_mnist_cnn", "book/reproduce"]
    build.drop_chapters(path, {"notebooks/01_mnist_cnn"})
    parts = yaml.safe_load(path.read_text())["parts"]
    assert [p["caption"] for p in parts] == ["Reference"]  # an emptied part goes too


def test_repro_rejudge_renders_again_only_a_run_whose_files_changed(results_root, monkeypatch, capsys):
    from repro import cli
    from repro.core import runner

    first, second = harness.run(Counting(), "smoke"), harness.run(Counting(), "smoke")
    for r in (first, second):
        (r.run_dir / "notebook.ipynb").write_text("{}")
    (first.run_dir / "ledger.csv").write_text("stale\n")  # a ledger the rules no longer give
    rejudged, rendered = [], []
    monkeypatch.setattr(harness, "experiment", lambda name: Counting())
    monkeypatch.setattr(runner, "render", lambda run_dir, log_output=True: rendered.append(run_dir))
    real = harness.rejudge_run
    monkeypatch.setattr(harness, "rejudge_run", lambda d, git=None: rejudged.append(d) or real(d, git))
    assert cli.main(["rejudge", str(first.run_dir), str(second.run_dir)]) == 0
    out = capsys.readouterr().out
    assert len(rejudged) == 2 and rendered == [first.run_dir]
    assert "rewrote ledger.csv" in out and "notebook.ipynb rendered again" in out and out.count("unchanged") == 1
    assert (first.run_dir / "ledger.csv").read_text() == (second.run_dir / "ledger.csv").read_text()
