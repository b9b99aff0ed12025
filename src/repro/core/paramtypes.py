"""Each experiment's parameters as one nested, frozen pydantic model, generated from its ``profile.yaml``.

``profile.yaml`` stays the one schema (types, ranges, choices, help, groups). This module writes
``experiments/<name>/paramtypes.py`` from it: one :class:`Params` subclass whose fields are the declared parameters
with their types and constraints (``Annotated[Int, Field(ge=1)]``, a choice of strings as a ``Literal``, a nullable
one as ``| None``), and a class per group of ``groups:`` (``emulate.models`` is ``p.emulate.models``). Groups of the
same shape share one class: the groups that name one ``shape:`` in ``groups:`` (speedup's ``measure`` and ``emulate``:
``shape: Grid``) get one class ``<Experiment><Shape>`` of the fields they all declare alike, and a group with more
fields a subclass of it that adds them (:func:`group_classes`), so a function that runs any grid takes the shared
class (``SpeedupGrid``) and is handed ``p.measure`` or ``p.emulate``, never a copy of the parameters with one group's
values in another's fields. The class
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


def _fields(spec: _params.ExperimentSpec) -> dict[str, dict[str, str]]:
    """Each group's fields, in declaration order, with their source types."""
    out: dict[str, dict[str, str]] = {}
    for name, decl in spec.params.items():
        group, _, field = name.rpartition(".")
        if group:
            out.setdefault(group, {})[field] = decl.source_type()
    return out


def _class(name: str, base: str, doc: str, fields: Mapping[str, str]) -> str:
    lines = [f"    {f}: {t}" for f, t in fields.items()]
    return f'class {name}({base}):\n    """{doc}"""\n' + ("\n" + "\n".join(lines) if lines else "") + "\n\n\n"


def group_classes(spec: _params.ExperimentSpec) -> tuple[str, dict[str, str]]:
    """The groups' classes (source) and each group's class name. The groups of one ``shape:`` share the class
    ``<Experiment><Shape>`` of the fields they all declare alike; a group with more fields is its subclass
    adding them (a group with none more is that class)."""
    stem, fields = class_name(spec.name)[:-6], _fields(spec)
    own = {g: stem + class_name(g)[:-6] for g in fields}
    members: dict[str, list[str]] = {}
    for g in fields:
        if spec.groups[g].shape:
            members.setdefault(spec.groups[g].shape, []).append(g)
    body, names = "", {}
    for g, mine in fields.items():
        shape, what = spec.groups[g].shape, spec.groups[g].help or f"{g}.*"
        if not shape:
            body += _class(own[g], "Group", f"{spec.name}: {what} (the parameters {g}.*).", mine)
            names[g] = own[g]
            continue
        base, alike = stem + shape, members[shape]
        if base in own.values():
            raise _params.ParameterError(f"group '{g}': shape '{shape}' is named like a group's class ({base})")
        common = {f: t for f, t in fields[alike[0]].items() if all(fields[m].get(f) == t for m in alike)}
        if g == alike[0]:
            body += _class(base, "Group", f"{spec.name}: the fields {', '.join(alike)} share (shape {shape}).",
                           common)
        extra = {f: t for f, t in mine.items() if f not in common}
        names[g] = own[g] if extra else base
        if extra:
            body += _class(own[g], base, f"{spec.name}: {what} (the parameters {g}.*).", extra)
    return body, names


def source(spec: _params.ExperimentSpec) -> str:
    """The ``paramtypes.py`` of one experiment: the groups' classes (:func:`group_classes`), then the experiment's."""
    body, names = group_classes(spec)
    top: list[str] = []
    for name, decl in spec.params.items():
        group, _, field = name.rpartition(".")
        if not group:
            top.append(f"    {field}: {decl.source_type()}")
        elif f"    {group}: {names[group]}" not in top:
            top.append(f"    {group}: {names[group]}")
    text = "".join(top) + body
    typing = ", ".join(n for n in ("Annotated", "ClassVar", "Literal") if n == "ClassVar" or f"{n}[" in text)
    names_ = ", ".join(n for n in ("NULL", "Bool", "Float", "Int", "Str", "one_of") if re.search(rf"\b{n}\b", text))
    head = [HEADER, "from __future__ import annotations", "", f"from typing import {typing}", ""]
    head += ["from pydantic import Field", ""] if "Field(" in text else []
    head += ([f"from repro.core.params import {names_}"] if names_ else [])
    head += [f"from repro.core.paramtypes import {'Group, Params' if names else 'Params'}", "", "", ""]
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
