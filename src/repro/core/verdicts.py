"""Typed verdicts, and the one rule from a claim and its measurement to a ledger row.

A verdict is a :class:`Category` and a detail. The category a row may carry depends on its
**basis**, what stands behind it (:class:`Basis`):

* ``measured`` (our runs on real hardware): *reproduced*, *partly* or *differs*;
* ``equations`` (the paper's own equations or arithmetic on its own inputs), ``emulated`` (a replay
  of the paper's hardware on this machine) and ``model`` (an analytic model of that hardware):
  *consistent* or *inconsistent*, never *reproduced* or *differs*: they check that the paper's
  numbers agree with each other or with a model, not that they happen again;
* any basis: *not comparable*, *not testable here*, *not testable with this selection*, *not measured*
  (gates: decided before any comparison, each with the reason; *not testable with this selection* where the
  run's own parameters left out what the claim needs, e.g. two of the seven optimizers, and it names the
  parameter that would make it testable);
* on the bases with runs: *rule changed after the data* (the claim's text or rule is not the one its run was
  measured under: :func:`rule_changed`) and *unstable* (two independent runs decided differently:
  :func:`unstable`), each showing both verdicts and counted as decided by neither.

On the bases with runs (``measured``, ``emulated``) a decisive verdict on a stochastic quantity
needs at least :data:`MIN_RUNS` independent runs: one run decides nothing, and the row becomes
*not comparable* and says what that run gave.

Experiments build gates with the constructors (:func:`not_comparable`, :func:`partly`, ...), never
as free text; :func:`repro.core.claims.compare` is the only place where a measurement is compared
with a paper, and :func:`repro.core.claims.row` applies :func:`settle` to its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from repro.core import errors


class Category(str, Enum):
    REPRODUCED = "reproduced"
    CONSISTENT = "consistent"
    INCONSISTENT = "inconsistent"
    PARTLY = "partly"
    DIFFERS = "differs"
    NOT_COMPARABLE = "not comparable"
    NOT_TESTABLE = "not testable here"
    NOT_SELECTED = "not testable with this selection"  # the run's parameters left out what the claim needs
    NOT_MEASURED = "not measured"
    RULE_CHANGED = "rule changed after the data"  # the claim's text or rule changed after its run measured
    UNSTABLE = "unstable"  # two independent runs of a stochastic quantity gave different decided verdicts

    def __str__(self) -> str:
        return self.value


class Basis(str, Enum):
    MEASURED = "measured"
    EMULATED = "emulated"
    MODEL = "model"
    EQUATIONS = "equations"
    NONE = "none"

    def __str__(self) -> str:
        return self.value


class Tier(str, Enum):
    """The kind of question a verdict answers (the front page counts each apart):

    * ``measured``: our runs decide, and the experiment itself could have produced the other outcome;
    * ``papers' own numbers``: the papers' equations, tables and arithmetic: does a paper agree with itself;
    * ``predictions``: emulations and the analytic model: what the papers' hardware implies."""

    MEASURED = "measured"
    OWN_NUMBERS = "papers' own numbers"
    PREDICTIONS = "predictions"

    def __str__(self) -> str:
        return self.value


TIER_OF_BASIS = {Basis.MEASURED: Tier.MEASURED, Basis.EQUATIONS: Tier.OWN_NUMBERS, Basis.EMULATED: Tier.PREDICTIONS,
                 Basis.MODEL: Tier.PREDICTIONS}


def tier(basis: Basis | str, asks: Tier | str = Tier.MEASURED) -> Tier:
    """The tier of a row on ``basis``; a row with nothing of ours behind it (basis none) stays in the tier of
    the question its claim asks (``asks``: claims.yaml's ``tier``)."""
    return TIER_OF_BASIS.get(Basis(basis), Tier(asks))


MIN_RUNS = 2  # independent runs behind a decisive verdict on a stochastic quantity
OBSERVED = frozenset({Category.REPRODUCED, Category.PARTLY, Category.DIFFERS})  # basis measured only
CHECKED = frozenset({Category.CONSISTENT, Category.INCONSISTENT})  # equations, emulated, model
DECISIVE = OBSERVED | CHECKED
CHECK_BASES = frozenset({Basis.EQUATIONS, Basis.EMULATED, Basis.MODEL})
RUN_BASES = frozenset({Basis.MEASURED, Basis.EMULATED})  # bases with runs, whose quantities can vary


VerdictError = errors.BadInput  # A verdict that the ledger's rules forbid (one line).


@dataclass(frozen=True)
class Verdict:
    """A category and its detail (why, or what the comparison gave)."""

    category: Category
    detail: str = ""

    def __post_init__(self):
        object.__setattr__(self, "category", Category(self.category))
        if not isinstance(self.detail, str):
            raise VerdictError(f"a verdict's detail is text, got {type(self.detail).__name__}")

    @property
    def decisive(self) -> bool:
        return self.category in DECISIVE

    def with_note(self, note: str) -> Verdict:
        """The same verdict with ``note`` appended to its detail."""
        if not note:
            return self
        return Verdict(self.category, f"{self.detail}; {note}" if self.detail else note)

    def __str__(self) -> str:
        return f"{self.category.value} ({self.detail})" if self.detail else self.category.value


def _why(category: Category, why: str) -> Verdict:
    if not str(why).strip():
        raise VerdictError(f"a '{category.value}' verdict needs its reason")
    return Verdict(category, str(why))


def reproduced(detail: str = "") -> Verdict:
    return Verdict(Category.REPRODUCED, detail)


def consistent(detail: str = "") -> Verdict:
    return Verdict(Category.CONSISTENT, detail)


def inconsistent(why: str) -> Verdict:
    return _why(Category.INCONSISTENT, why)


def partly(why: str) -> Verdict:
    return _why(Category.PARTLY, why)


def differs(why: str) -> Verdict:
    return _why(Category.DIFFERS, why)


def not_comparable(why: str) -> Verdict:
    return _why(Category.NOT_COMPARABLE, why)


def not_testable(why: str) -> Verdict:
    return _why(Category.NOT_TESTABLE, why)


def not_selected(why: str) -> Verdict:
    """A claim the run's selection cannot judge (a list parameter without what the claim needs); ``why`` names the
    parameter and the values that would make it testable, and what the run had (:func:`needs_selection`)."""
    return _why(Category.NOT_SELECTED, why)


def needs_selection(parameter: str, needed, selected, about: str = "") -> Verdict:
    """*not testable with this selection*: the claim needs ``parameter`` to include every value of ``needed``
    (``about``: what the claim is about, said in brackets); the run's ``parameter`` was ``selected`` (e.g.
    ``needs optimizers to include nadam, momentum; this run's optimizers: sgd, adam``)."""
    missing = [str(v) for v in needed if v not in set(selected)]
    return not_selected(f"needs {parameter} to include {', '.join(missing)}" + (f" ({about})" if about else "")
                        + f"; this run's {parameter}: " + (", ".join(str(v) for v in selected) or "none"))


def not_measured(why: str) -> Verdict:
    return _why(Category.NOT_MEASURED, why)


def outcome(ok: bool, basis: Basis | str, why_not: str, detail: str = "") -> Verdict:
    """The verdict of a comparison that passed (``ok``) or failed, in the words of ``basis``:
    reproduced/differs for measured, consistent/inconsistent for equations, emulated and model."""
    basis = Basis(basis)
    if basis in CHECK_BASES:
        return consistent(detail) if ok else inconsistent(why_not)
    if basis is Basis.MEASURED:
        return reproduced(detail) if ok else differs(why_not)
    raise VerdictError(f"basis {basis.value!r} has no measurement to compare")


def settle(v: Verdict, basis: Basis | str, runs: int, stochastic: bool) -> Verdict:
    """``v`` as the ledger's rules allow it on ``basis`` (module docstring); raises on a contradiction."""
    if not isinstance(v, Verdict):
        raise VerdictError(f"a verdict is built by repro.core.verdicts, not given as {type(v).__name__}: {v!r}")
    try:
        basis = Basis(basis)
    except ValueError:
        raise VerdictError(f"basis {basis!r} is not one of: {', '.join(b.value for b in Basis)}") from None
    if int(runs) < 0:
        raise VerdictError(f"runs must be >= 0, got {runs}")
    if v.category in OBSERVED and basis is not Basis.MEASURED:
        raise VerdictError(f"'{v.category.value}' needs basis measured, not {basis.value!r}: {v}")
    if v.category in CHECKED and basis not in CHECK_BASES:
        raise VerdictError(f"'{v.category.value}' is a verdict of basis equations, emulated or model, "
                           f"not {basis.value!r}: {v}")
    if v.decisive and stochastic and basis in RUN_BASES and int(runs) < MIN_RUNS:
        return not_comparable(f"{int(runs)} run of a stochastic quantity; a verdict needs >= {MIN_RUNS} "
                              f"independent runs; the one run: {v}")
    return v


TODAY, THEN = "today's rule: ", "; the rule it was measured under: "  # the two halves of a rule_changed verdict


def rule_changed(now: Verdict, then: str, what: str = "") -> Verdict:
    """A verdict whose claim text or rule (``what``: which, where known) changed after its data was measured: both
    verdicts, decided by neither (a run measured under today's rule decides it)."""
    changed = f"; changed since: {what}" if what else ""
    return Verdict(Category.RULE_CHANGED, f"{TODAY}{now}{THEN}{then}{changed}")


def halves(text: str) -> tuple[str, str] | None:
    """A stored *rule changed after the data* verdict's two verdicts as text (today's rule's, then the one it was
    measured under, with what changed); None for any other verdict."""
    v = parse(text)
    if v.category is Category.RULE_CHANGED and v.detail.startswith(TODAY) and THEN in v.detail:
        now, then = v.detail[len(TODAY):].split(THEN, 1)
        return now, then
    return None


def today_of(text: str) -> Verdict:
    """A stored verdict as today's rule gives it: the first half of a *rule changed after the data* verdict, else the
    verdict itself."""
    both = halves(text)
    return parse(both[0]) if both else parse(text)


def unstable(now: Verdict, other: str) -> Verdict:
    """Two independent runs of a stochastic quantity that decided differently: both, decided by neither."""
    return Verdict(Category.UNSTABLE, f"this run: {now}; another independent run: {other}")


def parse(text: str) -> Verdict:
    """A stored verdict text (``category (detail)``) back as a :class:`Verdict`; brackets inside the detail stay."""
    cat = category_of(text)
    rest = text[len(cat.value):]
    return Verdict(cat, rest[2:-1] if rest.startswith(" (") and rest.endswith(")") else rest.strip())


def category_of(text: str) -> Category:
    """The category of a verdict as a stored ledger writes it (``ledger.csv``'s ``category`` column,
    or, in a ledger without one, the start of its ``verdict`` text)."""
    for cat in sorted(Category, key=lambda c: len(c.value), reverse=True):
        if text == cat.value or text.startswith(cat.value + " ("):
            return cat
    raise VerdictError(f"verdict {text!r} does not start with one of: {', '.join(c.value for c in Category)}")
