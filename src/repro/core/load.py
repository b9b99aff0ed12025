"""The machine's load while a run measures, and the gate it puts on claims about time (issue 55).

A time, a rate or a scheduling order measured on cores that other work shares measures the competition for the
cores as much as the method. The harness samples the 1-minute load average (``os.getloadavg``) while the
experiment measures (:class:`Sampler`; ``provenance.json``'s ``load_while_measuring``: the highest and the mean
sample, their number, the cores the run could use). A claim that ``claims.yaml`` marks ``timing: true`` is not
decided on our runs (basis measured or emulated) where the load exceeded the cores at any sample, nor where the run
recorded no load (a run older than the record: the staleness experiment's own ``thread_load_average``, before and
after its thread runs, is read where it is the only record): its row reads *not comparable* and gives the load
(:func:`gate`). Like the model's interval, this gate can only take a decision away: the claims' digests do not
cover ``timing``.
"""

from __future__ import annotations

import dataclasses
import os
import threading

from repro.core import verdicts as V

RECORD = "load_while_measuring"  # provenance: the load average sampled while the run measured
LEGACY = "thread_load_average"  # the staleness experiment's own record, before and after its thread runs
EVERY_S = 5.0  # seconds between samples


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Sampler:
    """``with Sampler() as s:`` samples the 1-minute load average every ``every`` seconds (and at both ends);
    ``s.record()`` is what the run stores."""

    def __init__(self, every: float = EVERY_S):
        self.every = every
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="load-sampler")

    def _sample(self) -> None:
        try:
            self.samples.append(os.getloadavg()[0])
        except OSError:
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def __enter__(self) -> "Sampler":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=self.every + 1)
        self._sample()

    def record(self) -> dict:
        s = self.samples
        return {"max": round(max(s), 2) if s else None, "mean": round(sum(s) / len(s), 2) if s else None,
                "samples": len(s), "every_s": self.every, "cores": cores(),
                "what": "the machine's 1-minute load average, sampled while the run measured"}


def of_run(provenance: dict) -> tuple[float, int] | None:
    """The highest load average a run recorded while it measured and the cores it had, or None where it recorded
    none (module docstring)."""
    rec = provenance.get(RECORD)
    if isinstance(rec, dict) and rec.get("max") is not None:
        return float(rec["max"]), int(rec["cores"])
    old = provenance.get(LEGACY)
    if isinstance(old, dict) and old.get("cpu_count"):
        return max(float(old.get("before", 0)), float(old.get("after", 0))), int(old["cpu_count"])
    return None


def reason(provenance: dict) -> str | None:
    """Why a timing claim is not decided on this run (oversubscribed or unknown load), or None where it may be."""
    found = of_run(provenance)
    if found is None:
        return ("the run recorded no load average while it measured: a time or a scheduling order measured on cores "
                "of unknown load decides nothing")
    peak, n = found
    if peak > n:
        return (f"measured on oversubscribed cores: the 1-minute load average reached {peak:.2f} on {n} cores while "
                "the run measured (a time or a scheduling order then measures the competition for the cores)")
    return None


def gate(timing: set[str], measured: dict, provenance: dict) -> dict:
    """``measured`` (claim id -> :class:`repro.core.claims.Measured`) with every claim of ``timing`` on our runs
    gated *not comparable* where :func:`reason` gives one (a gate that already decides nothing stays)."""
    why = reason(provenance)
    if why is None:
        return measured
    out = dict(measured)
    for cid, m in measured.items():
        if cid in timing and V.Basis(m.basis) in V.RUN_BASES and (m.gate is None or m.gate.decisive):
            out[cid] = dataclasses.replace(m, gate=V.not_comparable(why))
    return out
