"""Rules fixed before the data, and verdicts that hold on a rerun (issue 47's two rules)."""

import json
import subprocess

import pandas as pd
import pytest

from repro.core import claims, history, ledger, results, statements
from repro.core import verdicts as V

CLAIM = dict(id="acc", paper="p", text="accuracy is 0.9", paper_value="0.9", source="s", evidence="t",
             check="within", reference=0.9, tolerance=0.02, tolerance_source="our judgement", stochastic=True,
             counterfactual="an accuracy of 0.8 (tests/unit/test_rules_fixed.py)")


def _claim(**kw):
    return claims.Claim.model_validate({**CLAIM, **kw})


def test_a_rule_changed_after_the_data_is_flagged_with_both_verdicts():
    then = _claim(tolerance=0.02)
    m = claims.Measured(ours="0.87", value=0.87, runs=2)
    under = {"digests": {"acc": then.digest()}, "verdicts": {"acc": str(claims.row(then, m)["verdict"])}}
    assert claims.row(then, m, under)["category"] == "differs"  # the rule it was measured under: still decided
    widened = claims.row(_claim(tolerance=0.05), m, under)  # the tolerance moved after the data was seen
    assert widened["category"] == "rule changed after the data"
    assert "today's rule: reproduced" in widened["verdict"] and "measured under: differs" in widened["verdict"]
    assert V.Category(widened["category"]) not in V.DECISIVE
    reworded = claims.row(_claim(text="accuracy is about 0.9"), m, under)  # the text counts too
    assert reworded["category"] == "rule changed after the data"
    # the prose around a rule is not the rule: a new source sentence changes nothing
    assert claims.row(_claim(source="digest §5", tolerance_source="rounding"), m, under)["category"] == "differs"
    # a stored run that recorded nothing is not decided either; judging while measuring (None) is
    assert claims.row(then, m, {})["category"] == "rule changed after the data"
    assert claims.row(then, m, None)["category"] == "differs"
    # a verdict decided then and undecided now is flagged too (a claim rewritten after a run it had passed)
    gated = claims.Measured(ours="0.87", gate=V.not_comparable("the grid cannot tell"), runs=2)
    assert claims.row(_claim(text="accuracy is 0.9 and more"), gated, under)["category"] == "rule changed after the data"
    # undecided then and now: nothing to flag
    undecided = {"digests": {"acc": then.digest()}, "verdicts": {"acc": "not comparable (x)"}}
    assert claims.row(_claim(text="accuracy is 0.9 and more"), gated, undecided)["category"] == "not comparable"
    # the papers' own numbers are judged under a rule too (issue 55): one changed after them is flagged
    eq = claims.Measured(ours="0.87", value=0.87, basis="equations")
    assert claims.row(_claim(tolerance=0.05), eq, under)["category"] == "rule changed after the data"
    # and a run with new data of its own judges them under the rule of the run that first judged them
    first = {"acc": {**under, "first_judged_in": "run-a"}}
    moved = claims.row(_claim(tolerance=0.05), eq, None, first=first)
    assert moved["category"] == "rule changed after the data" and "run-a first judged" in moved["verdict"]
    assert claims.row(then, eq, None, first=first)["category"] == "inconsistent"  # the same rule: it stands
    assert claims.row(_claim(tolerance=0.05), m, None, first=first)["category"] == "reproduced"  # our data: its own


def test_a_digest_reads_an_older_claims_file_and_ignores_fields_this_checkout_lost():
    text = "claims:\n  - {id: acc, paper: p, text: accuracy is 0.9, check: within, reference: 0.9, tolerance: 0.02, " \
           "gone_field: 1}\n"
    assert claims.digests_of_text(text) == {"acc": _claim().digest()}
    assert claims.digests_of_text(text.replace("0.02", "0.03")) != {"acc": _claim().digest()}


def _ledger_of(ours, verdict, runs=2, stochastic=True, basis="measured"):
    cat = V.category_of(verdict).value
    return ledger.frame([{"paper": "p", "claim": "accuracy is 0.9", "paper_value": "0.9", "ours": ours,
                          "verdict": verdict, "category": cat, "evidence": "t", "basis": basis, "runs": runs,
                          "tier": V.tier(basis).value, "id": "acc", "statement": "p:acc", "paper_did": "measured",
                          "stochastic": stochastic, "decisive": True}]).astype(str)


def _v(basis: str, verdict: str) -> str:
    """``verdict`` in the words of ``basis`` (an emulation says consistent / inconsistent)."""
    return verdict if basis == "measured" else verdict.replace("reproduced", "consistent").replace("differs",
                                                                                                 "inconsistent")


@pytest.mark.parametrize("basis", ["measured", "emulated"])  # an emulated row with one run is not decided (issue 55)
def test_a_second_run_with_the_opposite_outcome_makes_a_verdict_unstable(basis):
    now = _ledger_of("0.91", _v(basis, "reproduced (-0.01 vs paper, tolerance 0.02)"), basis=basis)
    alone = statements.confirm(now, [])
    assert alone.loc[0, "category"] == "not comparable" and "second run" in alone.loc[0, "verdict"]
    same = statements.confirm(now, [("run-b", _ledger_of("0.895", _v(basis, "reproduced (-0.005 vs paper, tolerance 0.02)"), basis=basis))])
    assert same.loc[0, "category"] == _v(basis, "reproduced") and "confirmed by run run-b (0.895)" in same.loc[0, "verdict"]
    other = statements.confirm(now, [("run-b", _ledger_of("0.85", _v(basis, "differs (-0.05 vs paper, tolerance 0.02)"), basis=basis))])
    assert other.loc[0, "category"] == "unstable"
    assert "0.91" in other.loc[0, "verdict"] and _v(basis, "run run-b: 0.85 gave differs") in other.loc[0, "verdict"]
    # a run that decided nothing neither confirms nor contradicts; a quantity that is not random needs no rerun
    gated = statements.confirm(now, [("run-b", _ledger_of("0.85", "not comparable (1 run)", basis=basis))])
    assert gated.loc[0, "category"] == "not comparable"
    fixed = _ledger_of("0.91", _v(basis, "reproduced (x)"), stochastic=False, basis=basis)
    assert statements.confirm(fixed, [])["category"].tolist() == [_v(basis, "reproduced")]


def test_a_rerun_measured_under_an_older_rule_confirms_nothing():
    now = _ledger_of("0.91", "reproduced (-0.01 vs paper, tolerance 0.02)")
    other = _ledger_of("0.90", "reproduced (x)")
    today = {"acc": "d-today"}
    same = statements.confirm(now, [("run-b", other, {"acc": "d-today"})], today)
    assert same.loc[0, "category"] == "reproduced"
    older = statements.confirm(now, [("run-b", other, {"acc": "d-older"})], today)
    assert older.loc[0, "category"] == "not comparable"


def test_a_stored_verdict_reads_back_with_brackets_inside_its_detail():
    v = V.parse("reproduced (x (3 runs); confirmed by run r (N = 2: 1.8))")
    assert v.category is V.Category.REPRODUCED and v.detail == "x (3 runs); confirmed by run r (N = 2: 1.8)"
    assert V.parse("not comparable").detail == "" and str(V.parse("differs (a (b))")) == "differs (a (b))"


def _run(tmp_path, name, params, ledger_df):
    d = tmp_path / "exp" / name
    d.mkdir(parents=True)
    (d / "provenance.json").write_text(json.dumps({"status": "complete", "parameters": params,
                                                   "experiment": "staleness"}))
    ledger_df.to_csv(d / "ledger.csv", index=False)
    return d


def test_only_runs_of_the_same_parameters_count_as_reruns(tmp_path):
    a = _run(tmp_path, "2026-a", {"seeds": [0, 1]}, _ledger_of("0.85", "differs (x)"))
    b = _run(tmp_path, "2026-b", {"seeds": [0, 1]}, _ledger_of("0.91", "reproduced (x)"))
    _run(tmp_path, "2026-c", {"seeds": [5]}, _ledger_of("0.91", "reproduced (x)"))
    assert statements.same_protocol_runs(b) == [a]
    assert statements.confirmed_ledger(b).loc[0, "category"] == "unstable"


@pytest.mark.skipif(results.project_root() is None or not (results.project_root() / ".git").exists(),
                    reason="needs the repository's git history")
def test_a_published_run_recovers_the_claims_it_was_measured_under_from_git():
    root = results.project_root()
    run = sorted((root / "published" / "cpu" / "staleness").glob("2*"))[-1]
    found = history.recover(run, root)
    if found is None:
        pytest.skip("the run's commit is not in this clone's history (a shallow clone)")
    assert found["source"].startswith("recovered from git") and "staleness_equals_n_threads" in found["digests"]
    assert set(found["verdicts"]) <= set(found["digests"])


def test_a_fresh_ledger_row_names_its_claim_statement_and_whether_it_is_random():
    row = claims.row(_claim(statement="p:acc-statement", paper_did="measured"), claims.Measured(ours="x", holds=None,
                     gate=V.not_comparable("stand-in")))
    assert (row["id"], row["statement"], row["paper_did"], row["stochastic"], row["decisive"]) == (
        "acc", "p:acc-statement", "measured", True, True)
    assert set(ledger.STORED) >= {"id", "statement", "paper_did", "stochastic", "decisive"}
    assert pd.DataFrame([row]).shape == (1, len(ledger.STORED))


@pytest.mark.skipif(results.project_root() is None or not (results.project_root() / ".git").exists(),
                    reason="needs the repository's git history")
def test_a_run_outside_the_checkout_recovers_nothing_from_git_instead_of_crashing(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=results.project_root(), capture_output=True,
                          text=True).stdout.strip()
    (run / "provenance.json").write_text(json.dumps({"experiment": "staleness", "git": {"commit": head}}))
    found = history.recover(run, results.project_root())
    assert found is not None and found["digests"] and found["verdicts"] == {}  # claims from git, no ledger
