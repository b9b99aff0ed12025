"""Every error the user sees is one line from `repro`, exit 2; a bug keeps its traceback."""

from __future__ import annotations

import ast
import importlib
import shutil
from pathlib import Path

import pytest

import repro
from repro import cli
from repro.core.errors import ReproError

SRC = Path(repro.__file__).parent


def _error_classes():
    """(module, class name, its bases' names) of every public exception class defined in the package
    (a private one, such as the cluster supervisor's ``_Stop`` signal, never reaches the user)."""
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = [ast.unparse(b) for b in node.bases]
                families = ("Error", "Exception", "BadInput", "MissingEnvironment", "RunFailed", "DeadlineReached")
                if node.name.endswith("Error") or any(b.endswith(families) for b in bases):
                    module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
                    yield module, node.name, bases


def test_every_error_belongs_to_one_of_four_families():
    """Bad input (exit 2, a ValueError), missing environment (exit 2), a run that failed (exit 1) and a deadline
    (exit 3, a TimeoutError); a module's own name for an error is its family (ParameterError is BadInput); only
    the cluster's failures that a status file names by class stay classes of their own. 20 classes before."""
    from repro.cluster import ClusterError, ClusterInterrupted, ClusterTimeout, TaskFailed
    from repro.core import errors
    from repro.core.claims import ClaimsError
    from repro.core.params import ParameterError
    from repro.ml.data import DatasetUnavailable
    from repro.ml.training import DeadlineReached

    found = list(_error_classes())
    assert sorted(name for _, name, _ in found) == ["BadInput", "ClusterInterrupted", "ClusterTimeout",
                                                    "DeadlineReached", "MissingEnvironment", "ReproError",
                                                    "RunFailed", "TaskFailed"]
    for module, name, _ in found:
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, ReproError), f"{module}.{name} does not derive from ReproError"
    assert ParameterError is ClaimsError is ClusterError is errors.BadInput and issubclass(ParameterError, ValueError)
    assert DatasetUnavailable is errors.MissingEnvironment and DeadlineReached is errors.DeadlineReached
    assert all(issubclass(c, errors.RunFailed) and not issubclass(c, ValueError)
               for c in (TaskFailed, ClusterTimeout, ClusterInterrupted))
    assert issubclass(ClusterTimeout, TimeoutError) and issubclass(DeadlineReached, TimeoutError)
    assert [c.exit_code for c in (errors.BadInput, errors.MissingEnvironment, errors.RunFailed,
                                  errors.DeadlineReached)] == [2, 2, 1, 3]


def _one_line(capsys, argv, code=2):
    assert cli.main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_bad_price_table_is_one_line(tmp_path, capsys):
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: USD\nproviders: {}\n")
    err = _one_line(capsys, ["predict", "--hardware", "k80-p2.16xlarge", "--model", "vgg16", "--method", "ring",
                             "--prices", str(prices)])
    assert err.startswith("repro: error: price table") and str(prices) in err


def test_a_cluster_error_is_one_line(tmp_path, capsys):
    hardware = tmp_path / "hw.yaml"
    hardware.write_text("name: x\n")
    err = _one_line(capsys, ["predict", "--hardware", str(hardware), "--model", "vgg16", "--method", "ring"])
    assert err.startswith("repro: error: hardware file") and str(hardware) in err


def test_cluster_errors_are_raised_as_their_family(tmp_path, monkeypatch, capsys):
    """A cluster error is raised as its family where it happens: what the user gave wrong is bad input (exit 2),
    what this machine lacks is a missing environment whose message says how to get it (exit 2), a run that
    started and failed is a failed run (exit 1); each one line, also after the supervisor's status file."""
    import json

    from repro import cluster
    from repro.cluster import launch, slurm, slurm_task, supervisor
    from repro.core import errors

    def family(call, cls, code, *words):
        with pytest.raises(errors.ReproError) as err:
            call()
        exc = err.value
        assert type(exc) is cls and exc.exit_code == code, (type(exc), exc)
        assert errors.report(exc) == code
        line = capsys.readouterr().err
        assert line.count("\n") == 1 and all(w in line for w in words), line
        return exc

    bad_file = tmp_path / "nodes.txt"
    bad_file.write_text("worker node1:99999\n")
    family(lambda: cluster.parse_cluster_file(bad_file), errors.BadInput, 2, "bad port 99999")
    assert _one_line(capsys, ["cluster", "check", str(bad_file)]).startswith("repro: error: ")
    family(lambda: cluster.resolve_isolation("none"), errors.BadInput, 2, "allow_exposed=True")

    monkeypatch.setattr(launch, "netns_available", lambda: False)  # no unprivileged network namespace here
    family(lambda: cluster.resolve_isolation("netns"), errors.MissingEnvironment, 2, "unshare", "user namespaces")
    family(lambda: cluster.resolve_isolation("auto"), errors.MissingEnvironment, 2, "allow_exposed=True", "unshare")
    found = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd: None if cmd in ("sbatch", "tc") else found(cmd))
    family(lambda: slurm._slurm("sbatch", "--parsable", "job.sh"), errors.MissingEnvironment, 2,
           "sbatch is not on PATH", "salloc")
    family(lambda: supervisor.Supervisor._ip(None, "tc", "qdisc", "add"), errors.MissingEnvironment, 2,  # type: ignore[arg-type]
           "tc is not on PATH", "iproute2")
    monkeypatch.setenv("PATH", str(tmp_path))  # a SLURM client that is there but fails
    (tmp_path / "sinfo").write_text("#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller' >&2\n"
                                    "exit 1\n")
    (tmp_path / "sinfo").chmod(0o755)
    family(lambda: slurm._slurm("sinfo", "-h"), errors.RunFailed, 1, "'sinfo -h' failed", "Unable to contact")
    family(lambda: slurm_task.rendezvous(tmp_path, 2, timeout=0.01), cluster.ClusterTimeout, 1,
           "task 0 never published its address")

    # the supervisor runs in a process of its own and names its error's class in status.json; the
    # launcher raises it again as that class, of its family (a bug of the supervisor: a failed run)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for kind, cls, code in (("BadInput", errors.BadInput, 2), ("MissingEnvironment", errors.MissingEnvironment, 2),
                            ("RunFailed", errors.RunFailed, 1), ("TaskFailed", cluster.TaskFailed, 1),
                            ("ClusterTimeout", cluster.ClusterTimeout, 1), ("Stopped", cluster.ClusterInterrupted, 1),
                            ("SomethingElse", errors.RunFailed, 1)):
        (run_dir / "status.json").write_text(json.dumps({"ok": False, "kind": kind, "error": f"{kind} here"}))
        family(lambda: launch._result(run_dir, "netns"), cls, code, f"{kind} here")
    assert cluster.ClusterError is errors.BadInput and cluster.ClusterUnavailable is errors.MissingEnvironment
    assert cluster.ClusterRunFailed is errors.RunFailed
    assert all(issubclass(c, cluster.ClusterRunFailed) for c in (cluster.TaskFailed, cluster.ClusterTimeout))


def test_rejudge_of_a_missing_run_is_one_line(capsys):
    err = _one_line(capsys, ["rejudge", "results/none"])
    assert err.startswith("repro: error: rejudge: run directory") and "results/none does not exist" in err
    err = _one_line(capsys, ["render", str(SRC)])
    assert "is not a finished run (provenance.json status)" in err


def test_a_deadline_exits_3_and_a_bug_keeps_its_traceback(monkeypatch, capsys):
    from repro.ml.training import DeadlineReached

    def stopped(args):
        raise DeadlineReached("stopped after epoch 2 of 12")

    monkeypatch.setattr(cli, "_cmd_list", stopped)
    assert _one_line(capsys, ["list"], 3) == "repro: stopped at the deadline: stopped after epoch 2 of 12\n"

    def bug(args):
        raise KeyError("a bug")

    monkeypatch.setattr(cli, "_cmd_list", bug)
    with pytest.raises(KeyError):
        cli.main(["list"])
