"""The campaign's settings (from the environment), its log lines, and the plan: which steps fit a call.

Standard library only: this runs on the lent machine before the carried wheels are installed.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from repro.core import errors  # standard library only, as this module

STEP_EXPERIMENTS = {"optimizers": "optimizers", "mnist": "mnist_cnn", "cost": "cost_study", "threads": "staleness"}
# A step's own environment: the thread staleness runs its threads on the host's cores (one thread per core at
# most, the claim's scope), not on the GPU, whose single stream would serialise them.
# Its N model copies each compile the same step: from the compilation cache after the first (JAX caches only
# compilations longer than the campaign's 0.5 s otherwise), which makes two runs of N up to 16 fit a call.
STEP_ENV = {"threads": {"JAX_PLATFORMS": "cpu", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}}
# Independent runs (separate processes, same parameters) a step makes: a decided verdict on a stochastic quantity
# stands only where two such runs agree (repro.core.statements.confirm); THREADS_RUNS changes the thread step's.
STEP_RUNS = {"threads": 2}
COST_CHILDREN = 24  # the gpu-h100 sweep: cores 1, 2, 4, 8, 16 and the GPU, two networks, two repetitions
# Each step's estimated seconds on a lent GPU with the gpu-h100 profiles and the least time worth starting it
# with: the optimizers' first epoch compiles (47 s stacked in float32), a cost child takes up to 45 s (H100,
# 2026-11-27, benchmarks/results/gpu-h100-2026-11-27-campaign).
# Measured on an H200 on 2026-11-28 (benchmarks/results/gpu-h200-2026-11-28-float32), float32 (the gpu-h100
# profile's precision since then): the optimizers' step 288 s (150 epochs of 1.2 s, 47 s compiling, start-up and
# checkpoints); the bench 236 s (14 model.fits of 2 epochs of 25,000 images, the stacked program in float32 and
# TF32 for 3 epochs each, the float32 trace); the thread step 58-61 s a run (N 1/2/4/8/16 x 5 thread seeds on the
# host's 16 cores). An H100 is about 10 % slower on the GPU steps.
ESTIMATE_S = {"optimizers": 300, "mnist": 23, "bench": 240, "threads": 60}
COST_CHILD_S = 25  # 24 children of 17-45 s
LEAST_S = {"optimizers": 60, "mnist": 30, "cost": 50, "threads": 60, "bench": 40}
CARRY_MAX_MIB = 63  # the device tool carries <= 64 MiB, tree and .carry together


CampaignError = errors.BadInput  # a campaign command given what it cannot work with (one line, exit 2)


def experiment_of(step: str) -> str:
    if step not in STEP_EXPERIMENTS:
        raise CampaignError(f"unknown step '{step}'; steps: optimizers cost mnist threads (and bench)")
    return STEP_EXPERIMENTS[step]


def _default_python(root: Path) -> str:
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if os.access(venv, os.X_OK) else "python3"


@dataclass
class Settings:
    """What a campaign command works with: the tree, the carried folder, the steps and the deadline."""

    root: Path
    carry: Path
    state: Path
    python: str
    steps: list[str]
    profile: str = "gpu-h100"
    deadline_s: int = 575  # work ends this long after the start (a command: 600 s at most)
    stop_margin_s: int = 15  # REPRO_DEADLINE this much earlier: a cut run's checkpoints are written
    min_step_s: int | None = None  # set: every step's least time; else each step's own
    probe_s: int = 0  # > 0: probe first (compiles the optimizers' program; the step loads it from the JAX cache)
    probe_args: list[str] = field(default_factory=lambda: ["0", "0"])
    cache_max_mib: float = 5.0  # a larger JAX cache is left out of the state tarball
    step_runs: dict[str, int] = field(default_factory=lambda: dict(STEP_RUNS))  # <STEP>_RUNS changes one
    t0: float = field(default_factory=time.time)

    @classmethod
    def from_env(cls, env: dict | None = None, root: Path | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        root = root or Path(__file__).resolve().parents[3]
        carry = Path(env.get("CARRY") or root / ".carry")
        return cls(root=root, carry=carry, state=Path(env.get("STATE") or carry / "state"),
                   python=env.get("PYTHON") or _default_python(root),
                   steps=(env.get("STEPS") or "optimizers mnist cost threads").split(),
                   profile=env.get("STEP_PROFILE") or "gpu-h100", deadline_s=int(env.get("DEADLINE_S") or 575),
                   stop_margin_s=int(env.get("STOP_MARGIN_S") or 15),
                   min_step_s=int(env["MIN_STEP_S"]) if env.get("MIN_STEP_S") else None,
                   probe_s=int(env.get("PROBE_S") or 0),
                   probe_args=(env.get("PROBE_ARGS") or "0 0").split(),
                   cache_max_mib=float(env.get("CACHE_MAX_MIB") or 5),
                   step_runs={k: int(env.get(f"{k.upper()}_RUNS") or n) for k, n in STEP_RUNS.items()})

    @property
    def results(self) -> Path:
        """REPRO_RESULTS of the steps: the carried state's results."""
        return self.state / "results"

    def left(self, now: float | None = None) -> int:
        """Seconds until the work's deadline."""
        return int(self.t0 + self.deadline_s - (time.time() if now is None else now))

    def least_s(self, step: str) -> int:
        return self.min_step_s if self.min_step_s is not None else LEAST_S.get(step, 20)


class Log:
    """``gpu_campaign +Ns: ...`` lines on stdout and, where given, appended to a file (campaign.log)."""

    def __init__(self, t0: float, path: Path | None = None, stream: TextIO | None = None):
        self.t0, self.path, self.stream = t0, path, stream or sys.stdout

    def raw(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text)

    def say(self, message: str) -> None:
        self.raw(f"gpu_campaign +{int(time.time() - self.t0)}s: {message}\n")


def mib(n: float) -> str:
    return f"{n / 1048576:.1f}"


def size(path: Path) -> int:
    """Bytes under ``path`` (files' sizes)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def finished_runs(base: Path) -> list[str]:
    """The finished runs in ``base`` (an experiment's results folder: those with a provenance), oldest first."""
    return sorted(p.parent.name for p in base.glob("*/provenance.json")) if base.is_dir() else []


def runs_of(s: Settings, step: str) -> int:
    """How many independent runs ``step`` makes (:data:`STEP_RUNS`; THREADS_RUNS for the thread step)."""
    return s.step_runs.get(step, 1)


def finished_run(base: Path) -> str | None:
    """The finished run LATEST names in ``base`` (an experiment's results folder), else None."""
    try:
        run = (base / "LATEST").read_text().strip()
    except OSError:
        return None
    return run if run and (base / run / "provenance.json").is_file() else None


def cost_children_left(s: Settings) -> int:
    """Of the gpu-h100 sweep's 24 children: those not kept by an earlier call."""
    root = s.results / s.profile / "cost_study" / ".checkpoints"  # <parameter hash>/<child>.json
    kept = [p for pattern in ("*.json", "*/*.json") for p in root.glob(pattern) if p.name != "machine.json"]
    return max(COST_CHILDREN - len(kept), 0)


def estimate_s(s: Settings, step: str) -> int:
    if step == "cost":
        return COST_CHILD_S * cost_children_left(s)
    if step in STEP_RUNS:
        return ESTIMATE_S[step] * max(runs_of(s, step) - len(finished_runs(base_of(s, step))), 0)
    return ESTIMATE_S[step]


def base_of(s: Settings, step: str) -> Path:
    """The step's experiment's results folder."""
    return s.results / s.profile / experiment_of(step)


def done(s: Settings, step: str) -> bool:
    """Finished by an earlier call: its run, or as many runs as it makes (:func:`runs_of`)."""
    base = base_of(s, step)
    return len(finished_runs(base)) >= runs_of(s, step) if step in STEP_RUNS else finished_run(base) is not None


def plan_lines(s: Settings) -> list[str]:
    """One line per step: done by an earlier call, fits, cut at the deadline (resumable) or skipped."""
    work, t = s.deadline_s - s.stop_margin_s, 0
    lines = [f"plan ({s.profile}, estimates measured on an H100 and an H200): {work} s of work"]
    for step in s.steps:
        if step != "bench" and done(s, step):
            lines.append(f"  {step}: finished by an earlier call")
            continue
        est = estimate_s(s, step)
        if t + est <= work:
            lines.append(f"  {step}: ~{est} s, fits (ends near +{t + est} s)")
        elif work - t >= s.least_s(step):
            lines.append(f"  {step}: ~{est} s, cut at the deadline after ~{work - t} s (its state kept: resume it)")
        else:
            lines.append(f"  {step}: ~{est} s, skipped (needs at least {s.least_s(step)} s)")
        t = min(t + est, work)
    return lines
