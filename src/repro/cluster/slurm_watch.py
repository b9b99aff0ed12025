"""Watching one SLURM cluster run: a small state machine whose transitions are a pure function of what one look
at the job saw (:func:`advance`), so each is tested without SLURM (``tests/unit/test_slurm_watch.py``), and
scontrol's record of a job read robustly (:func:`scontrol_json`, :func:`scontrol_oneliner`).

Phases::

    pending --(SLURM starts the job)--> starting --(ready.json: every server listens)--> running --> done
       ^ SLURM lists the job PENDING or CONFIGURING: no deadline runs, a line every minute says why

From ``starting`` and ``running`` the run can fail, checked in this order on every look:

* ``task_failed``: a program task exited with a non-zero code;
* ``step_gone``: with ``fail_fast``, a separate task's own step (``scancel JOB.STEP``) ended while the program
  ran;
* ``job_ended``: SLURM lists the job as no longer active while a program task has not finished;
* ``not_ready`` / ``timed_out``: the deadline passed: ``ready_timeout`` + 30 s to get ready, then ``timeout`` +
  ``grace`` for the program.

``done`` comes when every program task has written its exit code of 0, before the job-state and deadline
checks (a job that ends right after its programs did is a success).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Literal

ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STAGE_OUT"}
WAITING = ("PENDING", "CONFIGURING")
READY_SLACK_S = 30.0  # srun's own start-up on top of the servers' ready_timeout

Phase = Literal["pending", "starting", "running", "done", "failed"]
Failure = Literal["task_failed", "step_gone", "job_ended", "not_ready", "timed_out"]


@dataclass(frozen=True)
class Look:
    """What one look at the job saw."""

    now: float  # time.monotonic()
    state: str  # SLURM's JobState (``RUNNING``; ``UNKNOWN`` where scontrol no longer knows the job)
    reason: str = ""
    ready: bool = False  # ready.json exists: every server listens
    exits: dict[str, int] = field(default_factory=dict)  # task name -> exit code, of the tasks that ended
    gone: tuple[int, ...] = ()  # separate tasks (their index in the layout) whose own step started and ended


@dataclass(frozen=True)
class Watch:
    """Where the watch stands."""

    phase: Phase = "pending"
    deadline: float | None = None
    failure: Failure | None = None
    task: str | int | None = None  # the task the failure is about (a name, or a separate task's index)


def advance(w: Watch, look: Look, programs: list[str], ready_timeout: float, timeout: float, grace: float,
            fail_fast: bool) -> Watch:
    """The state after ``look``: ``programs`` are the tasks that run the program (the rest serve)."""
    if w.phase in ("done", "failed"):
        return w
    if look.state in WAITING:
        return replace(w, phase="pending") if w.phase == "pending" else w
    if w.phase == "pending":
        w = Watch("starting", look.now + ready_timeout + READY_SLACK_S)
    if w.phase == "starting" and look.ready:
        w = Watch("running", look.now + timeout + grace)
    bad = [n for n in programs if look.exits.get(n, 0) != 0]
    if bad:
        return replace(w, phase="failed", failure="task_failed", task=bad[0])
    if fail_fast and look.gone:
        return replace(w, phase="failed", failure="step_gone", task=look.gone[0])
    if all(n in look.exits for n in programs):
        return replace(w, phase="done")
    waiting = [n for n in programs if n not in look.exits]
    if look.state not in ACTIVE:
        return replace(w, phase="failed", failure="job_ended", task=waiting[0])
    if w.deadline is not None and look.now > w.deadline:
        return replace(w, phase="failed", failure="not_ready" if w.phase == "starting" else "timed_out",
                       task=waiting[0])
    return w


_KEY = re.compile(r"(?:^|(?<=\s))([A-Z][A-Za-z:/]*)=")


def scontrol_oneliner(out: str) -> dict[str, str]:
    """``scontrol show job -o``'s ``Key=value`` pairs, a value running to the next key: values may hold spaces
    (``Reason=ReqNodeNotAvail, Reserved for maintenance``, a job name or directory with a space)."""
    line = out.strip().splitlines()[0] if out.strip() else ""
    keys = list(_KEY.finditer(line))
    return {m.group(1): line[m.end():(keys[k + 1].start() if k + 1 < len(keys) else len(line))].strip()
            for k, m in enumerate(keys)}


def _number(value: Any) -> Any:
    """SLURM's JSON numbers: plain (22.05) or ``{"set": true, "infinite": false, "number": N}`` (23.02+)."""
    if isinstance(value, dict):
        return value.get("number") if value.get("set", True) and not value.get("infinite") else None
    return value


def _clock(epoch: Any) -> str:
    n = _number(epoch)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(n)) if n else "Unknown"


def _hms(seconds: float) -> str:
    s = int(max(seconds, 0))
    return f"{s // 86400}-{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def scontrol_json(out: str, now: float | None = None) -> dict[str, str] | None:
    """``scontrol --json show job``'s first job under the keys of :func:`scontrol_oneliner`; ``None`` where the
    output is not SLURM's JSON (a SLURM without it), ``{}`` where it lists no job."""
    try:
        jobs = json.loads(out)["jobs"]
    except (ValueError, KeyError, TypeError):
        return None
    if not jobs:
        return {}
    j = jobs[0]
    state = j.get("job_state")
    state = state[0] if isinstance(state, list) and state else state
    start, end = _number(j.get("start_time")), _number(j.get("end_time"))
    until = end if end and state not in ACTIVE else (now if now is not None else time.time())
    code = j.get("exit_code")
    if isinstance(code, dict):
        rc, sig = _number(code.get("return_code")), _number((code.get("signal") or {}).get("id"))
        code = f"{rc or 0}:{sig or 0}"
    return {"JobState": str(state or "UNKNOWN"), "Reason": str(j.get("state_reason") or ""),
            "JobName": str(j.get("name") or ""), "NodeList": str(j.get("nodes") or ""),
            "StartTime": _clock(start), "EndTime": _clock(end) if state not in ACTIVE else "Unknown",
            "RunTime": _hms(until - start) if start else "00:00:00", "ExitCode": str(code if code is not None else "")}
