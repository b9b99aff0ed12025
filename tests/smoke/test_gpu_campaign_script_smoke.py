"""``tools/gpu_campaign.sh``'s bookkeeping: ``run`` with a stand-in Python whose ``repro measure`` finishes, stops
at the deadline or hangs as told (the order, the deadline, what lands in ``$OUT``, the wheels unzipped where there
is no pip), ``plan``, and ``resume`` (where a state tarball goes, so that a second call resumes). Each runs the
script and its processes, with real deadlines (seconds), so they are in the smoke tier; where ``collect`` publishes
a run is tests/unit/test_gpu_campaign.py. The real path, under JAX with a cut and a resume, is
``tests/smoke/test_gpu_campaign_smoke.py``'s rehearsal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from repro.core import paths

SCRIPT = paths.project_root() / "tools" / "gpu_campaign.sh"


# A Python whose `repro measure EXP` does what FAKE_<EXP> says (finish, cut: checkpoints + exit 3, hang:
# checkpoints + sleep), whose probe writes its JSON, and which has no pip; anything else is the real one.
FAKE_PYTHON = '''#!{python}
import json, os, sys, time
from pathlib import Path
args = sys.argv[1:]
if args[:2] == ["-m", "pip"]:
    sys.exit(1)
if args[:2] == ["-m", "repro.experiments.optimizers.probe"]:
    Path(args[2]).write_text(json.dumps({{"fake": True, "stop_after": os.environ.get("REPRO_STOP_AFTER_EPOCHS")}}))
    print("probe: fake", flush=True)
    sys.exit(0)
if args[:3] == ["-m", "repro.cli", "measure"]:
    exp, profile = args[3], args[5]
    base = Path(os.environ["REPRO_RESULTS"]) / profile / exp
    mode = os.environ.get("FAKE_" + exp, "finish")
    resumed = (base / ".checkpoints").is_dir()
    where = f" on {{os.environ['JAX_PLATFORMS']}}" if os.environ.get("JAX_PLATFORMS") else ""
    print(f"fake {{exp}}: {{mode}}{{where}}" + (" (resuming)" if resumed else ""), flush=True)
    assert float(os.environ["REPRO_DEADLINE"]) > 0 and os.environ["KERAS_BACKEND"] == "jax"
    if mode == "finish":
        run = base / ("run-resumed" if resumed else f"run-{{len(list(base.glob('run-*'))) + 1}}")
        run.mkdir(parents=True)
        (run / "provenance.json").write_text(json.dumps({{"status": "complete", "profile": profile}}))
        (base / "LATEST").write_text(run.name + "\\n")
        sys.exit(0)
    (base / ".checkpoints" / "k").mkdir(parents=True, exist_ok=True)
    (base / ".checkpoints" / "k" / "model.keras").write_text("weights")
    Path(os.environ["JAX_COMPILATION_CACHE_DIR"], "jit_step-cache").write_text("compiled")
    if mode == "hang":
        time.sleep(120)
    print("repro: stopped at the deadline: fake", file=sys.stderr)
    sys.exit(3)
os.execv(sys.executable, [sys.executable, *args])
'''


@pytest.fixture
def campaign(tmp_path):
    """``call(out, **env)`` runs ``tools/gpu_campaign.sh run`` with the stand-in Python and a carried dir
    of one tiny wheel; returns (exit code, log)."""
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON.format(python=sys.executable))
    fake.chmod(0o755)
    carry = tmp_path / "carry"
    (carry / "wheels").mkdir(parents=True)
    with zipfile.ZipFile(carry / "wheels" / "tiny-0.1-py3-none-any.whl", "w") as whl:
        whl.writestr("tiny.py", "X = 1\n")
    base = {**os.environ, "PYTHON": str(fake), "CARRY": str(carry), "STATE": str(tmp_path / "state"),
            "STEP_PROFILE": "gpu-h100"}
    for k in ("REPRO_STOP_AFTER_EPOCHS", "REPRO_DEADLINE", "STEPS", "DEADLINE_S", "PROBE_ARGS", "OUT"):
        base.pop(k, None)

    def call(out: Path, *args: str, **env) -> tuple[int, str]:
        env = {**base, "OUT": str(out), "SITE": str(out.parent / "site"), **env}
        res = subprocess.run([str(SCRIPT), *(args or ("run",))], check=False, env=env, capture_output=True, text=True,
                             timeout=120)
        log = (out / "campaign.log").read_text() if (out / "campaign.log").is_file() else ""
        return res.returncode, log + res.stdout + res.stderr

    return call


def _members(tarball: Path) -> list[str]:
    with tarfile.open(tarball) as t:
        return t.getnames()


def test_a_cut_call_packs_as_it_goes_and_a_second_call_resumes(campaign, tmp_path):
    out1, out2 = tmp_path / "call1", tmp_path / "call2"
    rc, log = campaign(out1, FAKE_optimizers="cut", REPRO_STOP_AFTER_EPOCHS="1", PROBE_S="75")
    assert rc == 3, log
    files = sorted(p.name for p in out1.iterdir())
    assert files == ["campaign.log", "cost.tar.gz", "mnist.tar.gz", "optimizers-state.tar.gz", "probe.json",
                     "threads-2.tar.gz", "threads.tar.gz"], log  # the thread step: two independent runs
    assert _members(out1 / "threads-2.tar.gz")[0].rstrip("/") == "gpu-h100/staleness/run-2"
    assert "threads: repro measure staleness --profile gpu-h100 (run 2 of 2)" in log
    assert json.loads((out1 / "probe.json").read_text())["stop_after"] is None  # the probe is never cut
    order = [log.index(f"fake {exp}") for exp in ("optimizers", "mnist_cnn", "cost_study", "staleness")]
    # the thread staleness runs its threads on the host's cores, the GPU steps on the GPU
    assert "fake staleness: finish on cpu" in log and "fake cost_study: finish\n" in log
    assert order == sorted(order) and log.index("probe: fake") < order[0]
    assert "optimizers: stopped at the deadline" in log and "unfinished: optimizers" in log
    assert (out1.parent / "site" / "tiny.py").is_file() and "no pip in" in log  # the wheels unzipped
    state = _members(out1 / "optimizers-state.tar.gz")  # relative to the state dir: resume knows where
    assert "results/gpu-h100/optimizers/.checkpoints/k/model.keras" in state and "jax-cache/jit_step-cache" in state
    assert _members(out1 / "cost.tar.gz")[0].rstrip("/") == "gpu-h100/cost_study/run-1"

    fresh = tmp_path / "fresh-state"  # here, before the second call: the carried state is rebuilt
    rc, log = campaign(tmp_path / "resume", "resume", *sorted(map(str, out1.glob("*.tar.gz"))), STATE=str(fresh))
    assert rc == 0, log
    assert (fresh / "results" / "gpu-h100" / "optimizers" / ".checkpoints" / "k" / "model.keras").is_file()
    assert (fresh / "jax-cache" / "jit_step-cache").is_file()
    assert (fresh / "results" / "gpu-h100" / "cost_study" / "LATEST").read_text().strip() == "run-1"
    assert "carried: tree" in log and "MiB" in log

    rc, log = campaign(out2, STATE=str(fresh), PROBE_S="75")
    assert rc == 0, log
    assert "optimizers: resuming from the checkpoints" in log and "fake optimizers: finish (resuming)" in log
    assert "cost: finished by an earlier call" in log and "fake cost_study" not in log
    assert sorted(p.name for p in out2.iterdir()) == ["campaign.log", "optimizers.tar.gz", "probe.json"]
    assert _members(out2 / "optimizers.tar.gz")[0].rstrip("/") == "gpu-h100/optimizers/run-resumed"


def test_the_deadline_cuts_the_running_step_and_skips_the_rest(campaign, tmp_path):
    out = tmp_path / "out"
    rc, log = campaign(out, FAKE_optimizers="hang", DEADLINE_S="6", MIN_STEP_S="2", STOP_MARGIN_S="1")
    assert rc == 3, log
    assert "optimizers: interrupted at the deadline (exit 124)" in log
    assert "cost: skipped" in log and "mnist: skipped" in log and "fake cost_study" not in log
    assert sorted(p.name for p in out.iterdir()) == ["campaign.log", "optimizers-state.tar.gz"], log  # no probe


def test_the_plan_says_what_fits_before_the_call_and_each_step_has_its_own_least_time(campaign, tmp_path):
    rc, log = campaign(tmp_path / "plan", "plan", DEADLINE_S="575")
    assert rc == 0, log
    assert "optimizers: ~300 s, fits" in log and "mnist: ~23 s, fits (ends near +323 s)" in log
    assert "cost: ~600 s, cut at the deadline after ~237 s" in log  # 24 children of ~25 s
    assert "threads: ~120 s, skipped (needs at least 60 s)" in log  # two runs of ~60 s
    # the counterfactual: a shorter call cuts the optimizers and skips what needs more than is left
    rc, log = campaign(tmp_path / "plan", "plan", DEADLINE_S="200")
    assert "optimizers: ~300 s, cut at the deadline after ~185 s" in log
    assert "mnist: ~23 s, skipped (needs at least 30 s)" in log and "cost: ~600 s, skipped" in log
    # children kept by an earlier call shorten the cost step's estimate
    kept = tmp_path / "state" / "results" / "gpu-h100" / "cost_study" / ".checkpoints" / "h"
    kept.mkdir(parents=True)
    for i in range(7):
        (kept / f"c{i}.json").write_text("{}")
    (kept / "machine.json").write_text("{}")
    rc, log = campaign(tmp_path / "plan", "plan", STEPS="cost")
    assert "cost: ~425 s, fits" in log
    # a step is skipped below its own least time (cost: 50 s), not a global one; no probe unless asked
    out = tmp_path / "short"
    rc, log = campaign(out, STEPS="cost", DEADLINE_S="40", STOP_MARGIN_S="1")
    assert rc == 3 and "cost: skipped" in log and "(needs 50)" in log and "fake cost_study" not in log, log
    assert "probe.json" not in sorted(p.name for p in out.iterdir())


def test_resume_takes_a_state_tarball_of_either_layout(campaign, tmp_path):
    """A tarball relative to the state dir (what `run` packs) or to REPRO_RESULTS (what the first version
    packed, whose README said to unpack it into .carry/state: a rerun then trained from epoch 1)."""
    src = tmp_path / "src" / "gpu-h100" / "optimizers" / ".checkpoints" / "k"
    src.mkdir(parents=True)
    (src / "model.keras").write_text("w")
    old = tmp_path / "old-state.tar.gz"
    with tarfile.open(old, "w:gz") as t:
        t.add(tmp_path / "src" / "gpu-h100", arcname="gpu-h100")
    state = tmp_path / "state"
    rc, log = campaign(tmp_path / "o", "resume", str(old), STATE=str(state))
    assert rc == 0, log
    assert (state / "results" / "gpu-h100" / "optimizers" / ".checkpoints" / "k" / "model.keras").is_file()
    assert "the old layout" in log and not list((state / "results").rglob("LATEST"))  # not taken for a finished run
