"""Each experiment's parameters as a typed, frozen object the type checker reads, generated from its ``profile.yaml``.

``profile.yaml`` stays the one schema (types, ranges, choices, help, groups; :mod:`repro.core.params` validates
against it at run time). This module writes ``experiments/<name>/paramtypes.py`` from it: one :class:`Params`
subclass whose fields are the declared parameters with their types (a choice of strings as a ``Literal``, a
nullable one as ``| None``), and one class per group of ``groups:`` (``sweep_models`` is ``p.sweep.models``;
the parameter named like a group is the group's ``own`` field: ``emulate`` is ``p.emulate.hardware``). The
experiments receive an instance (:func:`typed`), so mypy (``make test``) rejects ``p.epoch`` for ``p.epochs``
or a wrong type before anything runs, and at run time a misspelt field is an ``AttributeError``.

The flat names stay the wire format: ``-p sweep_models=...``, papermill's parameters, ``provenance.json``
(:meth:`Params.flat`). A stored run made before a parameter existed reads as having had the value its
``legacy:`` declares; without one it cannot be read as typed parameters (one line says which).

``python -m repro.core.paramtypes`` rewrites the files; ``tests/unit/test_paramtypes.py`` fails while one is
out of date with its ``profile.yaml``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict, create_model
from typing_extensions import Self  # typing's from Python 3.11; pydantic depends on typing_extensions

from repro.core import params as _params


class Group(BaseModel):
    """One group of an experiment's parameters (``p.emulate``): frozen, one attribute per parameter."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Params(Group):
    """An experiment's parameters: frozen, one attribute per parameter (or group). Built from flat, already
    validated values by :meth:`of`; :meth:`flat` gives them back as ``provenance.json`` keeps them."""

    EXPERIMENT: ClassVar[str] = ""  # the experiment whose profile.yaml this is generated from

    @classmethod
    def of(cls, flat: Mapping[str, Any], *, partial: bool = False) -> Self:
        """The typed parameters of flat values (not validated again: :func:`typed` validates first). A
        parameter missing takes its declared ``legacy`` value; without one it is an error, unless ``partial``
        (tests that judge with a few parameters): it is then absent, and reading it an ``AttributeError``."""
        spec = _params.spec(cls.EXPERIMENT)
        values = dict(flat)
        for name, decl in spec.params.items():
            if name not in values and decl.has_legacy:
                values[name] = decl.legacy
            elif name not in values and not partial:
                raise _params.ParameterError(
                    f"{cls.EXPERIMENT}: parameter '{name}' missing (a run made before it existed?) and "
                    "profile.yaml declares no 'legacy:' value for it")
        top: dict[str, Any] = {}
        groups: dict[str, dict[str, Any]] = {}
        for name, (group, field) in spec.layout.items():
            if name in values:
                (groups.setdefault(group, {}) if group else top)[field] = values[name]
        for group, fields in groups.items():
            top[group] = cls.model_fields[group].annotation.model_construct(**fields)  # type: ignore[union-attr]
        return cls.model_construct(**top)

    def flat(self) -> dict[str, Any]:
        """The flat ``name -> value`` of every parameter set (the names of ``profile.yaml`` and ``-p``)."""
        out = {}
        for name, (group, field) in _params.spec(self.EXPERIMENT).layout.items():
            holder = self.__dict__.get(group) if group else self
            if holder is not None and field in holder.__dict__:
                out[name] = holder.__dict__[field]
        return out

    def replace(self, **changes: Any) -> Self:
        """A copy with some parameters changed, by their flat names, each value checked against its schema."""
        spec = _params.spec(self.EXPERIMENT)
        spec.check_names(changes)
        return self.of({**self.flat(), **{k: spec.params[k].check(v) for k, v in changes.items()}},
                       partial=True)


def params_class(experiment: str) -> type[Params]:
    """The generated class of ``experiment`` (``<package>/paramtypes.py``), or one built the same way where
    the folder has none (an experiment outside the package, as in the harness's tests)."""
    name = _params.spec(experiment).module.rsplit(".", 1)[0] + ".paramtypes"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:  # the file is there and fails to import: not a missing file
            raise
        return _built(experiment)
    return getattr(module, class_name(experiment))


def _built(experiment: str) -> type[Params]:
    spec = _params.spec(experiment)
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for group, field in spec.layout.values():
        (groups.setdefault(group, {}) if group else top)[field] = (Any, ...)
    for group, fields in groups.items():
        top[group] = (create_model(f"{class_name(experiment)}_{group}", __base__=Group, **fields), ...)
    cls: type[Params] = create_model(class_name(experiment), __base__=Params, **top)
    cls.EXPERIMENT = experiment
    return cls


def typed(experiment: str, values: Mapping[str, Any]) -> Params:
    """Validated flat values (:meth:`~repro.core.params.ExperimentSpec.validate`) as typed parameters."""
    return params_class(experiment).of(_params.spec(experiment).validate(values))


def partial(experiment: str, flat: Mapping[str, Any]) -> Any:
    """Some of an experiment's parameters, typed and not validated (a test that judges with a few of them):
    a parameter not given is absent, and reading it an ``AttributeError`` naming it."""
    return params_class(experiment).of(flat, partial=True)


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


def _type(p: _params.ParamSpec) -> str:
    """A field's type: the parameter's, and ``| None`` where a run older than it reads as ``legacy: null``."""
    text = annotation(p)
    return text + " | None" if p.has_legacy and p.legacy is None and not p.nullable else text


def source(spec: _params.ExperimentSpec) -> str:
    """The ``paramtypes.py`` of one experiment: a class per group, then the experiment's class."""
    top: list[str] = []
    groups: dict[str, list[str]] = {}
    for name, (group, field) in spec.layout.items():
        line = f"    {field}: {_type(spec.params[name])}"
        if group is None:
            top.append(line)
        elif group not in groups:
            groups[group] = [line]
            top.append(f"    {group}: {class_name(spec.name)[:-6]}{class_name(group)[:-6]}")
        else:
            groups[group].append(line)
    body = ""
    for group, lines in groups.items():
        what = spec.groups[group].help or f"{group}_*"
        body += (f"class {class_name(spec.name)[:-6]}{class_name(group)[:-6]}(Group):\n"
                 f'    """{spec.name}: {what} (the parameters {group}_*)."""\n\n' + "\n".join(lines) + "\n\n\n")
    names = "ClassVar, Literal" if "Literal[" in "".join(top) + body else "ClassVar"
    head = [HEADER, "from __future__ import annotations", "", f"from typing import {names}", "",
            f"from repro.core.paramtypes import {'Group, Params' if groups else 'Params'}", "", "", ""]
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
