"""The SLURM watch's state machine, one test per transition, and scontrol's record read robustly (no SLURM)."""

from __future__ import annotations

import json

import pytest

from repro.cluster import slurm, slurm_watch
from repro.cluster.plan import ClusterPlan
from repro.cluster.slurm_watch import Look, Watch, advance, scontrol_json, scontrol_oneliner
from repro.cluster.supervisor import ClusterTimeout, TaskFailed

PROGRAMS = ["chief:0", "worker:0"]
LIMITS = dict(ready_timeout=20.0, timeout=100.0, grace=5.0)


def step(w: Watch, look: Look, fail_fast: bool = True) -> Watch:
    return advance(w, look, PROGRAMS, fail_fast=fail_fast, **LIMITS)


RUNNING = Watch("running", deadline=500.0)


def test_pending_and_configuring_wait_without_a_deadline():
    for state in ("PENDING", "CONFIGURING"):
        assert step(Watch(), Look(1e9, state, "Resources")) == Watch("pending")


def test_the_job_starting_opens_the_ready_deadline():
    assert step(Watch(), Look(100.0, "RUNNING")) == Watch("starting", 100.0 + 20.0 + 30.0)


def test_ready_json_opens_the_program_deadline():
    assert step(Watch("starting", 150.0), Look(120.0, "RUNNING", ready=True)) == Watch("running", 120.0 + 105.0)
    assert step(Watch(), Look(100.0, "RUNNING", ready=True)) == Watch("running", 205.0)  # both on one look


def test_every_program_exiting_0_is_done_even_if_the_job_has_ended():
    look = Look(130.0, "COMPLETED", exits={"chief:0": 0, "worker:0": 0, "ps:0": 0})
    assert step(RUNNING, look).phase == "done"
    assert step(RUNNING, Look(130.0, "RUNNING", exits={"chief:0": 0})).phase == "running"  # one still runs


def test_a_program_exiting_non_zero_fails_before_anything_else():
    look = Look(9e9, "FAILED", exits={"chief:0": 0, "worker:0": 137}, gone=(3,))
    w = step(RUNNING, look)
    assert (w.phase, w.failure, w.task) == ("failed", "task_failed", "worker:0")
    assert step(RUNNING, Look(130.0, "RUNNING", exits={"ps:0": 1})).phase == "running"  # a server's code: not here


def test_a_separate_step_gone_fails_only_with_fail_fast():
    look = Look(130.0, "RUNNING", gone=(3,))
    w = step(RUNNING, look)
    assert (w.phase, w.failure, w.task) == ("failed", "step_gone", 3)
    assert step(RUNNING, look, fail_fast=False) == RUNNING


def test_the_job_ending_before_a_program_finished_fails():
    w = step(RUNNING, Look(130.0, "CANCELLED", exits={"chief:0": 0}))
    assert (w.phase, w.failure, w.task) == ("failed", "job_ended", "worker:0")
    w = step(RUNNING, Look(130.0, "UNKNOWN"))  # scontrol forgot the job
    assert (w.failure, w.task) == ("job_ended", "chief:0")


def test_deadlines_fail_as_not_ready_or_timed_out():
    w = step(Watch("starting", 150.0), Look(150.5, "RUNNING"))
    assert (w.phase, w.failure) == ("failed", "not_ready")
    assert step(Watch("starting", 150.0), Look(150.0, "RUNNING")).phase == "starting"  # at the deadline: not past
    w = step(RUNNING, Look(500.5, "RUNNING", exits={"chief:0": 0}))
    assert (w.failure, w.task) == ("timed_out", "worker:0")


def test_pending_again_while_running_holds_the_state_and_its_deadline():
    assert step(RUNNING, Look(9e9, "PENDING")) == RUNNING  # a requeue: no deadline check while SLURM holds it


def test_done_and_failed_are_final():
    failed = Watch("failed", 1.0, "timed_out", "worker:0")
    for w in (Watch("done"), failed):
        assert step(w, Look(9e9, "RUNNING", exits={"worker:0": 1})) == w


# ---------------------------------------------------------------- scontrol


def test_scontrol_oneliner_keeps_values_with_spaces():
    out = ("JobId=42 JobName=repro ring-2 UserId=root(0) JobState=PENDING Reason=ReqNodeNotAvail, Reserved for "
           "maintenance Dependency=(null) RunTime=00:01:05 NodeList=n[1-4] WorkDir=/shared/my runs ExitCode=0:0\n")
    rec = scontrol_oneliner(out)
    assert rec["JobName"] == "repro ring-2" and rec["JobState"] == "PENDING"
    assert rec["Reason"] == "ReqNodeNotAvail, Reserved for maintenance"
    assert rec["WorkDir"] == "/shared/my runs" and rec["NodeList"] == "n[1-4]" and rec["ExitCode"] == "0:0"
    assert scontrol_oneliner("") == {}
    assert slurm._seconds(rec["RunTime"]) == 65


def test_scontrol_json_of_22_05_and_of_23_02_and_later():
    old = {"jobs": [{"job_state": "COMPLETED", "state_reason": "None", "name": "repro-x", "nodes": "n[1-2]",
                     "start_time": 1000, "end_time": 1065, "exit_code": 0}]}
    new = {"jobs": [{"job_state": ["RUNNING"], "state_reason": "None", "name": "repro-x", "nodes": "n1",
                     "start_time": {"set": True, "infinite": False, "number": 1000},
                     "end_time": {"set": True, "infinite": False, "number": 5000},
                     "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "number": 0},
                                   "signal": {"id": {"set": False, "number": 0}}}}]}
    a, b = scontrol_json(json.dumps(old)), scontrol_json(json.dumps(new), now=1010.0)
    assert a is not None and b is not None
    assert (a["JobState"], a["NodeList"], slurm._seconds(a["RunTime"]), a["ExitCode"]) == ("COMPLETED", "n[1-2]", 65, "0")
    assert (b["JobState"], slurm._seconds(b["RunTime"]), b["EndTime"], b["ExitCode"]) == ("RUNNING", 10, "Unknown", "0:0")
    assert scontrol_json(json.dumps({"jobs": []})) == {}
    assert scontrol_json("scontrol: error: unrecognized option '--json'") is None


def test_scontrol_is_asked_for_json_once_and_read_line_by_line_where_it_has_none(monkeypatch):
    calls = []

    def fake(*args, check=True, timeout=60.0):
        calls.append(args)
        return "" if "--json" in args else "JobId=7 JobState=RUNNING Reason=None\n"

    monkeypatch.setattr(slurm, "_slurm", fake)
    monkeypatch.setattr(slurm, "_JSON", None)
    assert slurm._scontrol_job("7")["JobState"] == "RUNNING"
    assert slurm._scontrol_job("7")["JobState"] == "RUNNING"
    assert sum("--json" in c for c in calls) == 1


# ---------------------------------------------------------------- the loop, on a fake job


class FakeJob:
    def __init__(self, states: list[str], log):
        self.states, self.job, self.log = states, "99", log

    def state(self):
        return (self.states.pop(0) if len(self.states) > 1 else self.states[0]), ""

    def steps_alive(self):
        return set()


def _plan(tmp_path, **changes) -> ClusterPlan:
    return ClusterPlan(run_dir=str(tmp_path), isolation="slurm", workers=1, ps=1, chief=True, fail_fast=True,
                       program_roles=["chief", "worker"], program_cmd=["p"], server_cmd=["s"], timeout=60,
                       ready_timeout=30, grace=1).model_copy(update=changes)


def _exit(tmp_path, name: str, code: int) -> None:
    d = tmp_path / "slurm" / "exit"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name.replace(':', '-')}.json").write_text(json.dumps({"code": code}))


def test_the_loop_returns_when_the_programs_are_done_and_raises_the_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(slurm, "POLL_S", 0.0)
    monkeypatch.setattr(slurm_watch, "READY_SLACK_S", 0.0)
    names = ["chief:0", "ps:0", "worker:0"]
    (tmp_path / "ready.json").write_text("{}")
    _exit(tmp_path, "chief:0", 0)
    _exit(tmp_path, "worker:0", 0)
    slurm._watch(FakeJob(["RUNNING"], tmp_path / "srun.log"), _plan(tmp_path), names, [])
    _exit(tmp_path, "worker:0", 3)
    with pytest.raises(TaskFailed, match="worker:0 .*while running the program"):
        slurm._watch(FakeJob(["RUNNING"], tmp_path / "srun.log"), _plan(tmp_path), names, [])
    (tmp_path / "slurm" / "exit" / "worker-0.json").unlink()
    (tmp_path / "ready.json").unlink()
    with pytest.raises(ClusterTimeout, match="not ready after 0.01 s"):
        slurm._watch(FakeJob(["RUNNING"], tmp_path / "srun.log"), _plan(tmp_path, ready_timeout=0.01), names, [])
