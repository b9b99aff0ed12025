"""Named parameter profiles per experiment, validated on entry.

Every experiment folder ``repro/experiments/<name>/`` has a ``profile.yaml`` that holds, as data:

* ``parameters``: the schema (type, allowed range or choices, help text; ``legacy``: the value a stored run
  made before the parameter existed ran with);
* ``groups`` (optional): the help of each group and its ``shape`` (groups of one shape share a class); a parameter
  named ``<group>.<field>`` is ``p.<group>.<field>`` in the experiment's parameters (:mod:`repro.core.paramtypes`)
  and ``-p <group>.<field>=...`` on the command line;
* ``defaults``: every parameter's value unless a profile changes it;
* ``profiles``: named profiles (``smoke`` for CI, ``cpu`` for a 2-core machine, ``paper`` for the
  paper's protocol on a GPU server), each with what it roughly costs and, under ``values``, only
  the parameters it changes from ``defaults``.

The file is read through pydantic models (:class:`ProfileFile`); each experiment's parameters are one nested
pydantic model generated from its declarations (``experiments/<name>/paramtypes.py``, :attr:`ExperimentSpec.model`:
typed fields with their ranges and choices), validated once when a run starts (:meth:`ExperimentSpec.resolve`).
A wrong profile name, an unknown parameter, or a value of the wrong type or out of range raises
:class:`ParameterError` whose message is one line naming the parameter and what is allowed (:func:`one_line`
turns pydantic's errors into it). Runs stored before the parameters were nested name them flat
(``emulate_models``, ``emulate`` for ``emulate.hardware``): :meth:`ExperimentSpec.dotted` is the one adapter that
reads them (and ``-p emulate_models=...``, accepted for one release).
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

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


def one_of(*choices: Any) -> AfterValidator:
    """A validator that every item of a list (or a single value) is one of ``choices``."""

    def check(value: Any) -> Any:
        bad = [v for v in (value if isinstance(value, list) else [value]) if v not in choices]
        if bad:
            raise ValueError(f"not one of {choices}")
        return value

    return AfterValidator(check)


# The types the generated parameter classes are written in (and the schema checks its defaults with): strict
# scalars (an int is no float's string, a bool no int), an integral float read as an int, "none" as null.
Int = Annotated[int, BeforeValidator(_integral), Field(strict=True)]
Float = Annotated[float, Field(strict=True)]
Str = Annotated[str, Field(strict=True)]
Bool = Annotated[bool, Field(strict=True)]
NULL = BeforeValidator(_null_word)
TYPES: dict[str, Any] = {"Int": Int, "Float": Float, "Str": Str, "Bool": Bool, "NULL": NULL, "one_of": one_of,
                         "Annotated": Annotated, "Field": Field, "Literal": Literal}


def _bound(value: float, base: str) -> str:
    return str(int(value)) if base == "int" and float(value).is_integer() else repr(float(value))


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
    alias: str | None = None  # its flat name in runs stored before parameters were nested, where not <group>_<field>

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

    def source_type(self, *, legacy_null: bool = True) -> str:
        """This parameter's type as Python source, in the names of :data:`TYPES`: ``Annotated[Int, Field(ge=1)]``,
        ``Literal['fit', 'fused']``, ``Annotated[list[Str], Field(min_length=1), one_of('a', 'b')]``, null
        where nullable (or where a run older than it reads as ``legacy: null``, with ``legacy_null``)."""
        base = self.type.removeprefix("list[").removesuffix("]")
        is_list = self.type.startswith("list[")
        item = {"int": "Int", "float": "Float", "str": "Str", "bool": "Bool"}[base]
        if self.choices is not None and not is_list:
            item = "Literal[" + ", ".join(repr(c) for c in self.choices) + "]"
        bounds = ", ".join(f"{k}={_bound(v, base)}" for k, v in (("ge", self.min), ("le", self.max)) if v is not None)
        if bounds:
            item = f"Annotated[{item}, Field({bounds})]"
        text = item
        if is_list:
            size = f"min_length={self.length}, max_length={self.length}" if self.length else "min_length=1"
            choices = f", one_of({', '.join(repr(c) for c in self.choices)})" if self.choices is not None else ""
            text = f"Annotated[list[{item}], Field({size}){choices}]"
        if self.nullable or (legacy_null and self.has_legacy and self.legacy is None):
            text = f"Annotated[{text} | None, NULL]"
        return text

    @cached_property
    def annotation(self) -> Any:
        """The pydantic type of this parameter (:meth:`source_type`, as the generated class declares it, but not
        null for a ``legacy: null`` alone): strict scalars, ranges, choices, list length, null."""
        return eval(self.source_type(legacy_null=False), dict(TYPES))  # noqa: S307 -- our own generated source

    @cached_property
    def _adapter(self) -> TypeAdapter:
        return TypeAdapter(self.annotation)

    def check(self, value: Any) -> Any:
        """Return the value, normalised (ints accepted for floats, lists as lists), or raise."""
        try:
            return self._adapter.validate_python(value)
        except ValidationError:
            raise self._fail(value) from None

    def parse(self, text: str) -> Any:
        """Parse a command-line string (``-p name=text``) into this parameter's type (its range and choices are
        checked once, with every other parameter, when the run starts: :meth:`ExperimentSpec.resolve`)."""
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
        return out if self.type.startswith("list[") else out[0]


# ------------------------------------------------------------------ the file's own schema


class ProfileDecl(_Strict):
    """One entry of ``profiles:``: what it costs and needs, what it runs, what it changes from ``defaults``."""

    cost: str = "?"
    description: str = ""
    extends: str = ""  # a profile declared above whose changes this one starts from
    gpus: int = Field(default=0, ge=0)  # GPUs the profile needs on the machine that runs it (the preflight checks)
    values: dict[str, Any] = Field(default_factory=dict)


class GroupDecl(_Strict):
    """One entry of ``groups:``: what the parameters named ``<group>.<field>`` are for, and the ``shape`` (a class
    name) it shares with other groups of the same fields (:func:`repro.core.paramtypes.source`)."""

    help: str = ""
    shape: str = Field(default="", pattern=r"^([A-Z][A-Za-z0-9]*)?$")


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


def _inherited(spec, prof: ProfileDecl, where: str) -> dict:
    """A profile's changes from the defaults: those of the profile it ``extends`` (declared above it), then its
    own; an own value equal to the inherited one is an error (a profile states only what it changes)."""
    if not prof.extends:
        return dict(prof.values)
    if prof.extends not in spec.profiles:
        raise ParameterError(f"{where}extends {prof.extends!r}, which is not a profile declared above it")
    base = spec.profiles[prof.extends]
    same = [k for k, v in prof.values.items() if k in base.values and base.values[k] == v]
    if same:
        raise ParameterError(f"{where}{', '.join(same)}: the same as in {prof.extends!r}, which it extends")
    return {**base.changes, **prof.values}


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
    gpus: int = 0  # GPUs it needs where it runs (repro.core.preflight)


@dataclass(frozen=True)
class ExperimentSpec:
    """An experiment's schema, profiles and metadata, read from its YAML file. Parameter names are dotted where
    they belong to a group (``emulate.hardware``); a profile's values are ``name -> value`` in those names."""

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
    def model(self) -> Any:
        """The experiment's parameters class, generated from this file (``experiments/<name>/paramtypes.py``)."""
        module = self.module.rsplit(".", 1)[0] + ".paramtypes"
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:  # the file is there and fails to import: not a missing file
                raise
            raise ParameterError(f"experiment '{self.name}': no {module.replace('.', '/')}.py; generate it with "
                                 "`python -m repro.core.paramtypes`") from None
        return getattr(found, "".join(w.capitalize() for w in self.name.split("_")) + "Params")

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

    @cached_property
    def flat_names(self) -> dict[str, str]:
        """``flat name -> dotted name`` of every grouped parameter, as runs stored before the nesting named them."""
        return {(p.alias or name.replace(".", "_")): name for name, p in self.params.items() if "." in name}

    def dotted(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The one adapter to the dotted names: a nested mapping (``{"emulate": {"models": [...]}}``, the wire
        format), dotted keys (``emulate.models``, ``-p``), or the flat names of runs stored before parameters were
        nested (``emulate_models``; ``emulate`` for ``emulate.hardware``), each read as ``name -> value``."""
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key in self.groups and isinstance(value, Mapping):
                out.update({f"{key}.{f}": v for f, v in value.items()})
            else:
                out[self.flat_names.get(key, key)] = value
        return out

    def validate(self, values: Mapping[str, Any]) -> Any:
        """Every parameter's value (nested, dotted or flat: :meth:`dotted`) checked once by :attr:`model`; the first
        error as a one-line :class:`ParameterError` naming the parameter (``emulate.repeats``)."""
        flat = self.dotted(values)
        self.check_names(flat)
        try:
            return self.model.model_validate(nest(flat))
        except ValidationError as err:
            first = err.errors()[0]
            name = ".".join(str(p) for p in first["loc"][:2] if isinstance(p, str))
            if first["type"] == "missing":
                raise ParameterError(f"parameter '{name}': no value (profile.yaml gives it no default)") from None
            if name in self.params:
                raise self.params[name]._fail(flat[name]) from None
            raise ParameterError(one_line(err, f"experiment '{self.name}'")) from None

    def resolve(self, profile: str | None = None, overrides: Mapping[str, Any] | None = None) -> Any:
        """The experiment's parameters: the profile's values with ``overrides`` (nested or dotted) applied, validated
        once."""
        prof = self.profile(profile or self.default_profile)
        return self.validate({**prof.values, **self.dotted(overrides or {})})

    def parse_overrides(self, pairs: list[str]) -> dict:
        """``['epochs=3', 'emulate.workers=1,2']`` -> ``{'epochs': 3, 'emulate.workers': [1, 2]}``: names checked,
        values parsed by type (validated with the rest when the run starts)."""
        out = {}
        for pair in pairs:
            if "=" not in pair:
                raise ParameterError(f"override '{pair}' must look like name=value")
            key, text = pair.split("=", 1)
            key = self.flat_names.get(key.strip(), key.strip())
            self.check_names([key])
            out[key] = self.params[key].parse(text)
        return out

    def stored(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A stored run's parameters in dotted names (:meth:`dotted`), a parameter it lacks (made before it
        existed) with its declared ``legacy:`` value; without one, one line saying which."""
        out = self.dotted(values)
        for name, decl in self.params.items():
            if name not in out and decl.has_legacy:
                out[name] = decl.legacy
            elif name not in out:
                raise ParameterError(f"{self.name}: parameter '{name}' missing (a run made before it existed?) and "
                                     "profile.yaml declares no 'legacy:' value for it")
        return out


def nest(dotted: Mapping[str, Any]) -> dict[str, Any]:
    """``{"emulate.models": m, "ps": 1}`` -> ``{"emulate": {"models": m}, "ps": 1}``: the nested wire format."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        group, _, name = key.rpartition(".")
        (out.setdefault(group, {}) if group else out)[name] = value
    return out


def check_groups(params: Mapping[str, ParamSpec], groups: Mapping[str, GroupDecl]) -> None:
    """Every dotted parameter in a declared group, every group with a parameter, no parameter named like a group."""
    for name in params:
        group = name.rpartition(".")[0]
        if name in groups:
            raise ParameterError(f"parameter '{name}' is named like a group: name it '{name}.<field>'")
        if group and group not in groups:
            raise ParameterError(f"parameter '{name}': no group '{group}' under groups:")
    for group in groups:
        if not any(n.startswith(group + ".") for n in params):
            raise ParameterError(f"group '{group}' has no parameter '{group}.<field>'")


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
    """An :class:`ExperimentSpec` from a parsed ``profile.yaml``; a malformed file: one line naming it and the entry."""
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
        check_groups(params, doc.groups)
    except ParameterError as err:
        raise ParameterError(f"{where}: groups: {err}") from None
    spec.check_names(doc.defaults, f"{where}: defaults: ")
    defaults = {}
    for pname, value in doc.defaults.items():
        try:
            defaults[pname] = params[pname].check(value)
        except ParameterError as err:
            raise ParameterError(f"{where}: defaults: {err}") from None
    for pname, prof in doc.profiles.items():
        spec.check_names(prof.values, f"{where}: profile {pname}: ")
        changes = _inherited(spec, prof, f"{where}: profile {pname}: ")
        missing = [p for p in params if p not in {**defaults, **changes}]
        if missing:
            raise ParameterError(f"{where}: profile {pname}: no value for {', '.join(missing)} (give it in defaults)")
        values = dict(defaults)
        for value_name, value in changes.items():
            try:
                values[value_name] = params[value_name].check(value)
            except ParameterError as err:
                raise ParameterError(f"{where}: profile {pname}: {err}") from None
        values = {p: values[p] for p in params}  # in the order of the declarations
        if prof.extends:  # a change of its base set back to the default is no change
            changes = {k: v for k, v in changes.items() if k not in defaults or values[k] != defaults[k]}
        spec.profiles[pname] = Profile(pname, prof.cost, prof.description, values, changes, prof.gpus)
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


def resolve(experiment: str, profile: str | None = None, overrides: Mapping[str, Any] | None = None) -> Any:
    """Shortcut for ``spec(experiment).resolve(profile, overrides)``."""
    return spec(experiment).resolve(profile, overrides)
