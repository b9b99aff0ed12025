"""A byte-identical rerun does not clear a flag (issue 55, item 2): data an earlier published run measured under an
older rule is judged under that rule, whichever run directory holds it now (git's history of ``published/``)."""

import json
import subprocess

from repro.core import claims, history

CLAIM = dict(id="acc", paper="p", text="accuracy is 0.9", paper_value="0.9", source="s", evidence="t",
             check="within", reference=0.9, tolerance=0.02, tolerance_source="our judgement", stochastic=False,
             counterfactual="an accuracy of 0.8 (tests/unit/test_same_data.py)")
CODE = {"src/repro/experiments/toy/verdicts.py": "c0de"}


def _git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                   capture_output=True)


def _run(root, name, started, digest, flips, code=CODE):
    d = root / "published" / "cpu" / "toy" / name
    d.mkdir(parents=True)
    (d / "flips.csv").write_text(flips)
    (d / "ledger.csv").write_text("id,verdict\nacc,differs (x)\n")
    record = {"experiment": "toy", "status": "complete", "started_at": started,
              "claims_measured_under": {"digests": {"acc": digest}, "verdicts": {"acc": "differs (x)"}, "code": code}}
    (d / "provenance.json").write_text(json.dumps(record))
    return d, record


def test_a_byte_identical_rerun_does_not_clear_a_flag(tmp_path):
    older = claims.Claim.model_validate({**CLAIM, "tolerance": 0.02})
    today = claims.Claim.model_validate({**CLAIM, "tolerance": 0.05})  # widened after run A's data was seen
    _git(tmp_path, "init", "-q")
    _run(tmp_path, "A", "2026-01-01T00:00:00", older.digest(), "seed,acc\n0,0.87\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "run A")
    # run B: a deterministic rerun under today's rule, its data byte for byte run A's
    b, record = _run(tmp_path, "B", "2026-02-01T00:00:00", today.digest(), "seed,acc\n0,0.87\n")
    m = claims.Measured(ours="0.87", value=0.87)
    own = record["claims_measured_under"]
    assert claims.row(today, m, own, CODE)["category"] == "reproduced"  # what B's own record alone would say
    earlier = history.first_seen(record, "B", history.data_blobs(b, ["flips.csv"]), CODE, tmp_path)
    assert earlier is not None and earlier["same_data_as"] == "A"
    row = claims.row(today, m, earlier, CODE)
    assert row["category"] == "rule changed after the data", row["verdict"]
    assert "measured under: differs (x)" in row["verdict"] and "since run A measured the same data" in row["verdict"]
    # new data (one byte differs) is a new measurement: judged under the rule it was measured under
    (b / "flips.csv").write_text("seed,acc\n0,0.88\n")
    assert history.first_seen(record, "B", history.data_blobs(b, ["flips.csv"]), CODE, tmp_path) is None
    # and the earlier run itself is not matched against a later one with its data
    (b / "flips.csv").write_text("seed,acc\n0,0.87\n")
    a = tmp_path / "published" / "cpu" / "toy" / "A"
    rec_a = json.loads((a / "provenance.json").read_text())
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "run B")
    assert history.first_seen(rec_a, "A", history.data_blobs(a, ["flips.csv"]), CODE, tmp_path) is None
    assert history.first_seen(record, "B", history.data_blobs(b, ["flips.csv"]), CODE, tmp_path) is not None


def test_the_papers_numbers_are_judged_under_the_rule_of_their_first_judgement(tmp_path):
    """A row on the paper's own numbers (basis equations): whatever else a later run measured, the rule it stands
    under is the one of the earliest published run that judged it (``history.first_judged``)."""
    older = claims.Claim.model_validate({**CLAIM, "tolerance": 0.02})
    today = claims.Claim.model_validate({**CLAIM, "tolerance": 0.05})
    _git(tmp_path, "init", "-q")
    code = {"src/repro/experiments/toy/verdicts.py": "c1:c0de"}  # recorded the way judgecode digests today
    a, _ = _run(tmp_path, "A", "2026-01-01T00:00:00", older.digest(), "seed,acc\n0,0.87\n", code)
    (a / "ledger.csv").write_text("id,verdict,basis\nacc,inconsistent (x),equations\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "run A")
    _run(tmp_path, "B", "2026-02-01T00:00:00", today.digest(), "seed,acc\n0,0.99\n", code)  # new data of its own
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "run B")
    first = history.first_judged("toy", code, tmp_path)
    assert first["acc"]["first_judged_in"] == "A" and first["acc"]["verdicts"]["acc"] == "inconsistent (x)"
    eq = claims.Measured(ours="0.87", value=0.87, basis="equations")
    row = claims.row(today, eq, None, code, first)
    assert row["category"] == "rule changed after the data" and "run A first judged" in row["verdict"], row["verdict"]
    assert claims.row(older, eq, None, code, first)["category"] == "inconsistent"  # the rule of then: it stands
    moved = {"src/repro/experiments/toy/verdicts.py": "c1:c0de2"}  # the judge's code changed since
    assert claims.row(older, eq, None, moved, first)["category"] == "rule changed after the data"
