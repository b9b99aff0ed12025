"""The local launcher: one call starts a cluster of real processes, runs a job, tears it all down.

Process tree (``netns`` isolation, the default where possible)::

    your Python (notebook kernel, test, CLI)           run_cluster()
      setpriv --pdeathsig KILL                          dies with your Python
        unshare --net --pid --fork --mount-proc --map-root-user --kill-child
          python -m repro.cluster._entry supervise     PID 1 of a private PID + network namespace
            python -m repro.cluster._entry node serve one per server task (ps, worker)
            python -m repro.cluster._entry node run F  one per program task (chief, or every worker)

Everything from ``setpriv`` down is one process group (a new session), so one ``killpg``
reaches every process; in addition the kernel kills the whole PID namespace when the
supervisor exits, and ``--pdeathsig``/``--kill-child`` take it all down if the launching
Python itself is killed. The network namespace has nothing but ``lo``: TensorFlow's gRPC
servers (no authentication, bound to all interfaces) are unreachable from other machines.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from repro.core import errors
from repro.core.procs import stop_group

from .node import read_results
from .plan import ClusterPlan
from .spec import ROLES, ClusterError, ClusterRunFailed, ClusterSpec, ClusterUnavailable, is_local, visible_gpus
from .supervisor import ClusterTimeout, TaskFailed, tail

ISOLATIONS = ("auto", "netns", "none")
# how to get what a private network namespace needs (ClusterUnavailable's messages)
NETNS_HOW = ("needs unshare (util-linux), ip (iproute2) and unprivileged user namespaces "
             "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)")


class ClusterInterrupted(errors.RunFailed):
    """The cluster was stopped from outside (signal) before the job finished."""


# the supervisor's status names the class of its error ("kind"): raised here again as that class, of its family
_CLASSES: tuple[type[errors.ReproError], ...] = (ClusterTimeout, TaskFailed, ClusterInterrupted, ClusterError,
                                                 ClusterUnavailable, ClusterRunFailed)
_ERRORS: dict[str, type[errors.ReproError]] = {c.__name__: c for c in _CLASSES} | {"Stopped": ClusterInterrupted}


_RATE = re.compile(r"^\d+(\.\d+)?(bit|kbit|mbit|gbit|tbit)$")
_SIZE = re.compile(r"^\d+(b|kb|k|mb|m)?$")
_TIME = re.compile(r"^\d+(\.\d+)?(ms|us|s)$")


@dataclass
class Network:
    """Emulated network for a local cluster: every node in its own network namespace (a node per task,
    except with ``ps_on_workers``).

    Each node gets ``eth0`` (address ``10.77.0.<k>``, k = its place in the cluster, from 1),
    joined by a veth pair to a bridge in the cluster's namespace. ``tc qdisc tbf`` limits
    each direction of every link to ``bandwidth`` (tc syntax: ``"100mbit"``, ``"1gbit"``,
    ``"25gbit"``), so node-to-node traffic crosses two limited links, like hosts on a
    switch. ``burst`` and ``latency`` are tbf's bucket size and queueing limit. Needs
    ``netns`` isolation. No delay or loss (``netem`` is not in this kernel).

    ``ps_on_workers``: parameter-server task k shares worker k's node (its namespace, address
    and link; port 2223), as on clusters where every machine runs a worker and one PS shard:
    what worker k pulls from and pushes to its own shard never crosses a link.
    """

    bandwidth: str = "1gbit"
    burst: str = "256kb"
    latency: str = "50ms"
    ps_on_workers: bool = False

    def validate(self) -> dict:
        for name, rx in (("bandwidth", _RATE), ("burst", _SIZE), ("latency", _TIME)):
            value = getattr(self, name)
            if not isinstance(value, str) or not rx.match(value):
                raise ClusterError(f"network {name} {value!r} is not in tc syntax (e.g. bandwidth='1gbit', "
                                   "burst='256kb', latency='50ms')")
        return {"bandwidth": self.bandwidth, "burst": self.burst, "latency": self.latency,
                "ps_on_workers": bool(self.ps_on_workers)}


@dataclass
class ClusterResult:
    """What a finished local cluster run left: its directory, tasks, and program return values."""

    run_dir: Path
    isolation: str
    cluster: dict
    tasks: list[dict]
    results: dict = field(default_factory=dict)
    exposure: dict | None = None
    elapsed_s: float = 0.0
    link_bytes: dict = field(default_factory=dict)  # emulated network: {task: {"sent", "received"}}
    scheduler: dict | None = None  # launcher 'slurm': job and step ids, nodes, SLURM's elapsed times (slurm.json)

    def log(self, name: str) -> str:
        """A task's captured stdout+stderr (``name`` like ``worker:0``)."""
        return (self.run_dir / "logs" / (name.replace(":", "-") + ".log")).read_text(errors="replace")

    def task(self, name: str) -> dict:
        return next(t for t in self.tasks if t["name"] == name)

    def bytes_between(self, start: float, end: float) -> dict[str, dict[str, int]]:
        """Emulated network: bytes each task sent / received between two wall-clock times (``time.time()``).

        From the supervisor's samples (every 0.2 s): the last sample at or before ``start`` and
        the first at or after ``end``, so the window is widened by up to 0.2 s on each side.
        """
        path = self.run_dir / "link_samples.jsonl"
        packed = path.with_name(path.name + ".gz")  # a published run's (repro.book.build.compress_traces)
        if not path.exists() and not packed.exists():
            raise ClusterError("no link samples: bytes per window need an emulated network")
        text = path.read_text() if path.exists() else gzip.decompress(packed.read_bytes()).decode()
        samples = [json.loads(line) for line in text.splitlines() if line.strip()]
        before = [s for s in samples if s["time"] <= start] or samples[:1]
        after = [s for s in samples if s["time"] >= end] or samples[-1:]
        a, b = before[-1]["links"], after[0]["links"]
        return {t: {k: b[t][k] - a.get(t, {}).get(k, 0) for k in ("sent", "received")} for t in b}


@functools.lru_cache(maxsize=1)
def netns_available() -> bool:
    """Whether an unprivileged private network + PID namespace can be made here."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    try:
        r = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount-proc", "--map-root-user",
                            "ip", "link", "set", "lo", "up"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def resolve_isolation(isolation: str = "auto", allow_exposed: bool = False) -> Literal["netns", "none"]:
    """``netns`` or ``none``; refuses an exposed cluster unless ``allow_exposed``."""
    if isolation not in ISOLATIONS:
        raise ClusterError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
    if isolation in ("auto", "netns") and netns_available():
        return "netns"
    if isolation == "netns":
        raise ClusterUnavailable("isolation='netns' but no private network namespace can be made here "
                                 f"(unshare --net failed): it {NETNS_HOW}")
    if not allow_exposed:
        exposed = ("the cluster's gRPC servers (no authentication) would listen on all interfaces; "
                   "pass allow_exposed=True (--allow-exposed) to accept that")
        if isolation == "none":  # the caller's own choice
            raise ClusterError(f"isolation='none' was asked for: {exposed}")
        raise ClusterUnavailable(f"no private network namespace can be made here (unshare --net failed): {exposed}, "
                                 f"or get one: it {NETNS_HOW}")
    return "none"


def _exited(proc: subprocess.Popen) -> bool:
    """Whether ``proc`` has exited, without reaping it (its PID and group stay reserved)."""
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None and info.si_pid != 0


def leftover_processes(run_dir: str | Path) -> list[dict]:
    """Processes (this machine, any namespace) still running for the cluster run in ``run_dir``.

    Every cluster process carries its run directory on its command line; this is the orphan
    check the tests use (an empty list after a run, whatever happened).
    """
    import psutil

    token = str(Path(run_dir).resolve())
    found = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        cmd = p.info["cmdline"] or []
        if p.info["status"] != psutil.STATUS_ZOMBIE and any(token in a for a in cmd):
            found.append({"pid": p.info["pid"], "cmdline": " ".join(cmd)})
    return found


def thread_env(intra_op_threads: int) -> dict | None:
    """Environment giving every cluster process ``intra_op_threads`` TensorFlow intra-op threads (0: TF's default).

    Intra-op only: one inter-op thread deadlocks a parameter-server worker's dataset iterator
    (checked here), so the inter-op pool stays at TensorFlow's default.
    """
    return {"TF_NUM_INTRAOP_THREADS": str(intra_op_threads)} if intra_op_threads else None


def _program_cmd(program: str) -> list[str]:
    if not isinstance(program, str) or not (program.endswith(".py") or ":" in program):
        raise ClusterError(f"program must be 'module:function' or a .py file, got {program!r}")
    if program.endswith(".py"):
        program = str(Path(program).resolve())
        if not Path(program).is_file():
            raise ClusterError(f"program file {program} does not exist")
    return [sys.executable, "-m", "repro.cluster._entry", "node", "run", program]


def _check_shape(workers, ps, chief, server, program_roles, cluster, network, **seconds) -> tuple[str, ...]:
    """One-line :class:`ClusterError` for a bad cluster shape or time limit; the program's roles as a tuple."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ClusterError(f"workers must be an integer >= 1, got {workers!r}")
    if isinstance(ps, bool) or not isinstance(ps, int) or ps < 0:
        raise ClusterError(f"ps must be an integer >= 0, got {ps!r}")
    if server not in ("tf", "tcp"):
        raise ClusterError(f"server must be 'tf' or 'tcp', got {server!r}")
    for name, value in seconds.items():
        if not isinstance(value, (int, float)) or value <= 0:
            raise ClusterError(f"{name} must be a positive number of seconds, got {value!r}")
    program_roles = (program_roles,) if isinstance(program_roles, str) else tuple(program_roles)
    if not program_roles or any(r not in ROLES for r in program_roles):
        raise ClusterError(f"program_roles must be roles among {', '.join(ROLES)}, got {program_roles!r}")
    if cluster is None and program_roles == ("chief",) and not chief:
        raise ClusterError("the program runs on the chief but chief=False: "
                           "pass program_roles=('worker',) or chief=True")
    if network is not None and not isinstance(network, Network):
        raise ClusterError(f"network must be a repro.cluster.Network, got {network!r}")
    return program_roles


def _supervise(run_dir: Path, mode: str, child_env: dict, on_ready, limit: float, grace: float) -> None:
    """Start the supervisor of ``run_dir/plan.json`` (in a private namespace for ``netns``) and wait
    for it (at most ``limit`` seconds), calling ``on_ready`` once the servers are up; always tear down."""
    cmd = [sys.executable, "-m", "repro.cluster._entry", "supervise", str(run_dir / "plan.json")]
    if mode == "netns":
        cmd = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--map-root-user", "--kill-child"] + cmd
    if shutil.which("setpriv"):
        cmd = ["setpriv", "--pdeathsig", "KILL"] + cmd
    outer_deadline = time.monotonic() + limit
    with open(run_dir / "supervisor.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **child_env})
    try:
        fired = on_ready is None
        while not _exited(proc):
            if not fired and (run_dir / "ready.json").exists():
                fired = True
                on_ready(json.loads((run_dir / "ready.json").read_text()))
            if time.monotonic() > outer_deadline:
                raise ClusterTimeout(f"cluster supervisor did not finish within {limit:g} s; "
                                     f"see {run_dir / 'supervisor.log'}")
            time.sleep(0.05)
    finally:  # the whole process group: SIGTERM, then SIGKILL (stragglers too), the leader reaped
        stop_group([proc], grace + 2.0, group=True)


LAUNCHERS = ("local", "slurm")


def _check_launcher(launcher, network, cluster, on_ready) -> None:
    if launcher not in LAUNCHERS:
        raise ClusterError(f"launcher must be one of {', '.join(LAUNCHERS)}, got {launcher!r}")
    if launcher == "slurm":
        for what, value in (("an emulated network", network), ("explicit addresses (cluster=)", cluster),
                            ("on_ready", on_ready)):
            if value is not None:
                raise ClusterError(f"launcher 'slurm' takes no {what}: the tasks run on SLURM's nodes and network")


def run_cluster(program: str, *, workers: int = 2, ps: int = 1, chief: bool = True,
                program_roles: tuple[str, ...] = ("chief",), kwargs: dict | None = None,
                cluster: ClusterSpec | None = None, server: str = "tf",
                timeout: float = 300.0, ready_timeout: float = 60.0, grace: float = 3.0,
                run_dir: str | Path | None = None, isolation: str = "auto", allow_exposed: bool = False,
                network: Network | None = None, fail_fast: bool = True, env: dict | None = None,
                on_ready: Callable[[dict], None] | None = None, launcher: str = "local",
                separate: tuple[str, ...] = ()) -> ClusterResult:
    """Start a local cluster of real processes, run ``program`` on it, and tear everything down.

    * ``program``: ``"module:function"`` (called with ``**kwargs``; its JSON-able return value
      lands in ``ClusterResult.results["chief:0"]``) or a ``.py`` script; it runs, with TF_CONFIG
      set, in every task whose role is in ``program_roles`` (default: the chief; use
      ``("worker",)`` for all-reduce jobs where every worker runs the program). Every other task
      runs a ``tf.distribute.Server`` (``server="tf"``) or a TCP stand-in (``server="tcp"``, tests).
    * ``workers``/``ps``/``chief``: the local cluster's shape (ports picked free), or ``cluster``:
      explicit addresses (must be loopback in ``netns`` isolation).
    * ``timeout``: seconds the program may run once the servers are ready (``ready_timeout``);
      past it :class:`ClusterTimeout` names the hung task and its last log lines.
    * ``fail_fast``: a server that dies ends the job with :class:`TaskFailed` (else the job goes
      on and the death is in ``tasks``); a program exiting non-zero always fails the job.
    * ``isolation``: ``auto``/``netns`` run in a private network namespace; ``none`` (or
      ``auto`` where no namespace can be made) needs ``allow_exposed=True``.
    * ``on_ready(info)``: called in this process once every server accepts connections.

    * ``launcher``: ``"local"`` (processes on this machine) or ``"slurm"`` (SLURM job steps on the
      cluster's own network, :mod:`repro.cluster.slurm`; ``run_dir`` on a shared filesystem; no
      emulated network, no explicit addresses); ``separate``: SLURM, tasks (``"worker:1"``) that get
      a job step of their own, so that ``scancel`` can stop one alone.

    Logs: ``run_dir/logs/<role>-<index>.log``; also ``cluster.json``, ``exposure.json``,
    ``status.json``, ``results/`` (SLURM: ``slurm.json``, ``slurm/``). KeyboardInterrupt tears the
    cluster down (SLURM: ``scancel``) and propagates.
    """
    program_roles = _check_shape(workers, ps, chief, server, program_roles, cluster, network,
                                 timeout=timeout, ready_timeout=ready_timeout, grace=grace)
    _check_launcher(launcher, network, cluster, on_ready)
    net = network.validate() if network is not None else None
    program_cmd = _program_cmd(program)
    mode: Literal["netns", "none", "slurm"] = "slurm"
    if launcher != "slurm":
        mode = resolve_isolation(isolation, allow_exposed)
    if net and mode != "netns":
        if isolation == "none":  # the caller's own choice
            raise ClusterError("an emulated network needs the private network namespace (isolation='netns')")
        raise ClusterUnavailable(f"an emulated network needs a private network namespace, and none can be made here: "
                                 f"it {NETNS_HOW}")
    if net and cluster is not None:
        raise ClusterError("an emulated network assigns its own addresses: pass workers/ps/chief, not cluster")
    if net and net["ps_on_workers"] and ps > workers:
        raise ClusterError(f"ps_on_workers puts PS task k on worker k's node: {ps} PS tasks need >= {ps} workers, "
                           f"not {workers}")
    if cluster is not None and mode == "netns":
        remote = [t.name for t in cluster.tasks if not is_local(t)]
        if remote:
            raise ClusterError(f"a local cluster in a private namespace has only loopback; {remote[0]} is not local")
    run_dir = Path(run_dir) if run_dir is not None else Path(tempfile.mkdtemp(prefix="repro-cluster-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    child_env = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
    pythonpath = [os.getcwd()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    child_env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    child_env.update(env or {})
    plan = ClusterPlan(
        run_dir=str(run_dir.resolve()), isolation=mode, workers=workers, ps=ps, chief=bool(chief),
        cluster=cluster.as_dict() if cluster is not None else None,
        program_roles=list(program_roles), program_cmd=program_cmd,
        server_cmd=[sys.executable, "-m", "repro.cluster._entry", "node", "serve", "--kind", server],
        kwargs=kwargs or {}, timeout=float(timeout), ready_timeout=float(ready_timeout),
        grace=float(grace), fail_fast=bool(fail_fast), network=net, env=child_env, cwd=os.getcwd(),
        gpus=visible_gpus())
    plan.write()
    if launcher == "slurm":
        from . import slurm
        return ClusterResult(**slurm.run(plan, tuple(separate)))
    _supervise(run_dir, mode, child_env, on_ready, ready_timeout + timeout + 2 * grace + 30, grace)
    return _result(run_dir, mode)


def _result(run_dir: Path, mode: str) -> ClusterResult:
    status_path = run_dir / "status.json"
    if not status_path.exists():
        raise ClusterInterrupted(f"cluster supervisor ended without a status; supervisor log: "
                                 f"{tail(run_dir / 'supervisor.log')}")
    status = json.loads(status_path.read_text())
    if not status["ok"]:
        raise _ERRORS.get(status["kind"], ClusterRunFailed)(status["error"])
    results = read_results(run_dir)
    cluster = json.loads((run_dir / "cluster.json").read_text())["cluster"]
    return ClusterResult(run_dir=run_dir, isolation=mode, cluster=cluster, tasks=status["tasks"], results=results,
                         exposure=status.get("exposure"), elapsed_s=status.get("elapsed_s", 0.0),
                         link_bytes=status.get("link_bytes") or {})
