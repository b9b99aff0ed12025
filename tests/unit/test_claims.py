"""Claims as data and the one function from a claim and its measurement to a ledger row (repro.core.claims)."""

import pytest

from repro.core import claims, params
from repro.core import verdicts as V
from repro.core.claims import Claim, ClaimsError, Measured


def _claim(**kw):
    base = dict(id="c", paper="cloudcost2017", text="t", paper_value="1", source="s", evidence="e",
                check="holds", stochastic=True, counterfactual="a run that measures the opposite (test_x)")
    return Claim(**{**base, **kw})


def _verdict(c, m):
    return claims.row(c, m)["verdict"]


def test_within_uses_the_reported_number_and_the_tolerance():
    c = _claim(paper="keras_mnist_cnn", check="within", reported="mnist_cnn_test_accuracy_12ep", tolerance=0.005, tolerance_source="x")
    assert c.reference() == pytest.approx(0.9925)
    assert _verdict(c, Measured("99.1%", value=0.991, runs=2)) == "reproduced"
    assert _verdict(c, Measured("98%", value=0.98, runs=2)) == "differs (-0.0125 vs paper, tolerance 0.005)"
    inline = _claim(check="within", reference_value=2.0, tolerance=0.1, tolerance_source="x")
    assert _verdict(inline, Measured("2.2", value=2.2, runs=2)).startswith("differs (+0.2")


def test_band_holds_gate_and_the_bases_that_only_check():
    band = _claim(check="band", band=(0.8, 1.0), tolerance_source="x")
    assert _verdict(band, Measured("0.9", value=0.9, runs=2)) == "reproduced"
    assert _verdict(band, Measured("0.5", value=0.5, runs=2)) == "differs (0.5 outside [0.8, 1])"
    for basis in ("equations", "emulated", "model"):  # never reproduced / differs
        assert _verdict(band, Measured("0.9", value=0.9, basis=basis, runs=2)) == "consistent"
        assert _verdict(band, Measured("0.5", value=0.5, basis=basis, runs=2)) == "inconsistent (0.5 outside [0.8, 1])"
    holds = _claim()
    assert _verdict(holds, Measured("yes", holds=True, basis="equations")) == "consistent"
    assert _verdict(holds, Measured("no", holds=False, runs=2)).startswith("differs")
    assert _verdict(holds, Measured("no", holds=False, runs=2, note="how")) == "differs (how)"
    assert _verdict(holds, Measured("x", gate=V.not_comparable("stand-in"))) == "not comparable (stand-in)"
    with pytest.raises(ClaimsError, match="cannot declare success"):
        claims.row(holds, Measured("x", gate=V.reproduced()))
    with pytest.raises(ClaimsError, match="built by repro.core.verdicts"):
        claims.row(holds, Measured("x", gate="not comparable (free text)"))
    with pytest.raises(ClaimsError, match="needs basis measured"):
        claims.row(holds, Measured("x", gate=V.partly("half"), basis="emulated"))
    with pytest.raises(ClaimsError, match="needs holds"):
        claims.row(holds, Measured("x"))


def test_thresholds_and_decisive_flags_are_validated():
    c = _claim(thresholds={"tie": 0.5}, tolerance_source="ours")
    assert c.threshold("tie") == 0.5
    with pytest.raises(ClaimsError, match="no threshold 'band'"):
        c.threshold("band")
    base = dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="holds")
    with pytest.raises(ClaimsError, match="need tolerance_source"):
        claims._claim("x", dict(base, thresholds={"tie": 0.5}))
    with pytest.raises(ClaimsError, match="mapping of names to numbers"):
        claims._claim("x", dict(base, thresholds={"tie": "half"}, tolerance_source="s"))
    with pytest.raises(ClaimsError, match="needs why_not_decisive"):
        claims._claim("x", dict(base, decisive=False))
    with pytest.raises(ClaimsError, match="belongs to a claim with decisive: false"):
        claims._claim("x", dict(base, why_not_decisive="because"))
    gated_only = claims._claim("x", dict(base, decisive=False, why_not_decisive="no run can"))
    assert not gated_only.decisive
    assert claims.row(gated_only, Measured("x", gate=V.not_testable("no run can")))["category"] == "not testable here"
    with pytest.raises(ClaimsError, match="marked decisive: false"):  # it cannot slip into a verdict
        claims.row(gated_only, Measured("yes", holds=True, runs=2))


def test_malformed_claims_fail_in_one_line():
    with pytest.raises(ClaimsError, match="need tolerance_source"):
        claims._claim("x", dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e",
                                check="band", band=[0, 1]))
    with pytest.raises(ClaimsError, match="check must be one of"):
        claims._claim("x", dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="maybe"))
    with pytest.raises(ClaimsError, match=r"missing \['evidence'"):
        claims._claim("x", dict(id="a", paper="p", text="t", paper_value=1, source="s", check="holds"))


def test_every_experiment_folder_has_valid_claims():
    for name in params.experiments():
        loaded = claims.load(name)
        assert loaded, name
        for c in loaded.values():
            if c.check == "within":
                assert c.reference() == c.reference()  # resolvable, not NaN


def test_ledger_needs_one_measurement_per_claim_and_applies_the_run_rule():
    with pytest.raises(ClaimsError, match="no measurement for claims"):
        claims.ledger("mnist_cnn", {})
    with pytest.raises(ClaimsError, match="unknown claims"):
        claims.ledger("mnist_cnn", {"accuracy_12ep": Measured("1", value=0.99), "extra": Measured("1")})
    one = claims.ledger("mnist_cnn", {"accuracy_12ep": Measured("99.20%", value=0.992, runs=1)})
    assert one.loc[0, "verdict"].startswith("not comparable (1 run of a stochastic quantity")
    two = claims.ledger("mnist_cnn", {"accuracy_12ep": Measured("99.20%", value=0.992, runs=2)})
    assert (two.loc[0, "verdict"], two.loc[0, "basis"], two.loc[0, "runs"]) == ("reproduced", "measured", 2)
    none = claims.ledger("mnist_cnn", {"accuracy_12ep": Measured("–", gate=V.not_measured("x"))})
    assert (none.loc[0, "basis"], none.loc[0, "runs"]) == ("none", 0)
    # the tolerance and its source travel with every row, whatever the verdict
    said = claims.load("mnist_cnn")["accuracy_12ep"]
    assert none.loc[0, "tolerance"] == two.loc[0, "tolerance"] == f"±{said.tolerance:.4g}: {said.tolerance_source}"


def test_tolerance_text_names_the_threshold_and_its_source():
    band = _claim(check="band", band=(0.95, 1.05), tolerance_source="rounding")
    assert claims.tolerance_text(band) == "[0.95, 1.05]: rounding"
    assert claims.tolerance_text(_claim(tolerance_source="our reading")) == "our reading"
    assert claims.tolerance_text(_claim()) == "–"  # a plain yes/no


@pytest.mark.parametrize("change, message", [
    (dict(tolerance="small"), r"^x/claims.yaml, claim 'a': tolerance: must be a number, got 'small'$"),
    (dict(colour="red"), r"^x/claims.yaml, claim 'a': missing \[\] / unknown \['colour'\]$"),
    (dict(check="band", band=[0], tolerance_source="s"), r"^x/claims.yaml, claim 'a': check 'band' needs band: \[low, high\]$"),
    (dict(check="within", tolerance=0.1, tolerance_source="s"), "check 'within' needs a tolerance and one of reported, reference"),
    (dict(thresholds={"tie": True}, tolerance_source="s"), "thresholds is a mapping of names to numbers"),
    (dict(stochastic="often"), r"^x/claims.yaml, claim 'a': stochastic: Input should be a valid boolean"),
])
def test_the_claim_schema_names_the_file_the_claim_and_the_field(change, message):
    base = dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="holds")
    with pytest.raises(ClaimsError, match=message) as err:
        claims._claim("x", dict(base, **change))
    assert "\n" not in str(err.value)
    c = claims._claim("x", dict(base, check="within", reference=2, tolerance=1, tolerance_source="s"))
    assert (c.paper_value, c.reference_value, c.tolerance, c.band) == ("1", 2, 1, None)


def test_a_decisive_measured_verdict_needs_the_claims_counterfactual_and_every_row_has_a_tier():
    """Decisive on basis measured only where claims.yaml names the run under which the other outcome would
    appear; the tier follows the basis, and a row with nothing of ours keeps the claim's declared tier."""
    bare = _claim(counterfactual="")
    with pytest.raises(ClaimsError, match="'c': a decisive verdict on basis measured needs claims.yaml's counterfactual"):
        claims.row(bare, Measured("yes", holds=True, runs=2))
    assert claims.row(bare, Measured("yes", holds=True, basis="equations"))["tier"] == "papers' own numbers"
    assert claims.row(bare, Measured("yes", holds=True, basis="emulated", runs=2))["tier"] == "predictions"
    assert claims.row(bare, Measured("yes", holds=True, basis="model"))["tier"] == "predictions"
    assert claims.row(bare, Measured("x", gate=V.not_comparable("stand-in"), runs=1))["tier"] == "measured"
    asks = _claim(tier="papers' own numbers")
    assert claims.row(asks, Measured("–", gate=V.not_measured("later"), basis="none"))["tier"] == "papers' own numbers"
    assert claims.row(_claim(), Measured("yes", holds=True, runs=2))["tier"] == "measured"
    with pytest.raises(ClaimsError, match="tier"):
        claims._claim("x", {**dict(id="c", paper="p", text="t", paper_value="1", source="s", evidence="e",
                                  check="holds"), "tier": "strong"})


def test_claims_errors_name_the_claim_and_the_allowed_checks():
    base = dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="holds")
    with pytest.raises(ClaimsError, match=r"^x/claims.yaml, claim 'a': check must be one of within, band, holds, "
                                          r"got 'maybe'$"):
        claims._claim("x", dict(base, check="maybe"))
    no_id = {k: v for k, v in base.items() if k != "id"}
    with pytest.raises(ClaimsError, match=r"^x/claims.yaml, claim '\?': missing \['id'\]"):
        claims._claim("x", no_id)
    with pytest.raises(ClaimsError, match=r"^x/claims.yaml, claim '\?'"):  # not a mapping at all
        claims._claim("x", ["id", "a"])


def test_a_band_claim_keeps_its_band_as_a_pair():
    raw = dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="band",
               band=[0.8, 1.0], tolerance_source="s", counterfactual="a run below 0.8 (test_x)")
    c = claims._claim("x", raw)
    assert c.band == (0.8, 1.0)
    assert claims.row(c, Measured("0.9", value=0.9, runs=2))["category"] == "reproduced"


def test_the_ends_of_a_tolerance_and_of_a_band_are_inside():
    within = _claim(check="within", reference_value=2.0, tolerance=0.5, tolerance_source="x")
    assert claims.row(within, Measured("2.5", value=2.5, runs=2))["verdict"] == "reproduced"
    assert claims.row(within, Measured("1.5", value=1.5, runs=2))["verdict"] == "reproduced"
    assert claims.row(within, Measured("2.6", value=2.6, runs=2))["category"] == "differs"
    band = _claim(check="band", band=(0.8, 1.0), tolerance_source="x")
    for at in (0.8, 1.0):
        assert claims.row(band, Measured(str(at), value=at, runs=2))["verdict"] == "reproduced", at


def test_a_gate_keeps_the_measurements_note_and_a_missing_value_is_named():
    row = claims.row(_claim(), Measured("x", gate=V.not_comparable("a"), note="b"))
    assert row["verdict"] == "not comparable (a; b)"
    with pytest.raises(ClaimsError, match=r"^claim 'c' \(check band\) needs a value or a gate$"):
        claims.compare(_claim(check="band", band=(0.0, 1.0), tolerance_source="x"), Measured("x"))


def test_a_row_on_basis_none_has_no_runs_whatever_ours_says():
    row = claims.row(_claim(), Measured("bare metal only", gate=V.not_testable("x"), basis="none", runs=3))
    assert (row["basis"], row["runs"], row["ours"]) == ("none", 0, "bare metal only")
