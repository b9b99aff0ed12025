"""repro.campaign's logic called directly (the plan, the settings, what a state tarball becomes); the deadline of
a step on real processes is tests/smoke/test_campaign_smoke.py, the whole command through tools/gpu_campaign.sh
with a stand-in Python tests/smoke/test_gpu_campaign_script_smoke.py, the real path under JAX
tests/smoke/test_gpu_campaign_smoke.py."""

from __future__ import annotations

import io
import sys
import tarfile
import time
from pathlib import Path

import pytest

from repro.campaign import carry, device
from repro.campaign.settings import CampaignError, Log, Settings, experiment_of, finished_run, plan_lines


def _settings(tmp_path: Path, **env) -> Settings:
    base = {"CARRY": str(tmp_path / "carry"), "STATE": str(tmp_path / "state"), "PYTHON": sys.executable}
    return Settings.from_env({**base, **env}, root=tmp_path)


def _log() -> tuple[Log, io.StringIO]:
    out = io.StringIO()
    return Log(time.time(), stream=out), out


def test_settings_come_from_the_environment_with_the_campaigns_defaults(tmp_path):
    s = _settings(tmp_path)
    assert (s.steps, s.profile, s.deadline_s, s.stop_margin_s, s.probe_s) == (
        ["optimizers", "mnist", "cost", "threads"], "gpu-h100", 575, 15, 0)
    assert s.results == tmp_path / "state" / "results" and s.least_s("cost") == 50 and s.least_s("mnist") == 30
    s = _settings(tmp_path, STEPS="cost", DEADLINE_S="300", MIN_STEP_S="7", PROBE_S="75", PROBE_ARGS="96 32")
    assert (s.steps, s.deadline_s, s.least_s("cost"), s.probe_s, s.probe_args) == (["cost"], 300, 7, 75, ["96", "32"])
    with pytest.raises(CampaignError, match="unknown step 'cots'"):
        experiment_of("cots")


def test_the_plan_fits_cuts_or_skips_each_step_by_its_estimate_and_least_time(tmp_path):
    lines = plan_lines(_settings(tmp_path))
    assert lines[0] == "plan (gpu-h100, estimates measured on an H100 and an H200): 560 s of work"
    assert lines[1:] == ["  optimizers: ~300 s, fits (ends near +300 s)", "  mnist: ~23 s, fits (ends near +323 s)",
                         "  cost: ~600 s, cut at the deadline after ~237 s (its state kept: resume it)",
                         "  threads: ~120 s, skipped (needs at least 60 s)"]
    lines = plan_lines(_settings(tmp_path, DEADLINE_S="120"))  # 105 s of work
    assert lines[1] == "  optimizers: ~300 s, cut at the deadline after ~105 s (its state kept: resume it)"
    assert lines[2:] == ["  mnist: ~23 s, skipped (needs at least 30 s)", "  cost: ~600 s, skipped (needs at least 50 s)",
                         "  threads: ~120 s, skipped (needs at least 60 s)"]
    done = tmp_path / "state" / "results" / "gpu-h100" / "optimizers" / "run-1"
    done.mkdir(parents=True)
    (done / "provenance.json").write_text("{}")
    (done.parent / "LATEST").write_text("run-1\n")
    assert finished_run(done.parent) == "run-1"
    assert plan_lines(_settings(tmp_path))[1] == "  optimizers: finished by an earlier call"


def test_the_thread_step_is_finished_only_with_both_of_its_runs(tmp_path):
    """A decided verdict on the thread staleness needs two independent runs: one finished run halves the step's
    estimate, two finish it (THREADS_RUNS=1 makes one enough)."""
    base = tmp_path / "state" / "results" / "gpu-h100" / "staleness"
    (base / "r1").mkdir(parents=True)
    (base / "r1" / "provenance.json").write_text("{}")
    (base / "LATEST").write_text("r1\n")
    assert plan_lines(_settings(tmp_path, STEPS="threads"))[1] == "  threads: ~60 s, fits (ends near +60 s)"
    assert plan_lines(_settings(tmp_path, STEPS="threads", THREADS_RUNS="1"))[1] == \
        "  threads: finished by an earlier call"
    (base / "r2").mkdir()
    (base / "r2" / "provenance.json").write_text("{}")
    assert plan_lines(_settings(tmp_path, STEPS="threads"))[1] == "  threads: finished by an earlier call"


def _tar(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as t:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


def test_resume_puts_a_cut_state_back_and_keeps_only_a_finished_runs_provenance(tmp_path, monkeypatch):
    s = _settings(tmp_path)
    log, out = _log()
    monkeypatch.setattr(carry, "carry_commit", lambda s, log: None)
    monkeypatch.setattr(carry, "carry_check", lambda s, log: True)
    cut = _tar(tmp_path / "optimizers-state.tar.gz", {"results/gpu-h100/optimizers/.checkpoints/k/model.keras": "w",
                                                        "jax-cache/jit": "compiled"})
    done = _tar(tmp_path / "mnist.tar.gz", {"gpu-h100/mnist_cnn/run-1/provenance.json": "{}",
                                            "gpu-h100/mnist_cnn/run-1/history.csv": "epoch\n1\n"})
    carry.resume(s, [cut, done], log)
    assert (s.results / "gpu-h100" / "optimizers" / ".checkpoints" / "k" / "model.keras").read_text() == "w"
    assert (s.state / "jax-cache" / "jit").is_file()
    assert finished_run(s.results / "gpu-h100" / "mnist_cnn") == "run-1"
    assert not (s.results / "gpu-h100" / "mnist_cnn" / "run-1" / "history.csv").exists()  # collect takes the rest
    assert "a cut run's state" in out.getvalue() and "finished (gpu-h100/mnist_cnn/run-1)" in out.getvalue()
    with pytest.raises(CampaignError, match="resume TAR"):
        carry.resume(s, [], log)


def test_a_cut_step_packs_its_checkpoints_and_a_small_cache_relative_to_the_state(tmp_path):
    s = _settings(tmp_path, CACHE_MAX_MIB="0.001")  # ~1 kB: the cache below is larger
    log, out = _log()
    ckpt = s.results / "gpu-h100" / "cost_study" / ".checkpoints"
    ckpt.mkdir(parents=True)
    (ckpt / "c1.json").write_text("{}")
    (s.state / "jax-cache").mkdir(parents=True)
    (s.state / "jax-cache" / "big").write_bytes(b"x" * 4096)
    device.pack_state(s, "cost", tmp_path, log)
    with tarfile.open(tmp_path / "cost-state.tar.gz") as t:
        names = t.getnames()
    assert "results/gpu-h100/cost_study/.checkpoints/c1.json" in names and not any("jax-cache" in n for n in names)
    assert "not the JAX cache" in out.getvalue()
