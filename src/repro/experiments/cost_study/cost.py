"""Cloud cost of a training run: billing steps, an instance price table, formula (1).

The paper (`cloudcost2017`) bills the total run time of a VM, formula (1)::

    t_sum = t_startup + t_install + t_data_load + t_start + t_learn + t_verify + t_save_data + t_poweroff

rounded up to the provider's billing step::

    cost = ceil(t_sum / step) * step * price_per_hour / 3600

with, optionally, a minimum billed time (Google Compute Engine billed at least 10 minutes,
then per minute, when the paper was written). :func:`billed_seconds` and :func:`cost` are
that model; :func:`load_prices` reads and validates a price table (the packaged
``prices.yaml`` of this folder or the user's own, same schema), where every number has a
``source`` (a URL, or ``illustrative`` where it could not be sourced).

Command line (``repro cost``)::

    repro cost --seconds 601 --price-per-hour 0.9 --billing-step 600      # -> 0.3
    repro cost --seconds 601 --provider azure --instance NC6              # price and step from the table

prints one bare number in the table's currency. Bad input (negative time, unknown
provider or instance, a malformed table) is one line on stderr and exit status 2.
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

#: Billing steps the paper names, in seconds (Google Cloud 10 min, Azure 1 min, local 10 min to 1 h).
PAPER_BILLING_STEPS_S = {"google_cloud": 600, "azure": 60, "local_min": 600, "local_max": 3600}

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


def formula_table(prices: PriceTable, measured: dict[str, float] | None = None) -> pd.DataFrame:
    """Formula (1) term by term: measured seconds where we have them, the table's assumptions elsewhere."""
    assumed = prices.assumed_phases.set_index("phase")
    rows = []
    for phase, is_measured, what in FORMULA_1:
        if is_measured:
            rows.append({"term": f"t_{phase}", "what": what, "seconds": (measured or {}).get(phase, float("nan")),
                         "kind": "measured here", "source": "this run"})
        elif phase in assumed.index:
            rows.append({"term": f"t_{phase}", "what": what, "seconds": float(assumed.loc[phase, "seconds"]),
                         "kind": "assumption",
                         "source": f"{assumed.loc[phase, 'source']}: {assumed.loc[phase, 'note']}"})
        else:
            rows.append({"term": f"t_{phase}", "what": what, "seconds": 0.0, "kind": "assumption (not in table: 0)",
                         "source": prices.path})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# `repro cost`

def _float_arg(name: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise PriceTableError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise PriceTableError(f"{name} must be a finite number, got {text!r}")
    return value


def format_number(value: float) -> str:
    """A bare number: at most 6 decimals, no trailing zeros (0.3, 1.2, 0.000875)."""
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _cmd_cost(args) -> int:
    seconds = _float_arg("--seconds", args.seconds)
    price = _float_arg("--price-per-hour", args.price_per_hour)
    step = _float_arg("--billing-step", args.billing_step)
    minimum = _float_arg("--minimum", args.minimum)
    if seconds is None or seconds < 0:
        raise PriceTableError(f"--seconds must be a number >= 0, got {args.seconds!r}")
    if args.provider or args.instance or args.prices:
        table = load_prices(args.prices)
        if args.provider:
            rule = table.provider(args.provider)
            step = rule["billing_step_s"] if step is None else step
            minimum = rule["minimum_s"] if minimum is None else minimum
            if args.instance:
                price = table.instance(args.provider, args.instance)["price_per_hour"] if price is None else price
        elif args.instance:
            raise PriceTableError("--instance needs --provider")
    if price is None:
        raise PriceTableError("give --price-per-hour P (or --provider NAME --instance NAME)")
    if step is None:
        raise PriceTableError("give --billing-step S in seconds (or --provider NAME)")
    value = cost(seconds, price, step, minimum or 0.0)
    print(format_number(value))
    return 0


def add_cli(subparsers) -> None:
    """``repro cost``: the billed cost of one run (a bare number)."""
    p = subparsers.add_parser(
        "cost",
        help="billed cost of one run: ceil(T/step)*step*price/3600 (prints a bare number)",
        description="Billed cost of a run of T seconds: ceil(max(T, minimum)/step)*step*price_per_hour/3600. "
                    "Price and step may come from a price table (--provider/--instance); the packaged table is "
                    "repro/experiments/cost_study/prices.yaml.",
    )
    p.add_argument("--seconds", required=True, metavar="T", help="run time in seconds (t_sum of formula (1))")
    p.add_argument("--price-per-hour", metavar="P", help="instance price per hour (currency of your choice)")
    p.add_argument("--billing-step", metavar="S",
                   help="billing step in seconds (Google 2017: 60 after a 600 s minimum; Azure: 60; "
                        "local: 600-3600)")
    p.add_argument("--minimum", metavar="M", help="minimum billed seconds (default 0, or the provider's)")
    p.add_argument("--provider", help="take the billing step/minimum of this provider from the price table")
    p.add_argument("--instance", help="take the price of this instance of --provider from the price table")
    p.add_argument("--prices", metavar="FILE", help="your own price table (YAML, same schema as the packaged one)")
    p.set_defaults(func=_cmd_cost)
