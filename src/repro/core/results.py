"""Run directories: tidy results plus provenance, written atomically.

Layout::

    results/<profile>/<experiment>/<run-id>/        a finished run
        provenance.json   parameters, profile, dataset used, versions, commit, hardware, times
        *.csv / *.json    tidy results
        notebook.ipynb    the executed notebook (runs made by ``repro run``)
    results/<profile>/<experiment>/.incomplete-<run-id>/   a run in progress
    results/<profile>/<experiment>/LATEST                  id of the newest finished run

Every file is written to a temporary name and moved into place with ``os.replace``;
a run directory only gets its final name, by one ``rename``, once the run is
complete. A crash leaves an ``.incomplete-*`` directory that nothing reads. Run ids
carry a random suffix, so two runs at once never share a directory.
"""

from __future__ import annotations

import io
import json
import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from repro.core import atomic, provenance
from repro.core.paths import (  # noqa: F401 (re-exported)
    from_project,
    project_root,
    relative_to_project,
    results_root,
)

INCOMPLETE = ".incomplete-"
CSV_ATTR = "repro_csv"  # DataFrame.attrs key: the run's CSV file behind a table (set by Result[...])
FAILED = ".failed-"


atomic_write_text = atomic.write_text


def _json_default(obj: Any):
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def json_text(obj: Any) -> str:
    """``obj`` as a run writes JSON (sorted keys, numpy scalars as numbers)."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"


def csv_text(df: pd.DataFrame) -> str:
    """``df`` as a run writes a table (no index): its header always, so that a table with no rows is read back
    with its columns (:func:`read_csv`; give an empty table its columns, ``pd.DataFrame(rows, columns=...)``)."""
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    return buf.getvalue()


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json_text(obj))


def atomic_write_csv(path: Path, df: pd.DataFrame) -> None:
    atomic_write_text(path, csv_text(df))


def new_run_id() -> str:
    """``20261122T014152.123456Z-1a2b3c``: sorts by start time (to the microsecond), never collides."""
    now = datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%S}.{now.microsecond:06d}Z-{secrets.token_hex(3)}"


def experiment_dir(experiment: str, profile: str, root: Path | None = None) -> Path:
    return Path(root or results_root()) / profile / experiment


def create_run_dir(experiment: str, profile: str, root: Path | None = None) -> Path:
    """A fresh, empty ``.incomplete-<id>`` directory for a new run."""
    base = experiment_dir(experiment, profile, root)
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"{INCOMPLETE}{new_run_id()}"
    path.mkdir()  # fails if it exists: ids never collide silently
    return path


def finalize_run_dir(path: Path, latest: bool = True) -> Path:
    """Rename an ``.incomplete-<id>`` directory to ``<id>`` and (``latest``) point LATEST at it."""
    path = Path(path)
    if not path.name.startswith(INCOMPLETE):
        raise ValueError(f"{path} is not an incomplete run directory")
    final = path.with_name(path.name[len(INCOMPLETE):])
    path.rename(final)
    if latest:
        atomic_write_text(final.parent / "LATEST", final.name + "\n")
    return final


def mark_failed(path: Path) -> Path:
    """Keep a failed run for inspection under ``.failed-<id>`` (never read as a result)."""
    path = Path(path)
    if path.name.startswith(INCOMPLETE):
        failed = path.with_name(FAILED + path.name[len(INCOMPLETE):])
        path.rename(failed)
        return failed
    return path


def finished_runs(experiment: str, profile: str, root: Path | None = None) -> list[Path]:
    """Finished run directories of an experiment and profile, oldest first."""
    base = experiment_dir(experiment, profile, root)
    if not base.is_dir():
        return []
    runs = [p for p in base.iterdir()
            if p.is_dir() and not p.name.startswith(".") and (p / "provenance.json").is_file()]
    return sorted(runs, key=lambda p: p.name)


def latest_run(experiment: str, profile: str, root: Path | None = None, need: str | None = None) -> Path | None:
    """The newest finished run (optionally one that contains the file ``need``)."""
    runs = [r for r in finished_runs(experiment, profile, root) if need is None or (r / need).exists()]
    runs = [r for r in runs if read_provenance(r).get("status", "complete") == "complete"]  # not a judge that failed
    return runs[-1] if runs else None


class Run:
    """One run of one experiment: where its results and provenance go.

    It makes a new incomplete directory under ``root`` (``results/`` by default) and :meth:`finish`
    renames it into place (atomic: a reader never sees a half-written run).
    """

    def __init__(self, experiment: str, profile: str, params: dict, root: str | Path | None = None):
        self.experiment = experiment
        self.profile = profile
        self.params = dict(params)
        # the slow part first (git, package versions, hardware), so that nothing can interrupt the run
        # between making its directory and recording it there
        self.record: dict[str, Any] = provenance.collect(experiment, profile, self.params)
        self.record["status"] = "running"
        self.record["datasets"] = []
        self.dir = create_run_dir(experiment, profile, Path(root) if root is not None else None)
        self._save_record()

    def _save_record(self) -> None:
        atomic_write_json(self.dir / "provenance.json", self.record)

    def add_dataset(self, info: dict) -> None:
        """Record a dataset actually used (name, source, sizes, stand-in for what)."""
        if info not in self.record["datasets"]:
            self.record["datasets"].append(dict(info))
            self._save_record()

    def note(self, key: str, value: Any) -> None:
        """Add a fact to the provenance record (device used, mixed precision, ...)."""
        self.record[key] = value
        self._save_record()

    def write_csv(self, name: str, df: pd.DataFrame) -> Path:
        path = self.dir / f"{name}.csv"
        atomic_write_csv(path, df)
        return path

    def write_json(self, name: str, obj: Any) -> Path:
        path = self.dir / f"{name}.json"
        atomic_write_json(path, obj)
        return path

    def path(self, name: str) -> Path:
        return self.dir / name

    def finish(self, status: str = "complete") -> Path:
        """Record the end time and ``status``; rename the directory into place (a run whose judge failed is
        finished with its status saying so: its measurement kept for ``repro rejudge``)."""
        end = datetime.now(timezone.utc)
        self.record["finished_at"] = end.isoformat()
        if not self.record["hardware"].get("gpus"):  # TensorFlow is loaded by now: ask it which GPUs it saw
            self.record["hardware"]["gpus"] = provenance.gpus()
        start = datetime.fromisoformat(self.record["started_at"])
        self.record["duration_s"] = round((end - start).total_seconds(), 3)
        self.record["status"] = status
        self._save_record()
        if self.dir.name.startswith(INCOMPLETE):
            self.dir = finalize_run_dir(self.dir, latest=status == "complete")
        return self.dir


def read_provenance(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / "provenance.json").read_text(encoding="utf-8"))


def read_csv(run_dir: Path, name: str) -> pd.DataFrame:
    """A run's table ``<name>.csv``; a table with no rows is read as an empty frame with its header's columns, and a
    file with no header at all (an empty table written without its columns, by a checkout before they were given)
    as an empty frame."""
    try:
        return pd.read_csv(Path(run_dir) / f"{name}.csv")
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def read_json(run_dir: Path, name: str) -> Any:
    return json.loads((Path(run_dir) / f"{name}.json").read_text(encoding="utf-8"))
