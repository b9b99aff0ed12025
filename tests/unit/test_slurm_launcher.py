"""The SLURM launcher's logic without a cluster: job-step layout, the node check, parsing, parameters.

The launcher on a real SLURM cluster (the four-node testbed) is tested in tests/smoke/test_slurm_smoke.py.
"""

from __future__ import annotations

import json

import pytest

from repro import cluster
from repro.cluster import plan as cluster_plan
from repro.cluster import slurm, slurm_task
from repro.cluster.plan import ClusterPlan
from repro.cluster.spec import name_of_slug, role_names
from repro.core import params
from repro.experiments.distributed import runs as dist_runs
from repro.experiments.speedup import measure as sp_measure

PLAN = ClusterPlan(run_dir="/shared/run", isolation="slurm", chief=True, ps=1, workers=2, fail_fast=True,
                   program_roles=["chief", "worker"], program_cmd=["python", "-m", "prog"],
                   server_cmd=["python", "-m", "serve"], timeout=60, ready_timeout=30, grace=3)


def _plan(**changes) -> ClusterPlan:
    return PLAN.model_copy(update=changes)


def test_roles_follow_slurm_task_order_like_the_local_launcher():
    assert slurm_task.layout(PLAN) == ["chief", "ps", "worker", "worker"]
    assert role_names(slurm_task.layout(PLAN)) == ["chief:0", "ps:0", "worker:0", "worker:1"]
    assert slurm_task.layout(_plan(chief=False, ps=0)) == ["worker", "worker"]
    assert name_of_slug("worker-1") == "worker:1"  # a log or result file's stem back to its task


def test_one_step_per_cluster_unless_a_task_is_separate():
    assert slurm.steps(4, []) == [[0, 1, 2, 3]]
    assert slurm.steps(4, [3]) == [[0, 1, 2], [3]]
    cmds = slurm.step_commands(PLAN, [], 4, "repro-x")
    assert len(cmds) == 1
    assert "--nodes=4" in cmds[0] and "--ntasks=4" in cmds[0] and "--kill-on-bad-exit=1" in cmds[0]
    assert cmds[0][-2:] == ["--indices", "0,1,2,3"]
    assert cmds[0][cmds[0].index("repro.cluster"):][:3] == ["repro.cluster", "node", "--slurm"]


def test_a_separate_task_gets_its_own_node_and_step():
    """worker:1 alone in step 1 on the last node: scancel of that step stops it and nothing else."""
    main, own = slurm.step_commands(_plan(fail_fast=False), [3], 4, "repro-x")
    assert "--nodes=3" in main and "--relative=0" in main and main[-1] == "0,1,2"
    assert "--nodes=1" in own and "--ntasks=1" in own and "--relative=3" in own and own[-1] == "3"
    assert "--kill-on-bad-exit=0" in main  # fail_fast off: a dead worker does not end the PS job
    script = slurm._batch_script([main, own])
    assert [line.split()[0] for line in script.splitlines() if line.endswith("&")] == ["srun", "srun"]
    assert "wait $p" in script


def test_fewer_nodes_than_tasks_pack_them():
    (cmd,) = slurm.step_commands(_plan(ps=2), [], 4, "repro-x")
    assert "--nodes=4" in cmd and "--ntasks=5" in cmd


def _sinfo(monkeypatch, lines: list[str]):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SBATCH_PARTITION", raising=False)
    monkeypatch.setattr(slurm, "_slurm", lambda *a, **k: "\n".join(lines) + "\n")


def test_preflight_names_the_drained_node(monkeypatch):
    """The counterfactual pair: all nodes idle passes; the same cluster with n3 drained is a one-line error."""
    idle = [f"n{k}|idle|none|repro*" for k in range(1, 5)]
    _sinfo(monkeypatch, idle)
    assert slurm.preflight(4) == 4
    assert slurm.preflight(9) == 4  # more tasks than nodes: all of them, tasks packed
    _sinfo(monkeypatch, idle[:2] + ["n3|drain|disk check|repro*"] + idle[3:])
    with pytest.raises(cluster.ClusterUnavailable) as err:
        slurm.preflight(4)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("SLURM node n3 is drained (reason: disk check)")
    assert "needs 4 nodes of partition repro, 3 are usable" in msg
    assert slurm.preflight(3) == 3  # three tasks fit on the usable nodes


def test_preflight_sees_down_and_unresponsive_nodes(monkeypatch):
    _sinfo(monkeypatch, ["n1|idle|none|repro*", "n2|down*|Not responding|repro*"])
    with pytest.raises(cluster.ClusterUnavailable, match="SLURM node n2 is down"):
        slurm.preflight(2)
    _sinfo(monkeypatch, ["n1|idle|none|repro*", "n2|idle*|none|repro*", "n3|idle|none|other"])
    with pytest.raises(cluster.ClusterUnavailable, match="n2"):  # '*': not responding; n3 is another partition's
        slurm.preflight(2)


def test_no_slurm_is_one_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(cluster.ClusterUnavailable, match="sinfo is not on PATH"):
        slurm.preflight(2)


def test_run_cluster_refuses_what_slurm_cannot_do(tmp_path):
    with pytest.raises(cluster.ClusterError, match="launcher must be one of local, slurm"):
        cluster.run_cluster("repro.cluster.examples:hello", launcher="pbs", run_dir=tmp_path / "a")
    with pytest.raises(cluster.ClusterError, match="launcher 'slurm' takes no an emulated network"):
        cluster.run_cluster("repro.cluster.examples:hello", launcher="slurm", network=cluster.Network("1gbit"),
                            run_dir=tmp_path / "b")


def test_slurm_elapsed_times_parse():
    assert slurm._seconds("00:01:05") == 65
    assert slurm._seconds("1-02:00:00") == 93600
    assert slurm._seconds("Unknown") is None


def test_job_rows_and_provenance_note(tmp_path):
    d = tmp_path / "clusters" / "ring-2"
    d.mkdir(parents=True)
    (d / "slurm.json").write_text(json.dumps({
        "job_id": "7", "mode": "sbatch", "steps": {"0": "7.0"}, "nodes": ["n1", "n2"], "tasks": [{}, {}],
        "source": "scontrol (sacct: Slurm accounting storage is disabled)",
        "records": [{"id": "7", "state": "COMPLETED", "elapsed_s": 9, "start": "s", "end": "e"}]}))
    rows = slurm.job_rows(tmp_path / "clusters")
    assert rows == [{"cluster": "ring-2", "job_id": "7", "mode": "sbatch", "steps": "7.0", "nodes": "n1 n2",
                     "tasks": 2, "state": "COMPLETED", "elapsed_s": 9,
                     "elapsed_source": "scontrol (sacct: Slurm accounting storage is disabled)", "start": "s",
                     "end": "e"}]
    note = slurm.scheduler_note(rows, "everything")
    assert note["jobs"] == ["7"] and note["nodes"] == ["n1", "n2"] and note["elapsed_s_total"] == 9


def test_launcher_parameter_is_validated():
    with pytest.raises(params.ParameterError, match="launcher"):
        params.resolve("distributed", "smoke", {"launcher": "pbs"})
    assert params.resolve("speedup", "smoke", {"launcher": "slurm"}).launcher == "slurm"
    assert params.resolve("distributed", "smoke").launcher == "local"  # the default stays local


def test_largest_slurm_cluster_of_a_profile():
    p = params.resolve("distributed", "smoke")
    assert dist_runs.slurm_tasks(p) == 4  # chief + ps + 2 workers
    assert dist_runs.slurm_tasks(p.model_copy(update={"methods": ["ring"], "fault_tolerance": False})) == 2
    q = params.resolve("speedup", "smoke", {"launcher": "slurm"})
    assert sp_measure.slurm_tasks(q) == 5  # the distributed server at N = 2: chief + 2 shards + 2 workers
    assert sp_measure.slurm_tasks(q.model_copy(update={"launcher": "local"})) == 0
    assert sp_measure.slurm_tasks(q.model_copy(update={"probe_links": ["1gbit"], "train_link": "1gbit"})) == 0  # emulated: local


def test_tasks_meet_through_the_shared_directory(tmp_path, monkeypatch):
    """Each task publishes its address; the cluster is every task's, in SLURM task order."""
    monkeypatch.setenv("REPRO_SLURM_IFACE", "lo")
    monkeypatch.setenv("SLURM_JOB_ID", "12")
    for i, (role, step) in enumerate([("chief", "0"), ("ps", "0"), ("worker", "0"), ("worker", "1")]):
        monkeypatch.setenv("SLURM_STEP_ID", step)
        slurm_task._publish(tmp_path, i, role)
    spec, recs = slurm_task.rendezvous(tmp_path, 4, timeout=1)
    assert spec.names() == ["chief:0", "ps:0", "worker:0", "worker:1"]
    assert {t.host for t in spec.tasks} == {"127.0.0.1"} and len({t.port for t in spec.tasks}) == 4
    assert slurm_task.step_of(tmp_path, "worker:1") == "12.1"
    with pytest.raises(cluster.ClusterError, match="shares SLURM step 12.0 with other tasks"):
        slurm_task.step_of(tmp_path, "worker:0")  # scancel would stop the chief too
    with pytest.raises(cluster.ClusterTimeout, match="task 4 never published its address within 0.2 s"):
        slurm_task.rendezvous(tmp_path, 5, timeout=0.2)


def test_a_plan_round_trips_and_a_bad_one_is_one_line(tmp_path):
    """plan.json is written and read through ClusterPlan: the same plan back; a truncated, hand-edited or
    misspelt one is one line naming the file and the field, before any process starts."""
    plan = _plan(run_dir=str(tmp_path))
    assert cluster_plan.read(plan.write()) == plan
    assert cluster_plan.read(tmp_path) == plan  # the run directory holding it
    with pytest.raises(cluster.ClusterError, match="already used"):
        plan.write()
    raw = json.loads((tmp_path / "plan.json").read_text())
    for bad, field in (({**raw, "timeout": 0}, "timeout"), ({**raw, "workerz": 2}, "workerz"),
                       ({k: v for k, v in raw.items() if k != "ps"}, "ps")):
        (tmp_path / "plan.json").write_text(json.dumps(bad))
        with pytest.raises(cluster.ClusterError, match=field) as err:
            cluster_plan.read(tmp_path)
        assert "\n" not in str(err.value) and "plan.json" in str(err.value)
    (tmp_path / "plan.json").write_text('{"run_dir": ')
    with pytest.raises(cluster.ClusterError, match="not a readable cluster plan"):
        cluster_plan.read(tmp_path)
