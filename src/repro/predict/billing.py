"""What cloud hardware costs: billing steps and an instance price table (``prices.yaml`` here, or a user's own
in the same schema, where every number has a ``source``), shared by the cost study and ``repro predict``.

A run of ``T`` seconds on an instance billed in steps of ``step`` seconds (at least ``minimum``) costs::

    cost = ceil(max(T, minimum) / step) * step * price_per_hour / 3600

(:func:`billed_seconds`, :func:`cost`); :func:`load_prices` reads and validates a table (one line naming the
file and the entry where it is malformed); :func:`epoch_costs` prices one epoch of a hardware profile's
predicted rates on the instance the profile names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Callable, cast

import pandas as pd
import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from repro.core import errors

#: Formula (1), in order: (phase, measured here?, what it is).
FORMULA_1 = [
    ("startup", False, "OS start of the VM"),
    ("install", False, "installing software, pulling images, drivers"),
    ("data_load", True, "loading and preparing the data"),
    ("start", True, "starting the framework and initialising the network"),
    ("learn", True, "training"),
    ("verify", True, "verification / testing"),
    ("save_data", True, "saving weights and results"),
    ("poweroff", False, "OS shutdown"),
]

# the price table's columns, in order (as load_prices hands them on)
_PROVIDER_COLUMNS = ("billing_step_s", "minimum_s", "source", "note")
_INSTANCE_COLUMNS = ("provider", "instance", "cpu_cores", "gpus", "gpu_model", "memory_gb", "price_per_hour",
                     "source", "note")
_PHASE_COLUMNS = ("phase", "seconds", "source", "note")


# bad cost input: a malformed price table, an unknown provider or instance, a negative time
PriceTableError = errors.BadInput


def billed_seconds(seconds: float, step: float, minimum: float = 0.0) -> float:
    """Seconds a provider bills: ``ceil(max(seconds, minimum) / step) * step``.

    ``seconds`` is rounded to the microsecond first, so that a sum of phases that is an
    exact multiple of the step up to float noise (599.9999999997) is not billed one step more.
    """
    for name, v in (("seconds", seconds), ("minimum", minimum)):
        if v is None or not math.isfinite(v) or v < 0:
            raise PriceTableError(f"{name} must be a finite number >= 0, got {v!r}")
    if step is None or not math.isfinite(step) or step <= 0:
        raise PriceTableError(f"billing step must be a number > 0 seconds, got {step!r}")
    t = round(max(float(seconds), float(minimum)), 6)
    return math.ceil(round(t / step, 9)) * step


def cost(seconds: float, price_per_hour: float, step: float, minimum: float = 0.0) -> float:
    """Billed cost of a run of ``seconds``: ``ceil(t/step) * step * price_per_hour / 3600``."""
    if price_per_hour is None or not math.isfinite(price_per_hour) or price_per_hour < 0:
        raise PriceTableError(f"price per hour must be a finite number >= 0, got {price_per_hour!r}")
    return billed_seconds(seconds, step, minimum) * price_per_hour / 3600.0


@dataclass
class PriceTable:
    """A validated price table: providers, instances and the assumed cloud-only phases."""

    currency: str
    providers: pd.DataFrame  # provider, billing_step_s, minimum_s, source, note
    instances: pd.DataFrame  # provider, instance, cpu_cores, gpus, gpu_model, memory_gb, price_per_hour, source, note
    assumed_phases: pd.DataFrame  # phase, seconds, source, note
    path: str

    def provider(self, name: str) -> dict:
        rows = self.providers[self.providers["provider"] == name]
        if rows.empty:
            raise PriceTableError(
                f"unknown provider '{name}'; the price table {self.path} has: {', '.join(self.providers['provider'])}"
            )
        return rows.iloc[0].to_dict()

    def instance(self, provider: str, name: str) -> dict:
        self.provider(provider)
        rows = self.instances[(self.instances["provider"] == provider) & (self.instances["instance"] == name)]
        if rows.empty:
            have = ", ".join(self.instances.loc[self.instances["provider"] == provider, "instance"])
            raise PriceTableError(f"unknown instance '{name}' of provider '{provider}'; it has: {have or 'none'}")
        return rows.iloc[0].to_dict()

    def cheapest(self, provider: str, cores: int, gpus: int = 0, gpu_model: str = "") -> dict | None:
        """The cheapest instance of a provider with at least ``cores`` cores and exactly ``gpus`` GPUs.

        With GPUs, only an instance of the run's GPU: its ``gpu_model``'s first word (``K80``,
        ``H100``) must be a word of ``gpu_model``, the name ``nvidia-smi`` gave (``NVIDIA H100 80GB
        HBM3``). An unknown model matches none, so a run is never priced as another GPU."""
        df = self.instances[(self.instances["provider"] == provider) & (self.instances["cpu_cores"] >= cores)
                            & (self.instances["gpus"] == gpus)]
        if gpus:
            df = df[[same_gpu(m, gpu_model) for m in df["gpu_model"]]]
        if df.empty:
            return None
        return df.sort_values(["price_per_hour", "cpu_cores"]).iloc[0].to_dict()

    def assumed_seconds(self) -> float:
        return float(self.assumed_phases["seconds"].sum())


def same_gpu(instance_model: str, run_model: str) -> bool:
    """Whether an instance's GPU (``K80``, ``K80 (half card)``, ``H100``) is the run's (``Tesla K80``,
    ``NVIDIA H100 80GB HBM3``): the instance's first word is a word of the run's; nothing matches
    an empty model on either side."""
    words = str(instance_model or "").split()
    return bool(words) and words[0].upper() in str(run_model or "").upper().split()


def default_price_path() -> str:
    return str(resources.files(__package__).joinpath("prices.yaml"))


def _number_check(*, integer: bool = False, positive: bool = False) -> Callable[[Any], int | float]:
    """The check of a finite number of the price table (a whole one with ``integer``, > 0 with ``positive``,
    else >= 0)."""
    def check(value: Any) -> int | float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"must be a number, got {value!r}")
        if integer and float(value) != int(value):
            raise ValueError(f"must be a whole number, got {value!r}")
        if value < 0 or (positive and value == 0):
            raise ValueError(f"must be {'> 0' if positive else '>= 0'}, got {value!r}")
        return int(value) if integer else float(value)
    return check


#: The numbers of a price table: >= 0, > 0 (``Positive``), whole (``Count``), or both.
_Number = Annotated[float, BeforeValidator(_number_check())]
_PositiveNumber = Annotated[float, BeforeValidator(_number_check(positive=True))]
_Count = Annotated[int, BeforeValidator(_number_check(integer=True))]
_PositiveCount = Annotated[int, BeforeValidator(_number_check(integer=True, positive=True))]


def _sourced(value):
    if not str(value or "").strip():
        raise ValueError("is empty (give a URL or 'illustrative')")
    return str(value)


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: Annotated[str, BeforeValidator(_sourced)]
    note: Annotated[str, BeforeValidator(str)] = ""


class ProviderSpec(_Entry):
    """A provider's billing rule: billed seconds = ceil(max(t, minimum_s) / billing_step_s) * billing_step_s."""

    billing_step_s: _PositiveNumber
    minimum_s: _Number


class InstanceSpec(_Entry):
    """One instance type and its price per hour."""

    provider: Annotated[str, BeforeValidator(str)]
    instance: Annotated[str, BeforeValidator(str)]
    cpu_cores: _PositiveCount
    gpus: _Count
    gpu_model: Annotated[str, BeforeValidator(lambda v: str(v or ""))] = ""
    memory_gb: _Number
    price_per_hour: _Number


def _cloud_only(phase):
    allowed = sorted(p for p, measured, _ in FORMULA_1 if not measured)
    if phase not in allowed:
        raise ValueError(f"phase {phase!r} is not a cloud-only phase ({', '.join(allowed)})")
    return phase


class PhaseSpec(_Entry):
    """A cloud-only term of formula (1), in seconds."""

    phase: Annotated[str, BeforeValidator(_cloud_only)]
    seconds: _Number


class PriceFile(BaseModel):
    """A whole price table."""

    model_config = ConfigDict(extra="forbid")

    currency: Annotated[str, BeforeValidator(str)]
    providers: dict[str, ProviderSpec] = Field(min_length=1)
    instances: list[InstanceSpec] = Field(min_length=1)
    assumed_phases: list[PhaseSpec]


_SECTIONS = {"providers": "provider", "instances": "instance", "assumed_phases": "assumed phase"}


def _price_error(err: ValidationError, raw: dict, path: str) -> PriceTableError:
    """pydantic's errors about a price table as one line naming the file and the entry."""
    errors = err.errors()
    first = errors[0]
    loc, name = first["loc"], Path(path).name
    if not loc:
        return PriceTableError(f"price table {path}: expected a mapping with {', '.join(PriceFile.model_fields)}")
    if len(loc) == 1:
        what = {"missing": f"missing '{loc[0]}'", "extra_forbidden": f"unknown field '{loc[0]}'"}.get(
            first["type"], f"'{loc[0]}' must be a non-empty {'mapping' if loc[0] == 'providers' else 'list'}")
        return PriceTableError(f"price table {path}: {what}")
    section, key = cast(str, loc[0]), loc[1]  # a field of PriceFile, then a provider's name or a list index
    where = (f"{name}: {_SECTIONS[section]} '{key}'" if section == "providers"
             else f"{name}: {_SECTIONS[section]} #{cast(int, key) + 1}")
    entry = raw[section][key]
    if section == "instances" and isinstance(entry, dict) and "instance" in entry:
        where = f"{name}: instance '{entry['instance']}'"
    if len(loc) == 2:
        return PriceTableError(f"{where}: expected a mapping, got {type(entry).__name__}")
    missing = sorted(str(e["loc"][2]) for e in errors if e["type"] == "missing" and e["loc"][:2] == loc[:2])
    if missing:
        return PriceTableError(f"{where}: missing {', '.join(missing)}")
    if first["type"] == "extra_forbidden":
        return PriceTableError(f"{where}: unknown field '{loc[2]}'")
    msg = first["msg"].removeprefix("Value error, ")
    return PriceTableError(f"{where}: {msg}" if msg.startswith("phase ") else f"{where}: '{loc[2]}' {msg}")


def load_prices(path: str | Path | None = None) -> PriceTable:
    """Read and validate a price table (YAML, schema in ``prices.yaml`` of this folder, :class:`PriceFile`).

    Raises :class:`PriceTableError` with one line naming the file and the bad entry.
    """
    path = str(path) if path else default_price_path()
    name = Path(path).name
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PriceTableError(f"price table {path} not found") from None
    except (OSError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PriceTableError(f"price table {path} cannot be read: {first}") from None
    try:
        table = PriceFile.model_validate(raw)
    except ValidationError as err:
        raise _price_error(err, raw, path) from None
    instances, seen = [], set()
    for entry in table.instances:
        where = f"{name}: instance '{entry.instance}'"
        if entry.provider not in table.providers:
            raise PriceTableError(f"{where}: unknown provider '{entry.provider}' "
                                  f"(providers: {', '.join(sorted(table.providers))})")
        if (entry.provider, entry.instance) in seen:
            raise PriceTableError(f"{where}: listed twice for provider '{entry.provider}'")
        seen.add((entry.provider, entry.instance))
        instances.append(entry.model_dump(include=set(_INSTANCE_COLUMNS)))
    providers = [{"provider": str(p), **e.model_dump(include=set(_PROVIDER_COLUMNS))}
                 for p, e in table.providers.items()]
    phases = [e.model_dump(include=set(_PHASE_COLUMNS)) for e in table.assumed_phases]
    return PriceTable(table.currency, pd.DataFrame(providers, columns=["provider", *_PROVIDER_COLUMNS]),
                      pd.DataFrame(instances, columns=list(_INSTANCE_COLUMNS)),
                      pd.DataFrame(phases, columns=list(_PHASE_COLUMNS)), path)


def epoch_costs(table: pd.DataFrame, prof, prices_path: str | None = None) -> tuple[pd.DataFrame, str]:
    """The cost of one epoch of ``prof.epoch_images`` images on the instance the hardware profile ``prof`` names
    in the price table: ceil(workers / processes) instances, each billed ceil(T / step) x step x price / 3600
    for T = epoch_images / images_per_s (the provider's step and minimum); ``cheapest`` marks each method's
    cheapest worker count. Returns the table with these columns and a line saying what was priced."""
    inst, prices = prof.instance, load_prices(prices_path)
    row, bill = prices.instance(inst["provider"], inst["name"]), prices.provider(inst["provider"])
    seconds = prof.epoch_images / table["images_per_s"]
    nodes = [math.ceil(n / inst["processes"]) for n in table["workers"]]
    money = [k * cost(t, float(row["price_per_hour"]), float(bill["billing_step_s"]), float(bill["minimum_s"]))
             for k, t in zip(nodes, seconds)]
    out = table.assign(instances=nodes, epoch_s=seconds.to_numpy(), cost_per_epoch=money)
    least = out.groupby("method")["cost_per_epoch"].transform("min")
    out["cheapest"] = ["*" if c == m else "" for c, m in zip(out["cost_per_epoch"], least)]
    head = (f"cost per epoch of {prof.epoch_images} images, priced as {inst['provider']} {inst['name']} "
            f"({float(row['price_per_hour']):g} {prices.currency}/h, {row['source']}; {inst['processes']} processes "
            f"per instance, billed in steps of {float(bill['billing_step_s']):g} s); * the cheapest N per method")
    return out, head
