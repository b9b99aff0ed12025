"""The cluster runtime (repro.cluster) without starting a cluster: cluster files, arguments, port checks,
sockets and interface counters. Runs of real local clusters are in ``tests/smoke/test_cluster_smoke.py``.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from repro import cluster
from repro.cluster import ClusterError
from repro.cluster import cli as cluster_cli

EX = "repro.cluster.examples"


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


def test_listening_sockets_and_interface_counters():
    """psutil reads this namespace's listeners (an IPv4-mapped IPv6 address as IPv4; connected sockets
    left out) and its per-interface byte counters."""
    with socket.socket(socket.AF_INET) as v4, socket.socket(socket.AF_INET6) as v6, \
            socket.socket(socket.AF_INET) as client:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        v6.bind(("::ffff:127.0.0.1", 0))
        v6.listen()
        client.connect(v4.getsockname())
        found = cluster.listening_sockets()
        assert ("127.0.0.1", v4.getsockname()[1]) in found and ("127.0.0.1", v6.getsockname()[1]) in found
        assert client.getsockname()[1] not in {port for _, port in found}
    counters = cluster.interface_bytes()
    assert "lo" in counters and counters["lo"]["rx"] > 0 and set(counters["lo"]) == {"rx", "tx"}


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
    # what this machine lacks is not bad input: MissingEnvironment, the message saying how to get it
    with pytest.raises(cluster.ClusterUnavailable, match="no private network namespace.*pass allow_exposed=True"):
        cluster.resolve_isolation("auto")
    with pytest.raises(cluster.ClusterUnavailable, match="isolation='netns' but no private network namespace.*unshare"):
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



