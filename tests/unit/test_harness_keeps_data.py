"""A run never loses a finished measurement: a judge that raises leaves the run's data (and its checkpoints) in
place, marked, and `repro rejudge` completes it; checkpoints go only once the judge has run."""

import pandas as pd
import pytest

from repro.core import claims, errors, harness, results
from repro.core import verdicts as V


class Fake(harness.Experiment):
    name = "mnist_cnn"  # its claims.yaml (one claim) and profiles; measure and judge are the test's

    def __init__(self, ckpt, fail=True):
        self.ckpt, self.fail = ckpt, fail

    def prepare(self, p):
        return None

    def measure(self, run, p, inputs):
        self.ckpt.mkdir(parents=True, exist_ok=True)
        (self.ckpt / "model.keras").write_text("weights")
        return harness.Output({"summary": pd.DataFrame({"accuracy": [0.97]})}, {"hours": 3}, discard=[self.ckpt])

    def judge(self, result):
        if self.fail:
            raise KeyError("adadelta")  # e.g. an optimizer the paper's table has no label for
        acc = float(result["summary"]["accuracy"].iloc[0])
        return {"accuracy_12ep": claims.Measured(ours=f"{acc:.2f}", gate=V.not_comparable("a test"))}

    def verdict_views(self, result, measured, ledger):
        return harness.Output({})


def test_a_judge_that_fails_keeps_the_measurement_and_rejudge_completes_it(tmp_path, monkeypatch):
    ckpt = tmp_path / "checkpoints"
    exp = Fake(ckpt)
    with pytest.raises(errors.RunFailed, match="the measurement is kept in .*repro rejudge"):
        harness.run(exp, "smoke", None, root=tmp_path / "results")
    [kept] = results.finished_runs("mnist_cnn", "smoke", tmp_path / "results")
    record = results.read_provenance(kept)
    assert record["status"] == harness.JUDGE_FAILED and "KeyError" in record["judge_error"]
    assert (kept / "summary.csv").is_file() and (ckpt / "model.keras").is_file()  # data and checkpoints kept
    assert results.latest_run("mnist_cnn", "smoke", tmp_path / "results") is None  # never read as a finished run
    assert harness.judge_failed(kept) and not harness.finished(kept) and not (kept.parent / "LATEST").exists()
    exp.fail = False  # the judge is fixed
    monkeypatch.setattr(harness, "experiment", lambda name: exp)
    ledger, changed = harness.rejudge_run(kept, git={"commit": "test", "dirty": False})
    assert ledger["category"].tolist() == ["not comparable"] and "provenance.json" in changed
    assert results.read_provenance(kept)["status"] == "complete" and not ckpt.exists()  # completed, then cleaned
    assert (kept.parent / "LATEST").read_text().strip() == kept.name and harness.finished(kept)


def test_checkpoints_go_only_after_the_judge_has_run(tmp_path):
    ckpt = tmp_path / "checkpoints"
    out = harness.run(Fake(ckpt, fail=False), "smoke", None, root=tmp_path / "results")
    assert out.tables["ledger"]["category"].tolist() == ["not comparable"] and not ckpt.exists()


def test_the_rendered_notebook_is_given_the_parameters_the_run_changed(tmp_path):
    from repro.core import runner

    out = harness.run(Fake(tmp_path / "c", fail=False), "smoke", {"epochs": 3}, root=tmp_path / "results")
    assert out.provenance["overrides"] == {"epochs": 3} and runner.overrides_of(out.provenance) == {"epochs": 3}
    # a run older than the record: the names its command line gave with -p, at the values it ran with
    old = {"experiment": "mnist_cnn", "command": "repro run mnist_cnn --profile smoke -p epochs=3 --param seeds=0,1",
           "parameters": {"epochs": 3, "seeds": [0, 1], "batch_size": 128}}
    assert runner.overrides_of(old) == {"epochs": 3, "seeds": [0, 1]}
    assert runner.overrides_of({"experiment": "mnist_cnn", "command": "repro run mnist_cnn --profile cpu",
                                "parameters": {"epochs": 12}}) == {}
    # flat names of runs stored before the parameters were nested: nested like the parameters the notebook takes
    flat = {"experiment": "distributed", "overrides": {"emulate": "k80-p2.16xlarge", "emulate_workers": [1, 2]}}
    assert runner.overrides_of(flat) == {"emulate": {"hardware": "k80-p2.16xlarge", "workers": [1, 2]}}
    older = {"experiment": "distributed", "command": "repro run distributed -p emulate_workers=1,2 -p ps=2",
             "parameters": {"emulate": None, "emulate_workers": [1, 2], "ps": 2}}
    assert runner.overrides_of(older) == {"emulate": {"workers": [1, 2]}, "ps": 2}
