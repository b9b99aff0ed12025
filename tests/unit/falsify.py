"""Falsification cases: every claim that can be decisive, its judge fed the claim true and false.

Each experiment has ``tests/unit/test_falsify_<experiment>.py`` with ``EXPERIMENT`` (its name) and
``CASES``: claim id -> a function returning ``(measured_if_true, measured_if_false)``, two
:class:`~repro.core.claims.Measured` built by the experiment's own judge from counterfactual tables
(never typed by hand). :func:`assert_flips` sends both through the ledger's one rule
(:func:`repro.core.claims.row`) and asserts the verdict flips; ``test_falsification_coverage.py``
fails when a claim of ``claims.yaml`` that can be decisive has no case.
"""

from __future__ import annotations

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
