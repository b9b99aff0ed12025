"""Hardware profiles of emulated clusters, and what an emulation at a time dilation costs this machine.

A profile (``hardware.yaml``, next to this module) says how long one worker of a paper's cluster
needed for the gradients of one batch (``t_grad``) and how fast its links were. An emulated
worker waits ``t_grad`` instead of computing and then moves the real model's tensors over an
emulated link (:class:`repro.cluster.Network`).

**Time dilation** ``k``: the links run at ``bandwidth / k`` and every wait is ``t_grad * k``, so
every ratio of computation to communication is the profile's, while the cores carry ``k`` times
fewer bytes per second; measured times are divided by ``k``. :func:`check_dilation` refuses a
factor whose transfers would need more CPU than the machine has, :func:`check_memory` a cluster
whose copies of the model would not fit, both with the number they computed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

from .spec import ClusterError

_RATE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit)$")
_UNIT = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
# TCP payload per byte on an Ethernet link with MTU 1500: 1448 bytes of data (20 IP + 32 TCP
# header with timestamps) in 1514 bytes on the wire (+14 Ethernet), the share tbf's rate carries
GOODPUT = 1448 / 1514
EPOCH_IMAGES = 50_000  # images per epoch for `repro predict`'s cost where a profile gives none (CIFAR-10's training set)
PROCESS_BASE_BYTES = 400e6  # a TensorFlow cluster process before any model (resident, measured ~350 MB here)


@dataclass(frozen=True)
class Profile:
    """One hardware profile (see ``hardware.yaml``)."""

    name: str
    paper: str
    description: str
    source: str
    link: str
    topology: str
    t_grad_s: dict
    batch: int | None = None
    ps_on_workers: bool = False  # PS task k on worker k's node (the thesis' distributed server)
    latency_s: float = 0.0  # per message (an all-reduce hop, a push or a pull); 0: the emulation's links have none
    in_words: str = ""  # the profile's deciding numbers in a few words ("K80 t_grad and 25 Gb/s")
    instance: dict | None = None  # {provider, name, processes}: a priced instance of the cost study's table
    epoch_images: int = EPOCH_IMAGES  # images of one epoch, for the cost per epoch

    def t_grad(self, model: str, images: int | None = None, batch: int | None = None) -> float:
        """Seconds for one worker's gradients of ``images`` of a batch of ``batch`` (default: one whole batch)."""
        if model not in self.t_grad_s:
            raise ClusterError(f"model {model!r} is not in hardware profile {self.name}; "
                               f"valid: {', '.join(self.t_grad_s)}")
        whole = float(self.t_grad_s[model])
        if images is None or batch is None:
            return whole
        return whole * images / batch


@lru_cache(maxsize=1)
def _data() -> dict:
    return yaml.safe_load(resources.files(__package__).joinpath("hardware.yaml").read_text(encoding="utf-8"))


def names() -> list[str]:
    """The hardware profiles repro knows."""
    return list(_data()["profiles"])


def machine() -> dict:
    """This machine's cost of moving bytes (``cpu_seconds_per_gb``, ``headroom``, ``source``)."""
    return dict(_data()["machine"])


def load(name: str) -> Profile:
    """The profile ``name``; an unknown name is one line listing the valid ones."""
    raw = _data()["profiles"].get(name)
    if raw is None:
        raise ClusterError(f"unknown hardware profile {name!r}; valid: {', '.join(names())}")
    return profile(name, raw)


def load_file(path) -> Profile:
    """A profile a user wrote: a YAML file with a profile's fields (``t_grad_s`` or ``images_per_s`` with
    ``batch``, ``link``; ``paper``, ``description``, ``source``, ``topology`` optional)."""
    from pathlib import Path

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ClusterError(f"hardware file {path}: {exc}") from None
    if not isinstance(raw, dict) or not ({"t_grad_s", "images_per_s"} & set(raw)) or "link" not in raw:
        raise ClusterError(f"hardware file {path}: needs 'link' and 't_grad_s' or 'images_per_s' (with 'batch')")
    if "images_per_s" in raw and "batch" not in raw:
        raise ClusterError(f"hardware file {path}: 'images_per_s' needs the 'batch' it was measured at")
    rate_bits(raw["link"])
    defaults = {"paper": "", "description": str(path), "source": str(path), "topology": ""}
    return profile(str(raw.get("name", Path(path).stem)), {**defaults, **raw})


def profile(name: str, raw: dict) -> Profile:
    """A :class:`Profile` from its YAML fields."""
    if "t_grad_s" in raw:
        t_grad = dict(raw["t_grad_s"])
    else:  # images per second at the profile's batch -> seconds per batch
        t_grad = {m: raw["batch"] / float(v) for m, v in raw["images_per_s"].items()}
    return Profile(name=name, paper=raw["paper"], description=raw["description"], source=" ".join(raw["source"].split()),
                   link=raw["link"], topology=" ".join(raw["topology"].split()), t_grad_s=t_grad,
                   batch=raw.get("batch"), ps_on_workers=bool(raw.get("ps_on_workers", False)),
                   latency_s=float(raw.get("latency_s", 0.0)), in_words=str(raw.get("in_words", "")),
                   instance=_instance(name, raw.get("instance")),
                   epoch_images=int(raw.get("epoch_images", EPOCH_IMAGES)))


def _instance(name: str, raw) -> dict | None:
    """A profile's priced instance: ``provider``, ``name`` and worker ``processes`` per instance (>= 1)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or {"provider", "name"} - set(raw) or int(raw.get("processes", 1)) < 1:
        raise ClusterError(f"hardware profile {name}: instance needs provider, name and processes >= 1, got {raw!r}")
    return {"provider": str(raw["provider"]), "name": str(raw["name"]), "processes": int(raw.get("processes", 1))}


def load_for(name: str, models) -> Profile:
    """The profile ``name``, checked to know every one of ``models`` (one line naming the valid ones)."""
    prof = load(name)
    for m in models:
        prof.t_grad(m)
    return prof


def check_param(name: str, models, parameter: str = "emulate") -> None:
    """A parameter naming a hardware profile (or ``none``): one line naming the parameter and the valid names."""
    from repro.core.params import ParameterError

    if name == "none":
        return
    try:
        load_for(name, models)
    except ClusterError as exc:
        raise ParameterError(f"parameter '{parameter}': {exc}; or none") from None


def rate_bits(rate: str) -> float:
    """Bits per second of a tc rate (``"1gbit"`` -> 1e9)."""
    m = _RATE.match(str(rate))
    if not m:
        raise ClusterError(f"rate {rate!r} is not in tc syntax (e.g. 1gbit, 100mbit)")
    return float(m.group(1)) * _UNIT[m.group(2)]


def dilated_rate(rate: str, dilation: float) -> str:
    """The tc rate of a link ``dilation`` times slower (``"1gbit"``, 4 -> ``"250000kbit"``)."""
    if dilation < 1:
        raise ClusterError(f"dilation must be >= 1, got {dilation:g}")
    return f"{max(1, round(rate_bits(rate) / dilation / 1e3))}kbit"


def transfer_seconds(nbytes: float, rate: str) -> float:
    """Wire time of ``nbytes`` of TCP payload over one link of ``rate`` (MTU 1500, :data:`GOODPUT`)."""
    return nbytes * 8 / (rate_bits(rate) * GOODPUT)


def cpu_needed(flows: float, rate: str, dilation: float) -> float:
    """Cores busy moving bytes when ``flows`` link directions of ``rate`` run at once, dilated by ``dilation``."""
    return flows * rate_bits(rate) / 8 / dilation / 1e9 * float(machine()["cpu_seconds_per_gb"])


def check_dilation(flows: float, rate: str, dilation: float, cores: int, what: str) -> float:
    """Refuse a dilation whose transfers need more CPU than ``cores`` x headroom; returns the cores needed."""
    need = cpu_needed(flows, rate, dilation)
    room = cores * float(machine()["headroom"])
    if need > room:
        least = dilation * need / room
        raise ClusterError(f"parameter 'dilation': {dilation:g} needs {need:.1f} CPU cores for the transfers of "
                           f"{what} ({flows:g} link directions at {rate}; this machine has {cores}, "
                           f"{room:.1f} usable); use dilation >= {least:.1f}")
    return need


def check_memory(model_bytes: float, copies: float, processes: int, available: float, what: str) -> float:
    """Refuse a cluster whose ``copies`` of the model plus ``processes`` TensorFlow processes exceed ``available``."""
    need = model_bytes * copies + processes * PROCESS_BASE_BYTES
    if need > available:
        raise ClusterError(f"{what} needs about {need / 1e9:.1f} GB ({copies:g} copies of {model_bytes / 1e6:.0f} MB "
                           f"+ {processes} processes x {PROCESS_BASE_BYTES / 1e6:.0f} MB); {available / 1e9:.1f} GB "
                           "available: refused before any process starts")
    return need
