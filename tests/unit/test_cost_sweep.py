"""The cost sweep's bookkeeping, fast: the resource sampler on this process, the cores a request may take, and a
cut sweep resumed (children faked). Pinned child processes, the sampler on a child and reaping start real
processes: tests/smoke/test_cost_sweep_smoke.py, beside the smoke notebook's results."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from repro.experiments.cost_study import sweep


def test_cores_for_rejects_more_than_the_machine():
    with pytest.raises(ValueError, match="this machine lets us use"):
        sweep.cores_for(len(sweep.available_cores()) + 1)
    with pytest.raises(ValueError):
        sweep.cores_for(0)


def test_sampler_on_this_process_stops_cleanly():
    s = sweep.ResourceSampler(os.getpid(), interval=0.05).start()
    time.sleep(0.3)
    rows = s.stop()
    assert len(rows) >= 2 and all(r["child_rss_mb"] > 1 for r in rows)
    assert not s._thread.is_alive()


def test_sampler_stops_at_an_exiting_child_instead_of_recording_zero_memory(monkeypatch):
    """Between releasing its memory and turning zombie a child reads rss 0: the last CI's flake."""
    s = sweep.ResourceSampler(os.getpid(), interval=0.02)
    real, calls = s._proc.memory_info, []

    def exiting_after_three():
        calls.append(1)
        info = real()
        return info._replace(rss=0) if len(calls) > 3 else info

    exiting_after_three.cache_activate = exiting_after_three.cache_deactivate = lambda proc: None  # psutil's oneshot
    monkeypatch.setattr(s._proc, "memory_info", exiting_after_three)
    s.start()
    s._thread.join(timeout=5)
    assert not s._thread.is_alive()  # it stopped by itself at the exit
    assert len(s.rows) == 3 and all(r["child_rss_mb"] > 1 for r in s.rows)


# --- the smoke notebook's results ---------------------------------------------------------------


def test_a_cut_sweep_keeps_its_finished_children_and_a_rerun_trains_only_the_rest(tmp_path, monkeypatch):
    """Child 1 finishes, then the deadline falls inside child 2: the run stops (exit 3) with child 1 kept; the
    rerun with the same parameters takes child 1 from its checkpoint (no training) and trains child 2; a
    finished sweep leaves no checkpoints. CPU children get JAX_PLATFORMS=cpu and a compilation cache of their own."""
    from types import SimpleNamespace

    from repro.core import paramtypes
    from repro.experiments.cost_study import experiment as cs
    from repro.experiments.cost_study import resume
    from repro.ml import training

    trained, envs = [], []

    def fake_child(task, cores, timeout, sample_interval, samples_path, log_path, env):
        trained.append(task["label"])
        envs.append(env)
        Path(samples_path).write_text("t,cpu\n0,1\n")
        return {"history": [{"epoch": 1, "test_accuracy": 0.5}], "affinity_inside": cores, "wall_s": 100.0}

    monkeypatch.setattr(cs.sweep, "run_child", fake_child)
    monkeypatch.setattr(cs, "_child_row", lambda child, np_, k, res: {**child, **res, "t_learn_s": 1.0,
                                                                       "peak_rss_mb": 1.0, "final_test_accuracy": 0.5})
    monkeypatch.setattr(cs, "net_params", lambda p, net: {"dataset": "x"})
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax"))
    children = [{"label": f"c{i}", "network": "mnist_cnn", "gpus": 0, "cores": 1, "device": "cpu", "rep": 1}
                for i in (1, 2)]
    p = paramtypes.partial("cost_study", {"resume": True, "seed": 0, "learning_rate": 0.001, "child_timeout_s": 10,
                                          "sample_interval_s": 1.0})
    (tmp_path / "cost_study").mkdir()

    def run_once(name):
        d = tmp_path / "cost_study" / name
        d.mkdir()
        return SimpleNamespace(dir=d, note=lambda *a: None)

    # the first child takes 100 s; 50 s are left after it: the second is not started
    clock = iter([0.0])
    monkeypatch.setattr(training.time, "time", lambda: 1000.0 + next(clock, 0.0))
    monkeypatch.setenv(training.DEADLINE_ENV, "1050")
    with pytest.raises(training.DeadlineReached, match="before child 2 of 2"):
        cs.sweep_children(run_once("cut"), p, children, 0)
    assert trained == ["c1"]
    root = resume.checkpoint_root(tmp_path / "cost_study" / "cut", p)
    assert set(resume.finished(root)) == {"c1"}
    monkeypatch.delenv(training.DEADLINE_ENV)
    again = run_once("again")
    rows, epochs = cs.sweep_children(again, p, children, 0)
    assert trained == ["c1", "c2"] and list(rows["label"]) == ["c1", "c2"] and len(epochs) == 2
    assert (again.dir / "samples" / "c1.csv").read_text() == "t,cpu\n0,1\n"  # the kept child's files come along
    assert envs[0]["JAX_PLATFORMS"] == "cpu" and envs[0]["CUDA_VISIBLE_DEVICES"] == ""
    assert envs[0]["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "jax" / "cpu-children")
    fresh = p.model_copy(update={"resume": False})  # resume: false trains everything again
    cs.sweep_children(run_once("fresh"), fresh, children, 0)
    assert trained[-2:] == ["c1", "c2"]


def test_children_kept_on_another_machine_are_set_aside_not_mixed_in(tmp_path, monkeypatch):
    from repro.experiments.cost_study import resume

    a = {"cpu_model": "Intel(R) Xeon(R) Processor", "logical_cores": 16, "gpus": ["NVIDIA H100 80GB HBM3"]}
    b = dict(a, gpus=["NVIDIA H200"])
    monkeypatch.setattr(resume, "machine", lambda: a)
    root, run_dir = tmp_path / ".checkpoints" / "k", tmp_path / "run"
    run_dir.mkdir()
    resume.keep(root, {"label": "c1"}, [{"epoch": 1}], run_dir)
    assert json.loads((root / "machine.json").read_text()) == a
    assert list(resume.finished(root)) == ["c1"]  # the same machine: the child is taken
    # the counterfactual: a sweep on an H200 host does not take the H100 host's child ...
    assert resume.finished(root, here=b) == {}
    # ... and its checkpoints are set aside, not lost
    assert not root.exists() and (tmp_path / ".checkpoints" / "k.other-machine" / "c1.json").is_file()
