"""One training configuration per process, pinned to k cores, sampled, always reaped.

:func:`run_child` starts ``python -m repro.experiments.cost_study.sweep <task.json> <result.json>`` in a new
process group. The child's first statements (before any Keras backend is imported) set its
CPU affinity to the requested cores and the thread-count environment variables of
:func:`repro.ml.training.thread_env` (``XLA_FLAGS`` too under JAX); a training task then
starts Keras on its backend (``KERAS_BACKEND``: TensorFlow, JAX, ...), limits its thread pools
with :func:`repro.ml.training.configure_threads`, and records the cores it really has
(``os.sched_getaffinity(0)`` seen from inside) and the time of every phase of formula (1).

While the child runs, a :class:`ResourceSampler` thread in the parent records, every
``interval`` seconds, what ``dstat -cmdr`` records in the paper: CPU use (of the child and of
the whole machine), memory (the child's RSS and the machine's), disk read/write bytes and
I/O requests (of the child and of the machine), plus which CPUs the child's threads ran on.

The child is always reaped: on success, on failure, on a timeout and on
``KeyboardInterrupt`` the whole process group is terminated, then killed, then waited for.

Task kinds: ``call`` (``entry: 'module:function'`` called with the task, e.g. training a
network, which imports Keras and its backend) and ``probe`` (no
Keras: reports its affinity, optionally spins, sleeps or fails; used by the tests to
check pinning and reaping quickly).
"""

from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from repro.core import atomic, errors
from repro.core.procs import stop_group


def _thread_env(cores: int, environ: dict | None = None) -> dict:
    """The thread-limiting variables of :func:`repro.ml.training.thread_env` (imported here, lazily,
    so that the child's first statements stay the affinity and these variables)."""
    from repro.ml.training import thread_env

    return thread_env(cores, environ)


SAMPLE_COLUMNS = [
    "t_s", "child_cpu_percent", "child_rss_mb", "child_threads", "child_cpus_seen",
    "child_read_bytes", "child_write_bytes", "child_read_count", "child_write_count",
    "sys_cpu_percent", "sys_mem_used_mb", "disk_read_bytes", "disk_write_bytes", "disk_reads", "disk_writes",
]


ChildFailed = errors.RunFailed  # A sweep child exited non-zero, timed out or wrote no result (one line: which and why).


def available_cores() -> list[int]:
    """The CPUs this process may run on (its affinity), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def cores_for(k: int) -> list[int]:
    """The first ``k`` CPUs of this process's affinity (a ValueError if the machine has fewer)."""
    cores = available_cores()
    if not 1 <= k <= len(cores):
        raise ValueError(f"{k} cores requested but this machine lets us use {len(cores)} (CPUs {cores})")
    return cores[:k]


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB (VmHWM of /proc/self/status).

    Not ``getrusage``'s ru_maxrss: Linux carries that over from the parent across fork+exec,
    so a big parent (a notebook kernel) would inflate a small child's peak.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------------------------------
# resource sampler (parent side)

def _thread_cpus(pid: int) -> set[int]:
    """CPUs that the threads of ``pid`` last ran on (field 39 of /proc/<pid>/task/<tid>/stat)."""
    cpus: set[int] = set()
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return cpus
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                text = fh.read().decode(errors="replace")
            fields = text[text.rindex(")") + 2:].split()
            cpus.add(int(fields[36]))  # field 39 overall; fields[0] is field 3 (state)
        except (OSError, ValueError, IndexError):
            continue
    return cpus


class ResourceSampler:
    """Background thread sampling a process and the machine every ``interval`` seconds.

    ``rows`` holds one dict per sample (:data:`SAMPLE_COLUMNS`); :meth:`stop` ends the
    thread and, with ``path``, writes them as CSV. Counters (bytes, I/O requests) are
    per-interval deltas; ``child_cpus_seen`` lists the CPUs the child's threads were seen on.
    """

    def __init__(self, pid: int, interval: float = 1.0, path: str | Path | None = None):
        if interval <= 0:
            raise ValueError("sampling interval must be > 0")
        import psutil

        self.pid, self.interval, self.path = pid, float(interval), path
        self.rows: list[dict] = []
        self.cpus_seen: set[int] = set()
        self._stop = threading.Event()
        self._psutil = psutil
        try:
            self._proc = psutil.Process(pid)
        except psutil.Error:
            self._proc = None
        self._thread = threading.Thread(target=self._loop, name=f"sampler-{pid}", daemon=True)

    def start(self) -> "ResourceSampler":
        self._thread.start()
        return self

    def _family(self):
        procs = [self._proc]
        try:
            procs += self._proc.children(recursive=True)
        except self._psutil.Error:
            pass
        return procs

    def _loop(self) -> None:
        ps = self._psutil
        t0 = time.perf_counter()
        ps.cpu_percent(None)
        if self._proc is not None:
            try:
                self._proc.cpu_percent(None)
            except ps.Error:
                pass
        disk0 = ps.disk_io_counters()
        io0 = None
        while not self._stop.wait(self.interval):
            if self._proc is None:
                break
            row: dict[str, Any] = {"t_s": round(time.perf_counter() - t0, 3)}
            try:
                with self._proc.oneshot():
                    if self._proc.status() == ps.STATUS_ZOMBIE:  # exited, not yet reaped: rss reads 0
                        break
                    row["child_cpu_percent"] = self._proc.cpu_percent(None)
                    rss = self._proc.memory_info().rss
                    if rss == 0:  # exiting: its memory is released before it turns zombie
                        break
                    rss += sum(p.memory_info().rss for p in self._family()[1:])
                    row["child_threads"] = self._proc.num_threads()
                    try:
                        io = self._proc.io_counters()
                    except (ps.AccessDenied, AttributeError):
                        io = None
            except ps.Error:  # the child ended between two samples
                break
            row["child_rss_mb"] = rss / 2**20
            cpus = _thread_cpus(self.pid)
            self.cpus_seen |= cpus
            row["child_cpus_seen"] = " ".join(map(str, sorted(cpus)))
            if io is not None:
                prev = io0 or io.__class__(*([0] * len(io)))
                row["child_read_bytes"] = io.read_bytes - prev.read_bytes
                row["child_write_bytes"] = io.write_bytes - prev.write_bytes
                row["child_read_count"] = io.read_count - prev.read_count
                row["child_write_count"] = io.write_count - prev.write_count
                io0 = io
            row["sys_cpu_percent"] = ps.cpu_percent(None)
            row["sys_mem_used_mb"] = ps.virtual_memory().used / 2**20
            disk = ps.disk_io_counters()
            if disk is not None and disk0 is not None:
                row["disk_read_bytes"] = disk.read_bytes - disk0.read_bytes
                row["disk_write_bytes"] = disk.write_bytes - disk0.write_bytes
                row["disk_reads"] = disk.read_count - disk0.read_count
                row["disk_writes"] = disk.write_count - disk0.write_count
                disk0 = disk
            self.rows.append(row)

    def stop(self) -> list[dict]:
        self._stop.set()
        self._thread.join(timeout=max(5.0, 3 * self.interval))
        if self.path is not None:
            write_samples(self.path, self.rows)
        return self.rows

    @property
    def peak_rss_mb(self) -> float:
        return max((r["child_rss_mb"] for r in self.rows), default=float("nan"))


def write_samples(path: str | Path, rows: list[dict]) -> None:
    import io

    from repro.core.results import atomic_write_text

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SAMPLE_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    atomic_write_text(Path(path), buf.getvalue())


# ---------------------------------------------------------------------------------------------
# running a child (parent side)

def run_child(task: dict, cores: list[int], *, timeout: float = 3600.0, sample_interval: float | None = 1.0,
              samples_path: str | Path | None = None, log_path: str | Path | None = None,
              env: dict | None = None) -> dict:
    """Run one task in its own process pinned to ``cores``; return its result dict.

    The result has the child's own record (``affinity_inside``, phase times, ...) plus
    ``wall_s`` (parent-side, from spawn to exit), ``interpreter_start_s`` (spawn until the
    child's first statement) and, with sampling, ``peak_rss_sampled_mb``,
    ``cpus_seen`` and ``n_samples``. Raises :class:`ChildFailed` (after reaping) when the
    child fails or times out.
    """
    if not cores:
        raise ValueError("a child needs at least one core")
    workdir = Path(tempfile.mkdtemp(prefix="repro-child-"))
    task_path, result_path = workdir / "task.json", workdir / "result.json"
    task = {**task, "cores": list(cores), "workdir": str(workdir)}
    task_path.write_text(json.dumps(task))
    child_env = {**os.environ, **(env or {})}
    child_env.update(_thread_env(len(cores), child_env))  # before the child starts: XLA_FLAGS for JAX too
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    log_fh: Any = open(log_path, "wb") if log_path else subprocess.DEVNULL
    sampler = proc = result = None
    try:
        t_spawn = time.time()
        proc = subprocess.Popen(
            [sys.executable, "-m", "repro.experiments.cost_study.sweep", str(task_path), str(result_path)],
            stdout=log_fh, stderr=subprocess.STDOUT, env=child_env, start_new_session=True,
            preexec_fn=functools.partial(os.sched_setaffinity, 0, list(cores)),  # its cores from the first instruction
        )
        if sample_interval:
            sampler = ResourceSampler(proc.pid, sample_interval, samples_path).start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ChildFailed(f"child {task.get('label', '')} exceeded {timeout:.0f} s and was killed") from None
        wall = time.time() - t_spawn
        if rc != 0 or not result_path.is_file():
            tail = _log_tail(log_path)
            raise ChildFailed(f"child {task.get('label', '')} exited with status {rc}" + (f": {tail}" if tail else ""))
        result = json.loads(result_path.read_text())
        result["wall_s"] = wall
        result["interpreter_start_s"] = max(0.0, result.pop("entered_at") - t_spawn)
    finally:  # always: reap the whole process group, stop the sampler, remove the scratch directory
        if proc is not None:
            stop_group([proc], 5.0, group=True, kill_wait_s=20.0)  # SIGTERM, SIGKILL after 5 s, grandchildren too
        if sampler is not None:
            sampler.stop()
        if log_path:
            log_fh.close()
        _cleanup(workdir)
    if sampler is not None:
        result["peak_rss_sampled_mb"] = sampler.peak_rss_mb
        result["cpus_seen"] = sorted(sampler.cpus_seen)
        result["n_samples"] = len(sampler.rows)
    return result


def _log_tail(log_path) -> str:
    if not log_path:
        return ""
    try:
        lines = [ln.strip() for ln in Path(log_path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _cleanup(workdir: Path) -> None:
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# the child (runs as `python -m repro.experiments.cost_study.sweep task.json result.json`)

def _probe(task: dict) -> dict:
    """No Keras: report affinity, spin a while on every allowed core, sleep, or fail."""
    out: dict[str, Any] = {"affinity_inside": sorted(os.sched_getaffinity(0)), "pid": os.getpid(),
                           "peak_rss_mb": peak_rss_mb()}
    spin = float(task.get("spin_s", 0))
    if spin > 0:
        threads = [threading.Thread(target=_spin, args=(spin,)) for _ in out["affinity_inside"]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    pids = [os.getpid()]
    if task.get("spawn_grandchild"):
        pids.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid)
    if task.get("pid_file"):  # "child_pid [grandchild_pid]", for the reaping tests
        Path(task["pid_file"]).write_text(" ".join(map(str, pids)))
    if task.get("sleep_s"):
        time.sleep(float(task["sleep_s"]))
    if task.get("fail"):
        raise SystemExit("probe asked to fail")
    return out


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def _child_main(task_path: str, result_path: str) -> int:
    entered_at = time.time()
    task = json.loads(Path(task_path).read_text())
    cores = task["cores"]
    os.sched_setaffinity(0, cores)  # before anything starts threads (no Keras backend is imported yet)
    os.environ.update(_thread_env(len(cores)))  # already set by run_child; kept for direct calls
    if task["kind"] == "probe":
        out = _probe(task)
    elif task["kind"] == "call":  # "entry": "package.module:function", called with the task dict
        import importlib

        module, func = task["entry"].split(":")
        out = getattr(importlib.import_module(module), func)(task)
    else:
        raise SystemExit(f"unknown task kind {task['kind']!r}")
    out["entered_at"] = entered_at
    atomic.write_json(result_path, out, default=float, indent=None)
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1], sys.argv[2]))
