"""A cost sweep that survives a cut: each finished child's row, epochs, sampler rows and log are kept
under ``<results>/<profile>/cost_study/.checkpoints/<parameter hash>/`` as soon as it ends; a run with
the same parameters (``resume: true``) takes them instead of training those children again, and the
checkpoints are removed once a sweep completes. Children kept on one machine (:func:`machine`: CPU model,
logical cores, GPU models, in ``machine.json``) are never mixed into a sweep on another: there they are
set aside and the sweep starts afresh. A child is not started when the deadline
(``REPRO_DEADLINE``, :func:`repro.ml.training.stop_reason`) would fall inside it: the run stops with
:class:`~repro.ml.training.DeadlineReached` (exit 3) and what finished is kept."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

from repro.core import provenance, results
from repro.experiments.cost_study.paramtypes import CostStudyParams

log = logging.getLogger(__name__)

FILES = ("samples", "logs")  # the run directory's per-child folders, kept beside the child's row


def checkpoint_root(run_dir: Path, p: CostStudyParams) -> Path:
    """Where this parameter set's finished children are kept (shared by reruns of the same parameters)."""
    key = p.model_dump(exclude={"resume"})
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Path(run_dir).parent / ".checkpoints" / digest


def machine() -> dict:
    """What makes two sweeps' timings comparable: the CPU model, logical cores and GPU models here."""
    hw = provenance.hardware()
    return {"cpu_model": hw["cpu_model"], "logical_cores": hw["logical_cores"],
            "gpus": sorted(str(g.get("model")) for g in hw["gpus"])}


def finished(root: Path, here: dict | None = None) -> dict[str, dict]:
    """The children kept under ``root``: label -> {"row", "epochs"}; none where they were kept on another
    machine than ``here`` (default :func:`machine`): those are moved to ``<root>.other-machine``."""
    stored = Path(root) / "machine.json"
    if stored.is_file():
        theirs, here = json.loads(stored.read_text(encoding="utf-8")), here or machine()
        if theirs != here:
            aside = Path(f"{root}.other-machine")
            shutil.rmtree(aside, ignore_errors=True)
            Path(root).rename(aside)
            log.warning("cost_study: the kept children were measured on %s, not on this machine (%s): set aside "
                        "in %s; the sweep starts afresh", theirs, here, aside)
            return {}
    out = {}
    for f in sorted(root.glob("*.json")) if root.is_dir() else []:
        if f.name == "machine.json":
            continue
        kept = json.loads(f.read_text(encoding="utf-8"))
        out[kept["row"]["label"]] = kept
    return out


def keep(root: Path, row: dict, epochs: list[dict], run_dir: Path) -> None:
    """Keep one finished child: its files first, then its row (written atomically: a child with a row
    is complete)."""
    label = row["label"]
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "machine.json").is_file():
        results.atomic_write_json(root / "machine.json", machine())
    for folder in FILES:
        for f in (Path(run_dir) / folder).glob(f"{label}.*"):
            (root / folder).mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, root / folder / f.name)
    results.atomic_write_json(root / f"{label}.json", {"row": row, "epochs": epochs})


def restore(root: Path, label: str, run_dir: Path) -> None:
    """Copy a kept child's sampler rows and log into this run's directory."""
    for folder in FILES:
        for f in (root / folder).glob(f"{label}.*"):
            (Path(run_dir) / folder).mkdir(exist_ok=True)
            shutil.copy2(f, Path(run_dir) / folder / f.name)
