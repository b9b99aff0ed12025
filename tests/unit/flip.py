"""Could it flip on the inputs? Every decisive claim judged on the papers' own numbers or on a model.

A falsification case (``falsify.py``) shows that a judge *can* say no. This asks more of the rows that rest
on a paper's own numbers (basis ``equations``) or on the analytic model (basis ``model``): fed the paper's
inputs, each scaled by an independent random factor over a stated plausible domain, does the judge give
both outcomes? A row that holds for every plausible input says nothing about the paper: its claim is
``decisive: false`` with the reason (claims.yaml), and it has no sampler.

Each experiment with such claims has ``tests/unit/test_flip_<experiment>.py`` with ``EXPERIMENT`` (its name),
``DOMAIN`` (one sentence: the domain its samplers draw from, e.g. "each of the paper's inputs x0.2-x5,
log-uniform, independently") and ``SAMPLERS``: claim id -> a function ``(rng) -> Measured`` that builds the
claim's measurement with the experiment's own judge from the perturbed inputs (never typed by hand).
``test_flip_coverage.py`` fails when a decisive claim whose published row rests on equations or the model
has no sampler.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from repro.core import claims

HERE = Path(__file__).parent
DRAWS = 400  # samples per claim
LOW, HIGH = 0.2, 5.0  # the default plausible domain: each input x0.2 to x5
HOLDS = {"consistent", "reproduced"}
FAILS = {"inconsistent", "differs", "partly"}
FLIP_BASES = ("equations", "model")


def scale(rng: np.random.Generator, low: float = LOW, high: float = HIGH, size=None):
    """Log-uniform factors in [low, high] (as likely x0.5 as x2)."""
    return np.exp(rng.uniform(np.log(low), np.log(high), size=size))


def flipped(seen) -> bool:
    """Both outcomes among the categories ``seen``: one that holds and one that fails."""
    return bool(set(seen) & HOLDS and set(seen) & FAILS)


def outcomes(experiment: str, claim_id: str, sampler, draws: int = DRAWS, seed: int = 0,
             until_flipped: bool = False) -> dict[str, int]:
    """How often each category came out over ``draws`` samples of ``sampler`` (through the ledger's one rule);
    ``until_flipped``: stop at the first draw after which both outcomes have occurred (the counts so far)."""
    claim = claims.load(experiment)[claim_id]
    rng = np.random.default_rng(seed)
    seen: dict[str, int] = {}
    for _ in range(draws):
        cat = claims.row(claim, sampler(rng))["category"]
        seen[cat] = seen.get(cat, 0) + 1
        if until_flipped and flipped(seen):
            break
    return seen


def check(experiment: str, samplers: dict, claim_id: str, domain: str, draws: int = DRAWS) -> None:
    """The test body of one sampler: both outcomes occur over the domain (within ``draws`` samples: fewer for a
    sampler whose judge is slow, e.g. the analytic model of a whole cluster). The draws stop once both have
    occurred: more draws cannot take an outcome back, so the verdict is the one all ``draws`` would give (a
    sampler that cannot flip still runs every draw before it fails)."""
    seen = outcomes(experiment, claim_id, samplers[claim_id], draws, until_flipped=True)
    assert flipped(seen), (
        f"{experiment}/{claim_id} cannot flip over its domain ({domain}): {seen}; "
        "mark it decisive: false with the reason")


def module(experiment: str):
    """``tests/unit/test_flip_<experiment>.py`` loaded, or None."""
    path = HERE / f"test_flip_{experiment}.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_flip_{experiment}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.EXPERIMENT == experiment and len(mod.DOMAIN) > 20, path
    return mod


def samplers(experiment: str) -> dict:
    mod = module(experiment)
    return dict(mod.SAMPLERS) if mod else {}
