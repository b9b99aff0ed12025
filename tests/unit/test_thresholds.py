"""Every threshold of every claims.yaml guarded by a test, the cases generated from claims.yaml (never typed).

* a ``within`` tolerance or a ``band``: a value just inside and just outside it, through every basis that can
  decide (measured, emulated, model, equations), with the run rule of the bases with runs;
* a named threshold (``thresholds:``, read by an experiment's judge): the claim's falsification case judged
  again with that threshold moved far (0, x1000, -x1000) must change a verdict: a threshold that no case can
  move is dead (or untested) and fails here.
"""

from __future__ import annotations

import falsify
import pytest

from repro.core import claims, params
from repro.core import verdicts as V
from repro.core.claims import Measured

NUDGE = 1e-6  # relative: "just" inside or outside
DECIDING = [("measured", V.MIN_RUNS), ("emulated", V.MIN_RUNS), ("model", 0), ("equations", 0)]


def _all(check: str) -> list:
    return [pytest.param(c, id=f"{e}/{c.id}") for e in params.experiments() for c in claims.load(e).values()
            if c.check == check and not (c.reported and not _has_reported(c))]


def _has_reported(c) -> bool:
    try:
        c.reference()
        return True
    except Exception:  # noqa: BLE001 - a claim whose number is missing is claims.yaml's test's business
        return False


def _decide(c, value: float, basis: str, runs: int):
    return claims.row(c.model_copy(update={"counterfactual": c.counterfactual or "x", "decisive": True}),
                      Measured(f"{value}", value=value, basis=basis, runs=runs))["category"]


@pytest.mark.parametrize("claim", _all("within"))
@pytest.mark.parametrize("basis,runs", DECIDING)
def test_within_tolerance_just_inside_holds_and_just_outside_fails(claim, basis, runs):
    ref, tol = claim.reference(), claim.tolerance
    holds = "reproduced" if basis == "measured" else "consistent"
    for sign in (1, -1):
        assert _decide(claim, ref + sign * tol * (1 - NUDGE), basis, runs) == holds
        assert _decide(claim, ref + sign * tol * (1 + NUDGE) + sign * NUDGE, basis, runs) != holds


@pytest.mark.parametrize("claim", _all("band"))
@pytest.mark.parametrize("basis,runs", DECIDING)
def test_band_just_inside_holds_and_just_outside_fails(claim, basis, runs):
    lo, hi = claim.band
    eps = NUDGE * max(hi - lo, abs(lo), abs(hi), 1e-9)
    holds = "reproduced" if basis == "measured" else "consistent"
    assert _decide(claim, lo + eps, basis, runs) == holds and _decide(claim, hi - eps, basis, runs) == holds
    assert _decide(claim, lo - eps, basis, runs) != holds and _decide(claim, hi + eps, basis, runs) != holds


@pytest.mark.parametrize("claim", _all("within") + _all("band"))
def test_a_stochastic_quantity_needs_the_minimum_runs_on_the_bases_with_runs(claim):
    value = claim.reference() if claim.check == "within" else sum(claim.band) / 2
    for basis in ("measured", "emulated"):
        few = _decide(claim, value, basis, V.MIN_RUNS - 1)
        assert few == ("not comparable" if claim.stochastic else _decide(claim, value, basis, V.MIN_RUNS))


def _named() -> list:
    out = []
    for e in params.experiments():
        cases = falsify.cases(e)
        for c in claims.load(e).values():
            for name in sorted(c.thresholds or {}):
                out.append(pytest.param(e, c.id, name, cases.get(c.id), id=f"{e}/{c.id}/{name}"))
    return out


def _verdicts(experiment: str, claim_id: str, case) -> tuple:
    try:
        yes, no = case()
        c = claims.load(experiment)[claim_id]
        return claims.row(c, yes)["verdict"], claims.row(c, no)["verdict"]
    except (claims.ClaimsError, V.VerdictError, ValueError) as err:
        return ("raised", str(err))


@pytest.mark.parametrize("experiment,claim_id,name,case", _named())
def test_every_named_threshold_moves_a_verdict_of_its_falsification_case(experiment, claim_id, name, case,
                                                                        monkeypatch):
    if case is None:
        pytest.skip(f"{experiment}/{claim_id} is not decisive: no falsification case to move")
    real, original = claims.load, claims.load(experiment)
    before = _verdicts(experiment, claim_id, case)
    moved = []
    for factor in (0.0, 1000.0, -1000.0):
        changed = dict(original)
        c = original[claim_id]
        changed[claim_id] = c.model_copy(update={"thresholds": {**c.thresholds, name: c.thresholds[name] * factor
                                                                if c.thresholds[name] else factor}})
        monkeypatch.setattr(claims, "load", lambda exp, package="repro.experiments", _c=changed:
                            _c if exp == experiment else real(exp, package))
        moved.append(_verdicts(experiment, claim_id, case) != before)
        monkeypatch.undo()
    assert any(moved), f"{experiment}/{claim_id}: threshold {name!r} moved to 0, x1000, -x1000 changes no verdict"
