"""Every claim that can be decisive has a falsification case (tests/unit/falsify.py)."""

import importlib.util
from pathlib import Path

import pytest

from repro.core import claims, params

HERE = Path(__file__).parent


def _cases(experiment: str) -> dict:
    path = HERE / f"test_falsify_{experiment}.py"
    if not path.is_file():
        return {}
    spec = importlib.util.spec_from_file_location(f"_falsify_{experiment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.EXPERIMENT == experiment, path
    return module.CASES


@pytest.mark.parametrize("experiment", params.experiments())
def test_every_decisive_claim_has_a_falsification_case(experiment):
    said = claims.load(experiment)
    decisive = {cid for cid, c in said.items() if c.decisive}
    cases = set(_cases(experiment))
    assert not decisive - cases, f"{experiment}: decisive claims without a falsification case: {sorted(decisive - cases)}"
    assert not cases - decisive, f"{experiment}: cases for claims that are not decisive or unknown: {sorted(cases - decisive)}"


@pytest.mark.parametrize("experiment", params.experiments())
def test_claims_that_cannot_be_decisive_say_why(experiment):
    for c in claims.load(experiment).values():
        assert c.decisive or len(c.why_not_decisive.strip()) > 20, (experiment, c.id)
