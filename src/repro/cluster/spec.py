"""Cluster descriptions: tasks, cluster files, TF_CONFIG, ports and exposure checks.

Nothing here imports TensorFlow.

A cluster is an ordered tuple of :class:`Task` (role, index within the role, host, port).
The order is the order of the cluster file, so a machine's *global* index (the thesis'
``dist.py --nodefile F --index I``) picks one task.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, cast

from repro.core import errors, provenance

ROLES = ("chief", "ps", "worker", "evaluator")


# The cluster's errors are the core's families under the cluster's names, each raised where it happens:
# what the user gave is wrong (a cluster file, a port, an argument: exit 2);
ClusterError = errors.BadInput
# what this machine lacks (a command, a private network namespace, SLURM's usable nodes: exit 2), the
# message saying how to get it;
ClusterUnavailable = errors.MissingEnvironment
# a cluster run that started and failed (exit 1); its own classes where a status file names them:
# TaskFailed, ClusterTimeout, ClusterInterrupted.
ClusterRunFailed = errors.RunFailed


@dataclass(frozen=True)
class Task:
    role: str
    index: int
    host: str
    port: int

    @property
    def name(self) -> str:
        """``role:index``, the name used in errors and logs (``worker:1``)."""
        return f"{self.role}:{self.index}"

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def slug(self) -> str:
        """File-name form of :attr:`name` (``worker-1``)."""
        return f"{self.role}-{self.index}"


def name_of_slug(slug: str) -> str:
    """``worker-1`` (a :attr:`Task.slug`, a log or result file's stem) back to ``worker:1``."""
    role, _, index = slug.rpartition("-")
    return f"{role}:{index}"


def role_names(roles: Iterable[str]) -> list[str]:
    """``role:index`` of each task, in order, numbered within its role (as :func:`make_spec` does)."""
    counts: dict[str, int] = {}
    names = []
    for role in roles:
        names.append(f"{role}:{counts.get(role, 0)}")
        counts[role] = counts.get(role, 0) + 1
    return names


@dataclass(frozen=True)
class ClusterSpec:
    """An ordered, validated list of tasks (see :func:`make_spec`)."""

    tasks: tuple[Task, ...]

    def as_dict(self) -> dict[str, list[str]]:
        """The ``cluster`` part of TF_CONFIG: ``{"ps": ["h:p"], "worker": [...]}``."""
        out: dict[str, list[str]] = {}
        for role in ROLES:
            addrs = [t.address for t in self.tasks if t.role == role]
            if addrs:
                out[role] = addrs
        return out

    def tf_config(self, role: str, index: int) -> dict:
        """The TF_CONFIG mapping for one task."""
        self.task(role, index)
        return {"cluster": self.as_dict(), "task": {"type": role, "index": index}}

    def task(self, role: str, index: int) -> Task:
        for t in self.tasks:
            if t.role == role and t.index == index:
                return t
        raise ClusterError(f"no task {role}:{index} in the cluster ({', '.join(t.name for t in self.tasks)})")

    def by_global_index(self, i: int) -> Task:
        """The ``i``-th task in file order (the thesis' ``--index``)."""
        if not 0 <= i < len(self.tasks):
            n = len(self.tasks)
            raise ClusterError(f"index {i} out of range: the cluster has {n} tasks (0..{n - 1})")
        return self.tasks[i]

    def count(self, role: str) -> int:
        return sum(1 for t in self.tasks if t.role == role)

    def names(self) -> list[str]:
        return [t.name for t in self.tasks]


def make_spec(entries: Iterable[tuple[str, str, int]], *, source: str = "cluster") -> ClusterSpec:
    """Validate ``(role, host, port)`` entries (in order) and number them within each role."""
    counters: dict[str, int] = {}
    seen: dict[tuple[str, int], str] = {}
    tasks = []
    for role, host, port in entries:
        if role not in ROLES:
            raise ClusterError(f"{source}: unknown role {role!r} (allowed: {', '.join(ROLES)})")
        if not host or any(c.isspace() for c in host):
            raise ClusterError(f"{source}: bad host {host!r} for a {role} task")
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ClusterError(f"{source}: bad port {port!r} for {role} on {host} (1..65535)")
        task = Task(role, counters.get(role, 0), host, port)
        counters[role] = task.index + 1
        key = (host.lower(), port)
        if key in seen:
            raise ClusterError(f"{source}: duplicate address {task.address} ({seen[key]} and {task.name})")
        seen[key] = task.name
        tasks.append(task)
    if not tasks:
        raise ClusterError(f"{source}: no tasks")
    if counters.get("worker", 0) < 1:
        raise ClusterError(f"{source}: needs at least one worker, got 0")
    if counters.get("chief", 0) > 1:
        raise ClusterError(f"{source}: at most one chief, got {counters['chief']}")
    return ClusterSpec(tuple(tasks))


def _split_address(addr: str, source: str) -> tuple[str, int]:
    addr = addr.strip()
    if addr.startswith("["):  # [v6]:port
        host, sep, port = addr[1:].partition("]:")
    else:
        host, sep, port = addr.rpartition(":")
    if not sep or not host:
        raise ClusterError(f"{source}: expected HOST:PORT, got {addr!r}")
    try:
        return host, int(port)
    except ValueError:
        raise ClusterError(f"{source}: bad port {port!r} in {addr!r}") from None


def parse_cluster_text(text: str, *, source: str = "cluster file", ps: int = 1) -> ClusterSpec:
    """Parse a cluster description.

    Two formats:

    * lines ``ROLE HOST:PORT`` (``ps node1:2222``), ``#`` comments and blank lines ignored;
      or bare ``HOST:PORT`` lines (the thesis' ``nodefile.txt``): then the first ``ps``
      lines are parameter servers and the rest workers (our documented reading);
    * a JSON or YAML mapping ``{role: [HOST:PORT, ...]}``, optionally under a ``cluster``
      key (the TF_CONFIG layout). Roles are ordered chief, ps, worker, evaluator.
    """
    stripped = text.strip()
    if not stripped:
        raise ClusterError(f"{source}: empty")
    if stripped.startswith("{") or _looks_like_yaml_mapping(stripped):
        return parse_cluster_mapping(_load_mapping(stripped, source), source=source)
    entries, bare = [], []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source} line {lineno}"
        parts = line.split()
        if len(parts) == 1:
            bare.append(_split_address(parts[0], where))
        elif len(parts) == 2:
            host, port = _split_address(parts[1], where)
            if parts[0] not in ROLES:
                raise ClusterError(f"{where}: unknown role {parts[0]!r} (allowed: {', '.join(ROLES)})")
            entries.append((parts[0], host, port))
        else:
            raise ClusterError(f"{where}: expected 'ROLE HOST:PORT' or 'HOST:PORT', got {line!r}")
    if bare and entries:
        raise ClusterError(f"{source}: mixes 'ROLE HOST:PORT' lines with bare 'HOST:PORT' lines")
    if bare:
        if ps < 0 or ps >= len(bare):
            raise ClusterError(f"{source}: {len(bare)} bare address(es) leave no worker after {ps} parameter server(s)")
        entries = [("ps" if i < ps else "worker", h, p) for i, (h, p) in enumerate(bare)]
    return make_spec(entries, source=source)


def _looks_like_yaml_mapping(text: str) -> bool:
    """A first line ``word:`` followed by a space or the line end (``ps host:1`` and ``host:1`` are not)."""
    first = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    return re.match(r"^\s*[A-Za-z_]\w*\s*:(\s|$)", first) is not None


def _load_mapping(text: str, source: str):
    import yaml

    try:
        return yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as exc:
        raise ClusterError(f"{source}: not valid JSON/YAML ({str(exc).splitlines()[0]})") from None


def parse_cluster_mapping(mapping, *, source: str = "cluster") -> ClusterSpec:
    """``{"worker": ["h:p", ...], "ps": [...]}``, or a TF_CONFIG with a ``cluster`` key."""
    if isinstance(mapping, Mapping) and "cluster" in mapping:
        mapping = mapping["cluster"]
    if not isinstance(mapping, Mapping):
        raise ClusterError(f"{source}: expected a mapping of role to a list of HOST:PORT")
    unknown = [r for r in mapping if r not in ROLES]
    if unknown:
        raise ClusterError(f"{source}: unknown role {unknown[0]!r} (allowed: {', '.join(ROLES)})")
    entries = []
    for role in ROLES:
        addrs = mapping.get(role) or []
        if isinstance(addrs, str):
            addrs = [addrs]
        if not isinstance(addrs, list):
            raise ClusterError(f"{source}: {role} must be a list of HOST:PORT")
        for a in addrs:
            host, port = _split_address(str(a), f"{source} ({role})")
            entries.append((role, host, port))
    return make_spec(entries, source=source)


def parse_cluster_file(path, *, ps: int = 1) -> ClusterSpec:
    """Read and parse a cluster file (see :func:`parse_cluster_text`)."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClusterError(f"cannot read cluster file {path}: {exc.strerror}") from None
    return parse_cluster_text(text, source=f"cluster file {path}", ps=ps)


def from_tf_config(tf_config: str | Mapping | None = None) -> tuple[ClusterSpec, Task]:
    """The cluster and this process' task from a TF_CONFIG (default: ``$TF_CONFIG``)."""
    if tf_config is None:
        tf_config = os.environ.get("TF_CONFIG")
        if not tf_config:
            raise ClusterError("TF_CONFIG is not set")
    config: Mapping[str, Any]
    if isinstance(tf_config, str):
        try:
            config = json.loads(tf_config)
        except json.JSONDecodeError as exc:
            raise ClusterError(f"TF_CONFIG is not JSON ({exc.msg})") from None
    else:
        config = tf_config
    spec = parse_cluster_mapping(config.get("cluster"), source="TF_CONFIG")
    task: Mapping[str, Any] = config.get("task") or {}
    return spec, spec.task(str(task.get("type")), int(task.get("index", 0)))


# --------------------------------------------------------------------------- ports


GPU_ROLES = ("worker",)  # the roles that compute; parameter servers, chief and evaluator stay on the CPU


def visible_gpus(environ: Mapping | None = None, count: int | None = None) -> list[str]:
    """The GPU ids a local cluster may hand out: ``CUDA_VISIBLE_DEVICES`` when set (``""``: none),
    else ``0 .. count-1`` with ``count`` the GPUs ``nvidia-smi`` lists (0 where there is no NVIDIA driver)."""
    environ = os.environ if environ is None else environ
    if environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return [g.strip() for g in environ["CUDA_VISIBLE_DEVICES"].split(",") if g.strip() and g.strip() != "-1"]
    if count is None:
        count = len(provenance.nvidia_smi_gpus() or [])
    return [str(i) for i in range(count)]


def device_env(role: str, index: int, gpus: list[str]) -> dict[str, str]:
    """Environment of one task: workers share the GPUs round-robin (worker i gets ``gpus[i % len]``),
    every other role sees none, and TensorFlow grows GPU memory instead of taking all of it, so that
    several processes on one GPU neither run out of memory nor pile up on GPU 0."""
    if role not in ROLES:
        raise ClusterError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    visible = gpus[index % len(gpus)] if gpus and role in GPU_ROLES else ""
    return {"CUDA_VISIBLE_DEVICES": visible, "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports free right now on ``host`` (bound together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _local_hosts() -> set[str]:
    names = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", socket.gethostname().lower()}
    try:
        names.add(socket.getfqdn().lower())
        for info in socket.getaddrinfo(socket.gethostname(), None):
            names.add(cast(str, info[4][0]))  # an IP address: the int form is only for IPv6-less builds
    except OSError:
        pass
    return names


def is_local(task: Task) -> bool:
    host = task.host.lower()
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        pass
    return host in _local_hosts()


def port_in_use(port: int) -> bool:
    """Whether binding the wildcard address on ``port`` fails (what a TF server would do)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", port))
        return False
    except OSError:
        return True
    finally:
        s.close()


def check_ports_free(tasks: Iterable[Task]) -> None:
    """Raise :class:`ClusterError` for the first task on this machine whose port is taken."""
    for t in tasks:
        if is_local(t) and port_in_use(t.port):
            raise ClusterError(f"port {t.port} for {t.name} ({t.address}) is already in use on this machine")


# ------------------------------------------------------------------ exposure check


def listening_sockets() -> list[tuple[str, int]]:
    """TCP sockets listening in *this process'* network namespace: ``[(ip, port), ...]`` (an IPv4-mapped
    IPv6 address as its IPv4 address). psutil reads ``/proc/net/tcp{,6}``, which is this namespace's."""
    import psutil

    out = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status != psutil.CONN_LISTEN or not conn.laddr:
            continue
        ip = ipaddress.ip_address(conn.laddr.ip.split("%", 1)[0])  # a link-local address may carry %scope
        if ip.version == 6 and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        out.append((str(ip), conn.laddr.port))
    return out


def exposure_report(ports: Iterable[int] | None = None) -> dict:
    """What of this network namespace is reachable other than through loopback.

    A listener is *exposed* when it binds a non-loopback address that another machine could
    reach: a specific non-loopback address, or a wildcard (``0.0.0.0``/``::``, what TF's gRPC
    servers bind) while the namespace has any interface besides ``lo``. ``ports`` limits the
    check to those ports. Returns ``{"interfaces", "listeners", "exposed"}``.
    """
    ifaces = [name for _, name in socket.if_nameindex()]
    others = [n for n in ifaces if n != "lo"]
    wanted = None if ports is None else set(ports)
    listeners, exposed = [], []
    for ip, port in listening_sockets():
        if wanted is not None and port not in wanted:
            continue
        addr = ipaddress.ip_address(ip)
        shown = f"[{ip}]:{port}" if addr.version == 6 else f"{ip}:{port}"
        listeners.append(shown)
        if addr.is_loopback:
            continue
        if not addr.is_unspecified or others:
            exposed.append(shown)
    return {"interfaces": ifaces, "listeners": sorted(set(listeners)), "exposed": sorted(set(exposed))}


def interface_bytes() -> dict[str, dict[str, int]]:
    """Bytes received/sent per interface of *this process'* network namespace (psutil reads its
    ``/proc/net/dev``; the kernel's counters as they are, without psutil's wrap-around correction)."""
    import psutil

    return {name: {"rx": c.bytes_recv, "tx": c.bytes_sent}
            for name, c in psutil.net_io_counters(pernic=True, nowrap=False).items()}
