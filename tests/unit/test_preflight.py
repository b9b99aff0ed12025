"""The preflight (issue 56): every front-page `to_decide.command` is what a user runs, and here its preflight
reports missing only the data and hardware that the statement's `needs` names; a blocked item stops a run."""

from __future__ import annotations

import shlex

import pytest

from repro import cli
from repro.core import harness, params, preflight

WORDS = {"data": ("mnist", "cifar-10", "cifar10"), "devices": ("gpu",), "scheduler": ("cluster",)}


def _to_decide():
    return [(name, spec.to_decide) for name, spec in params.experiments().items() if spec.to_decide]


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """No datasets, no internet, no SLURM on PATH: the machine this suite runs on, made explicit."""
    for k, v in {"REPRO_DATA_DIR": tmp_path / "d", "KERAS_HOME": tmp_path / "k", "REPRO_OFFLINE_DIRS": "",
                 "REPRO_OFFLINE": "1", "PATH": tmp_path / "bin"}.items():
        monkeypatch.setenv(k, str(v))
    monkeypatch.setattr(preflight, "_backend_gpus", lambda backend: ([], "test: no GPU"))


@pytest.mark.parametrize("name,todo", _to_decide(), ids=[n for n, _ in _to_decide()])
def test_each_to_decide_command_parses_and_misses_only_what_its_needs_name(bare, name, todo, capsys):
    argv = shlex.split(todo.command)
    assert argv[:3] == ["repro", "run", name], todo.command
    args = cli.build_parser().parse_args(argv[1:])
    spec = params.spec(name)
    p = spec.resolve(args.profile, spec.parse_overrides(args.param))
    rep = preflight.report(harness.experiment(name), p, args.profile, spec.profiles[args.profile].cost,
                           spec.profiles[args.profile].gpus, harness.results.results_root(), probe=False)
    missing = [i for i in rep.items if not i.ok and i.blocks]
    assert missing, f"{todo.command}: nothing missing on a machine without data, GPU or cluster"
    needs = todo.needs.lower()
    for item in missing:
        assert item.what in WORDS and any(w in needs for w in WORDS[item.what]), (todo.command, item, needs)


def test_a_blocked_preflight_stops_the_run_before_prepare(bare, monkeypatch):
    from repro.experiments.optimizers import experiment as optimizers

    monkeypatch.setattr(optimizers.EXPERIMENT.__class__, "prepare",
                        lambda self, p: pytest.fail("prepare ran after a blocked preflight"))
    with pytest.raises(preflight.PreflightFailed, match="dataset 'cifar10' is not here and REPRO_OFFLINE is set"):
        harness.run(optimizers.EXPERIMENT, "smoke", {"dataset": "cifar10"})
    monkeypatch.setenv(preflight.SKIP_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="prepare ran"):
        harness.run(optimizers.EXPERIMENT, "smoke", {"dataset": "cifar10"})


def test_a_gpu_profile_is_refused_without_a_gpu_and_ready_with_one(bare, monkeypatch):
    item = preflight.devices_item(1)
    assert not item.ok and item.blocks and "needs 1 GPU" in item.detail
    monkeypatch.setattr(preflight, "_backend_gpus", lambda backend: (["NVIDIA H200 (105 GiB usable)"], "JAX"))
    assert preflight.devices_item(1).ok and "NVIDIA H200" in preflight.devices_item(1).detail


def test_the_forecast_follows_the_protocol_gate_and_the_runs():
    assert preflight.forecast("optimizers", False, "2 epochs, not 150", 3).detail.endswith("2 epochs, not 150")
    two = preflight.forecast("optimizers", True, "", 2)
    one = preflight.forecast("optimizers", True, "", 1)
    assert two.ok and "adam_best" in two.detail and not one.ok and "need 2 or more" in one.detail


def test_a_lone_missing_piece_refuses_with_its_own_error_and_several_are_listed():
    drained = preflight.Item("scheduler", False, "SLURM: node n3 is drained", "salloc", error="SLURM node n3 is drained")
    no_gpu = preflight.Item("devices", False, "no GPU", "a GPU")
    rep = preflight.Report("distributed", "paper", [preflight.Item("disk", True, "9 GiB free"), drained])
    assert preflight.refusal(rep) == "SLURM node n3 is drained"  # what a run said before it had a preflight
    rep.items.append(no_gpu)
    both = preflight.refusal(rep)
    assert both.startswith("distributed --profile paper cannot start: scheduler: SLURM: node n3 is drained")
    assert "devices: no GPU (get it: a GPU)" in both and "\n" not in both


def test_a_slurm_client_that_fails_is_a_missing_scheduler_not_a_crash(monkeypatch):
    from repro.cluster import slurm
    from repro.cluster.spec import ClusterRunFailed

    def failing(*args, **kw):
        raise ClusterRunFailed("'sinfo -h' failed: sinfo: fatal: Could not establish a configuration source")

    monkeypatch.setattr(slurm, "_slurm", failing)
    item = slurm.preflight_item(4)
    assert (item.what, item.ok, item.blocks) == ("scheduler", False, True) and "configuration source" in item.error
