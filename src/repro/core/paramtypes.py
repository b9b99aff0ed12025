"""Each experiment's parameters as a ``TypedDict`` the type checker reads, generated from its ``profile.yaml``.

``profile.yaml`` stays the one schema (types, ranges, choices, help; :mod:`repro.core.params` validates against
it at run time). This module writes ``experiments/<name>/paramtypes.py`` from it: one ``TypedDict`` whose keys are
the declared parameters, with their types (a choice of strings as a ``Literal``, a nullable one as ``| None``).
Functions annotate ``p: OptimizersParams`` and mypy (``make test``) then rejects ``p["epoch"]`` for ``epochs``, a
wrong type, or a missing key, before anything runs. The values stay plain dicts at run time on purpose: a
rejudged run reads its parameters back from ``provenance.json``, where a run made under an older schema lacks
later keys (its readers say so with ``p.get(key, default)``), and a dict carries that unchanged.

``python -m repro.core.paramtypes`` rewrites the files; ``tests/unit/test_paramtypes.py`` fails while one is
out of date with its ``profile.yaml``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from repro.core import params as _params

HEADER = '"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""\n'
_PY = {"int": "int", "float": "float", "str": "str", "bool": "bool"}


def class_name(experiment: str) -> str:
    """``cost_study`` -> ``CostStudyParams``."""
    return "".join(w.capitalize() for w in experiment.split("_")) + "Params"


def annotation(spec: _params.ParamSpec) -> str:
    """One parameter's type as Python source: ``int``, ``list[float]``, ``Literal['fit', 'fused']``, ``... | None``."""
    base = spec.type.removeprefix("list[").removesuffix("]")
    text = _PY[base]
    if spec.choices is not None and base == "str" and not spec.type.startswith("list["):
        text = "Literal[" + ", ".join(repr(c) for c in spec.choices) + "]"
    if spec.type.startswith("list["):
        text = f"list[{text}]"
    return f"{text} | None" if spec.nullable else text


def source(spec: _params.ExperimentSpec) -> str:
    """The ``paramtypes.py`` of one experiment."""
    fields = [f"    {name}: {annotation(p)}" for name, p in spec.params.items()]
    names = "Literal, TypedDict" if any("Literal[" in f for f in fields) else "TypedDict"
    lines = [HEADER, "from __future__ import annotations", "", f"from typing import {names}", "", "",
             f"class {class_name(spec.name)}(TypedDict):",
             f'    """The parameters of {spec.name} (experiments/{spec.name}/profile.yaml)."""', ""]
    return "\n".join(lines + fields) + "\n"


def path(experiment: str) -> Path:
    return Path(_params.__file__).parents[1] / "experiments" / experiment / "paramtypes.py"


def stale() -> list[str]:
    """Experiments whose ``paramtypes.py`` differs from what their ``profile.yaml`` generates."""
    return [name for name, spec in _params.experiments().items()
            if not path(name).is_file() or path(name).read_text(encoding="utf-8") != source(spec)]


def write_all() -> list[str]:
    """Rewrite every out-of-date ``paramtypes.py``; the experiments rewritten."""
    out = stale()
    for name in out:
        path(name).write_text(source(_params.spec(name)), encoding="utf-8")
    return out


if __name__ == "__main__":
    written = write_all()
    sys.stdout.write(f"rewrote: {', '.join(written) or 'nothing (all up to date)'}\n")
