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
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from repro.core.params import one_line

from .errors import PredictError

_RATE = re.compile(r"^(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit)$")
_UNIT = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}
# TCP payload per byte on an Ethernet link with MTU 1500: 1448 bytes of data (20 IP + 32 TCP
# header with timestamps) in 1514 bytes on the wire (+14 Ethernet), the share tbf's rate carries
GOODPUT = 1448 / 1514
# images per epoch for `repro predict`'s cost where a profile gives none (CIFAR-10's training set)
EPOCH_IMAGES = 50_000
PROCESS_BASE_BYTES = 400e6  # a TensorFlow cluster process before any model (resident, measured ~350 MB here)
TOPOLOGY_FIELDS = ("gpus_per_host", "gpus_per_switch", "host_aggregation", "intra_link", "intra_latency_s", "goodput",
                   "overlap", "pull_with_forward", "fusion_bytes", "cycle_s", "step_overhead", "topology_profile",
                   "peer_to_peer", "collective_goodput", "step_latency_s", "input_images_per_s",
                   "measured_collective")
CHECK_TOLERANCE = 0.05  # an emulation's own checks (transfer time, S = N, two dilations) agree within 5 %


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
    # hosts with several GPUs (repro.predict.perfmodel): `link` is then the network between hosts
    gpus_per_host: int = 1
    gpus_per_switch: int | None = None  # GPUs sharing one link to the host (a K80 board's two; default: all)
    host_aggregation: bool = False  # a host sums its GPUs' gradients before one copy crosses the network
    intra_link: str | None = None  # GPU <-> GPU / host memory inside a host (a tc rate), needed when gpus_per_host > 1
    intra_latency_s: float = 0.0
    goodput: float = GOODPUT  # payload share of `link`'s rate (TCP over Ethernet; 1 for RDMA)
    pull_with_forward: bool = True  # with overlap: a server's weights are read as the forward pass needs them
    overlap: bool = False  # communication starts as the backward pass makes gradients ready (repro.predict.overlap)
    fusion_bytes: float = 0.0  # Horovod's tensor fusion buffer (0: one message per layer)
    cycle_s: float = 0.0  # Horovod's cycle time
    topology_profile: str | None = None  # the profile of the same cluster's real topology (several GPUs per host)
    step_overhead: float = 0.0  # a framework's per-step work beyond compute and communication, a share of compute
    # False: the host's GPUs cannot read each other's memory (GeForce RTX 30/40 over PCIe): an all-reduce inside the
    # host is staged through host memory (repro.predict.perfmodel.allreduce_seconds)
    peer_to_peer: bool = True
    # the share of `link` an all-reduce library reaches between hosts (None: `goodput`; links.yaml: NCCL over TCP ~0.6)
    collective_goodput: float | None = None
    # a framework's fixed seconds per step where N > 1, whatever the compute (kernel launches, Horovod's negotiation
    # cycle, DDP's bucket hooks and its allreduce calls): short steps lose more of their time to it than long ones
    step_latency_s: float = 0.0
    # images/s one host's input pipeline delivers to its GPUs (reading and decoding real data; None: not a bound);
    # a stated parameter: give its source in the profile (e.g. a data-loader benchmark on the host's CPUs)
    input_images_per_s: float | None = None
    # True: an all-reduce is NCCL's, its time per ring step from nccl-tests' sweeps by level (repro.predict.collective;
    # at least the link's latency), and a framework that sends each tensor alone (no fusion, no overlap) pays it per
    # tensor; False: the links' latency_s alone, one message for all the gradients (what an emulation replays)
    measured_collective: bool = False

    def t_grad(self, model: str, images: int | None = None, batch: int | None = None) -> float:
        """Seconds for one worker's gradients of ``images`` of a batch of ``batch`` (default: one whole batch)."""
        if model not in self.t_grad_s:
            raise PredictError(f"model {model!r} is not in hardware profile {self.name}; "
                               f"valid: {', '.join(self.t_grad_s)}")
        whole = float(self.t_grad_s[model])
        if images is None or batch is None:
            return whole
        return whole * images / batch


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_Positive = Annotated[float, Field(strict=True, gt=0)]


class InstanceSpec(_Strict):
    """A priced instance of the cost study's table: ``processes`` worker processes per instance."""

    provider: str
    name: str
    processes: int = Field(default=1, ge=1)


class ProfileSpec(_Strict):
    """One profile as ``hardware.yaml`` (or a user's file) writes it: ``t_grad_s``, or ``images_per_s``
    measured at ``batch``; ``link`` in tc syntax."""

    name: str | None = None  # a user's file may name its profile (default: the file's stem)
    paper: str = ""
    description: str = ""
    source: str = ""
    link: str
    duplex: Literal["full", "half"] = "full"
    topology: str = ""
    t_grad_s: dict[str, _Positive] | None = None
    t_grad_scaling: str = ""
    images_per_s: dict[str, _Positive] | None = None
    batch: int | None = Field(default=None, ge=1)
    ps_on_workers: bool = False
    latency_s: float = Field(default=0.0, ge=0)
    in_words: str = ""
    instance: InstanceSpec | None = None
    epoch_images: int = Field(default=EPOCH_IMAGES, ge=1)
    gpus_per_host: int = Field(default=1, ge=1)
    gpus_per_switch: int | None = Field(default=None, ge=1)
    host_aggregation: bool = False
    intra_link: str | None = None
    intra_latency_s: float = Field(default=0.0, ge=0)
    goodput: float = Field(default=GOODPUT, gt=0, le=1)
    overlap: bool = False
    pull_with_forward: bool = True
    fusion_bytes: float = Field(default=0.0, ge=0)
    cycle_s: float = Field(default=0.0, ge=0)
    step_overhead: float = Field(default=0.0, ge=0, le=1)
    topology_profile: str | None = None
    peer_to_peer: bool = True
    collective_goodput: float | None = Field(default=None, gt=0, le=1)
    step_latency_s: float = Field(default=0.0, ge=0)
    input_images_per_s: float | None = Field(default=None, gt=0)
    measured_collective: bool = False

    @field_validator("link", "intra_link")
    @classmethod
    def _tc_rate(cls, link: str | None) -> str | None:
        if link is not None and not _RATE.match(link):
            raise ValueError(f"rate {link!r} is not in tc syntax (e.g. 1gbit, 100mbit)")
        return link

    @model_validator(mode="after")
    def _compute_time(self) -> "ProfileSpec":
        if self.t_grad_s is None and self.images_per_s is None:
            raise ValueError("needs t_grad_s or images_per_s (with batch)")
        if self.t_grad_s is None and self.batch is None:
            raise ValueError("images_per_s needs the batch it was measured at")
        if self.gpus_per_host > 1 and self.intra_link is None:
            raise ValueError("gpus_per_host > 1 needs intra_link (the link between a host's GPUs)")
        return self


class MachineSpec(_Strict):
    """This machine's cost of moving bytes."""

    cpu_seconds_per_gb: _Positive
    headroom: float = Field(gt=0, le=1)
    source: str


class HardwareFile(_Strict):
    """The whole ``hardware.yaml``."""

    profiles: dict[str, ProfileSpec] = Field(min_length=1)
    machine: MachineSpec


@lru_cache(maxsize=1)
def _data() -> HardwareFile:
    raw = yaml.safe_load(resources.files(__package__).joinpath("hardware.yaml").read_text(encoding="utf-8"))
    try:
        return HardwareFile.model_validate(raw)
    except ValidationError as err:
        raise PredictError(one_line(err, "repro/predict/hardware.yaml")) from None


def names() -> list[str]:
    """The hardware profiles repro knows."""
    return list(_data().profiles)


def machine() -> dict:
    """This machine's cost of moving bytes (``cpu_seconds_per_gb``, ``headroom``, ``source``)."""
    return _data().machine.model_dump()


def load(name: str) -> Profile:
    """The profile ``name``; an unknown name is one line listing the valid ones."""
    spec = _data().profiles.get(name)
    if spec is None:
        raise PredictError(f"unknown hardware profile {name!r}; valid: {', '.join(names())}")
    return _profile(name, spec)


def load_file(path) -> Profile:
    """A profile a user wrote: a YAML file with a profile's fields (``t_grad_s`` or ``images_per_s`` with
    ``batch``, ``link``; ``name``, ``paper``, ``description``, ``source``, ``topology`` optional); a bad file
    is one line naming it and the field."""
    from pathlib import Path

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise PredictError(f"hardware file {path}: {' '.join(str(exc).split())}") from None
    try:
        spec = ProfileSpec.model_validate(raw)
    except ValidationError as err:
        raise PredictError(one_line(err, f"hardware file {path}")) from None
    defaults = {"description": str(path), "source": str(path)}
    spec = spec.model_copy(update={k: v for k, v in defaults.items() if not getattr(spec, k)})
    return _profile(spec.name or Path(path).stem, spec)


def profile(name: str, raw: dict) -> Profile:
    """A :class:`Profile` from its YAML fields (one line naming the profile where they are malformed)."""
    try:
        return _profile(name, ProfileSpec.model_validate(raw))
    except ValidationError as err:
        raise PredictError(one_line(err, f"hardware profile {name}")) from None


def _profile(name: str, spec: ProfileSpec) -> Profile:
    if spec.t_grad_s is not None:
        t_grad = dict(spec.t_grad_s)
    else:  # images per second at the profile's batch -> seconds per batch
        assert spec.images_per_s is not None and spec.batch is not None  # ProfileSpec._compute_time checked
        t_grad = {m: spec.batch / v for m, v in spec.images_per_s.items()}
    return Profile(name=name, paper=spec.paper, description=spec.description, source=" ".join(spec.source.split()),
                   link=spec.link, topology=" ".join(spec.topology.split()), t_grad_s=t_grad, batch=spec.batch,
                   ps_on_workers=spec.ps_on_workers, latency_s=spec.latency_s, in_words=spec.in_words,
                   instance=spec.instance.model_dump() if spec.instance else None, epoch_images=spec.epoch_images,
                   **spec.model_dump(include=set(TOPOLOGY_FIELDS)))


def load_for(name: str, models) -> Profile:
    """The profile ``name``, checked to know every one of ``models`` (one line naming the valid ones)."""
    prof = load(name)
    for m in models:
        prof.t_grad(m)
    return prof


def emulated(name: str | None, parameter: str = "emulate.hardware") -> str:
    """The hardware profile an emulated grid runs on (an experiment's ``emulate.hardware``); one line naming the
    parameter where it is null. The one definition for every experiment that emulates."""
    from repro.core.params import ParameterError

    if name is None:
        raise ParameterError(f"parameter '{parameter}': null, so there is no emulated grid to run")
    return name


def check_param(name: str | None, models, parameter: str = "emulate.hardware") -> None:
    """A parameter naming a hardware profile (or null): one line naming the parameter and the valid names."""
    from repro.core.params import ParameterError

    if name is None:
        return
    try:
        prof = load(name)
    except PredictError as exc:
        raise ParameterError(f"parameter '{parameter}': {exc}; or none") from None
    if prof.gpus_per_host > 1 or prof.overlap:  # one link per process, nothing overlapped: what an emulation replays
        can = [n for n in names() if load(n).gpus_per_host == 1 and not load(n).overlap]
        raise ParameterError(f"parameter '{parameter}': hardware profile {name} describes several GPUs per host or "
                             f"overlap, which only the analytic model knows (repro predict); an emulation replays "
                             f"one of {', '.join(can)}; or none")
    try:
        load_for(name, models)
    except PredictError as exc:
        raise ParameterError(f"parameter '{parameter}': {exc}; or none") from None


def rate_bits(rate: str) -> float:
    """Bits per second of a tc rate (``"1gbit"`` -> 1e9)."""
    m = _RATE.match(str(rate))
    if not m:
        raise PredictError(f"rate {rate!r} is not in tc syntax (e.g. 1gbit, 100mbit)")
    return float(m.group(1)) * _UNIT[m.group(2)]


def dilated_rate(rate: str, dilation: float) -> str:
    """The tc rate of a link ``dilation`` times slower (``"1gbit"``, 4 -> ``"250000kbit"``)."""
    if dilation < 1:
        raise PredictError(f"dilation must be >= 1, got {dilation:g}")
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
        raise PredictError(f"parameter 'dilation': {dilation:g} needs {need:.1f} CPU cores for the transfers of "
                           f"{what} ({flows:g} link directions at {rate}; this machine has {cores}, "
                           f"{room:.1f} usable); use dilation >= {least:.1f}")
    return need


def check_memory(model_bytes: float, copies: float, processes: int, available: float, what: str) -> float:
    """Refuse a cluster whose ``copies`` of the model plus ``processes`` TensorFlow processes exceed ``available``."""
    need = model_bytes * copies + processes * PROCESS_BASE_BYTES
    if need > available:
        raise PredictError(f"{what} needs about {need / 1e9:.1f} GB ({copies:g} copies of {model_bytes / 1e6:.0f} MB "
                           f"+ {processes} processes x {PROCESS_BASE_BYTES / 1e6:.0f} MB); {available / 1e9:.1f} GB "
                           "available: refused before any process starts")
    return need


def check_waits(seconds: float, timeout: float, param: str, what: str) -> float:
    """Refuse a cluster whose dilated waits alone (``t_grad x dilation`` per step: no machine speed shortens
    them) exceed the run's ``timeout``; it would fail only after everything before it trained."""
    if seconds > timeout:
        raise PredictError(f"parameter '{param}': {what} waits at least {seconds:.0f} s (t_grad x dilation in its "
                           f"steps alone), more than timeout = {timeout:g} s: lower {param} or raise timeout")
    return seconds
