"""The cluster runtime (repro.cluster): parsing, launching, teardown, isolation.

Fast tests use a TCP stand-in for the servers (``server="tcp"``: listens on the wildcard address
like a TF gRPC server, no TensorFlow); one slow test starts a real TensorFlow cluster.
"""

from __future__ import annotations

import _thread
import json
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from repro import cluster
from repro.cluster import ClusterError, ClusterTimeout, TaskFailed
from repro.cluster import cli as cluster_cli
from repro.cluster.spec import _parse_proc_net

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


# ------------------------------------------------------------------ cluster files


def test_role_lines_assign_roles_in_file_order(tmp_path):
    f = tmp_path / "nodes.txt"
    f.write_text("# thesis-style cluster\nps node1:2222\nworker node2:2222\n\nworker node3:2223  # gpu box\n"
                 "chief node4:2222\n")
    spec = cluster.parse_cluster_file(f)
    assert spec.names() == ["ps:0", "worker:0", "worker:1", "chief:0"]
    assert spec.as_dict() == {"chief": ["node4:2222"], "ps": ["node1:2222"],
                              "worker": ["node2:2222", "node3:2223"]}
    t = spec.by_global_index(2)
    assert (t.name, t.address) == ("worker:1", "node3:2223")
    assert spec.tf_config("worker", 1) == {"cluster": spec.as_dict(), "task": {"type": "worker", "index": 1}}
    with pytest.raises(ClusterError, match=r"index 4 out of range: the cluster has 4 tasks"):
        spec.by_global_index(4)


@pytest.mark.parametrize("ps, roles", [(1, ["ps:0", "worker:0", "worker:1"]), (2, ["ps:0", "ps:1", "worker:0"])])
def test_bare_nodefile_first_lines_are_ps(ps, roles):
    spec = cluster.parse_cluster_text("10.0.0.1:2222\n10.0.0.2:2222\n10.0.0.3:2222\n", ps=ps)
    assert spec.names() == roles
    assert spec.tasks[-1].address == "10.0.0.3:2222"


def test_mapping_formats_json_yaml_and_tf_config():
    expected = {"ps": ["a:1"], "worker": ["b:2", "c:3"]}
    as_json = cluster.parse_cluster_text('{"worker": ["b:2", "c:3"], "ps": ["a:1"]}')
    as_yaml = cluster.parse_cluster_text("cluster:\n  ps: [a:1]\n  worker:\n    - b:2\n    - c:3\n")
    assert as_json.as_dict() == as_yaml.as_dict() == expected
    assert as_json.names() == ["ps:0", "worker:0", "worker:1"]  # mapping order: chief, ps, worker
    spec, task = cluster.from_tf_config(json.dumps({"cluster": expected, "task": {"type": "worker", "index": 1}}))
    assert (task.name, task.address) == ("worker:1", "c:3")


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("ps a:1\nworker b\n", "line 2: expected HOST:PORT, got 'b'"),
    ("ps a:1\nworker b:x\n", "line 2: bad port 'x'"),
    ("ps a:1\nworker b:70000\n", "bad port 70000"),
    ("ps a:1\ngpu b:2\n", "line 2: unknown role 'gpu'"),
    ("ps a:1 extra\nworker b:2\n", "line 1: expected 'ROLE HOST:PORT' or 'HOST:PORT'"),
    ("ps a:1\nb:2\n", "mixes 'ROLE HOST:PORT' lines with bare"),
    ("ps a:1\nworker a:1\n", "duplicate address a:1 (ps:0 and worker:0)"),
    ("ps a:1\nps a:2\n", "needs at least one worker, got 0"),
    ("a:1\n", "1 bare address(es) leave no worker after 1 parameter server"),
    ("chief a:1\nchief a:2\nworker a:3\n", "at most one chief, got 2"),
    ('{"worker": ["a:1"], "gpu": ["b:2"]}', "unknown role 'gpu'"),
    ('{"worker": "a:1", "ps": 5}', "ps must be a list of HOST:PORT"),
    ("worker: [a:1\n", "not valid JSON/YAML"),
])
def test_malformed_cluster_files_are_one_line_errors(text, message):
    with pytest.raises(ClusterError) as err:
        cluster.parse_cluster_text(text, source="nodes.txt")
    assert message in str(err.value)
    assert "\n" not in str(err.value) and str(err.value).startswith("nodes.txt")
    assert isinstance(err.value, ValueError)


def test_port_in_use_is_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        spec = cluster.make_spec([("ps", "127.0.0.1", cluster.free_ports(1)[0]), ("worker", "localhost", port)])
        with pytest.raises(ClusterError, match=rf"^port {port} for worker:0 \(localhost:{port}\) is already in use"):
            cluster.check_ports_free(spec.tasks)
        # remote hosts are not checked from here
        cluster.check_ports_free(cluster.make_spec([("worker", "node9.example", port)]).tasks)


def test_port_in_use_fails_a_local_run_before_anything_starts(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        spec = cluster.make_spec([("chief", "127.0.0.1", cluster.free_ports(1)[0]), ("worker", "127.0.0.1", port)])
        with pytest.raises(ClusterError, match=rf"port {port} for worker:0 .* already in use"):
            cluster.run_cluster(f"{EX}:hello", cluster=spec, server="tcp", isolation="none", allow_exposed=True,
                                run_dir=tmp_path / "run")
    assert not (tmp_path / "run" / "logs" / "worker-0.log").exists()
    assert no_leftovers(tmp_path / "run")


def test_proc_net_parsing(tmp_path):
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    v4 = tmp_path / "tcp"
    v4.write_text(header + "   0: 0100007F:1F90 00000000:0000 0A 0 0 0 0 0 0 0 0\n"
                           "   1: 0100007F:1F91 0100007F:9C40 01 0 0 0 0 0 0 0 0\n"  # established: ignored
                           "   2: 00000000:0016 00000000:0000 0A 0 0 0 0 0 0 0 0\n")
    v6 = tmp_path / "tcp6"
    v6.write_text(header + "   0: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 0\n"
                           "   1: 0000000000000000FFFF00000100007F:1F92 00000000000000000000000000000000:0000 0A 0\n")
    assert _parse_proc_net(str(v4), False) == [("127.0.0.1", 8080), ("0.0.0.0", 22)]
    assert _parse_proc_net(str(v6), True) == [("::", 80), ("127.0.0.1", 8082)]


def test_bad_arguments_are_one_line_errors(monkeypatch, tmp_path):
    bad = [dict(workers=0), dict(workers=1.5), dict(ps=-1), dict(timeout=0), dict(server="grpc"),
           dict(network="1gbit"), dict(program="not-a-program"), dict(chief=False),
           dict(program_roles=("master",))]
    for kw in bad:
        args = {"program": f"{EX}:hello", **kw}
        with pytest.raises(ClusterError) as err:
            cluster.run_cluster(args.pop("program"), run_dir=tmp_path / "x", **args)
        assert "\n" not in str(err.value)
    with pytest.raises(ClusterError, match="isolation='none' was asked for.*allow_exposed=True"):
        cluster.resolve_isolation("none")
    assert cluster.resolve_isolation("none", allow_exposed=True) == "none"
    monkeypatch.setattr(cluster.launch, "netns_available", lambda: False)
    with pytest.raises(ClusterError, match="no private network namespace.*pass allow_exposed=True"):
        cluster.resolve_isolation("auto")
    with pytest.raises(ClusterError, match="isolation='netns' but no private network namespace"):
        cluster.resolve_isolation("netns", allow_exposed=True)


def test_cli_check_and_errors(tmp_path, capsys):
    f = tmp_path / "nodes.txt"
    f.write_text("n1:2222\nn2:2222\n")
    assert cluster_cli.main(["check", str(f), "--index", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["0", "ps:0", "n1:2222"] and out[1].split() == ["1", "worker:0", "n2:2222"]
    assert json.loads(out[2].removeprefix("TF_CONFIG=")) == {
        "cluster": {"ps": ["n1:2222"], "worker": ["n2:2222"]}, "task": {"type": "worker", "index": 0}}
    f.write_text("n1:2222\n")
    assert cluster_cli.main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("repro: error: cluster file") and err.count("\n") == 1


# ---------------------------------------------------------------- local launcher


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
    assert {int(l.rsplit(":", 1)[1]) for l in inside["listeners"]} == server_ports  # wildcard binds, like TF
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
    assert all(r["mbit_per_s"] > 150 for r in near.results.values())  # loopback, not the 100 Mbit/s link
    assert all(v["received"] < 100_000 for v in near.link_bytes.values())
    assert no_leftovers(near.run_dir)
    with pytest.raises(ClusterError, match="3 PS tasks need >= 3 workers, not 2"):
        cluster.run_cluster(f"{EX}:hello", workers=2, ps=3, network=net, run_dir=tmp_path / "bad")


# --------------------------------------------------------- a real TF cluster


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
