"""The judge's code is part of the rule a run is measured under (issue 55, item 1): a change of it after the data
is flagged *rule changed after the data*, like a changed claim; a reworded docstring is not.
The end-to-end case (a toy experiment run, its judge then changed) is tests/smoke/test_judge_code_smoke.py."""

from repro.core import claims, harness, judgecode
from repro.core import verdicts as V

CLAIM = dict(id="acc", paper="p", text="accuracy is 0.9", paper_value="0.9", source="s", evidence="t",
             check="within", reference=0.9, tolerance=0.02, tolerance_source="our judgement", stochastic=True,
             counterfactual="an accuracy of 0.8 (tests/unit/test_judge_code.py)")


def test_a_digest_of_code_sees_a_threshold_and_not_a_docstring_or_a_comment():
    code = 'def tie(x):\n    """Within the tie band."""\n    return abs(x) < 0.5  # the band\n'
    assert judgecode.code_digest(code) == judgecode.code_digest(code.replace("Within the tie band.", "Inside it."))
    assert judgecode.code_digest(code) == judgecode.code_digest(code.replace("# the band", "# moved nothing"))
    assert judgecode.code_digest(code) != judgecode.code_digest(code.replace("0.5", "0.6"))


def test_the_judging_code_of_an_experiment_is_its_verdict_modules_and_what_they_import():
    mods = judgecode.judge_modules(harness.experiment("staleness"))
    assert {"repro.experiments.staleness.verdicts", "repro.experiments.staleness.undecided"} <= set(mods)
    assert not any(m.endswith("paramtypes") for m in mods)  # generated from profile.yaml: parameters, not rules
    keys = judgecode.digests(harness.experiment("distributed"))
    assert "src/repro/experiments/distributed/experiment.py::judge" in keys
    assert "src/repro/experiments/distributed/modelinterval.py" in keys
    assert any(k.startswith("model:") and k.endswith("measurements.csv") for k in keys)  # the interval's data


def test_a_judge_code_change_after_the_data_is_flagged():
    claim = claims.Claim.model_validate(CLAIM)
    m = claims.Measured(ours="0.91", value=0.91, runs=2)
    then = {"src/x/verdicts.py": "aaaa", "model:src/x/measurements.csv": "m1"}
    under = {"digests": {"acc": claim.digest()}, "verdicts": {"acc": "reproduced (x)"}, "code": then}
    assert claims.row(claim, m, under, dict(then))["category"] == "reproduced"  # the same code: it stands
    moved = claims.row(claim, m, under, {**then, "src/x/verdicts.py": "bbbb"})
    assert moved["category"] == V.Category.RULE_CHANGED.value
    assert "changed since: the judge's code (verdicts.py)" in moved["verdict"]
    assert "measured under: reproduced (x)" in moved["verdict"]
    # the model's data counts for model rows only; a run that recorded no code is flagged as such
    other_data = {**then, "model:src/x/measurements.csv": "m2"}
    assert claims.row(claim, m, under, other_data)["category"] == "reproduced"
    model = claims.Measured(ours="1.2", value=0.91, basis="model", runs=0)
    assert claims.row(claim, model, under, other_data)["category"] == V.Category.RULE_CHANGED.value
    assert claims.row(claim, model, under, dict(then))["category"] == "consistent"
    no_record = claims.row(claim, m, {**under, "code": None}, dict(then))
    assert no_record["category"] == V.Category.RULE_CHANGED.value and "recorded no digest of it" in no_record["verdict"]
    # judged while measuring: today's code by definition
    assert claims.row(claim, m, None, {**then, "src/x/verdicts.py": "bbbb"})["category"] == "reproduced"


def test_a_code_digest_is_the_same_on_every_python():
    """Pinned: the lent GPU machine runs Python 3.12, this machine 3.11; ``ast.dump`` differs between them (3.12's
    ``type_params``), which once made a run measured there read *rule changed* here. The same digest on 3.10-3.13
    (checked with pyenv's interpreters on 2026-11-28)."""
    from repro.core import judgecode

    source = 'def f(x, *, y=2):\n    """doc"""\n    return x + y  # c\n\nclass A:\n    t = f"{1:>3}"\n'
    pinned = "c1:1956b602b2668b30"
    assert judgecode.code_digest(source) == pinned
    assert judgecode.current_scheme({"a.py": pinned}) and not judgecode.current_scheme({"a.py": "0123456789abcdef"})
