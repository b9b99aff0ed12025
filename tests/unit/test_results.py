"""Run directories: atomic files, atomic runs, no clobbering, complete provenance."""

import json
import os
import subprocess
import threading

import pandas as pd
import pytest

from repro.core import atomic, results
from repro.core.results import Run


def test_atomic_write_keeps_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    results.atomic_write_json(target, {"accuracy": 0.5})

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        results.atomic_write_json(target, {"accuracy": 0.9})
    assert json.loads(target.read_text()) == {"accuracy": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary left behind


def test_run_lifecycle_incomplete_then_final(results_root):
    run = Run("mnist_cnn", "smoke", {"epochs": 1})
    assert run.dir.name.startswith(".incomplete-")
    assert results.latest_run("mnist_cnn", "smoke") is None  # an unfinished run is invisible
    run.add_dataset({"name": "mnist_subset", "source": "x", "n_train": 4, "n_test": 2})
    run.write_csv("history", pd.DataFrame({"epoch": [1], "loss": [0.3]}))
    final = run.finish()
    assert not final.name.startswith(".") and final.parent == results_root / "smoke" / "mnist_cnn"
    assert results.latest_run("mnist_cnn", "smoke") == final
    assert (final.parent / "LATEST").read_text().strip() == final.name
    rec = results.read_provenance(final)
    assert rec["status"] == "complete" and rec["duration_s"] >= 0
    assert rec["datasets"][0]["name"] == "mnist_subset"
    assert results.read_csv(final, "history")["loss"].tolist() == [0.3]
    assert oct(os.stat(final / "history.csv").st_mode & 0o777) != oct(0o600)  # shareable files


def test_provenance_has_what_a_reader_needs(results_root):
    run = Run("mnist_cnn", "smoke", {"epochs": 1, "seed": 0})
    rec = results.read_provenance(run.dir)
    assert rec["parameters"] == {"epochs": 1, "seed": 0} and rec["profile"] == "smoke"
    assert {"keras", "numpy", "pandas", "papermill", "python"} <= set(rec["packages"])
    hw = rec["hardware"]
    assert hw["cores_available"] == len(os.sched_getaffinity(0)) and hw["memory_gb"] > 0 and hw["cpu_model"]
    root = results.project_root()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    if head.returncode == 0:
        assert rec["git"]["commit"] == head.stdout.strip()
    assert rec["started_at"] and rec["status"] == "running"


def test_concurrent_runs_never_share_a_directory(results_root):
    dirs, errors = [], []

    def start():
        try:
            run = Run("mnist_cnn", "smoke", {"i": threading.get_ident()})
            run.write_json("summary", {"thread": threading.get_ident()})
            dirs.append(run.finish())
        except Exception as exc:  # noqa: BLE001 - any failure in a thread is reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(dirs)) == 8
    for d in dirs:  # each run kept its own data
        tid = json.loads((d / "summary.json").read_text())["thread"]
        assert results.read_provenance(d)["parameters"]["i"] == tid


def test_failed_runs_are_kept_but_never_read(results_root):
    path = results.create_run_dir("mnist_cnn", "smoke")
    failed = results.mark_failed(path)
    assert failed.name.startswith(".failed-") and failed.is_dir()
    assert results.finished_runs("mnist_cnn", "smoke") == []
