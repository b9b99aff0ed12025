"""Valid parameter sets drawn from an experiment's schema (``profile.yaml``), for the fuzz tests (issue 57).

Each set is the ``smoke`` profile with one change, at the smallest sizes: a list parameter cut to each of its
single elements and to its first two, a boolean flipped, a choice switched, a group's parameter changed alone,
a size-like integer at its lower bound, a number at either bound. Every such set is valid by the schema, so a
run of it must either render or be refused before any training in one line (``tests/smoke/test_param_fuzz.py``;
``make fuzz`` runs a larger sample). :func:`sample` draws a fixed sample by a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from repro.core import params as _params

SIZE_WORDS = ("epoch", "repeat", "steps", "workers", "cores", "seeds", "trials")  # an int whose lower bound is cheap


@dataclass(frozen=True)
class Variant:
    experiment: str
    change: str  # ``name=value`` as `-p` takes it
    overrides: dict  # dotted name -> value

    @property
    def command(self) -> str:
        return f"repro run {self.experiment} --profile smoke -p {self.change}"


def _fmt(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value).lower() \
        if isinstance(value, bool) else str(value)


def _list_cuts(value: list) -> list[list]:
    cuts = [[v] for v in value] + ([value[:2]] if len(value) > 2 else [])
    return [c for c in cuts if c != value]


def _changes(ps: _params.ParamSpec, value) -> list:
    """The values of one parameter this generator tries instead of ``value`` (all valid by ``ps``)."""
    if ps.type == "bool":
        return [not value]
    if ps.type.startswith("list["):
        return _list_cuts(value) if isinstance(value, list) and len(value) > 1 and ps.length is None else []
    if ps.choices:
        return [c for c in ps.choices if c != value]
    if ps.type == "int" and ps.min is not None and ps.min >= 1 and any(w in ps.name for w in SIZE_WORDS):
        return [int(ps.min)] if value is not None and value > ps.min else []
    if ps.type == "float" and value is not None:
        return [b for b in (ps.min, ps.max) if b is not None and b != value]
    return []


def variants(experiment: str, base: str = "smoke") -> list[Variant]:
    """Every one-change variant of ``experiment``'s ``base`` profile, each checked valid by the schema."""
    spec = _params.spec(experiment)
    values = spec.profiles[base].values
    out = []
    for name, ps in spec.params.items():
        for new in _changes(ps, values[name]):
            try:
                spec.resolve(base, {name: new})
            except _params.ParameterError:
                continue  # a combination the schema itself refuses (a cross-field rule): not a valid set
            out.append(Variant(experiment, f"{name}={_fmt(new)}", {name: new}))
    return out


def sample(n: int, seed: int = 0, experiments: list[str] | None = None) -> list[Variant]:
    """``n`` variants drawn without replacement (a fixed sample for a fixed seed), spread over ``experiments``
    (all by default) in turn."""
    rng = random.Random(seed)
    pools = {e: variants(e) for e in (experiments or list(_params.experiments()))}
    for pool in pools.values():
        rng.shuffle(pool)
    out: list[Variant] = []
    while len(out) < n and any(pools.values()):
        for pool in pools.values():
            if pool and len(out) < n:
                out.append(pool.pop())
    return out
