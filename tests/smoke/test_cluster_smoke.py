"""The cluster runtime (repro.cluster) on real local clusters: launching, timeouts, failures, teardown,
isolation and emulated links.

Most clusters here use a TCP stand-in for the servers (``server="tcp"``: listens on the wildcard address
like a TF gRPC server, no TensorFlow); one test starts a real TensorFlow cluster. Parsing and argument
checks, which start no process, are in ``tests/unit/test_cluster.py``.
"""

from __future__ import annotations

import _thread
import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from repro import cluster
from repro.cluster import ClusterError, ClusterTimeout, TaskFailed

# one test at a time (the marker in pyproject.toml): it times shaped links' rates and the job timeouts
pytestmark = pytest.mark.alone

EX = "repro.cluster.examples"
NETNS = cluster.netns_available()
needs_netns = pytest.mark.skipif(not NETNS, reason="no private network namespace here (unshare --net)")


def iso():
    """Isolation arguments for runtime tests: a private namespace where possible."""
    return {"isolation": "auto", "allow_exposed": not NETNS}


def no_leftovers(run_dir, wait=10.0):
    """Every process of the run is gone (polling: killing a process tree is asynchronous)."""
    deadline = time.monotonic() + wait
    while (left := cluster.leftover_processes(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left == []


def test_local_run_returns_results_and_stops_everything(tmp_path):
    res = cluster.run_cluster(f"{EX}:hello", workers=2, ps=1, server="tcp", run_dir=tmp_path / "run", **iso())
    cfg = res.results["chief:0"]
    assert cfg["task"] == "chief:0"
    assert {k: len(v) for k, v in cfg["cluster"].items()} == {"chief": 1, "ps": 1, "worker": 2}
    assert cfg["cluster"] == res.cluster
    codes = {t["name"]: (t["kind"], t["exit_code"], t["stopped"]) for t in res.tasks}
    assert codes == {"ps:0": ("server", -15, True), "worker:0": ("server", -15, True),
                     "worker:1": ("server", -15, True), "chief:0": ("program", 0, False)}
    assert "listening on" in res.log("worker:1")
    assert no_leftovers(res.run_dir)


@needs_netns
def test_local_cluster_listens_on_loopback_only(tmp_path):
    seen = {}

    def on_ready(info):  # runs here, in the host's network namespace, while the cluster is up
        ports = {int(a.rsplit(":", 1)[1]) for addrs in info["cluster"].values() for a in addrs}
        seen["ports"] = ports
        seen["host_listeners"] = {p for _, p in cluster.listening_sockets()} & ports

    res = cluster.run_cluster(f"{EX}:sockets", workers=2, ps=1, server="tcp", run_dir=tmp_path / "run",
                              isolation="netns", on_ready=on_ready)
    inside = res.results["chief:0"]  # measured by a process inside the cluster's namespace
    assert inside["interfaces"] == ["lo"]
    assert inside["exposed"] == []
    server_ports = {int(a.rsplit(":", 1)[1]) for r in ("ps", "worker") for a in res.cluster[r]}
    assert {int(a.rsplit(":", 1)[1]) for a in inside["listeners"]} == server_ports  # wildcard binds, like TF
    assert res.exposure["exposed"] == [] and res.isolation == "netns"
    assert seen["host_listeners"] == set()  # nothing of the cluster listens in the host namespace


def test_hung_job_times_out_naming_the_process(tmp_path):
    with pytest.raises(ClusterTimeout) as err:
        cluster.run_cluster(f"{EX}:sleep", kwargs={"message": "finished step 7 of 10"}, server="tcp",
                            timeout=1.5, run_dir=tmp_path / "run", **iso())
    msg = str(err.value)
    assert msg.startswith("job timed out after 1.5 s: chief:0 still running")
    assert "last log lines of chief:0: finished step 7 of 10" in msg and "\n" not in msg
    assert no_leftovers(tmp_path / "run")


def test_failing_program_reports_its_traceback_tail(tmp_path):
    with pytest.raises(TaskFailed, match=r"^chief:0 exited with code 1 while running the program; "
                                         r"last log lines: .*RuntimeError: something broke$"):
        cluster.run_cluster(f"{EX}:fail", server="tcp", run_dir=tmp_path / "run", **iso())
    assert no_leftovers(tmp_path / "run")


def test_killed_worker_fails_fast_and_leaves_no_process(tmp_path):
    with pytest.raises(TaskFailed, match=r"^worker:1 was killed by SIGKILL while the program was running"):
        cluster.run_cluster(f"{EX}:kill_task", kwargs={"target": "worker:1", "then_sleep": 30},
                            server="tcp", run_dir=tmp_path / "run", **iso())
    assert no_leftovers(tmp_path / "run")
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert {t["name"]: t["exit_code"] for t in status["tasks"]}["worker:1"] == -signal.SIGKILL


def test_killed_worker_tolerated_without_fail_fast(tmp_path):
    res = cluster.run_cluster(f"{EX}:kill_task", kwargs={"target": "worker:0", "then_sleep": 0.5},
                              fail_fast=False, server="tcp", run_dir=tmp_path / "run", **iso())
    assert res.results["chief:0"] == {"killed": "worker:0"}
    assert res.task("worker:0")["exit_code"] == -signal.SIGKILL and not res.task("worker:0")["stopped"]
    assert res.task("worker:1")["stopped"] and res.task("chief:0")["exit_code"] == 0
    assert no_leftovers(res.run_dir)


def test_keyboard_interrupt_tears_down(tmp_path):
    run_dir = tmp_path / "run"

    def interrupt_when_ready():
        while not (run_dir / "ready.json").exists():
            time.sleep(0.05)
        time.sleep(0.3)
        _thread.interrupt_main()

    # interrupt_main() is a no-op unless Python's own SIGINT handler is installed; an earlier test's
    # library may have replaced it (seen once in CI), so install it for this test
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_when_ready, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            cluster.run_cluster(f"{EX}:sleep", server="tcp", run_dir=run_dir, timeout=60, **iso())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert no_leftovers(run_dir)


def test_killed_launcher_takes_the_cluster_with_it(tmp_path):
    run_dir = tmp_path / "run"
    code = (f"from repro import cluster; cluster.run_cluster('{EX}:sleep', server='tcp', run_dir={str(run_dir)!r}, "
            f"isolation='auto', allow_exposed={not NETNS})")
    launcher = subprocess.Popen([sys.executable, "-c", code])
    def chief_started():
        try:
            return "chief:0" in json.loads((run_dir / "pids.json").read_text())
        except (OSError, ValueError):
            return False

    deadline = time.monotonic() + 60
    while not chief_started():
        assert time.monotonic() < deadline and launcher.poll() is None
        time.sleep(0.05)
    # launcher, unshare (netns), supervisor, ps:0, worker:0, worker:1, chief:0
    assert len(cluster.leftover_processes(run_dir)) >= 6
    launcher.kill()
    launcher.wait()
    assert no_leftovers(run_dir)


@needs_netns
def test_emulated_network_caps_bandwidth_and_counts_bytes(tmp_path):
    res = cluster.run_cluster(f"{EX}:bandwidth", kwargs={"target": "worker:0", "megabytes": 2.5}, workers=1, ps=0,
                              server="tcp", network=cluster.Network("100mbit"), timeout=60,
                              run_dir=tmp_path / "run")
    assert res.cluster == {"chief": ["10.77.0.1:2222"], "worker": ["10.77.0.2:2222"]}
    out = res.results["chief:0"]
    assert out["bytes"] == 2_500_000
    # tbf caps the rate: at most 100 Mbit/s plus one 256 kB burst over 2.5 MB (+10.5 %); a busy CPU
    # can only make it slower, so this bound does not depend on the machine's load
    assert out["mbit_per_s"] <= 100 * 1.15
    assert res.link_bytes["worker:0"]["received"] >= 2_500_000  # payload + TCP/IP headers
    assert no_leftovers(res.run_dir)
    with pytest.raises(ClusterError, match="network bandwidth '1 gbit' is not in tc syntax"):
        cluster.run_cluster(f"{EX}:hello", network=cluster.Network("1 gbit"), run_dir=tmp_path / "bad")


@needs_netns
def test_ps_on_workers_shares_the_workers_nodes_and_links(tmp_path):
    """PS task k on worker k's node: its own address, one port up; a transfer between them crosses no link."""
    net = cluster.Network("100mbit", ps_on_workers=True)
    res = cluster.run_cluster(f"{EX}:bandwidth", kwargs={"target": "ps:1", "megabytes": 2.5}, workers=2, ps=2,
                              server="tcp", network=net, timeout=60, run_dir=tmp_path / "far")
    assert res.cluster == {"chief": ["10.77.0.1:2222"], "ps": ["10.77.0.2:2223", "10.77.0.3:2223"],
                           "worker": ["10.77.0.2:2222", "10.77.0.3:2222"]}
    assert set(res.link_bytes) == {"chief:0", "ps:0+worker:0", "ps:1+worker:1"}  # three nodes, three links
    assert res.results["chief:0"]["mbit_per_s"] <= 100 * 1.15
    assert res.link_bytes["ps:1+worker:1"]["received"] >= 2_500_000
    assert res.link_bytes["ps:0+worker:0"]["received"] < 100_000
    near = cluster.run_cluster(f"{EX}:bandwidth", kwargs={"target": "ps:same", "megabytes": 2.5}, workers=2, ps=2,
                               server="tcp", network=net, program_roles=("worker",), timeout=60,
                               run_dir=tmp_path / "near")
    assert {w: r["bytes"] for w, r in near.results.items()} == {"worker:0": 2_500_000, "worker:1": 2_500_000}
    # loopback, not the 100 Mbit/s link: faster than the transfer that crossed it (a busy machine slows both)
    assert all(r["mbit_per_s"] > res.results["chief:0"]["mbit_per_s"] for r in near.results.values())
    assert all(v["received"] < 100_000 for v in near.link_bytes.values())
    assert no_leftovers(near.run_dir)
    with pytest.raises(ClusterError, match="3 PS tasks need >= 3 workers, not 2"):
        cluster.run_cluster(f"{EX}:hello", workers=2, ps=3, network=net, run_dir=tmp_path / "bad")


@pytest.mark.slow
def test_real_tensorflow_cluster_one_ps_two_workers(tmp_path):
    """1 PS + 2 worker tf.distribute.Servers; the chief updates a variable on the PS over gRPC."""
    res = cluster.run_cluster(f"{EX}:tf_ping", kwargs={"value": 3.0}, workers=2, ps=1, server="tf",
                              timeout=120, ready_timeout=120, run_dir=tmp_path / "run", **iso())
    out = res.results["chief:0"]
    assert out["ps_variable"] == 4.0  # 1.0 + 3.0, on the PS
    assert "/job:ps/replica:0/task:0" in out["ps_device"]
    assert {k: v["value"] for k, v in out["squares"].items()} == {"worker:0": 9.0, "worker:1": 9.0}
    assert "/job:worker/replica:0/task:1" in out["squares"]["worker:1"]["device"]
    if NETNS:
        assert res.exposure["exposed"] == [] and res.exposure["interfaces"] == ["lo"]
    assert no_leftovers(res.run_dir)
