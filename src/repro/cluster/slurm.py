"""The SLURM launcher: one cluster run of :func:`repro.cluster.run_cluster` as SLURM job steps.

``run_cluster(..., launcher="slurm")`` writes ``plan.json`` to the run directory, which must be on a
filesystem every node shares (as on real clusters: the launcher, the Python environment and the
run directory are all read from the compute nodes), then

* inside an allocation (``$SLURM_JOB_ID`` set: ``salloc -N 20``, or a batch script): ``srun`` job
  steps of that allocation;
* outside one: ``sbatch`` one job per cluster whose batch script runs those ``srun`` steps.

Every task runs ``python -m repro.cluster node --slurm --cluster-dir RUN --indices ...``
(:mod:`repro.cluster.slurm_task`): roles follow SLURM's task order (chief, ps, workers), one task
per node as far as the nodes go. ``separate`` tasks get a step of their own, so that ``scancel
JOB.STEP`` removes exactly that task (the kill-a-worker runs). A failed task, a time-out, or
Ctrl-C cancels what is still running (``scancel``) and waits until SLURM lists nothing of it.
``slurm.json`` in the run directory records job and step ids, node names, states and SLURM's own
elapsed time (``sacct`` where accounting is on, else ``scontrol``'s record of the job).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .node import read_results
from .plan import ClusterPlan
from .slurm_task import layout
from .slurm_watch import ACTIVE, WAITING, Look, Watch, advance, scontrol_json, scontrol_oneliner
from .spec import ClusterError, ClusterRunFailed, ClusterUnavailable, name_of_slug, role_names
from .supervisor import ClusterTimeout, TaskFailed, describe_exit, tail

log = logging.getLogger(__name__)
_JSON: bool | None = None  # whether scontrol answers --json (asked once)
POLL_S = 1.0  # between two looks at the job (scontrol, squeue): gentle on a shared slurmctld
USABLE = {"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing"}


def _slurm(*args: str, check: bool = True, timeout: float = 60.0) -> str:
    """Run a SLURM client command; its stdout, or one line: :class:`ClusterUnavailable` where the command is
    absent, :class:`ClusterRunFailed` where it failed."""
    if not shutil.which(args[0]):
        raise ClusterUnavailable(f"launcher 'slurm': {args[0]} is not on PATH (run on a SLURM login node, "
                                 "or inside salloc)")
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode:
        msg = (r.stderr or r.stdout).strip().splitlines()
        raise ClusterRunFailed(f"'{' '.join(args[:2])}' failed: {msg[-1] if msg else f'exit {r.returncode}'}")
    return r.stdout


def in_allocation() -> bool:
    return bool(os.environ.get("SLURM_JOB_ID"))


def _nodes() -> tuple[str, list[tuple[str, str, str]]]:
    """Where the cluster will run (words) and its nodes: ``(name, state, reason)``."""
    fmt = "%N|%t|%E|%P"
    if in_allocation():
        where = f"allocation {os.environ['SLURM_JOB_ID']}"
        out = _slurm("sinfo", "-h", "-N", "-n", os.environ.get("SLURM_JOB_NODELIST", ""), "-o", fmt)
    else:
        part = os.environ.get("SBATCH_PARTITION")
        out = _slurm("sinfo", "-h", "-N", "-o", fmt, *(["-p", part] if part else []))
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        part = part or next((r[3].rstrip("*") for r in rows if r[3].endswith("*")), None)
        where = f"partition {part}"
        out = "\n".join("|".join(r) for r in rows if r[3].rstrip("*") == part)
    seen, nodes = set(), []
    for line in out.splitlines():
        name, state, reason, _ = (line.split("|") + ["", "", ""])[:4]
        if name and name not in seen:
            seen.add(name)
            nodes.append((name, state, reason))
    if not nodes:
        raise ClusterUnavailable(f"launcher 'slurm': no nodes in {where} ({_elsewhere()})")
    return where, nodes


def _elsewhere() -> str:
    """How to get usable nodes elsewhere (a :class:`ClusterUnavailable` message's end)."""
    return "salloc usable nodes" if in_allocation() else "set SBATCH_PARTITION to a partition with usable nodes"


def preflight(tasks: int) -> int:
    """Nodes a ``tasks``-task cluster gets (one task per node, up to all of them); a one-line error
    naming a drained, down or failed node when the usable ones are fewer."""
    where, nodes = _nodes()
    needed = min(tasks, len(nodes))
    usable = [n for n, s, _ in nodes if s.rstrip("*~#!%$@^-") in USABLE and not s.endswith("*")]
    if len(usable) < needed:
        name, state, reason = next(x for x in nodes if x[0] not in usable)
        word = {"drain": "drained", "drng": "draining", "down": "down", "fail": "failed"}.get(state.rstrip("*"), state)
        raise ClusterUnavailable(f"SLURM node {name} is {word} (reason: {reason or 'none given'}): a {tasks}-task "
                                 f"cluster needs {needed} nodes of {where}, {len(usable)} are usable (wait until "
                                 f"it is back, or {_elsewhere()})")
    return needed


def steps(total: int, separate: list[int]) -> list[list[int]]:
    """Global task indices of each job step: everything else first, then one step per separate task."""
    return [[i for i in range(total) if i not in separate]] + [[i] for i in separate]


def _srun(run_dir: Path, name: str, k: int, indices: list[int], nodes: int, relative: int, fail_fast: bool):
    return ["srun", f"--job-name={name}-s{k}", f"--nodes={nodes}", f"--ntasks={len(indices)}",
            f"--relative={relative}", f"--kill-on-bad-exit={int(fail_fast)}", "--export=ALL",
            f"--output={run_dir}/slurm/step{k}-task%t.log", sys.executable, "-m", "repro.cluster", "node",
            "--slurm", "--cluster-dir", str(run_dir), "--indices", ",".join(map(str, indices))]


def step_commands(plan: ClusterPlan, separate: list[int], nodes: int, name: str) -> list[list[str]]:
    """The ``srun`` command of each step: the main step on the first nodes, each separate task on its own."""
    run_dir = Path(plan.run_dir)
    parts = steps(len(layout(plan)), separate)
    main_nodes = max(1, min(len(parts[0]), nodes - len(parts) + 1))
    cmds = [_srun(run_dir, name, 0, parts[0], main_nodes, 0, plan.fail_fast)]
    for k, part in enumerate(parts[1:], 1):
        rel = min(main_nodes + k - 1, nodes - 1)
        cmds.append(_srun(run_dir, name, k, part, 1, rel, plan.fail_fast))
    return cmds


def _batch_script(cmds: list[list[str]]) -> str:
    lines = ["#!/bin/sh", "# written by repro.cluster.slurm: one srun job step per line, all at once", "pids="]
    lines += [f"{shlex.join(c)} &\npids=\"$pids $!\"" for c in cmds]
    lines += ["rc=0", "for p in $pids; do wait $p || rc=$?; done", "exit $rc", ""]
    return "\n".join(lines)


def _limit(plan: ClusterPlan) -> float:
    return plan.ready_timeout + plan.timeout + 2 * plan.grace + 30


def _seconds(text: str) -> float | None:
    """SLURM's ``[D-]HH:MM:SS`` as seconds."""
    days, _, hms = text.rpartition("-")
    try:
        h, m, s = (int(x) for x in hms.split(":"))
    except ValueError:
        return None
    return (int(days) if days else 0) * 86400 + h * 3600 + m * 60 + s


def _scontrol_job(job: str) -> dict[str, str]:
    """SLURM's record of ``job`` under scontrol's keys (JobState, Reason, JobName, RunTime, NodeList, StartTime,
    EndTime, ExitCode; {} where scontrol no longer knows it): ``scontrol --json`` where this SLURM has it
    (22.05 and later with its JSON plugin), else ``scontrol -o`` read key by key."""
    global _JSON
    if _JSON is not False:
        rec = scontrol_json(_slurm("scontrol", "--json", "show", "job", job, check=False))
        if rec is not None:
            _JSON = True
            return rec
        _JSON = False if _JSON is None else _JSON  # never answered in JSON: do not ask again
    return scontrol_oneliner(_slurm("scontrol", "show", "job", "-o", job, check=False))


def _accounting(ids: list[str]) -> dict:
    """SLURM's own record of ``ids`` (jobs or steps): ``sacct`` where accounting is on, else ``scontrol``'s
    record of the job (kept ``MinJobAge`` seconds after it ends; steps have none there)."""
    r = subprocess.run(["sacct", "-P", "-n", "-o", "JobID,JobName,State,ElapsedRaw,NodeList,Start,End",
                        "-j", ",".join(ids)], capture_output=True, text=True) if shutil.which("sacct") else None
    if r is not None and r.returncode == 0 and r.stdout.strip():
        keys = ["id", "name", "state", "elapsed_s", "nodes", "start", "end"]
        rows: list[dict[str, Any]] = [dict(zip(keys, line.split("|"))) for line in r.stdout.splitlines()
                                      if line.strip()]
        return {"source": "sacct", "records": rows}
    why = (r.stderr.strip().splitlines() or ["no records"])[-1] if r is not None else "sacct not installed"
    jobs = sorted({i.split(".")[0] for i in ids})
    rows = []
    for j in jobs:
        rec = _scontrol_job(j)
        if rec:
            rows.append({"id": j, "name": rec.get("JobName"), "state": rec.get("JobState"),
                         "elapsed_s": _seconds(rec.get("RunTime", "")), "nodes": rec.get("NodeList"),
                         "start": rec.get("StartTime"), "end": rec.get("EndTime"), "exit_code": rec.get("ExitCode")})
    return {"source": f"scontrol (sacct: {why})", "records": rows}


class _Job:
    """A cluster run's SLURM work: its job id, its steps (``<name>-s<k>``), how to cancel it."""

    mode = ""
    log: Path  # where srun (or the batch job) writes: set by each kind of job

    def __init__(self, name: str):
        self.name, self.job = name, ""
        self.step_ids: dict[int, str] = {}

    def state(self) -> tuple[str, str]:
        """SLURM's state of the job and why (``("PENDING", "Resources")``)."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Cancel whatever of the job still runs."""
        raise NotImplementedError

    def steps_alive(self) -> set[int]:
        """Steps SLURM lists as running now (by the launcher's number ``k``); remembers their ids."""
        out = _slurm("squeue", "-s", "-h", "-j", self.job, "-o", "%i|%j", check=False)
        alive = set()
        for line in out.splitlines():
            sid, _, sname = line.strip().partition("|")
            if sname.startswith(f"{self.name}-s"):
                k = int(sname.rsplit("-s", 1)[1])
                self.step_ids[k] = sid
                alive.add(k)
        return alive

    def record(self) -> dict:
        ids = ([self.job] if self.mode == "sbatch" else []) + list(self.step_ids.values())
        return {"scheduler": "slurm", "mode": self.mode, "job_id": self.job,
                "steps": {str(k): v for k, v in sorted(self.step_ids.items())}, **_accounting(ids or [self.job])}


class _BatchJob(_Job):
    """``sbatch`` of a script that runs every step at once (outside an allocation)."""

    mode = "sbatch"

    def __init__(self, name: str, run_dir: Path, cmds: list[list[str]], plan: ClusterPlan, nodes: int):
        super().__init__(name)
        script = run_dir / "slurm" / "batch.sh"
        script.write_text(_batch_script(cmds))
        tasks = sum(int(a.split("=", 1)[1]) for c in cmds for a in c if a.startswith("--ntasks="))
        out = _slurm("sbatch", "--parsable", f"--job-name={name}", f"--nodes={nodes}", f"--ntasks={tasks}",
                     f"--time={int(_limit(plan) // 60) + 2}", f"--output={run_dir}/slurm/batch.log",
                     f"--chdir={plan.cwd}", "--export=ALL", str(script))
        self.job = out.strip().split(";")[0]
        self.log = run_dir / "slurm" / "batch.log"

    def state(self) -> tuple[str, str]:
        rec = _scontrol_job(self.job)
        return rec.get("JobState", "UNKNOWN"), rec.get("Reason", "")

    def cancel(self) -> None:
        _slurm("scancel", self.job, check=False)


class _AllocSteps(_Job):
    """``srun`` steps of the allocation this process runs in."""

    mode = "srun in allocation"

    def __init__(self, name: str, run_dir: Path, cmds: list[list[str]]):
        super().__init__(name)
        self.job = os.environ["SLURM_JOB_ID"]
        self.log = run_dir / "slurm" / "srun.log"
        with open(self.log, "ab") as log:
            self.procs = [subprocess.Popen(c, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           start_new_session=True) for c in cmds]

    def state(self) -> tuple[str, str]:
        if any(p.poll() is None for p in self.procs):
            return "RUNNING", ""
        return ("COMPLETED" if all(p.returncode == 0 for p in self.procs) else "FAILED"), ""

    def cancel(self) -> None:
        self.steps_alive()
        for sid in self.step_ids.values():
            _slurm("scancel", sid, check=False)
        deadline = time.monotonic() + 30
        while any(p.poll() is None for p in self.procs) and time.monotonic() < deadline:
            time.sleep(0.2)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _exits(run_dir: Path) -> dict[str, int]:
    return {name_of_slug(p.stem): json.loads(p.read_text())["code"]
            for p in (run_dir / "slurm" / "exit").glob("*.json")}


def _log(run_dir: Path, name: str) -> Path:
    return run_dir / "logs" / (name.replace(":", "-") + ".log")


def _look(job: _Job, run_dir: Path, separate: list[int]) -> Look:
    """One look at the job: SLURM's state, then (once it has started) the run directory and the steps alive."""
    state, reason = job.state()
    if state in WAITING:
        return Look(time.monotonic(), state, reason)
    alive = job.steps_alive()
    started = {k for k, i in enumerate(separate, 1) if (run_dir / "slurm" / "tasks" / f"{i}.json").exists()}
    gone = tuple(separate[k - 1] for k in sorted(started - alive))
    return Look(time.monotonic(), state, reason, (run_dir / "ready.json").exists(), _exits(run_dir), gone)


def _failed(w: Watch, job: _Job, plan: ClusterPlan, names: list[str]) -> Exception:
    """The one-line error of a failed watch, with the log lines that say why."""
    run_dir, task = Path(plan.run_dir), w.task
    if w.failure == "task_failed":
        return TaskFailed(f"{task} {describe_exit(_exits(run_dir)[str(task)])} while running the program; "
                          f"last log lines: {tail(_log(run_dir, str(task)))}")
    if w.failure == "step_gone":
        rec = json.loads((run_dir / "slurm" / "tasks" / f"{task}.json").read_text())
        name = names[int(task or 0)]
        return TaskFailed(f"{name} (SLURM step {rec['job']}.{rec['step']}) ended while the program was running; "
                          f"last log lines: {tail(_log(run_dir, name))}")
    if w.failure == "job_ended":
        return TaskFailed(f"SLURM job {job.job} ended ({job.state()[0]}) before {task} finished; srun: "
                          f"{tail(job.log, 2)}; last log lines of {task}: {tail(_log(run_dir, str(task)))}")
    if w.failure == "not_ready":
        return ClusterTimeout(f"the cluster was not ready after {plan.ready_timeout:g} s (SLURM job "
                              f"{job.job}); srun: {tail(job.log, 2)}")
    hung = [n for n in names if n.split(":")[0] in plan.program_roles and n not in _exits(run_dir)]
    return ClusterTimeout(f"job timed out after {plan.timeout:g} s: {', '.join(hung)} still running "
                          f"(SLURM job {job.job}); last log lines of {task}: {tail(_log(run_dir, str(task)))}")


def _watch(job: _Job, plan: ClusterPlan, names: list[str], separate: list[int]) -> None:
    """Wait until every program task has ended well (:mod:`~repro.cluster.slurm_watch`); a one-line error for
    anything else."""
    run_dir = Path(plan.run_dir)
    programs = [n for n in names if n.split(":")[0] in plan.program_roles]
    w, said = Watch(), time.monotonic() - 50  # the first "pending" line after 10 s, then one a minute
    while True:
        look = _look(job, run_dir, separate)
        w = advance(w, look, programs, plan.ready_timeout, plan.timeout, plan.grace, plan.fail_fast)
        if w.phase == "done":
            return
        if w.phase == "failed":
            raise _failed(w, job, plan, names)
        if look.state in WAITING and look.now - said > 60:
            log.info("SLURM job %s %s (%s)", job.job, look.state.lower(), look.reason or "no reason given")
            said = look.now
        time.sleep(1.0 if look.state in WAITING else POLL_S)


def _finish(job: _Job, ok: bool, grace: float) -> None:
    """After a good run let the job end by itself for a moment (servers stop once the programs have); then,
    or at once after a failure, cancel what is left and wait until SLURM has nothing of it running."""
    deadline = time.monotonic() + (grace + 15 if ok else 0)
    while job.state()[0] in ACTIVE and time.monotonic() < deadline:
        time.sleep(0.3)
    if job.state()[0] in ACTIVE:
        job.cancel()
        deadline = time.monotonic() + 60
        while job.state()[0] in ACTIVE and time.monotonic() < deadline:
            time.sleep(0.5)


def run(plan: ClusterPlan, separate_names: tuple[str, ...] = ()) -> dict:
    """Run the cluster of ``plan`` (written by :func:`repro.cluster.run_cluster`) under SLURM; the fields of
    its :class:`repro.cluster.ClusterResult`."""
    run_dir = Path(plan.run_dir)
    names = role_names(layout(plan))
    unknown = [n for n in separate_names if n not in names]
    if unknown:
        raise ClusterError(f"separate task {unknown[0]!r} is not in the cluster ({', '.join(names)})")
    separate = [names.index(n) for n in separate_names]
    nodes = preflight(len(names))
    for d in ("slurm/tasks", "slurm/exit", "logs", "results"):
        (run_dir / d).mkdir(parents=True, exist_ok=True)
    token = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:6]  # two runs' "ring-2" differ
    name = f"repro-{run_dir.name[:36]}-{token}"
    cmds = step_commands(plan, separate, nodes, name)
    t0 = time.monotonic()
    job = _AllocSteps(name, run_dir, cmds) if in_allocation() else _BatchJob(name, run_dir, cmds, plan, nodes)
    log.info("SLURM job %s (%s): %d tasks on up to %d nodes", job.job, job.mode, len(names), nodes)
    ok = False
    try:
        _watch(job, plan, names, separate)
        ok = True
    finally:
        _finish(job, ok, plan.grace)
        tasks = _task_records(run_dir, names)
        for k, part in enumerate(steps(len(names), separate)):  # what each task saw ($SLURM_STEP_ID), where
            if tasks[part[0]]["slurm_step"]:  # squeue never listed a short step
                job.step_ids[k] = tasks[part[0]]["slurm_step"]
        info = job.record() | {"tasks": tasks, "commands": [shlex.join(c) for c in cmds]}
        info["nodes"] = sorted({t["node"] for t in info["tasks"] if t.get("node")})
        (run_dir / "slurm.json").write_text(json.dumps(info, indent=1, default=str))
    return dict(run_dir=run_dir, isolation="slurm", cluster=_cluster(info["tasks"]), tasks=info["tasks"],
                results=read_results(run_dir), exposure=None, elapsed_s=round(time.monotonic() - t0, 3), scheduler=info)


def _task_records(run_dir: Path, names: list[str]) -> list[dict]:
    exits = _exits(run_dir)
    recs = []
    for i, name in enumerate(names):
        path = run_dir / "slurm" / "tasks" / f"{i}.json"
        t = json.loads(path.read_text()) if path.exists() else {}
        recs.append({"name": name, "role": name.split(":")[0], "index": int(name.split(":")[1]),
                     "address": f"{t['host']}:{t['port']}" if t else None, "node": t.get("node"),
                     "slurm_step": f"{t['job']}.{t['step']}" if t else None, "exit_code": exits.get(name),
                     "log": str(_log(run_dir, name).relative_to(run_dir))})
    return recs


def _cluster(tasks: list[dict]) -> dict:
    out: dict[str, list[str]] = {}
    for t in tasks:
        if t["address"]:
            out.setdefault(t["role"], []).append(t["address"])
    return out


def job_rows(root: Path) -> list[dict]:
    """One row per SLURM job of the cluster runs under ``root`` (their ``slurm.json``): the run's
    ``slurm_jobs`` table."""
    rows = []
    for path in sorted(Path(root).rglob("slurm.json")):
        info = json.loads(path.read_text())
        recs = info.get("records") or [{}]
        rec = next((r for r in recs if r.get("id") == info["job_id"]), recs[0])
        rows.append({"cluster": str(path.parent.relative_to(root)), "job_id": info["job_id"], "mode": info["mode"],
                     "steps": " ".join(info["steps"].values()), "nodes": " ".join(info["nodes"]),
                     "tasks": len(info["tasks"]), "state": rec.get("state"), "elapsed_s": rec.get("elapsed_s"),
                     "elapsed_source": info["source"], "start": rec.get("start"), "end": rec.get("end")})
    return rows


def scheduler_note(rows: list[dict], scope: str) -> dict:
    """The provenance record's ``scheduler``: SLURM, its jobs, their nodes and elapsed times."""
    return {"scheduler": "slurm", "scope": scope, "jobs": [r["job_id"] for r in rows],
            "modes": sorted({r["mode"] for r in rows}),
            "nodes": sorted({n for r in rows for n in r["nodes"].split()}),
            "elapsed_s_total": sum(float(r["elapsed_s"] or 0) for r in rows),
            "elapsed_source": sorted({r["elapsed_source"] for r in rows}),
            "partition": os.environ.get("SBATCH_PARTITION") or "(default)",
            "allocation": os.environ.get("SLURM_JOB_ID")}


def record(run, root: Path, scope: str):
    """After an experiment's SLURM clusters: their jobs as a table (``slurm_jobs``) and the provenance
    record's ``scheduler`` (``run``: the experiment's :class:`repro.core.results.Run`)."""
    import pandas as pd

    rows = job_rows(root)
    run.note("scheduler", scheduler_note(rows, scope))
    return pd.DataFrame(rows, columns=["cluster", "job_id", "mode", "steps", "nodes", "tasks", "state", "elapsed_s",
                                       "elapsed_source", "start", "end"])


def preflight_item(tasks: int):
    """The preflight's scheduler line (repro.core.preflight) for a ``tasks``-task cluster: the partition and its
    usable nodes with their GPUs (sinfo's gres), or the one line that says what is missing."""
    from repro.core import preflight as _pf

    try:
        nodes = preflight(tasks)
        where, listed = _nodes()
        gres = _slurm("sinfo", "-h", "-o", "%G", check=False).split()
    except (ClusterUnavailable, ClusterRunFailed) as exc:  # no SLURM, no usable node, or a client that fails
        return _pf.Item("scheduler", False, f"SLURM: {exc}", "a SLURM login node with a partition of GPU nodes "
                        "(SBATCH_PARTITION), or salloc", error=str(exc))
    gpus = ", ".join(sorted(set(g for g in gres if g and g != "(null)"))) or "no GPUs listed (sinfo %G)"
    return _pf.Item("scheduler", True, f"SLURM {where}: {nodes} of {len(listed)} nodes usable for {tasks} "
                                             f"tasks; GPUs per node: {gpus}")
