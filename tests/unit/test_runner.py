"""`repro run` = measure, then render: the harness runs in the command's own process, the notebook only
loads and shows the finished run; a run that fails or is interrupted is marked failed, never read."""

from pathlib import Path

import pandas as pd
import pytest

from repro.core import harness, params, results, runner
from repro.core import verdicts as V
from repro.core.claims import Measured


class Toy:
    """A stand-in experiment named like mnist_cnn (its claims.yaml)."""

    name = "mnist_cnn"

    def __init__(self, fail: BaseException | None = None):
        self.fail, self.measured = fail, 0

    def prepare(self, p):
        return None

    def measure(self, run, p, inputs):
        self.measured += 1
        if self.fail is not None:
            raise self.fail
        return harness.Output({"history": pd.DataFrame({"epoch": [1], "test_accuracy": [0.9]})}, {})

    def judge(self, result):
        return {"accuracy_12ep": Measured("90%", value=0.9, gate=V.not_comparable("a toy"))}

    def verdict_views(self, result, measured, ledger):
        return harness.Output({})


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_a_run_that_raises_is_marked_failed_and_never_read(results_root, error):
    with pytest.raises(type(error)):
        harness.run(Toy(fail=error), "smoke")
    base = results_root / "smoke" / "mnist_cnn"
    assert [p.name.startswith(results.FAILED) for p in base.iterdir()] == [True]
    assert results.finished_runs("mnist_cnn", "smoke") == []


def test_the_notebook_entry_measures_without_a_run_dir_and_loads_with_one(results_root):
    toy = Toy()
    run = harness.entry(toy)
    first = run("smoke")  # Run All on a Jupyter server, or papermill -p profile smoke
    assert toy.measured == 1 and harness.finished(first.run_dir)
    again = run("smoke", run_dir=first.run_dir)  # repro run / repro render: load and show
    assert toy.measured == 1 and again.run_dir == first.run_dir
    with pytest.raises(params.ParameterError, match="not a finished run"):
        run("smoke", run_dir=results_root / "nowhere")


def test_repro_run_measures_here_then_renders_the_finished_run(results_root, monkeypatch):
    toy, rendered = Toy(), []

    def fake_papermill(run_dir, log_output):
        # the notebook is executed only after the run is finished and renamed into place
        rendered.append((run_dir, harness.finished(run_dir), toy.measured))

    monkeypatch.setattr(harness, "experiment", lambda name: toy)
    monkeypatch.setattr(runner, "_papermill", fake_papermill)
    run_dir = runner.execute("mnist_cnn", "smoke", log_output=False)
    assert rendered == [(run_dir, True, 1)] and not run_dir.name.startswith(results.INCOMPLETE)


def test_render_refuses_a_run_that_is_not_complete(results_root):
    path = results.create_run_dir("mnist_cnn", "smoke")
    with pytest.raises(runner.RunFailed, match="not a complete run"):
        runner.render(path)


def test_discovery_checks_the_interface_and_the_folder_name(monkeypatch):
    import sys
    import types

    class Unnamed(Toy, harness.Experiment):
        name = "optimizers"

    class Incomplete(harness.Experiment):  # no verdict_views: cannot even be instantiated
        name = "mnist_cnn"

        def prepare(self, p):
            return None

    with pytest.raises(TypeError, match="verdict_views"):
        Incomplete()
    fake = types.ModuleType("fake_experiment")
    monkeypatch.setitem(sys.modules, "fake_experiment", fake)
    monkeypatch.setattr(params, "spec", lambda name: types.SimpleNamespace(module="fake_experiment"))
    fake.EXPERIMENT = Toy()  # the right members, but not declared an Experiment
    with pytest.raises(harness.ExperimentError, match=r"^experiment 'mnist_cnn': fake_experiment.EXPERIMENT must be"):
        harness.experiment("mnist_cnn")
    fake.EXPERIMENT = Unnamed()
    with pytest.raises(harness.ExperimentError, match="EXPERIMENT.name is 'optimizers', not its folder's name"):
        harness.experiment("mnist_cnn")


def test_every_experiment_folder_passes_discovery():
    for name in params.experiments():
        assert harness.experiment(name).name == name


def test_a_failed_render_never_stands_as_the_runs_notebook(results_root, monkeypatch):
    import papermill as pm

    toy = Toy()
    monkeypatch.setattr(harness, "experiment", lambda name: toy)

    def broken(src, out, **kw):  # papermill writes the executed notebook, then raises
        Path(out).write_text("{}")
        raise pm.PapermillExecutionError(0, 3, "boom", "ValueError", "boom", [])

    monkeypatch.setattr(pm, "execute_notebook", broken)
    with pytest.raises(runner.RunFailed, match="rendering the notebook failed: ValueError: boom") as err:
        runner.execute("mnist_cnn", "smoke", log_output=False)
    (run_dir,) = results.finished_runs("mnist_cnn", "smoke")
    assert not (run_dir / "notebook.ipynb").exists() and (run_dir / ".notebook-failed.ipynb").is_file()
    assert str(run_dir / ".notebook-failed.ipynb") in str(err.value)
    assert results.latest_run("mnist_cnn", "smoke", need="notebook.ipynb") is None  # never in a book


def test_rejudge_and_render_name_a_run_that_is_not_finished(results_root, capsys):
    from repro import cli

    path = results.create_run_dir("mnist_cnn", "smoke")
    (path / "provenance.json").write_text('{"status": "running"}')
    for command in ("rejudge", "render"):
        assert cli.main([command, str(path)]) == 2
        assert capsys.readouterr().err.strip().endswith("is not a finished run (provenance.json status)")


def test_two_kernels_started_from_one_directory_get_sockets_of_their_own(tmp_path, monkeypatch):
    """Two renders at once from one checkout (two `repro run`, make test's two workers): each kernel's connection
    file names its own Unix sockets. With jupyter_client's default (``kernel-ipc`` in the working directory, the
    counterfactual) both took ``kernel-ipc-1`` to ``-5`` and a kernel read the other's messages."""
    import json

    from jupyter_client.manager import AsyncKernelManager

    monkeypatch.chdir(tmp_path)
    manager = runner._ipc_kernel_manager()
    a, b = manager(kernel_name="python3"), manager(kernel_name="python3")  # as papermill makes them
    plain = [AsyncKernelManager(kernel_name="python3", transport="ipc") for _ in range(2)]

    def sockets(km) -> set[str]:
        km.write_connection_file()
        info = json.loads(Path(km.connection_file).read_text())
        Path(km.connection_file).unlink()
        return {f"{info['ip']}-{info[k]}" for k in info if k.endswith("_port")}

    ours = [sockets(km) for km in (a, b)]
    assert a.transport == "ipc" and len(ours[0]) == 5 and not ours[0] & ours[1]
    assert all(Path(s).is_absolute() and not s.startswith(str(tmp_path)) for s in ours[0] | ours[1])
    assert max(len(s) for s in ours[0]) < 100  # a Unix socket's path: at most 107 characters
    assert sockets(plain[0]) == sockets(plain[1])  # the default: one set of paths for both
