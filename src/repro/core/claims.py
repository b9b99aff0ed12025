"""The papers' claims, as data, and the one function from a claim and its measurement to a ledger row.

Every experiment folder has a ``claims.yaml``: one entry per claim of a paper that the experiment
speaks to. An entry says what the paper claims and how it is checked; the experiment's code only
measures. It hands one :class:`Measured` per claim id to :func:`ledger`, which applies :func:`row`
(the comparison and the basis rules of :mod:`repro.core.verdicts`) to each.

Fields of a claim (``claims.yaml``, a list under ``claims:``)::

    id:          short name, unique in the experiment (the code's key)
    paper:       bibliography key (cloudcost2017, polishchuk2019, slampa2017, savchenko2019, ...)
    text:        the claim, in the ledger's words
    paper_value: what the paper reports, as the ledger shows it
    source:      where in the paper (digest section, table, figure)
    evidence:    HTML id of the chapter's table that shows our evidence
    check:       within (|ours - reported| <= tolerance) | band (low <= ours <= high) | holds (yes/no)
    reported:    id in paperdata/reported.csv of the paper's number (check within), or
    reference:   the paper's number itself (a paper whose numbers are not in reported.csv)
    tolerance:   absolute, in the quantity's unit (check within)
    band:        [low, high] (check band)
    thresholds:  named numbers the experiment's judge uses to decide the claim (e.g. a tie band)
    tolerance_source: where the tolerance, band or thresholds come from (required with any of them)
    stochastic:  true when the quantity varies from run to run (then a decisive verdict needs >= 2 runs)
    decisive:    false for a claim that this package can only gate (not comparable / not testable);
    why_not_decisive: then required: why no run of ours can decide it
    rule:        experiment-specific data for how the claim is checked (validated by the experiment)
    tier:        the kind of question the claim asks where nothing of ours decides it (basis none):
                 measured (default), papers' own numbers, predictions; a decided row's tier is its basis'
                 (:data:`repro.core.verdicts.TIER_OF_BASIS`)
    statement:   the paper statement the claim judges (default ``<paper>:<id>``); claims of any experiment that
                 judge the same statement share it and are one statement on the front page
    paper_did:   what the paper did to support the statement: measured (its own experiment), derived (its
                 equations or arithmetic), stated (an assertion or advice with neither); the front page counts
                 statements by it
    decided_by:  the quantity that decides the claim where it decides other claims too (the thesis' equations on one
                 network's t_grad and t_comm): statements whose deciding claims name one quantity are one independent
                 decision on the front page (:func:`repro.core.statements.counts`); not in the digest (it decides
                 nothing, it counts)
    timing:      true for a time, a rate or a scheduling order measured on this machine: not decided on a run whose
                 cores were oversubscribed while it measured, or that recorded no load (:mod:`repro.core.load`)
    counterfactual: the run configuration or recorded data under which our experiment would give the
                 opposite outcome, and the test that feeds it to the judge (``tests/...py::test_name``);
                 required for a decisive verdict on basis measured

A run records the :func:`digest` of every claim (its text, check, numbers, thresholds and rule) and the digests
of the code that judges them (:mod:`repro.core.judgecode`) when it starts measuring (``provenance.json``'s
``claims_measured_under``); a rejudge under a claim or judging code whose digest changed since shows *rule changed
after the data* with both verdicts and what changed (:func:`row`'s ``under`` and ``code``).

Every claim that can be decisive has a falsification test (tests/unit/test_falsify_*.py) that feeds
its judge the claim false and the claim true and sees the verdict flip.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from repro.core import errors
from repro.core import judgecode as _judgecode
from repro.core import ledger as _ledger
from repro.core import paper as _paper
from repro.core import params as _params
from repro.core import verdicts as V

CHECKS = ("within", "band", "holds")
PAPER_DID = ("measured", "derived", "stated")
# what a claim's digest covers: what it says and every number and rule that decides it (not its sources' prose)
DIGESTED = ("text", "check", "reported", "reference", "tolerance", "band", "thresholds", "rule", "stochastic")


ClaimsError = errors.BadInput  # A malformed ``claims.yaml`` or a measurement that does not match it (one line).


@dataclass
class Measured:
    """What an experiment measured for one claim.

    ``value`` is compared with the claim's number (check ``within``/``band``), ``holds`` answers a
    yes/no claim; ``gate`` is a :class:`~repro.core.verdicts.Verdict` decided before any comparison,
    built by a constructor of :mod:`repro.core.verdicts` (``not_comparable(why)``, ``partly(why)``, ...).
    ``note`` is added to the verdict's detail."""

    ours: str
    value: float | None = None
    holds: bool | None = None
    gate: V.Verdict | None = None
    basis: str = "measured"
    runs: int = 1
    note: str = ""
    extra: dict = field(default_factory=dict)  # further columns for the experiment's own tables
    evidence: str | None = None  # the chapter table behind this measurement, where not the claim's own


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"must be a number, got {value!r}")
    return value


_Number = Annotated[int | float, BeforeValidator(_number)]  # as written: 15 stays 15; a bool is no number


class Claim(BaseModel):
    """One claim of a paper, as ``claims.yaml`` states it: its fields, the rules that tie them together
    (checked when a claim is built, from the file or in code), and the paper's number and thresholds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    id: str
    paper: str
    text: str
    paper_value: Annotated[str, BeforeValidator(lambda v: v if isinstance(v, str) else str(v))]
    source: str
    evidence: str
    check: Literal[CHECKS]  # type: ignore[valid-type]
    reported: str | None = None
    reference_value: _Number | None = Field(default=None, alias="reference")
    tolerance: _Number | None = None
    band: tuple[_Number, ...] | None = None
    thresholds: dict[str, _Number] | None = None
    tolerance_source: str = ""
    stochastic: bool = True
    decisive: bool = True
    why_not_decisive: str = ""
    rule: dict | None = None
    tier: Literal[tuple(t.value for t in V.Tier)] = V.Tier.MEASURED.value  # type: ignore[valid-type]
    counterfactual: str = ""
    statement: str = ""
    paper_did: Literal[PAPER_DID] | None = None  # type: ignore[valid-type]
    decided_by: str = ""  # the quantity shared with other claims (the front page counts it once)
    timing: bool = False  # a gate on the load (repro.core.load), not in the digest: it only takes decisions away

    @model_validator(mode="after")
    def _rules(self) -> "Claim":
        if self.check == "within" and (self.tolerance is None
                                       or (self.reported is None) == (self.reference_value is None)):
            raise ValueError("check 'within' needs a tolerance and one of reported, reference")
        if self.check == "band" and len(self.band or ()) != 2:
            raise ValueError("check 'band' needs band: [low, high]")
        if (self.check != "holds" or self.thresholds) and not self.tolerance_source:
            raise ValueError("a tolerance, band or thresholds need tolerance_source (where they come from)")
        if not self.decisive and not self.why_not_decisive.strip():
            raise ValueError("decisive: false needs why_not_decisive (why no run of ours can decide it)")
        if self.why_not_decisive and self.decisive:
            raise ValueError("why_not_decisive belongs to a claim with decisive: false")
        return self

    def statement_id(self) -> str:
        """The paper statement this claim judges (``statement``, else ``<paper>:<id>``)."""
        return self.statement or f"{self.paper}:{self.id}"

    def digest(self) -> str:
        """What the claim says and how it is decided, as a short hash (:func:`digest`)."""
        return digest(self.model_dump(by_alias=True))

    def reference(self) -> float:
        """The paper's number (``reference``, else ``reported`` in ``paperdata/reported.csv``)."""
        if self.reference_value is not None:
            return float(self.reference_value)
        if self.reported is None:
            raise ClaimsError(f"claim {self.id!r}: claims.yaml gives neither reference nor reported")
        return _paper.value(self.paper, self.reported)

    def threshold(self, name: str) -> float:
        """A named threshold of ``thresholds`` (raises one line when the claim has none of that name)."""
        if not self.thresholds or name not in self.thresholds:
            raise ClaimsError(f"claim {self.id!r}: claims.yaml gives no threshold {name!r}")
        return float(self.thresholds[name])


def digest(raw: dict) -> str:
    """A claim's text, check, numbers, thresholds and rule (:data:`DIGESTED`) as 16 hex digits; ``raw`` is the
    claim as ``claims.yaml`` writes it (an older file's claim too: fields it lacks take the schema's defaults)."""
    fields = {k: raw.get(k) for k in DIGESTED}
    fields["stochastic"] = True if fields["stochastic"] is None else bool(fields["stochastic"])
    text = json.dumps(fields, sort_keys=True, default=list, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def digests(experiment: str, package: str = "repro.experiments") -> dict[str, str]:
    """The :func:`digest` of every claim of ``experiment``, by id (what a run records when it starts measuring)."""
    return {cid: c.digest() for cid, c in load(experiment, package).items()}


def digests_of_text(text: str) -> dict[str, str]:
    """The digests of the claims in an old ``claims.yaml``'s text (a published run's commit, read from git):
    raw entries, so that a field this checkout no longer knows does not stop the check."""
    doc = yaml.safe_load(text) or {}
    return {str(raw["id"]): digest(raw) for raw in doc.get("claims", []) if isinstance(raw, dict) and "id" in raw}


def _claims_error(err: ValidationError, where: str) -> ClaimsError:
    """pydantic's errors about one claim as one line: missing and unknown fields together, else the first."""
    errors = err.errors()
    missing = [e["loc"][0] for e in errors if e["type"] == "missing"]
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden")
    if missing or unknown:
        return ClaimsError(f"{where}: missing {missing} / unknown {unknown}")
    first = errors[0]
    field_name = first["loc"][0] if first["loc"] else ""
    if field_name == "check":
        return ClaimsError(f"{where}: check must be one of {', '.join(CHECKS)}, got {first['input']!r}")
    if field_name == "thresholds":
        return ClaimsError(f"{where}: thresholds is a mapping of names to numbers")
    return ClaimsError(_params.one_line(err, where))


def _claim(experiment: str, raw: dict) -> Claim:
    where = f"{experiment}/claims.yaml, claim {raw.get('id', '?') if isinstance(raw, dict) else '?'!r}"
    try:
        return Claim.model_validate(raw)
    except ValidationError as err:
        raise _claims_error(err, where) from None


class ClaimsFile(BaseModel):
    """A whole ``claims.yaml``: a list of claims under ``claims:``."""

    model_config = ConfigDict(extra="forbid")

    claims: list[dict] = Field(min_length=1)


@lru_cache(maxsize=None)
def load(experiment: str, package: str = "repro.experiments") -> dict[str, Claim]:
    """The claims of ``experiment`` (its folder's ``claims.yaml``), by id, in file order."""
    where = f"{experiment}/claims.yaml"
    text = resources.files(f"{package}.{experiment}").joinpath("claims.yaml").read_text(encoding="utf-8")
    try:
        doc = ClaimsFile.model_validate(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise ClaimsError(f"{where}: not YAML ({' '.join(str(exc).split())})") from None
    except ValidationError as err:
        raise ClaimsError(_params.one_line(err, where)) from None
    out: dict[str, Claim] = {}
    for raw in doc.claims:
        claim = _claim(experiment, raw)
        if claim.id in out:
            raise ClaimsError(f"{where}: claim id {claim.id!r} twice")
        out[claim.id] = claim
    return out


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def compare(claim: Claim, m: Measured) -> V.Verdict:
    """The verdict of one measurement before the basis rules: the only place where a measurement is
    compared with a paper (reproduced/differs for basis measured, consistent/inconsistent otherwise)."""
    if m.gate is not None:
        if not isinstance(m.gate, V.Verdict):
            raise ClaimsError(f"claim {claim.id!r}: a gate is built by repro.core.verdicts, got {m.gate!r}")
        if m.gate.category in (V.Category.REPRODUCED, V.Category.CONSISTENT):
            raise ClaimsError(f"claim {claim.id!r}: a gate cannot declare success ({m.gate})")
        return m.gate.with_note(m.note)
    if claim.check == "holds":
        if m.holds is None:
            raise ClaimsError(f"claim {claim.id!r} (check holds) needs holds=True/False or a gate")
        ok = bool(m.holds)
        why_not = m.note or "the claim does not hold for our numbers"  # the experiment's own words, where given
        return V.outcome(ok, m.basis, why_not, m.note)
    if m.value is None:
        raise ClaimsError(f"claim {claim.id!r} (check {claim.check}) needs a value or a gate")
    if claim.check == "within":
        assert claim.tolerance is not None  # Claim: check 'within' needs a tolerance
        diff = m.value - claim.reference()
        ok = abs(diff) <= claim.tolerance
        detail = f"{'+' if diff > 0 else '-'}{_fmt(abs(diff))} vs paper, tolerance {_fmt(claim.tolerance)}"
    else:
        assert claim.band is not None  # Claim: check 'band' needs band: [low, high]
        lo, hi = claim.band
        ok, detail = lo <= m.value <= hi, f"{_fmt(m.value)} outside [{_fmt(lo)}, {_fmt(hi)}]"
    return V.outcome(ok, m.basis, detail).with_note(m.note)


def tolerance_text(claim: Claim) -> str:
    """The ledger's tolerance cell: the threshold that decides the claim and where it comes from."""
    if claim.check == "within":
        assert claim.tolerance is not None  # Claim: check 'within' needs a tolerance
        return f"±{_fmt(claim.tolerance)}: {claim.tolerance_source}"
    if claim.check == "band":
        assert claim.band is not None  # Claim: check 'band' needs band: [low, high]
        return f"[{_fmt(claim.band[0])}, {_fmt(claim.band[1])}]: {claim.tolerance_source}"
    return claim.tolerance_source or _ledger.NO_VALUE[0]


def row(claim: Claim, m: Measured, under: dict | None = None, code: dict | None = None,
        first: dict | None = None) -> dict:
    """The ledger row of one claim and its measurement: :func:`compare`, then the basis rules
    (:func:`repro.core.verdicts.settle`), then :func:`measured_under`; a row with no value of ours has basis
    ``none``. ``under``: a stored run's record of the claims it was measured under (None while measuring);
    ``code``: today's digests of the experiment's judging code (:func:`repro.core.judgecode.digests`); ``first``:
    by claim id, the record of the run that first judged it on the paper's own numbers
    (:func:`repro.core.history.first_judged`), which a row on basis ``equations`` is measured under."""
    nothing = m.basis == "none" or str(m.ours).strip() in _ledger.NO_VALUE
    basis, runs = ("none", 0) if nothing else (m.basis, m.runs)
    try:
        verdict = V.settle(compare(claim, m), basis, runs, claim.stochastic)
    except V.VerdictError as err:
        raise ClaimsError(f"claim {claim.id!r}: {err}") from None
    if verdict.decisive and not claim.decisive:
        raise ClaimsError(f"claim {claim.id!r} is marked decisive: false ({claim.why_not_decisive}) "
                          f"but got a decisive verdict: {verdict}")
    if verdict.decisive and basis == "measured" and not claim.counterfactual.strip():
        raise ClaimsError(f"claim {claim.id!r}: a decisive verdict on basis measured needs claims.yaml's "
                          f"counterfactual (the run under which the other outcome would appear): {verdict}")
    if basis == V.Basis.EQUATIONS and first and claim.id in first:  # the paper's numbers were seen at that run
        under = first[claim.id]
    verdict = measured_under(claim, verdict, basis, under, code)
    return {"paper": claim.paper, "claim": claim.text, "paper_value": claim.paper_value, "ours": m.ours,
            "verdict": str(verdict), "category": verdict.category.value, "evidence": m.evidence or claim.evidence,
            "basis": str(basis), "runs": int(runs), _ledger.TIER: V.tier(basis, claim.tier).value,
            _ledger.TOLERANCE: tolerance_text(claim), "id": claim.id, "statement": claim.statement_id(),
            "paper_did": claim.paper_did or "", "stochastic": bool(claim.stochastic), "decisive": bool(claim.decisive)}


FLAGGED_BASES = V.RUN_BASES | {V.Basis.MODEL, V.Basis.EQUATIONS}  # a rule changed after any of them is flagged


def measured_under(claim: Claim, verdict: V.Verdict, basis: str, under: dict | None,
                   code: dict | None = None) -> V.Verdict:
    """A verdict of our data (basis measured, emulated or model) or of the paper's numbers (basis equations, measured
    under the rule of the run that first judged them: :func:`row`'s ``first``) that is decided now or was decided
    then stands only when the claim's digest is the one its run recorded when it measured (``under``: ``{"digests": {id:
    digest}, "verdicts": {id: verdict then}, "code": {file: digest}}``) and, where ``code`` (today's digests of the
    judging code, :mod:`repro.core.judgecode`) is given, so is the code that judges it; otherwise *rule changed
    after the data*, with the verdict it had then and what changed. ``under`` None: judged while measuring (the
    rules are today's by definition); ``{}``: a stored run that recorded nothing."""
    if under is None or V.Basis(basis) not in FLAGGED_BASES:
        return verdict
    then = (under.get("digests") or {}).get(claim.id)
    moved = [] if code is None else _judgecode.changed(under.get("code"), code, str(basis))
    if then == claim.digest() and moved == []:
        return verdict
    if not under.get("digests"):
        said = (under.get("verdicts") or {}).get(claim.id)
        before = f"{said + ', ' if said else ''}not recorded (the run stored no digest of its claims)"
    elif then is None:
        before = "none (the claim was added after the run measured)"
    else:
        before = (under.get("verdicts") or {}).get(claim.id) or "not recorded"
    if not verdict.decisive and not is_decided(before):
        return verdict  # undecided then and now: nothing to flag
    what = "the claim's text or rule" if then != claim.digest() else ""
    if under.get("same_data_as"):  # a rerun whose data an earlier run measured (repro.core.history.first_seen)
        what = ", ".join(filter(None, [what, f"since run {under['same_data_as']} measured the same data"]))
    if under.get("first_judged_in"):  # the paper's numbers, judged first by that run (history.first_judged)
        what = ", ".join(filter(None, [what, f"since run {under['first_judged_in']} first judged the paper's numbers"]))
    if moved is None:
        what = ", ".join(filter(None, [what, "the judge's code (the run recorded no digest of it)"]))
    elif moved:
        names = sorted({k.rsplit("/", 1)[-1] for k in moved})
        what = ", ".join(filter(None, [what, "the judge's code (" + ", ".join(names) + ")"]))
    return V.rule_changed(verdict, before, what)


def is_decided(verdict_text: str) -> bool:
    """Whether a stored verdict text decided its claim (one that cannot be read: not)."""
    try:
        return V.category_of(verdict_text) in V.DECISIVE
    except V.VerdictError:
        return False


def ledger(experiment: str, measured: dict[str, Measured], package: str = "repro.experiments",
           under: dict | None = None, code: dict | None = None, first: dict | None = None):
    """The experiment's ledger rows: every claim of its ``claims.yaml`` with what was measured for it
    (``under``: a stored run's record of the claims it was measured under; ``code``: today's digests of its judging
    code; ``first``: the runs that first judged its claims on the paper's numbers; :func:`row`)."""
    claims = load(experiment, package)
    missing, unknown = set(claims) - set(measured), set(measured) - set(claims)
    if missing or unknown:
        raise ClaimsError(f"{experiment}: no measurement for claims {sorted(missing)}; "
                          f"measurements for unknown claims {sorted(unknown)}")
    return _ledger.frame([row(claim, measured[cid], under, code, first) for cid, claim in claims.items()])


def timing(experiment: str, package: str = "repro.experiments") -> set[str]:
    """The ids of ``experiment``'s claims about a time, a rate or a scheduling order (``timing: true``)."""
    return {cid for cid, c in load(experiment, package).items() if c.timing}
