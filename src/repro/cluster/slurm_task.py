"""One task of a cluster run launched by SLURM (:mod:`repro.cluster.slurm`): what each ``srun`` task runs.

``python -m repro.cluster node --slurm --cluster-dir RUN --indices 0,1,3``

The run directory is on a filesystem every node shares (as on real clusters) and holds the
launcher's ``plan.json``. A task

1. takes its place from SLURM's task order: global index ``indices[$SLURM_PROCID]``, roles in
   the order chief, ps, workers (as the local launcher numbers them);
2. picks a free port on its node's cluster address and publishes ``slurm/tasks/<i>.json``
   (address, node, job and step ids), then waits for every task's (the rendezvous);
3. sends its output to ``logs/<role>-<index>.log`` and, with ``TF_CONFIG`` set, either serves
   (until every program task has ended) or, once every server accepts connections, runs the
   program (its return value to ``results/``) and writes ``slurm/exit/<role>-<index>.json``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from pathlib import Path

from repro.core import atomic

from .plan import ClusterPlan
from .plan import read as read_plan
from .spec import ClusterError, ClusterSpec, ClusterUnavailable, Task, make_spec, role_names
from .supervisor import ClusterTimeout

log = logging.getLogger(__name__)


def layout(plan: ClusterPlan) -> list[str]:
    """Role of every global task index: chief, ps..., workers... (the local launcher's order)."""
    return ["chief"] * int(plan.chief) + ["ps"] * plan.ps + ["worker"] * plan.workers


def node_address() -> str:
    """This node's address on the cluster network: ``$REPRO_SLURM_IFACE``'s, else the one routed towards
    the node that launched the step (``$SLURM_LAUNCH_NODE_IPADDR``), else the host name's."""
    iface = os.environ.get("REPRO_SLURM_IFACE")
    if iface:
        import psutil

        addrs = [a.address for a in psutil.net_if_addrs().get(iface, []) if a.family == socket.AF_INET]
        if not addrs:
            raise ClusterError(f"REPRO_SLURM_IFACE={iface}: no IPv4 address on that interface")
        return addrs[0]
    launch = os.environ.get("SLURM_LAUNCH_NODE_IPADDR")
    if launch:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((launch, 9))  # a route lookup only: UDP sends nothing
            addr = s.getsockname()[0]
        if not addr.startswith("127."):
            return addr
    addr = socket.gethostbyname(socket.gethostname())
    if addr.startswith("127."):
        raise ClusterUnavailable(f"node {socket.gethostname()}: its name resolves to loopback; set REPRO_SLURM_IFACE "
                                 "to the interface of the cluster network")
    return addr


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _publish(run_dir: Path, index: int, role: str) -> None:
    host = node_address()
    atomic.write_json(run_dir / "slurm" / "tasks" / f"{index}.json", {
        "index": index, "role": role, "host": host, "port": _free_port(host), "pid": os.getpid(),
        "node": os.environ.get("SLURMD_NODENAME", socket.gethostname()),
        "job": os.environ.get("SLURM_JOB_ID"), "step": os.environ.get("SLURM_STEP_ID"),
        "procid": os.environ.get("SLURM_PROCID")})


def rendezvous(run_dir: Path, total: int, timeout: float) -> tuple[ClusterSpec, list[dict]]:
    """Wait until all ``total`` tasks have published their address; the cluster in task order."""
    folder = run_dir / "slurm" / "tasks"
    deadline = time.monotonic() + timeout
    while len(list(folder.glob("*.json"))) < total:
        if time.monotonic() > deadline:
            have = sorted(int(p.stem) for p in folder.glob("*.json"))
            missing = [i for i in range(total) if i not in have]
            raise ClusterTimeout(f"SLURM rendezvous: task {missing[0]} never published its address "
                                 f"within {timeout:g} s")
        time.sleep(0.1)
    recs = [json.loads((folder / f"{i}.json").read_text()) for i in range(total)]
    return make_spec([(r["role"], r["host"], r["port"]) for r in recs], source="SLURM rendezvous"), recs


def step_of(run_dir: Path, name: str) -> str:
    """``JOB.STEP`` of task ``name`` (``worker:1``); a one-line error unless that step holds it alone."""
    recs = sorted((json.loads(p.read_text()) for p in (run_dir / "slurm" / "tasks").glob("*.json")),
                  key=lambda r: r["index"])
    mine = next((r for r, n in zip(recs, role_names(r["role"] for r in recs)) if n == name), None)
    if mine is None:
        raise ClusterError(f"no task {name} in this SLURM cluster")
    step = f"{mine['job']}.{mine['step']}"
    if sum(f"{r['job']}.{r['step']}" == step for r in recs) > 1:
        raise ClusterError(f"{name} shares SLURM step {step} with other tasks: launch it with separate=({name!r},)")
    return step


def _to_log(run_dir: Path, task: Task) -> None:
    log = run_dir / "logs" / f"{task.slug}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _programs_ended(run_dir: Path, programs: list[Task]) -> bool:
    return all((run_dir / "slurm" / "exit" / f"{t.slug}.json").exists() for t in programs)


def _serve(run_dir: Path, server: str, programs: list[Task]) -> None:
    """Serve until every program task has ended (then exit 0: the step ends with its last task)."""
    from . import node

    def watch():
        while not _programs_ended(run_dir, programs):
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    (node.serve_tf if server == "tf" else node.serve_tcp)()


def _wait_servers(servers: list[Task], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for t in servers:
        while True:
            try:
                with socket.create_connection((t.host, t.port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise ClusterTimeout(f"{t.name} not ready after {timeout:g} s (nothing accepts connections "
                                         f"on {t.address})") from None
                time.sleep(0.1)


def _run_program(run_dir: Path, plan: ClusterPlan, task: Task, servers: list[Task], first: bool) -> int:
    from . import node

    code = 1
    try:
        _wait_servers(servers, plan.ready_timeout)
        if first:
            atomic.write_json(run_dir / "ready.json", {"launcher": "slurm", "time": time.time()})
        node.run_program(plan.program_cmd[-1])
        code = 0
    finally:
        atomic.write_json(run_dir / "slurm" / "exit" / f"{task.slug}.json", {"code": code})
    return code


def main(run_dir: str, indices: str) -> int:
    """The task's whole life (see the module doc); its exit code."""
    run = Path(run_dir)
    plan = read_plan(run)
    order = [int(i) for i in indices.split(",")]
    index = order[int(os.environ["SLURM_PROCID"])]
    roles = layout(plan)
    _publish(run, index, roles[index])
    spec, _ = rendezvous(run, len(roles), plan.ready_timeout)
    task = spec.tasks[index]
    _to_log(run, task)
    os.environ.update(plan.env or {})
    os.environ.update({"TF_CONFIG": json.dumps(spec.tf_config(task.role, task.index)), "REPRO_CLUSTER_DIR": str(run),
                       "REPRO_CLUSTER_TASK": task.name, "REPRO_CLUSTER_LAUNCHER": "slurm",
                       "REPRO_CLUSTER_KWARGS": json.dumps(plan.kwargs or {})})
    log.info("%s at %s on %s (SLURM job %s.%s, task %s)", task.name, task.address,
             os.environ.get("SLURMD_NODENAME", "?"), os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURM_STEP_ID"),
             os.environ["SLURM_PROCID"])
    programs = [t for t in spec.tasks if t.role in plan.program_roles]
    servers = [t for t in spec.tasks if t.role not in plan.program_roles]
    if task.role in plan.program_roles:
        return _run_program(run, plan, task, servers, first=task == programs[0])
    _serve(run, plan.server_cmd[-1], programs)
    return 0
