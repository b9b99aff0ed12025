"""The supervisor: the process that owns one local cluster run.

Started by :func:`repro.cluster.run_cluster` (inside the private network and PID namespace in
``netns`` isolation), it reads ``plan.json`` from the run directory and

1. brings ``lo`` up (netns), allocates free ports, refuses ports already in use;
2. starts the servers (one process per task, stdout+stderr to ``logs/<role>-<index>.log``),
   waits until each accepts TCP connections (``ready_timeout``), records the listening
   sockets (``exposure.json``) and refuses to go on if any is reachable from outside;
3. starts the programs, waits for them (``timeout``), fails fast when a process dies;
4. always stops every process (SIGTERM, then SIGKILL after ``grace``) and writes
   ``status.json``: ``ok``, the error (one line) and its kind, and every task's exit code.

Being PID 1 of its PID namespace (netns isolation), its exit kills whatever is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from repro.core import atomic, errors
from repro.core.procs import stop_group

from .plan import ClusterPlan
from .plan import read as read_plan
from .spec import (
    ClusterError,
    ClusterRunFailed,
    ClusterSpec,
    ClusterUnavailable,
    Task,
    check_ports_free,
    device_env,
    exposure_report,
    free_ports,
    interface_bytes,
    make_spec,
    parse_cluster_mapping,
)

SUBNET = "10.77.0"  # emulated network: task k (from 1) is 10.77.0.k, the bridge 10.77.0.254
NODE_PORT = 2222
BRIDGE = "rcbr0"


def _emulated_entries(roles: list[tuple[str, int]], ps_on_workers: bool) -> list[tuple[str, str, int]]:
    """``(role, address, port)`` of every task: node k (from 1) is 10.77.0.k; with ``ps_on_workers``
    PS task k has no node of its own but is on worker k's, one port up."""
    names = [role for role, n in roles for _ in range(n)]
    if not ps_on_workers:
        return [(role, f"{SUBNET}.{k}", NODE_PORT) for k, role in enumerate(names, 1)]
    nodes = [i for i, role in enumerate(names) if role != "ps"]  # the chief's and the workers'
    host = {i: f"{SUBNET}.{k}" for k, i in enumerate(nodes, 1)}
    ps_hosts = iter([host[i] for i in nodes if names[i] == "worker"])
    return [(role, next(ps_hosts), NODE_PORT + 1) if role == "ps" else (role, host[i], NODE_PORT)
            for i, role in enumerate(names)]


class ClusterTimeout(ClusterRunFailed, TimeoutError):
    """A cluster process did not become ready, or the job did not finish, in time."""


class TaskFailed(ClusterRunFailed):
    """A cluster process exited with an error or died."""


class _Stop(BaseException):
    pass


def tail(path: Path, n: int = 5, width: int = 600) -> str:
    """The last ``n`` non-empty lines of a log, joined with `` | `` (one line)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            lines = [line.strip() for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    text = " | ".join(lines[-n:]) or "(empty log)"
    return text if len(text) <= width else "..." + text[-width:]


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


_write_json = atomic.write_json


class Supervisor:
    def __init__(self, plan: ClusterPlan):
        self.plan = plan
        self.run_dir = Path(plan.run_dir)
        self.logs = self.run_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.t0 = time.monotonic()
        self.procs: dict[str, dict] = {}  # name -> record (with "popen" while alive)
        self.spec: ClusterSpec | None = None
        self.exposure: dict | None = None
        self.veths: dict[str, str] = {}  # link name (the tasks on its node, '+'-joined) -> bridge-side veth
        self.nodes: dict[str, int] = {}  # emulated network: node address -> pid of the task holding its namespace
        self.links: dict[str, dict[str, int]] = {}

    # ------------------------------------------------------------------ setup
    def _network(self) -> None:
        if self.plan.isolation == "netns":
            r = subprocess.run(["ip", "link", "set", "lo", "up"], capture_output=True, text=True)
            if r.returncode:
                why = " ".join(r.stderr.split())
                raise ClusterUnavailable(f"cannot bring up lo in the private network namespace: {why} "
                                         "(it needs ip from iproute2 and unprivileged user namespaces)")

    def _make_spec(self) -> ClusterSpec:
        if self.plan.cluster:
            spec = parse_cluster_mapping(self.plan.cluster, source="cluster")
            check_ports_free(spec.tasks)
            return spec
        roles = [("chief", int(self.plan.chief)), ("ps", self.plan.ps), ("worker", self.plan.workers)]
        if self.plan.network:  # one namespace per node: 10.77.0.k, the same port everywhere
            return make_spec(_emulated_entries(roles, self.plan.network.get("ps_on_workers", False)),
                             source="emulated cluster")
        host = "127.0.0.1"
        ports = iter(free_ports(sum(n for _, n in roles), host))
        return make_spec([(role, host, next(ports)) for role, n in roles for _ in range(n)], source="local cluster")

    def _start(self, task: Task, kind: str) -> None:
        argv = list(self.plan.program_cmd if kind == "program" else self.plan.server_cmd)
        argv[argv.index("node") + 1:argv.index("node") + 1] = ["--cluster-dir", str(self.run_dir)]  # visible in ps
        assert self.spec is not None  # run() makes the spec before it starts a task
        env = dict(os.environ)
        env.update(device_env(task.role, task.index, self.plan.gpus or []))
        env.update(self.plan.env or {})  # the caller's explicit env wins
        env.update({
            "TF_CONFIG": json.dumps(self.spec.tf_config(task.role, task.index)),
            "REPRO_CLUSTER_DIR": str(self.run_dir),
            "REPRO_CLUSTER_TASK": task.name,
            "REPRO_CLUSTER_KWARGS": json.dumps(self.plan.kwargs or {}),
        })
        log = self.logs / f"{task.slug}.log"
        host_pid = self.nodes.get(task.host)
        if self.plan.network:  # the node's network and host-name namespaces (the first task makes them);
            # it waits for its address, then names its host by it (node.main)
            argv = (["nsenter", "--target", str(host_pid), "--net", "--uts", "--"] if host_pid
                    else ["unshare", "--net", "--uts", "--"]) + argv
            env["REPRO_CLUSTER_WAIT_ADDRESS"] = "1"
        with open(log, "ab") as out:
            popen = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.plan.cwd or None)
        if self.plan.network and not host_pid:
            self._attach(task, popen.pid)
            self.nodes[task.host] = popen.pid
        self.procs[task.name] = {"name": task.name, "role": task.role, "index": task.index, "address": task.address,
                                 "kind": kind, "pid": popen.pid, "log": str(log.relative_to(self.run_dir)),
                                 "started_s": round(time.monotonic() - self.t0, 3), "exit_code": None,
                                 "ended_s": None, "stopped": False, "popen": popen}
        _write_json(self.run_dir / "pids.json", {n: r["pid"] for n, r in self.procs.items()})

    # ------------------------------------------------------- emulated network
    def _ip(self, *args: str, pid: int | None = None) -> None:
        cmd = (["nsenter", "--target", str(pid), "--net"] if pid else []) + list(args)
        missing = next((c for c in (cmd[0], args[0]) if not shutil.which(c)), None)
        if missing:
            raise ClusterUnavailable(f"emulated network: {missing} is not on PATH (install "
                                     f"{'util-linux' if missing == 'nsenter' else 'iproute2'})")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            why = " ".join(r.stderr.split())
            raise ClusterUnavailable(f"emulated network: '{' '.join(args)}' failed: {why} (it needs the kernel's "
                                     "bridge, veth and sch_tbf modules in an unprivileged namespace)")

    def _bridge(self) -> None:
        self._ip("ip", "link", "add", BRIDGE, "type", "bridge")
        self._ip("ip", "addr", "add", f"{SUBNET}.254/24", "dev", BRIDGE)
        self._ip("ip", "link", "set", BRIDGE, "up")

    def _attach(self, task: Task, pid: int) -> None:
        """veth ``v<k>`` (bridge side) <-> ``eth0`` (in the task's namespace), tbf on both ends."""
        net = self.plan.network
        assert net is not None  # _start attaches a link only on an emulated network
        k = int(task.host.rsplit(".", 1)[1])
        tbf = ["root", "tbf", "rate", net["bandwidth"], "burst", net["burst"], "latency", net["latency"]]
        veth = f"v{k}"
        own, deadline = os.readlink("/proc/self/ns/net"), time.monotonic() + 10
        while True:  # Popen returns before the child's `unshare --net` has run
            try:
                if os.readlink(f"/proc/{pid}/ns/net") != own:
                    break
            except OSError:
                raise TaskFailed(f"{task.name} exited before its network namespace was made") from None
            if time.monotonic() > deadline:
                raise ClusterTimeout(f"{task.name}: no network namespace of its own after 10 s")
            time.sleep(0.005)
        self._ip("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
        self._ip("ip", "link", "set", veth, "master", BRIDGE)
        self._ip("ip", "link", "set", veth, "up")
        self._ip("tc", "qdisc", "add", "dev", veth, *tbf)
        self._ip("ip", "link", "set", "lo", "up", pid=pid)
        self._ip("ip", "link", "set", "eth0", "up", pid=pid)
        self._ip("tc", "qdisc", "add", "dev", "eth0", *tbf, pid=pid)
        # The address last: the task waits for it (node._wait_address), so when it can bind it, its link is
        # up, shaped and routed. Adding it earlier let a task connect before its link was up (ENETUNREACH).
        self._ip("ip", "addr", "add", f"{task.host}/24", "dev", "eth0", pid=pid)
        assert self.spec is not None  # run() makes the spec before it starts (and attaches) a task
        self.veths["+".join(t.name for t in self.spec.tasks if t.host == task.host)] = veth

    def link_bytes(self) -> dict[str, dict[str, int]]:
        """Bytes each node sent and received on its link (bridge-side veth; the bridge side receives what
        the node sends), keyed by the node's tasks ('+'-joined: ``ps:0+worker:0`` with ``ps_on_workers``).
        A node's link disappears with its namespace when it exits, so the last sample
        (taken every 0.2 s while the job runs) stands for it."""
        dev = interface_bytes()
        for name, v in self.veths.items():
            if v in dev:
                self.links[name] = {"sent": dev[v]["rx"], "received": dev[v]["tx"]}
        with open(self.run_dir / "link_samples.jsonl", "a") as f:  # wall-clock series: bytes in a time window
            f.write(json.dumps({"time": time.time(), "links": self.links}) + "\n")
        return dict(self.links)

    def _poll(self) -> list[dict]:
        """Records of processes that exited since the last poll."""
        done = []
        for rec in self.procs.values():
            popen = rec.get("popen")
            if popen is not None and popen.poll() is not None:
                rec["exit_code"] = popen.returncode
                rec["ended_s"] = round(time.monotonic() - self.t0, 3)
                rec.pop("popen")
                done.append(rec)
        return done

    def _died(self, rec: dict, when: str) -> TaskFailed:
        return TaskFailed(f"{rec['name']} {describe_exit(rec['exit_code'])} {when}; "
                          f"last log lines: {tail(self.run_dir / rec['log'])}")

    def _wait_ready(self, servers: list[Task]) -> None:
        deadline = time.monotonic() + self.plan.ready_timeout
        pending = list(servers)
        while pending:
            for rec in self._poll():
                raise self._died(rec, "before the cluster was ready")
            still = []
            for t in pending:
                try:
                    with socket.create_connection((t.host, t.port), timeout=0.5):
                        pass
                except OSError:
                    still.append(t)
            pending = still
            if pending and time.monotonic() > deadline:
                t = pending[0]
                raise ClusterTimeout(
                    f"{t.name} not ready after {self.plan.ready_timeout:g} s (nothing accepts connections on "
                    f"{t.address}); last log lines: {tail(self.logs / f'{t.slug}.log')}")
            if pending:
                time.sleep(0.1)

    # -------------------------------------------------------------------- run
    def run(self) -> None:
        self._network()
        self.spec = self._make_spec()
        if self.plan.network:
            self._bridge()
        program_roles = set(self.plan.program_roles)
        programs = [t for t in self.spec.tasks if t.role in program_roles]
        servers = [t for t in self.spec.tasks if t.role not in program_roles]
        if not programs:
            raise ClusterError(f"no task runs the program: the cluster has no {'/'.join(sorted(program_roles))} task")
        _write_json(self.run_dir / "cluster.json", {"cluster": self.spec.as_dict(), "tasks": self.spec.names(),
                                                     "isolation": self.plan.isolation})
        for t in servers:
            self._start(t, "server")
        self._wait_ready(servers)
        self.exposure = exposure_report(ports=[t.port for t in self.spec.tasks])
        if self.plan.network:  # the listeners live in the tasks' own namespaces, on 10.77.0.k
            self.exposure["note"] = "emulated network: tasks in their own namespaces behind a private bridge"
        _write_json(self.run_dir / "exposure.json", self.exposure)
        if self.plan.isolation == "netns" and self.exposure["exposed"]:
            raise ClusterRunFailed(f"cluster reachable from outside on {', '.join(self.exposure['exposed'])} "
                                   f"(interfaces: {', '.join(self.exposure['interfaces'])})")
        _write_json(self.run_dir / "ready.json", {"cluster": self.spec.as_dict(),
                                                  "ready_s": round(time.monotonic() - self.t0, 3)})
        for t in programs:
            self._start(t, "program")
        deadline = time.monotonic() + self.plan.timeout
        running = {t.name for t in programs}
        next_sample = 0.0
        while running:
            if self.veths and time.monotonic() >= next_sample:
                self.link_bytes()
                next_sample = time.monotonic() + 0.2
            for rec in self._poll():
                if rec["kind"] == "program":
                    running.discard(rec["name"])
                    if rec["exit_code"] != 0:
                        raise self._died(rec, "while running the program")
                elif self.plan.fail_fast:
                    raise self._died(rec, "while the program was running")
            if running and time.monotonic() > deadline:
                hung = sorted(running, key=self.spec.names().index)
                raise ClusterTimeout(
                    f"job timed out after {self.plan.timeout:g} s: {', '.join(hung)} still running; last log "
                    f"lines of {hung[0]}: {tail(self.logs / (hung[0].replace(':', '-') + '.log'))}")
            time.sleep(0.05)

    # --------------------------------------------------------------- teardown
    def teardown(self) -> None:
        """Stop every task's process (SIGTERM, SIGKILL after ``grace``); each record gets its exit code."""
        alive = [r for r in self.procs.values() if "popen" in r]
        for rec in alive:
            rec["stopped"] = True

        def reap(_: subprocess.Popen) -> None:
            self._poll()

        stop_group([r["popen"] for r in alive], self.plan.grace, on_exit=reap)
        self._poll()

    def records(self) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "popen"} for r in self.procs.values()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sup = Supervisor(read_plan(argv[0]))

    def stop(signum, frame):
        raise _Stop(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    status: dict[str, Any] = {"ok": False, "error": None, "kind": None}
    try:
        sup.run()
        status["ok"] = True
    except errors.ReproError as exc:  # a bad description, a task that failed, a time-out: said in the status
        status.update(error=str(exc), kind=type(exc).__name__)
    except _Stop as exc:
        status.update(error=f"cluster stopped by {exc.args[0]}", kind="Stopped")
    except Exception as exc:  # noqa: BLE001 - a bug here must still tear everything down and say what happened
        status.update(error=f"supervisor failed: {type(exc).__name__}: {exc}", kind="RunFailed")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # finish the teardown whatever arrives now
        if sup.veths:
            status["link_bytes"] = sup.link_bytes()
        sup.teardown()
        status["tasks"] = sup.records()
        status["exposure"] = sup.exposure
        status["elapsed_s"] = round(time.monotonic() - sup.t0, 3)
        _write_json(sup.run_dir / "status.json", status)
    return 0 if status["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
