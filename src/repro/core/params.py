"""Named parameter profiles per experiment, validated on entry.

Every experiment folder ``repro/experiments/<name>/`` has a ``profile.yaml`` that holds, as data:

* ``parameters``: the schema (type, allowed range or choices, help text; ``legacy``: the value a stored run
  made before the parameter existed ran with);
* ``groups`` (optional): parameters ``<group>_<field>`` read as ``p.<group>.<field>`` in the typed parameters
  (:mod:`repro.core.paramtypes`);
* ``defaults``: every parameter's value unless a profile changes it;
* ``profiles``: named profiles (``smoke`` for CI, ``cpu`` for a 2-core machine, ``paper`` for the
  paper's protocol on a GPU server), each with what it roughly costs and, under ``values``, only
  the parameters it changes from ``defaults``.

The file is read through pydantic models (:class:`ProfileFile`), and each experiment's parameters
become a pydantic model generated from its declarations (:attr:`ExperimentSpec.model`: typed fields
with their ranges and choices). A wrong profile name, an unknown parameter, or a value of the wrong
type or out of range raises :class:`ParameterError` whose message is one line naming the parameter
and what is allowed (:func:`one_line` turns pydantic's errors into it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from typing import Annotated, Any, Literal, Mapping, Optional

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, create_model

from repro.core import errors

_SCALARS = {"int": int, "float": float, "str": str, "bool": bool}
_TYPES = tuple(_SCALARS) + tuple(f"list[{t}]" for t in ("int", "float", "str"))
_NULL_WORDS = ("none", "null")  # what a nullable parameter reads as null, on the command line and in a mapping


ParameterError = errors.BadInput  # a bad profile name, parameter name or value (one-line message)


def _integral(value: Any) -> Any:
    """An integral float (3.0) as an int; anything else unchanged (strict validation judges it)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _null_word(value: Any) -> Any:
    """``"none"``/``"null"`` (or a list of just that word) as null, for a nullable parameter."""
    if isinstance(value, str) and value.strip().lower() in _NULL_WORDS:
        return None
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], str) \
            and value[0].strip().lower() in _NULL_WORDS:
        return None
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamSpec(_Strict):
    """Schema of one parameter: an entry of ``parameters:`` (its ``name`` is the entry's key), and how a value
    of it is checked and parsed. The one class for both: the file's schema and what the code uses."""

    name: str = ""
    type: Literal[_TYPES]  # type: ignore[valid-type]
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple[int | float | str, ...] | None = None
    nullable: bool = False
    length: int | None = Field(default=None, ge=1)  # exact length of a list
    legacy: Any = None  # what a stored run made before this parameter existed ran with (only where declared)

    @property
    def has_legacy(self) -> bool:
        """Whether ``legacy:`` is declared (``legacy: null`` included): a stored run without this parameter
        then reads as having had it; without it such a run cannot be read."""
        return "legacy" in self.model_fields_set

    def describe(self) -> str:
        """Human-readable allowed values, e.g. 'an integer >= 1'."""
        base = self.type.removeprefix("list[").removesuffix("]")
        noun = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false"}[base]
        if self.type.startswith("list["):
            count = f"{self.length} " if self.length else "a non-empty list of "
            noun = count + {"int": "integers", "float": "numbers", "str": "strings"}[base]
        parts = []
        if self.choices is not None:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        if self.min is not None:
            parts.append(f">= {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        text = noun + (" (" + "; ".join(parts) + ")" if parts else "")
        return text + (" or null" if self.nullable else "")

    def _fail(self, value: Any) -> ParameterError:
        return ParameterError(f"parameter '{self.name}': expected {self.describe()}, got {value!r}")

    @cached_property
    def annotation(self) -> Any:
        """The pydantic type of this parameter: strict scalars, ranges, choices, list length, null."""
        base = self.type.removeprefix("list[").removesuffix("]")
        item: Any = Annotated[_SCALARS[base], Field(strict=True, ge=self.min, le=self.max)]
        if base == "int":
            item = Annotated[item, BeforeValidator(_integral)]
        if self.choices is not None:
            item = Annotated[item, AfterValidator(self._choice)]
        if self.type.startswith("list["):
            item = Annotated[list[item], Field(min_length=self.length or 1, max_length=self.length)]
        if self.nullable:
            item = Annotated[Optional[item], BeforeValidator(_null_word)]
        return item

    def _choice(self, value: Any) -> Any:
        assert self.choices is not None  # only a validator where there are choices (annotation)
        if value not in self.choices:
            raise ValueError(f"not one of {self.choices}")
        return value

    @cached_property
    def _adapter(self):
        from pydantic import TypeAdapter

        return TypeAdapter(self.annotation)

    def check(self, value: Any) -> Any:
        """Return the value, normalised (ints accepted for floats, lists as lists), or raise."""
        try:
            return self._adapter.validate_python(value)
        except ValidationError:
            raise self._fail(value) from None

    def parse(self, text: str) -> Any:
        """Parse a command-line string (``-p name=text``) into this parameter's type."""
        if self.nullable and text.strip().lower() in (*_NULL_WORDS, ""):
            return None
        base = self.type.removeprefix("list[").removesuffix("]")
        items = ([t.strip() for t in text.strip().strip("[]").split(",")] if self.type.startswith("list[")
                 else [text.strip()])
        out: list[Any] = []
        for item in items:
            try:
                if base == "int":
                    out.append(int(item))
                elif base == "float":
                    out.append(float(item))
                elif base == "bool":
                    low = item.lower()
                    if low not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError
                    out.append(low in ("true", "1", "yes"))
                else:
                    out.append(item)
            except ValueError:
                raise self._fail(text) from None
        return self.check(out if self.type.startswith("list[") else out[0])


# ------------------------------------------------------------------ the file's own schema


class ProfileDecl(_Strict):
    """One entry of ``profiles:``: what it costs, what it runs, and what it changes from ``defaults``."""

    cost: str = "?"
    description: str = ""
    values: dict[str, Any] = Field(default_factory=dict)


class GroupDecl(_Strict):
    """One entry of ``groups:``: the parameters named ``<group>_<field>`` read as ``p.<group>.<field>``; ``own``
    names the field of the parameter called just ``<group>`` (``emulate`` -> ``p.emulate.hardware``)."""

    help: str = ""
    own: str | None = None


class ToDecide(_Strict):
    """What a user needs to decide the claims this package cannot decide here, and the one command to run."""

    needs: str
    command: str


class ProfileFile(_Strict):
    """A whole ``profile.yaml``."""

    title: str
    paper: str = ""
    notebook: str
    to_decide: ToDecide | None = None
    default_profile: str = "smoke"
    parameters: dict[str, ParamSpec] = Field(min_length=1)
    groups: dict[str, GroupDecl] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(default_factory=dict)
    profiles: dict[str, ProfileDecl] = Field(min_length=1)


def one_line(err: ValidationError, where: str) -> str:
    """The first of pydantic's errors as one line: ``where: a.b.c: message (got value)``; every schema
    of the package (profiles, claims, price table, hardware profiles) reports through it."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    if first["type"] == "missing":
        return f"{where}: needs '{loc}'"
    msg = {"extra_forbidden": "unknown field"}.get(
        first["type"], first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, "))
    shown = repr(first.get("input"))
    got = f" (got {shown})" if loc and first["type"] != "extra_forbidden" and len(shown) <= 80 \
        and "got " not in msg else ""
    return " ".join(f"{where}: {loc + ': ' if loc else ''}{msg}{got}".split())


@dataclass(frozen=True)
class Profile:
    """A named profile: ``values`` every parameter's value, ``changes`` what it sets apart from the defaults."""

    name: str
    cost: str
    description: str
    values: dict
    changes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExperimentSpec:
    """An experiment's schema, profiles and metadata, read from its YAML file."""

    name: str
    title: str
    paper: str
    notebook: str
    module: str
    default_profile: str
    params: dict[str, ParamSpec]
    profiles: dict[str, Profile] = field(repr=False)
    defaults: dict = field(default_factory=dict, repr=False)
    groups: dict[str, GroupDecl] = field(default_factory=dict, repr=False)
    to_decide: ToDecide | None = field(default=None, repr=False)

    @cached_property
    def layout(self) -> dict[str, tuple[str | None, str]]:
        """Each parameter's place in the typed parameters: ``name -> (group or None, field)``."""
        return layout(self.params, self.groups)

    @cached_property
    def model(self) -> type[BaseModel]:
        """The experiment's parameters as a pydantic model: one typed field per declared parameter."""
        fields: dict[str, Any] = {name: (p.annotation, ...) for name, p in self.params.items()}
        return create_model(f"{self.name}_params", __config__=ConfigDict(extra="forbid"), **fields)

    def profile(self, name: str) -> Profile:
        if name not in self.profiles:
            raise ParameterError(
                f"unknown profile '{name}' for experiment '{self.name}'; choose from: {', '.join(self.profiles)}"
            )
        return self.profiles[name]

    def check_names(self, names, where: str = "") -> None:
        for key in names:
            if key not in self.params:
                close = difflib.get_close_matches(key, self.params, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ParameterError(
                    f"{where}unknown parameter '{key}' for experiment '{self.name}'{hint}; "
                    f"valid: {', '.join(sorted(self.params))}"
                )

    def validate(self, values: Mapping[str, Any]) -> dict:
        """Every parameter's value checked by :attr:`model`; the first error as a one-line :class:`ParameterError`."""
        self.check_names(values)
        try:
            return self.model.model_validate(dict(values)).model_dump()
        except ValidationError as err:
            first = err.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else ""
            if first["type"] == "missing":
                raise ParameterError(f"parameter '{name}': no value (profile.yaml gives it no default)") from None
            if name in self.params:
                raise self.params[name]._fail(values[name]) from None
            raise ParameterError(one_line(err, f"experiment '{self.name}'")) from None

    def resolve(self, profile: str | None = None, overrides: Mapping[str, Any] | None = None) -> dict:
        """Profile values with overrides applied, every value validated."""
        prof = self.profile(profile or self.default_profile)
        overrides = dict(overrides or {})
        self.check_names(overrides)
        return self.validate({**prof.values, **overrides})

    def parse_overrides(self, pairs: list[str]) -> dict:
        """``['epochs=3', 'seeds=1,2']`` -> ``{'epochs': 3, 'seeds': [1, 2]}``, validated."""
        out = {}
        for pair in pairs:
            if "=" not in pair:
                raise ParameterError(f"override '{pair}' must look like name=value")
            key, text = pair.split("=", 1)
            key = key.strip()
            self.check_names([key])
            out[key] = self.params[key].parse(text)
        return out


def layout(params: Mapping[str, ParamSpec], groups: Mapping[str, GroupDecl]) -> dict[str, tuple[str | None, str]]:
    """``name -> (group, field)``: ``<group>_<field>`` in its group (the longest group that prefixes it), the
    parameter called just ``<group>`` as the group's ``own`` field, any other at the top (group ``None``).
    A group without members, or one named like a parameter but without ``own``, is an error."""
    out: dict[str, tuple[str | None, str]] = {}
    for name in params:
        if name in groups:
            own = groups[name].own
            if own is None:
                raise ParameterError(f"group '{name}' is also a parameter: give the group an 'own' field name")
            out[name] = (name, own)
            continue
        prefix = max((g for g in groups if name.startswith(g + "_")), key=len, default=None)
        out[name] = (prefix, name[len(prefix) + 1:]) if prefix else (None, name)
    for group, decl in groups.items():
        fields = [f for g, f in out.values() if g == group]
        if not fields or (decl.own is not None and group not in params):
            raise ParameterError(f"group '{group}' has no parameter '{group}_<field>'"
                                 + (f" or '{group}' (its own field {decl.own!r})" if decl.own else ""))
        if len(set(fields)) != len(fields):
            raise ParameterError(f"group '{group}': two parameters map to one field")
    return out


def format_value(value: Any) -> str:
    """A parameter's value as ``-p name=VALUE`` takes it (``1,2``, ``null``, ``true``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _build(name: str, raw: Any) -> ExperimentSpec:
    """An :class:`ExperimentSpec` from a parsed ``profile.yaml``; a malformed file is one line naming it and the
    entry."""
    where = f"{name}/profile.yaml"
    try:
        doc = ProfileFile.model_validate(raw)
    except ValidationError as err:
        raise ParameterError(one_line(err, where)) from None
    params = {pname: p.model_copy(update={"name": pname}) for pname, p in doc.parameters.items()}
    spec = ExperimentSpec(name=name, title=doc.title, paper=doc.paper, notebook=doc.notebook,
                          module=f"{PACKAGE}.{name}.experiment", default_profile=doc.default_profile,
                          params=params, profiles={}, defaults=dict(doc.defaults), groups=dict(doc.groups),
                          to_decide=doc.to_decide)
    try:
        spec.layout
    except ParameterError as err:
        raise ParameterError(f"{where}: groups: {err}") from None
    spec.check_names(doc.defaults, f"{where}: defaults: ")
    for pname, value in doc.defaults.items():
        try:
            params[pname].check(value)
        except ParameterError as err:
            raise ParameterError(f"{where}: defaults: {err}") from None
    for pname, prof in doc.profiles.items():
        spec.check_names(prof.values, f"{where}: profile {pname}: ")
        values = {**doc.defaults, **prof.values}
        missing = [p for p in params if p not in values]
        if missing:
            raise ParameterError(f"{where}: profile {pname}: no value for {', '.join(missing)} (give it in defaults)")
        try:
            checked = spec.validate(values)
        except ParameterError as err:
            raise ParameterError(f"{where}: profile {pname}: {err}") from None
        spec.profiles[pname] = Profile(pname, prof.cost, prof.description, checked, dict(prof.values))
    if spec.default_profile not in spec.profiles:
        raise ParameterError(f"{where}: default_profile {spec.default_profile!r} is not one of "
                             f"{', '.join(spec.profiles)}")
    return spec


PACKAGE = "repro.experiments"  # one folder per experiment: <name>/profile.yaml, claims.yaml, experiment.py


@lru_cache(maxsize=None)
def experiments() -> dict[str, ExperimentSpec]:
    """All experiments, in notebook order: every folder of ``repro/experiments/`` with a ``profile.yaml``."""
    specs = []
    for folder in resources.files(PACKAGE).iterdir():
        if folder.is_dir() and folder.joinpath("profile.yaml").is_file():
            try:
                raw = yaml.safe_load(folder.joinpath("profile.yaml").read_text(encoding="utf-8"))
            except yaml.YAMLError as exc:
                raise ParameterError(f"{folder.name}/profile.yaml: not YAML ({' '.join(str(exc).split())})") from None
            specs.append(_build(folder.name, raw))
    specs.sort(key=lambda s: s.notebook)
    return {s.name: s for s in specs}


def spec(experiment: str) -> ExperimentSpec:
    """The spec of one experiment, or a one-line error listing the valid names."""
    exps = experiments()
    if experiment not in exps:
        raise ParameterError(f"unknown experiment '{experiment}'; choose from: {', '.join(exps)}")
    return exps[experiment]


def resolve(experiment: str, profile: str | None = None, overrides: Mapping[str, Any] | None = None) -> dict:
    """Shortcut for ``spec(experiment).resolve(profile, overrides)``."""
    return spec(experiment).resolve(profile, overrides)
