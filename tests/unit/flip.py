"""Could it flip on the inputs? Every decisive claim judged on the papers' own numbers or on a model.

A falsification case (``falsify.py``) shows that a judge *can* say no. This asks more of the rows that rest
on a paper's own numbers (basis ``equations``) or on the analytic model (basis ``model``): fed the paper's
inputs, each scaled by an independent random factor over a domain stated before the draws, does the judge give
each outcome often enough to mean something? Each outcome, some holding category (consistent, reproduced) and
some failing one (inconsistent, differs, partly), must come out on at least :data:`MIN_SHARE` of the
:data:`DRAWS` draws. A row that (nearly) always holds, or (nearly) always fails, for plausible inputs says
nothing about the paper: its claim is ``decisive: false`` with the shares seen (claims.yaml), and its sampler
moves from ``SAMPLERS`` to ``UNDECIDED``, where a test shows those shares.

The domain is data, stated before the draws (:class:`Domain`): the inputs a sampler moves, each by its own
factor, log-uniform over x0.2-x5 (:data:`LOW`, :data:`HIGH`), the default for every one of the papers' inputs.
It is not chosen per claim after its shares are known (``test_flip_coverage.py`` holds every domain to the
default). A sampler gets no generator of its own: it draws through a :class:`Draw` of its domain, which refuses
an input the domain does not name and checks that every stated input was drawn once, within the bounds.

Each experiment with such claims has ``tests/unit/test_flip_<experiment>.py`` with ``EXPERIMENT`` (its name),
``DOMAIN`` (its :class:`Domain`: the sentence and the bounds), ``DOMAINS`` (claim id -> the inputs of that
claim's domain, ``DOMAIN.of(...)``), ``SAMPLERS`` (decisive claim id -> a function ``(draw) -> Measured`` that
builds the claim's measurement with the experiment's own judge from the perturbed inputs, never typed by hand)
and optionally ``UNDECIDED`` (the same for claims made ``decisive: false`` by their shares).
``test_flip_coverage.py`` fails when a decisive claim whose published row rests on equations or the model
has no sampler.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import falsify
import numpy as np

from repro.core import claims

HERE = Path(__file__).parent
DRAWS = 400  # samples per claim
SEED = 0
MIN_SHARE = 0.05  # each outcome on at least 5 % of the draws
LOW, HIGH = 0.2, 5.0  # the default plausible domain: each input x0.2 to x5
HOLDS = {"consistent", "reproduced"}
FAILS = {"inconsistent", "differs", "partly"}
FLIP_BASES = ("equations", "model")


def scale(rng: np.random.Generator, low: float = LOW, high: float = HIGH, size=None):
    """Log-uniform factors in [low, high] (as likely x0.5 as x2)."""
    return np.exp(rng.uniform(np.log(low), np.log(high), size=size))


@dataclasses.dataclass(frozen=True)
class Domain:
    """A sampler's domain, stated before its draws: ``inputs`` (the names of the inputs it moves), each scaled by
    its own factor, log-uniform in [``low``, ``high``], independently; ``text``: the experiment's sentence."""

    text: str
    inputs: tuple[str, ...] = ()
    low: float = LOW
    high: float = HIGH

    def of(self, *inputs: str) -> Domain:
        """This domain over ``inputs`` (one claim's)."""
        assert len(set(inputs)) == len(inputs) > 0, inputs
        return dataclasses.replace(self, inputs=tuple(inputs))

    def __str__(self) -> str:
        moved = "; ".join(self.inputs) if self.inputs else "the inputs the claim reads"
        return f"{moved}: each x{self.low:g}-x{self.high:g}, log-uniform, independently"


class Draw:
    """One draw of a domain, what a sampler draws through: one factor per input the domain names, each drawn once
    and recorded (``drawn``)."""

    def __init__(self, domain: Domain, rng: np.random.Generator):
        self.domain, self._rng = domain, rng
        self.drawn: dict[str, float] = {}

    def factor(self, name: str) -> float:
        assert name in self.domain.inputs, f"{name!r} is not an input of the stated domain ({self.domain})"
        assert name not in self.drawn, f"{name!r} drawn twice in one draw"
        self.drawn[name] = float(scale(self._rng, self.domain.low, self.domain.high))
        return self.drawn[name]

    def factors(self, names) -> np.ndarray:
        return np.array([self.factor(n) for n in names])

    def check(self) -> None:
        """Every stated input drawn once, every factor within the stated bounds."""
        missing = [n for n in self.domain.inputs if n not in self.drawn]
        assert not missing, f"stated inputs not drawn: {missing} (the domain states more than the sampler moves)"
        out = {n: f for n, f in self.drawn.items() if not self.domain.low <= f <= self.domain.high}
        assert not out, f"factors outside x{self.domain.low:g}-x{self.domain.high:g}: {out}"


def outcomes(experiment: str, claim_id: str, sampler, domain: Domain, draws: int = DRAWS,
             seed: int = SEED, settle: bool = False) -> dict[str, int]:
    """How often each category came out over ``draws`` samples of ``sampler`` over ``domain`` (through the ledger's
    one rule); every draw checked against the domain (:meth:`Draw.check`). ``settle``: stop once each outcome has
    come out on MIN_SHARE of ``draws`` (counts only grow: the full run would pass too; the counts so far)."""
    claim = claims.load(experiment)[claim_id]
    rng = np.random.default_rng(seed)
    seen: dict[str, int] = {}
    for _ in range(draws):
        draw = Draw(domain, rng)
        cat = claims.row(*falsify.as_decisive(claim, sampler(draw)))["category"]
        draw.check()
        seen[cat] = seen.get(cat, 0) + 1
        if settle and min(shares(seen)[:2]) >= MIN_SHARE * draws:
            break
    return seen


def shares(seen: dict[str, int]) -> tuple[int, int, int]:
    """(holds, fails, total) of ``outcomes``' counts."""
    return (sum(n for c, n in seen.items() if c in HOLDS), sum(n for c, n in seen.items() if c in FAILS),
            sum(seen.values()))


def describe(seen: dict[str, int]) -> str:
    holds, fails, total = shares(seen)
    other = total - holds - fails
    return (f"holds on {holds} of {total} draws ({100 * holds / total:.1f} %), fails on {fails} "
            f"({100 * fails / total:.1f} %)" + (f", neither on {other} ({100 * other / total:.1f} %)" if other else ""))


def means_something(seen: dict[str, int]) -> bool:
    holds, fails, total = shares(seen)
    return min(holds, fails) >= MIN_SHARE * total


def domain(mod, claim_id: str) -> Domain:
    """The stated domain of one sampler of a ``test_flip_<experiment>.py`` module."""
    return mod.DOMAINS[claim_id]


def check(mod, claim_id: str) -> None:
    """The test body of one sampler of ``mod.SAMPLERS``: each outcome on at least 5 % of the draws over its stated
    domain."""
    dom = domain(mod, claim_id)
    seen = outcomes(mod.EXPERIMENT, claim_id, mod.SAMPLERS[claim_id], dom, settle=True)
    assert means_something(seen), (  # a run that settled early has each outcome on MIN_SHARE of all DRAWS already
        f"{mod.EXPERIMENT}/{claim_id} does not give each outcome on {100 * MIN_SHARE:g} % of the draws over its "
        f"domain ({dom}): it {describe(seen)}; {seen}; mark it decisive: false with these shares")


def check_undecided(mod, claim_id: str) -> None:
    """The test body of one sampler of ``mod.UNDECIDED``: it does not give each outcome on 5 % of the draws, its
    claim is ``decisive: false``, and its reason states the count of draws on which it held."""
    dom = domain(mod, claim_id)
    seen = outcomes(mod.EXPERIMENT, claim_id, mod.UNDECIDED[claim_id], dom)
    claim = claims.load(mod.EXPERIMENT)[claim_id]
    holds, _, total = shares(seen)
    assert not means_something(seen), f"{mod.EXPERIMENT}/{claim_id}: it {describe(seen)}: it can be decisive"
    assert not claim.decisive, claim_id
    assert f"{holds} of {total} draws" in claim.why_not_decisive, (claim_id, describe(seen))


def module(experiment: str):
    """``tests/unit/test_flip_<experiment>.py`` loaded, or None."""
    path = HERE / f"test_flip_{experiment}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_flip_{experiment}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.EXPERIMENT == experiment and isinstance(mod.DOMAIN, Domain) and len(mod.DOMAIN.text) > 20, path
    return mod


def samplers(experiment: str) -> dict:
    mod = module(experiment)
    return dict(mod.SAMPLERS) if mod else {}


def undecided(experiment: str) -> dict:
    mod = module(experiment)
    return dict(getattr(mod, "UNDECIDED", {})) if mod else {}
