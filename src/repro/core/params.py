"""Named parameter profiles per experiment, validated on entry.

Every experiment folder ``repro/experiments/<name>/`` has a ``profile.yaml`` that holds, as data:

* ``parameters``: the schema (type, allowed range or choices, help text);
* ``profiles``: named, complete sets of values (``smoke`` for CI, ``cpu`` for a
  2-core machine, ``paper`` for the paper's protocol on a GPU server) and what each
  roughly costs.

A wrong profile name, an unknown parameter, or a value of the wrong type or out of
range raises :class:`ParameterError` whose message is one line naming the parameter
and what is allowed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

import yaml

_SCALARS = {"int": int, "float": float, "str": str, "bool": bool}
_TYPES = set(_SCALARS) | {f"list[{t}]" for t in ("int", "float", "str")}


class ParameterError(ValueError):
    """A bad profile name, parameter name or value (one-line message)."""


@dataclass(frozen=True)
class ParamSpec:
    """Schema of one parameter."""

    name: str
    type: str
    help: str = ""
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    nullable: bool = False
    length: int | None = None  # exact length of a list

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

    def _scalar(self, base: str, value: Any) -> Any:
        if base == "bool":
            if isinstance(value, bool):
                return value
            raise self._fail(value)
        if base == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise self._fail(value)
        elif base == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self._fail(value)
            value = float(value)
        elif base == "str" and not isinstance(value, str):
            raise self._fail(value)
        if self.choices is not None and value not in self.choices:
            raise self._fail(value)
        if self.min is not None and value < self.min:
            raise self._fail(value)
        if self.max is not None and value > self.max:
            raise self._fail(value)
        return value

    def validate(self, value: Any) -> Any:
        """Return the value, normalised (ints accepted for floats), or raise."""
        if value is None:
            if self.nullable:
                return None
            raise self._fail(value)
        if self.type.startswith("list["):
            if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
                raise self._fail(value)
            if self.length is not None and len(value) != self.length:
                raise self._fail(value)
            base = self.type[5:-1]
            try:
                return [self._scalar(base, v) for v in value]
            except ParameterError:
                raise self._fail(value) from None
        return self._scalar(self.type, value)

    def parse(self, text: str) -> Any:
        """Parse a command-line string (``-p name=text``) into this parameter's type."""
        if self.nullable and text.strip().lower() in ("none", "null", ""):
            return None
        base = self.type.removeprefix("list[").removesuffix("]")
        items = [t.strip() for t in text.strip().strip("[]").split(",")] if self.type.startswith("list[") else [text.strip()]
        out = []
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
        return self.validate(out if self.type.startswith("list[") else out[0])


@dataclass(frozen=True)
class Profile:
    name: str
    cost: str
    description: str
    values: dict


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

    def profile(self, name: str) -> Profile:
        if name not in self.profiles:
            raise ParameterError(
                f"unknown profile '{name}' for experiment '{self.name}'; choose from: {', '.join(self.profiles)}"
            )
        return self.profiles[name]

    def check_names(self, names) -> None:
        for key in names:
            if key not in self.params:
                close = difflib.get_close_matches(key, self.params, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ParameterError(
                    f"unknown parameter '{key}' for experiment '{self.name}'{hint}; valid: {', '.join(sorted(self.params))}"
                )

    def resolve(self, profile: str | None = None, overrides: Mapping[str, Any] | None = None) -> dict:
        """Profile values with overrides applied, every value validated."""
        prof = self.profile(profile or self.default_profile)
        overrides = dict(overrides or {})
        self.check_names(overrides)
        values = {**prof.values, **overrides}
        return {name: spec.validate(values[name]) for name, spec in self.params.items()}

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


def _build(name: str, raw: dict) -> ExperimentSpec:
    params = {}
    for pname, p in raw["parameters"].items():
        if p["type"] not in _TYPES:
            raise ValueError(f"{name}/profile.yaml: parameter {pname} has unknown type {p['type']}")
        params[pname] = ParamSpec(
            name=pname,
            type=p["type"],
            help=p.get("help", ""),
            min=p.get("min"),
            max=p.get("max"),
            choices=tuple(p["choices"]) if "choices" in p else None,
            nullable=p.get("nullable", False),
            length=p.get("length"),
        )
    profiles = {}
    for pname, prof in raw["profiles"].items():
        values = prof["values"]
        missing = set(params) - set(values)
        extra = set(values) - set(params)
        if missing or extra:
            raise ValueError(f"{name}/profile.yaml: profile {pname} missing {sorted(missing)} / unknown {sorted(extra)}")
        profiles[pname] = Profile(pname, prof.get("cost", "?"), prof.get("description", ""), values)
    return ExperimentSpec(
        name=name,
        title=raw["title"],
        paper=raw.get("paper", ""),
        notebook=raw["notebook"],
        module=f"{PACKAGE}.{name}.experiment",
        default_profile=raw.get("default_profile", "smoke"),
        params=params,
        profiles=profiles,
    )


PACKAGE = "repro.experiments"  # one folder per experiment: <name>/profile.yaml, claims.yaml, experiment.py


@lru_cache(maxsize=None)
def experiments() -> dict[str, ExperimentSpec]:
    """All experiments, in notebook order: every folder of ``repro/experiments/`` with a ``profile.yaml``."""
    specs = []
    for folder in resources.files(PACKAGE).iterdir():
        if folder.is_dir() and folder.joinpath("profile.yaml").is_file():
            raw = yaml.safe_load(folder.joinpath("profile.yaml").read_text(encoding="utf-8"))
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
