"""A real four-node SLURM cluster on this machine, for the launcher's tests (``tools/slurm_testbed.sh``).

    up       start it (idempotent: a healthy testbed is left alone, a broken one is torn down first)
    down     stop every daemon and job process, delete every namespace, link and file it made
    status   print its daemons, namespaces and ``sinfo``; exit 0 when healthy
    env      print the ``export SLURM_CONF=...`` a shell needs to use it

Layout (root only; Debian's ``slurmctld``, ``slurmd``, ``munge``)::

    host (the login node)      veth rslogin 10.78.0.253 -- no daemon here, clients only
      netns rslurm-ctl         munged (unix socket), slurmctld (host name reproctl, 10.78.0.254:6817),
                               the bridge rsbr0 joining every link
      netns rslurm-n1..n4      slurmd (host name n1..n4, eth0 10.78.0.1-4, port 6818), its job steps

Each daemon with a host name also has its own mount namespace, where the testbed's hosts file
(``/etc/hosts`` plus the testbed's names) is bind-mounted over ``/etc/hosts``: node names resolve
there as on a real cluster (Horovod's Gloo resolves its own host name), and this machine's
``/etc/hosts`` is never touched. Every node link is shaped both ways with the package's ``tc`` emulation
(:class:`repro.cluster.Network`: ``tbf`` at ``$REPRO_SLURM_BANDWIDTH``, default 1gbit).
No cgroups: ``proctrack/linuxproc``, ``task/none``. No accounting database (``sacct`` has none to
read; the launcher falls back to ``scontrol``'s record of each job). Everything lives under
``$REPRO_SLURM_DIR`` (default ``/run/repro-slurm``): config, munge key, state, logs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("REPRO_SLURM_DIR", "/run/repro-slurm"))
CONF = ROOT / "slurm.conf"
NODES = ("n1", "n2", "n3", "n4")
SUBNET = "10.78.0"
CTL_NS, CTL_HOST, CTL_ADDR, LOGIN_ADDR = "rslurm-ctl", "reproctl", f"{SUBNET}.254", f"{SUBNET}.253"
BRIDGE, LOGIN_VETH = "rsbr0", "rslogin"
PARTITION = "repro"
CPUS = 2


class TestbedError(RuntimeError):
    """One line: what failed and where its log is."""


def _ns(node: str) -> str:
    return f"rslurm-{node}"


def _run(*cmd: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    argv = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    r = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "SLURM_CONF": str(CONF)})
    if check and r.returncode:
        raise TestbedError(f"'{' '.join(cmd)}'{f' in {ns}' if ns else ''} failed: "
                           f"{(r.stderr or r.stdout).strip().splitlines()[-1:] or ['(no output)']}")
    return r


def _tbf() -> list[str]:
    from repro.cluster import Network

    net = Network(bandwidth=os.environ.get("REPRO_SLURM_BANDWIDTH", "1gbit")).validate()
    return ["root", "tbf", "rate", net["bandwidth"], "burst", net["burst"], "latency", net["latency"]]


def _config() -> str:
    last = NODES[-1][1:]
    return f"""# the repro SLURM testbed (tools/slurm_testbed.sh); made by `up`, removed by `down`
ClusterName=repro
SlurmctldHost={CTL_HOST}({CTL_ADDR})
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={ROOT}/munge/munge.socket
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation={ROOT}/ctld
SlurmdSpoolDir={ROOT}/spool/%n
SlurmctldPidFile={ROOT}/run/slurmctld.pid
SlurmdPidFile={ROOT}/run/slurmd-%n.pid
SlurmctldLogFile={ROOT}/log/slurmctld.log
SlurmdLogFile={ROOT}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
KillWait=5
InactiveLimit=0
SlurmdTimeout=60
PropagateResourceLimits=NONE
NodeName=n[1-{last}] NodeAddr={SUBNET}.[1-{last}] CPUs={CPUS} State=UNKNOWN
PartitionName={PARTITION} Nodes=n[1-{last}] Default=YES MaxTime=INFINITE State=UP
"""


def _files() -> None:
    for d in ("munge", "ctld", "spool", "run", "log"):
        (ROOT / d).mkdir(parents=True, exist_ok=True)
    for node in NODES:
        (ROOT / "spool" / node).mkdir(exist_ok=True)
    os.chmod(ROOT / "munge", 0o700)
    key = ROOT / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
    CONF.write_text(_config())
    names = [f"{CTL_ADDR} {CTL_HOST}"] + [f"{SUBNET}.{k} {node}" for k, node in enumerate(NODES, 1)]
    hosts = Path("/etc/hosts").read_text() + "\n# the repro SLURM testbed\n" + "\n".join(names) + "\n"
    (ROOT / "hosts").write_text(hosts)
    # slurmd 22.05 loads a cgroup plugin at start even when nothing uses one; autodetection fails on a
    # hybrid mount, so name v1: proctrack/linuxproc and task/none make no cgroup
    (ROOT / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n")


def _network() -> None:
    tbf = _tbf()
    _run("ip", "netns", "add", CTL_NS)
    _run("ip", "link", "set", "lo", "up", ns=CTL_NS)
    _run("ip", "link", "add", BRIDGE, "type", "bridge", ns=CTL_NS)
    _run("ip", "addr", "add", f"{CTL_ADDR}/24", "dev", BRIDGE, ns=CTL_NS)
    _run("ip", "link", "set", BRIDGE, "up", ns=CTL_NS)
    # the login link: this (host) namespace reaches the cluster as a client; nothing listens here
    _run("ip", "link", "add", LOGIN_VETH, "type", "veth", "peer", "name", "rsl0", "netns", CTL_NS)
    _run("ip", "link", "set", "rsl0", "master", BRIDGE, ns=CTL_NS)
    _run("ip", "link", "set", "rsl0", "up", ns=CTL_NS)
    _run("ip", "addr", "add", f"{LOGIN_ADDR}/24", "dev", LOGIN_VETH)
    _run("ip", "link", "set", LOGIN_VETH, "up")
    for k, node in enumerate(NODES, 1):
        ns, veth = _ns(node), f"rs{node}"
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "set", "lo", "up", ns=ns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns, ns=CTL_NS)
        _run("ip", "link", "set", veth, "master", BRIDGE, ns=CTL_NS)
        _run("ip", "link", "set", veth, "up", ns=CTL_NS)
        _run("tc", "qdisc", "add", "dev", veth, *tbf, ns=CTL_NS)
        _run("ip", "addr", "add", f"{SUBNET}.{k}/24", "dev", "eth0", ns=ns)
        _run("ip", "link", "set", "eth0", "up", ns=ns)
        _run("tc", "qdisc", "add", "dev", "eth0", *tbf, ns=ns)


def _daemon(name: str, ns: str, host: str | None, argv: list[str], log: Path, ready, wait: float = 30.0) -> None:
    """Start one daemon in namespace ``ns`` (own host name ``host``), wait until ``ready()``; else one line."""
    inner = " ".join(argv)
    if host:  # its own host name, which resolves (as on a real cluster: Horovod's Gloo needs it) through the
        # testbed's hosts file, bind-mounted over /etc/hosts in the daemon's own mount namespace only
        cmd = f"hostname {host} && mount --bind {ROOT / 'hosts'} /etc/hosts && exec {inner}"
        _run("unshare", "--uts", "--mount", "--propagation", "private", "--", "sh", "-c", cmd, ns=ns, check=False)
    else:
        _run("sh", "-c", f"exec {inner}", ns=ns, check=False)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.3)
    where = f" on {host}" if host else ""
    raise TestbedError(f"{name}{where} did not start within {wait:g} s: see {log}")


def _munge_ok() -> bool:
    sock = str(ROOT / "munge" / "munge.socket")
    r = subprocess.run(f"munge -n -S {sock} | unmunge -S {sock}", shell=True, capture_output=True)
    return r.returncode == 0


def _ctld_ok() -> bool:
    r = _run("scontrol", "ping", check=False)
    return r.returncode == 0 and "UP" in r.stdout


def _node_state(node: str) -> str:
    r = _run("sinfo", "-h", "-N", "-n", node, "-o", "%T", check=False)
    return r.stdout.strip() if r.returncode == 0 else ""


def _daemons() -> None:
    m = ROOT / "munge"
    _daemon("munged", CTL_NS, None,
            ["munged", "--force", f"--socket={m}/munge.socket", f"--key-file={m}/munge.key",
             f"--pid-file={ROOT}/run/munged.pid", f"--log-file={ROOT}/log/munged.log",
             f"--seed-file={m}/munged.seed"], ROOT / "log/munged.log", _munge_ok)
    _daemon("slurmctld", CTL_NS, CTL_HOST, ["slurmctld", "-c", "-f", str(CONF)], ROOT / "log/slurmctld.log",
            _ctld_ok)
    for node in NODES:
        _daemon("slurmd", _ns(node), node, ["slurmd", "-f", str(CONF)], ROOT / f"log/slurmd-{node}.log",
                lambda n=node: _node_state(n) in ("idle", "mixed", "allocated"))


def _namespaces() -> list[str]:
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    names = [line.split()[0] for line in r.stdout.splitlines() if line.strip()]
    return [n for n in names if n == CTL_NS or n in {_ns(x) for x in NODES}]


def _outside() -> list[str]:
    """Testbed daemons whose network namespace is this one (there must be none)."""
    own = os.readlink("/proc/self/ns/net")
    bad = []
    for pid in _pids():
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == own:
                bad.append(f"{Path(f'/proc/{pid}/comm').read_text().strip()} (pid {pid})")
        except OSError:
            pass
    return bad


def _pids() -> list[int]:
    """Every process in the testbed's namespaces, and munged (which holds only a unix socket)."""
    pids = []
    for ns in _namespaces():
        r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        pids += [int(p) for p in r.stdout.split()]
    return sorted(set(pids))


def healthy() -> bool:
    if not CONF.exists() or len(_namespaces()) != len(NODES) + 1:
        return False
    return _munge_ok() and _ctld_ok() and all(_node_state(n) in ("idle", "mixed", "allocated") for n in NODES)


def up() -> int:
    if os.geteuid() != 0:
        raise TestbedError("the SLURM testbed needs root (network namespaces, daemons)")
    missing = [c for c in ("slurmctld", "slurmd", "munged", "sinfo", "ip", "tc") if not shutil.which(c)]
    if missing:
        raise TestbedError(f"{missing[0]} is not installed: apt-get install slurmctld slurmd slurm-client munge")
    if healthy():
        print(f"[slurm-testbed] already up ({CONF})")
        return 0
    down(quiet=True)
    _files()
    _network()
    _daemons()
    outside = _outside()
    if outside:
        raise TestbedError(f"testbed daemon outside its namespaces: {outside[0]}")
    print(f"[slurm-testbed] up: {len(NODES)} nodes; export SLURM_CONF={CONF}")
    print(_run("sinfo", "-N", "-l").stdout.rstrip())
    return 0


def down(quiet: bool = False) -> int:
    if CONF.exists() and _ctld_ok():
        _run("scancel", "--partition", PARTITION, check=False)
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        for pid in _pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while _pids() and time.monotonic() < deadline:
            time.sleep(0.1)
    subprocess.run(["ip", "link", "del", LOGIN_VETH], capture_output=True)
    for ns in _namespaces():
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    shutil.rmtree(ROOT, ignore_errors=True)
    left = [f"process {p}" for p in _pids()] + [f"namespace {n}" for n in _namespaces()]
    left += [f"link {LOGIN_VETH}"] if Path(f"/sys/class/net/{LOGIN_VETH}").exists() else []
    left += [f"directory {ROOT}"] if ROOT.exists() else []
    if left:
        raise TestbedError(f"down left {left[0]} behind ({len(left)} things in all)")
    if not quiet:
        print("[slurm-testbed] down: no daemon, namespace, link or file of the testbed is left")
    return 0


def status() -> int:
    print(f"config: {CONF if CONF.exists() else '(none)'}")
    print(f"namespaces: {' '.join(_namespaces()) or '(none)'}")
    print(f"processes: {len(_pids())}")
    if CONF.exists() and _ctld_ok():
        print(_run("sinfo", "-N", "-l").stdout.rstrip())
    ok = healthy()
    print("healthy" if ok else "not up")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    cmds = {"up": up, "down": down, "status": status, "env": lambda: print(f"export SLURM_CONF={CONF}") or 0}
    if len(argv) != 1 or argv[0] not in cmds:
        print(f"usage: tools/slurm_testbed.sh {'|'.join(cmds)}", file=sys.stderr)
        return 2
    try:
        return cmds[argv[0]]()
    except TestbedError as exc:
        print(f"slurm-testbed: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
