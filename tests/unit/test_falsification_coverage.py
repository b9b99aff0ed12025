"""Every claim that can be decisive has a falsification case (tests/unit/falsify.py)."""


import falsify
import pytest

from repro.core import claims, params


@pytest.mark.parametrize("experiment", params.experiments())
def test_every_decisive_claim_has_a_falsification_case(experiment):
    said = claims.load(experiment)
    decisive = {cid for cid, c in said.items() if c.decisive}
    cases = set(falsify.cases(experiment))
    assert not decisive - cases, f"{experiment}: decisive claims without a falsification case: {sorted(decisive - cases)}"
    assert not cases - decisive, f"{experiment}: cases for claims that are not decisive or unknown: {sorted(cases - decisive)}"


@pytest.mark.parametrize("experiment", params.experiments())
def test_claims_that_cannot_be_decisive_say_why(experiment):
    for c in claims.load(experiment).values():
        assert c.decisive or len(c.why_not_decisive.strip()) > 20, (experiment, c.id)
