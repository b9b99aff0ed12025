"""The preflight: before a run starts, what it needs and whether this machine has it (the data and whether it
verifies, the devices through the backend in use, the backend, the scheduler, free disk), how long it will take,
and which of the papers' statements it can decide if it finishes.

``repro check --profile PROFILE [EXPERIMENT ...]`` prints it (exit 1 where something blocks); every run does it
first (``repro run``, ``repro measure``, a notebook's Run All: :func:`repro.core.harness.run`) and stops before
anything is trained or written where something blocks, so that no run fails after hours for a piece that was
missing at the start. ``REPRO_SKIP_CHECK=1`` skips it. An experiment adds its own items (data, scheduler) and
its gates' forecast through :meth:`repro.core.harness.Experiment.preflight`.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from repro.core import errors, provenance

SKIP_ENV = "REPRO_SKIP_CHECK"
MIN_FREE_GB = 1.0  # below this on the results' disk a run is refused (its checkpoints and tables)


# something a run needs is missing: one line naming each missing piece and how to get it (exit 2, like any
# missing environment; `repro check` itself exits 1)
PreflightFailed = errors.MissingEnvironment


@dataclass(frozen=True)
class Item:
    """One thing a run needs: whether it is here, what was found, and how to get it where it is not."""

    what: str  # data, devices, backend, scheduler, disk, time, decides
    ok: bool
    detail: str
    how: str = ""
    blocks: bool = True  # where not ok: the run cannot start (else a warning)
    error: str = ""  # the one-line error this missing piece raises when it is the only one (as without a preflight)


@dataclass
class Report:
    experiment: str
    profile: str
    items: list[Item] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def blocked(self) -> list[Item]:
        return [i for i in self.items if not i.ok and i.blocks]

    def text(self) -> str:
        lines = [f"preflight: {self.experiment} --profile {self.profile} ({self.seconds:.1f} s)"]
        for i in self.items:
            mark = "ok" if i.ok else ("MISSING" if i.blocks else "note")
            lines.append(f"  {mark:<8}{i.what:<10}{i.detail}" + (f"; get it: {i.how}" if i.how and not i.ok else ""))
        lines.append(f"  => cannot start: {', '.join(i.what for i in self.blocked)} missing" if self.blocked
                     else "  => ready to run")
        return "\n".join(lines)


def refusal(rep: "Report") -> str:
    """The one line a blocked run stops with: a lone missing piece's own error where it has one (the message a run
    gave before it had a preflight), else every missing piece with how to get it."""
    blocked = rep.blocked
    if len(blocked) == 1 and blocked[0].error:
        return blocked[0].error
    return (f"{rep.experiment} --profile {rep.profile} cannot start: "
            + "; ".join(f"{i.what}: {i.detail}" + (f" (get it: {i.how})" if i.how else "") for i in blocked)
            + f" (or set {SKIP_ENV}=1)")


def skipped() -> bool:
    return os.environ.get(SKIP_ENV, "").lower() in ("1", "true", "yes")


def backend_item() -> Item:
    return Item("backend", True, f"Keras on {provenance.keras_backend()}")


def _backend_gpus(backend: str) -> tuple[list[str], str]:
    """The GPUs the backend in use sees (model and memory), and through what; nvidia-smi where it cannot say."""
    try:
        if backend == "jax":
            import jax

            devs = [d for d in jax.devices() if d.platform == "gpu"]
            mem = [((d.memory_stats() or {}).get("bytes_limit", 0) if hasattr(d, "memory_stats") else 0) for d in devs]
            return [f"{d.device_kind} ({m / 2**30:.0f} GiB usable)" if m else d.device_kind
                    for d, m in zip(devs, mem)], "JAX"
        if backend == "torch":
            import torch

            return [f"{torch.cuda.get_device_name(i)} ({torch.cuda.get_device_properties(i).total_memory / 2**30:.0f}"
                    f" GiB)" for i in range(torch.cuda.device_count())], "PyTorch"
    except Exception as exc:  # noqa: BLE001 - a backend that cannot list devices: say so, use nvidia-smi
        return [], f"{backend} could not list devices ({type(exc).__name__})"
    listed = provenance.nvidia_smi_gpus() or []
    return [f"{g['model']} ({g.get('memory', '?')})" for g in listed], "nvidia-smi"


def devices_item(gpus_needed: int) -> Item:
    """This machine's cores and memory, and its GPUs as the backend in use sees them; blocks where the profile
    needs more GPUs than are visible."""
    import psutil

    gpus, through = _backend_gpus(provenance.keras_backend())
    cpu = f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} CPU cores, " \
          f"{psutil.virtual_memory().total / 2**30:.0f} GiB memory"
    seen = f"{len(gpus)} GPU(s) through {through}: {', '.join(gpus)}" if gpus else f"no GPU ({through})"
    if len(gpus) >= gpus_needed:
        return Item("devices", True, f"{cpu}; {seen}")
    return Item("devices", False, f"{cpu}; {seen}; the profile needs {gpus_needed} GPU(s)",
                "a machine with an NVIDIA GPU and its driver (CUDA_VISIBLE_DEVICES not hiding it); "
                "KERAS_BACKEND=jax with jax[cuda12], or TensorFlow with CUDA")


def disk_item(root: Path) -> Item:
    root = root if root.exists() else next((p for p in root.parents if p.exists()), Path("/"))
    free = shutil.disk_usage(root).free / 2**30
    if free >= MIN_FREE_GB:
        return Item("disk", True, f"{free:,.0f} GiB free under {root}")
    return Item("disk", False, f"{free:.2f} GiB free under {root}, under {MIN_FREE_GB} GiB",
                "free space, or set REPRO_RESULTS to a larger disk")


def time_item(stated: str, estimate_s: float | None, basis: str) -> Item:
    """The run's time: the estimate from this machine's speed where there is one, beside the profile's stated
    cost; never blocks."""
    if estimate_s is None:
        return Item("time", True, f"the profile states: {stated}")
    hours = estimate_s / 3600
    said = f"{hours:,.1f} h" if hours >= 1 else f"{estimate_s / 60:,.1f} min"
    return Item("time", True, f"about {said} here ({basis}); the profile states: {stated}")


def decides_item(ids: list[str], why_not: str) -> Item:
    if ids:
        return Item("decides", True, f"{len(ids)} statement(s) if it finishes: {', '.join(ids)}")
    return Item("decides", False, f"no statement of the paper: {why_not}", blocks=False)


def report(exp, p, profile: str, stated_cost: str, gpus_needed: int, root: Path, probe: bool) -> Report:
    """The whole preflight of experiment ``exp`` on parameters ``p``; ``probe`` times this machine for the
    estimate (a few seconds of training), else the profile's stated cost is shown alone."""
    t0 = time.perf_counter()
    items = [backend_item(), devices_item(gpus_needed), disk_item(root)]
    own = exp.preflight(p) if hasattr(exp, "preflight") else Own()  # data, scheduler, decides, its time
    items += own.items
    if probe and own.estimate is not None:
        try:
            items.append(time_item(stated_cost, *own.estimate()))
        except Exception as exc:  # noqa: BLE001 - a probe that cannot train here: said, the stated cost shown
            items.append(Item("time", True, f"the probe could not train here ({type(exc).__name__}: "
                                            f"{str(exc).splitlines()[0][:100] if str(exc) else ''}); the profile "
                                            f"states: {stated_cost}"))
    else:
        items.append(time_item(stated_cost, None, ""))
    missing = [i for i in own.items if i.what == "data" and not i.ok]
    items = [Item(i.what, i.ok, i.detail + " (once the missing data is here and verifies against its published "
                  "checksum)", i.how, i.blocks) if i.what == "decides" and i.ok and missing else i for i in items]
    if not any(i.what == "decides" for i in own.items):
        items.append(decides_item([], "this experiment's preflight does not forecast its gates (see its chapter)"))
    return Report(exp.name, profile, items, time.perf_counter() - t0)


@dataclass
class Own:
    """What an experiment's ``preflight`` adds: its items (data, scheduler, decides) and, where it trains, how to
    estimate its time on this machine (seconds and the basis in words; called only when the preflight probes)."""

    items: list[Item] = field(default_factory=list)
    estimate: Callable[[], tuple[float, str]] | None = None


def forecast(experiment: str, ok: bool, why_not: str, runs: int, only: set[str] | None = None) -> Item:
    """Which measured-tier, decisive claims of ``experiment`` (``only`` those, where given) a run decides if it
    finishes: none where its protocol gate fails (``ok`` false, ``why_not`` saying why); a stochastic claim
    only with ``runs`` >= 2 (seeds or repetitions)."""
    from repro.core import claims

    judged = [c for c in claims.load(experiment).values() if c.tier == "measured" and c.decisive
              and (only is None or c.id in only)]
    if not ok:
        return decides_item([], why_not)
    ids = [c.id for c in judged if not c.stochastic or runs >= 2]
    if not ids:
        return decides_item([], f"{runs} run(s): its claims are stochastic and need 2 or more")
    return decides_item(ids, "")
