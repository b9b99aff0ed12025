"""Each experiment's parameters as one nested, frozen pydantic model, generated from its ``profile.yaml``.

``profile.yaml`` stays the one schema (types, ranges, choices, help, groups). This module writes
``experiments/<name>/paramtypes.py`` from it: one :class:`Params` subclass whose fields are the declared parameters
with their types and constraints (``Annotated[Int, Field(ge=1)]``, a choice of strings as a ``Literal``, a nullable
one as ``| None``), and one class per group of ``groups:`` (``emulate.models`` is ``p.emulate.models``). The class
validates: :meth:`repro.core.params.ExperimentSpec.resolve` checks a run's parameters once, when it starts, and the
experiments, their judges and their chapters receive the instance; mypy (``make test``) rejects ``p.epoch`` for
``p.epochs`` before anything runs, and at run time a misspelt field is an ``AttributeError``.

Its nested dump (``p.model_dump()``) is the wire format: papermill's parameters, ``provenance.json``; on the command
line the same names dotted (``-p emulate.models=...``). A changed copy is ``p.model_copy(update=...)`` on the nested
objects. A stored run is read by :func:`load` (flat names of runs stored before the nesting, and the ``legacy:``
value of a parameter a run predates, through the one adapter :meth:`~repro.core.params.ExperimentSpec.stored`).

``python -m repro.core.paramtypes`` rewrites the files; ``tests/unit/test_paramtypes.py`` fails while one is
out of date with its ``profile.yaml``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict

from repro.core import params as _params


class Group(BaseModel):
    """One group of an experiment's parameters (``p.emulate``): frozen, one validated attribute per parameter."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Params(Group):
    """An experiment's parameters: frozen, one validated attribute per parameter (or group)."""

    EXPERIMENT: ClassVar[str] = ""  # the experiment whose profile.yaml this is generated from


def params_class(experiment: str) -> type[Params]:
    """The generated class of ``experiment`` (``<package>/paramtypes.py``)."""
    cls: type[Params] = _params.spec(experiment).model
    return cls


def load(experiment: str, values: Mapping[str, Any]) -> Any:
    """A stored run's parameters (``provenance.json``: nested, or flat where stored before the nesting; a
    parameter the run predates at its ``legacy:`` value), as the experiment's class. Not validated again: they
    were when the run started, under the schema of its day (a ``legacy:`` value may lie outside today's)."""
    return partial(experiment, _params.spec(experiment).stored(values))


def partial(experiment: str, values: Mapping[str, Any]) -> Any:
    """Some of an experiment's parameters (nested, dotted or flat), not validated (a test that judges with a few of
    them): a parameter not given is at its ``legacy:`` value where it declares one, else absent, and reading it an
    ``AttributeError`` naming it."""
    spec = _params.spec(experiment)
    cls = params_class(experiment)
    legacy = {name: decl.legacy for name, decl in spec.params.items() if decl.has_legacy}
    top: dict[str, Any] = {}
    for key, value in _params.nest({**legacy, **spec.dotted(values)}).items():
        group = cls.model_fields[key].annotation if key in spec.groups else None
        top[key] = group.model_construct(**value) if isinstance(group, type) and issubclass(group, Group) else value
    return cls.model_construct(**top)


HEADER = '"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""\n'


def class_name(experiment: str) -> str:
    """``cost_study`` -> ``CostStudyParams``."""
    return "".join(w.capitalize() for w in experiment.split("_")) + "Params"


def source(spec: _params.ExperimentSpec) -> str:
    """The ``paramtypes.py`` of one experiment: a class per group, then the experiment's class."""
    top: list[str] = []
    groups: dict[str, list[str]] = {}
    stem = class_name(spec.name)[:-6]
    for name, decl in spec.params.items():
        group, _, field = name.rpartition(".")
        line = f"    {field}: {decl.source_type()}"
        if not group:
            top.append(line)
        elif group not in groups:
            groups[group] = [line]
            top.append(f"    {group}: {stem}{class_name(group)[:-6]}")
        else:
            groups[group].append(line)
    body = ""
    for group, lines in groups.items():
        what = spec.groups[group].help or f"{group}.*"
        body += (f"class {stem}{class_name(group)[:-6]}(Group):\n"
                 f'    """{spec.name}: {what} (the parameters {group}.*)."""\n\n' + "\n".join(lines) + "\n\n\n")
    text = "".join(top) + body
    typing = ", ".join(n for n in ("Annotated", "ClassVar", "Literal") if n == "ClassVar" or f"{n}[" in text)
    names = ", ".join(n for n in ("NULL", "Bool", "Float", "Int", "Str", "one_of") if re.search(rf"\b{n}\b", text))
    head = [HEADER, "from __future__ import annotations", "", f"from typing import {typing}", ""]
    head += ["from pydantic import Field", ""] if "Field(" in text else []
    head += ([f"from repro.core.params import {names}"] if names else [])
    head += [f"from repro.core.paramtypes import {'Group, Params' if groups else 'Params'}", "", "", ""]
    cls = [f"class {class_name(spec.name)}(Params):",
           f'    """The parameters of {spec.name} (experiments/{spec.name}/profile.yaml)."""', "",
           f"    EXPERIMENT: ClassVar[str] = {spec.name!r}", ""]
    return "\n".join(head) + body + "\n".join(cls + top) + "\n"


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
