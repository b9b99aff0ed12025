"""Falsification cases: every claim that can be decisive, its judge fed the claim true and false.

Each experiment has ``tests/unit/test_falsify_<experiment>.py`` with ``EXPERIMENT`` (its name) and
``CASES``: claim id -> a function returning ``(measured_if_true, measured_if_false)``, two
:class:`~repro.core.claims.Measured` built by the experiment's own judge from counterfactual tables
(never typed by hand). :func:`assert_flips` sends both through the ledger's one rule
(:func:`repro.core.claims.row`) and asserts the verdict flips; ``test_falsification_coverage.py``
fails when a claim of ``claims.yaml`` that can be decisive has no case.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

from repro.core import claims
from repro.core import verdicts as V

HERE = Path(__file__).parent

HOLDS = {V.Category.REPRODUCED.value, V.Category.CONSISTENT.value}
FAILS = {V.Category.DIFFERS.value, V.Category.INCONSISTENT.value, V.Category.PARTLY.value}


def assert_flips(experiment: str, claim_id: str, if_true: claims.Measured, if_false: claims.Measured) -> None:
    """The claim's row is reproduced/consistent on ``if_true`` and differs/inconsistent/partly on
    ``if_false``, on the same basis (the counterfactual changes the tables, not the kind of evidence)."""
    claim = claims.load(experiment)[claim_id]
    yes, no = claims.row(claim, if_true), claims.row(claim, if_false)
    assert yes["category"] in HOLDS, f"{experiment}/{claim_id}: claim true, verdict {yes['verdict']!r}"
    assert no["category"] in FAILS, f"{experiment}/{claim_id}: claim false, verdict {no['verdict']!r}"
    assert yes["basis"] == no["basis"] != "none", (experiment, claim_id, yes["basis"], no["basis"])


def as_decisive(claim: claims.Claim, m: claims.Measured) -> tuple[claims.Claim, claims.Measured]:
    """A ``decisive: false`` claim and its measurement as its judge would decide them were it decisive: without the
    gate that gives its reason (``not testable``, its ``why_not_decisive``), the outcome before that gate."""
    if claim.decisive:
        return claim, m
    why = claim.why_not_decisive
    if m.gate is not None and m.gate.category is V.Category.NOT_TESTABLE and m.gate.detail.startswith(why):
        m = dataclasses.replace(m, gate=None)
    return claim.model_copy(update={"decisive": True, "why_not_decisive": ""}), m


def check_shown(experiment: str, cases: dict, claim_id: str) -> None:
    """The test body of a case of a ``decisive: false`` claim whose row is still shown with what its judge computed
    (``SHOWN``): the judge's outcome before the gate flips, and the row itself decides nothing either way."""
    claim = claims.load(experiment)[claim_id]
    assert not claim.decisive, claim_id
    if_true, if_false = cases[claim_id]()
    for m, want in ((if_true, HOLDS), (if_false, FAILS)):
        assert claims.row(*as_decisive(claim, m))["category"] in want, (claim_id, m)
        if m.gate is not None:
            assert not m.gate.decisive, (claim_id, m.gate)


def check(experiment: str, cases: dict, claim_id: str) -> None:
    """The test body of one case of ``cases`` (parametrize a test over ``sorted(cases)``)."""
    if_true, if_false = cases[claim_id]()
    assert_flips(experiment, claim_id, if_true, if_false)


def cases(experiment: str) -> dict:
    """``CASES`` of ``tests/unit/test_falsify_<experiment>.py`` ({} where the experiment has none)."""
    path = HERE / f"test_falsify_{experiment}.py"
    if not path.is_file():
        return {}
    spec = importlib.util.spec_from_file_location(f"_falsify_{experiment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.EXPERIMENT == experiment, path
    return module.CASES
