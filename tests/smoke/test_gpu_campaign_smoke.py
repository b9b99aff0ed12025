"""The GPU campaign's rehearsal: the GPU machine's exact path (``tools/gpu_campaign.sh run`` in pyenv's
Python 3.12 with the GPU image's packages and only ``.carry``'s wheels, installed by ``gpu_env``) on the
tiny ``rehearse`` profiles, in two calls: the first cut after one epoch of the optimizers
(``REPRO_STOP_AFTER_EPOCHS=1``), the second resumed from the state tarball the first left
(``tools/gpu_campaign.sh resume``); then collected here, rendered, built as a book; and what each step's
run must hold for the campaign to be worth running. About 2.5 min here (2 cores; the first time 30 s
more for the venv, cached under ~/.cache/repro, from the package index).

The rehearsal runs with ``tensorflow`` and ``torch`` unimportable in every process it starts (a
``sitecustomize`` on ``PYTHONPATH``), as on the lent GPU machine: any TensorFlow-only path of an
experiment, of its notebook or of the book build would make it fail. Keras itself imports TensorFlow
lazily where it is installed (seeding, serialization); with it blocked, Keras does without.
"""

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from repro.core import harness, paths
from repro.ml import training

pytestmark = pytest.mark.extras  # every test here needs an optional part (see tests/conftest.py)

STEPS = {"mnist": "mnist_cnn", "optimizers": "optimizers", "cost": "cost_study", "threads": "staleness"}


@pytest.fixture(scope="module")
def rehearsed(jax_only_env, tmp_path_factory) -> tuple[Path, Path, str]:
    """``tools/gpu_campaign.sh --rehearse`` into a temporary published-like dir, TensorFlow and PyTorch
    blocked: (its ``rehearse`` profile dir, the dir of its two calls, its output)."""
    tmp = tmp_path_factory.mktemp("rehearsal")
    env = {**jax_only_env, "REHEARSE_WORK": str(tmp / "work")}
    out = subprocess.run([str(paths.project_root() / "tools" / "gpu_campaign.sh"), "--rehearse", str(tmp / "pub")],
                         check=False, env=env, capture_output=True, text=True, timeout=1500)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    return tmp / "pub" / "rehearse", tmp / "work", out.stdout + out.stderr


@pytest.fixture(scope="module")
def rehearsal(rehearsed) -> Path:
    return rehearsed[0]


def _run(pub: Path, exp: str) -> harness.Result:
    base = pub / exp
    return harness.load_result(base / (base / "LATEST").read_text().strip())


def _stamped(fig, label: str) -> bool:
    fig = getattr(fig, "figure", fig)
    sup = getattr(fig, "_suptitle", None)
    return label in " | ".join([sup.get_text() if sup else ""] + [ax.get_title() for ax in fig.axes])


@pytest.mark.slow
def test_rehearsal_is_cut_then_resumed_on_the_gpu_machines_path(rehearsed):
    _, work, _ = rehearsed
    call1, call2 = work / "call1", work / "call2"
    log1, log2 = (call1 / "campaign.log").read_text(), (call2 / "campaign.log").read_text()
    # the first call: the probe first, the optimizers cut after one epoch (their state packed), the rest finished
    assert (call1 / "probe.json").is_file() and json.loads((call1 / "probe.json").read_text())["models"] == 14
    assert log1.index("probe:") < log1.index("optimizers: repro measure")
    assert "optimizers: stopped at the deadline" in log1 and "unfinished: optimizers" in log1
    assert sorted(p.name for p in call1.glob("*.tar.gz")) == ["cost.tar.gz", "mnist.tar.gz", "optimizers-state.tar.gz",
                                                             "threads-2.tar.gz", "threads.tar.gz"]
    with tarfile.open(call1 / "optimizers-state.tar.gz") as t:
        names = t.getnames()
    assert any(n.startswith("results/rehearse/optimizers/.checkpoints/") for n in names)
    assert any(n.startswith("jax-cache/") for n in names)  # the second call skips compiling
    assert len(list(call1.iterdir())) <= 8  # what the device tool brings back
    # the second call, after `resume`: the optimizers continue after epoch 1; the finished steps are skipped
    assert "resuming" in log2 and "after epoch 1" in log2 and "every step finished" in log2
    assert "cost: finished by an earlier call" in log2 and "mnist: finished by an earlier call" in log2
    assert "threads: finished by an earlier call" in log2  # both of its runs
    assert sorted(p.name for p in call2.glob("*.tar.gz")) == ["optimizers.tar.gz"]
    h = _run(rehearsed[0], "optimizers")["history"]
    assert sorted(h["epoch"].unique()) == [1, 2] and len(h) == 2 * 14  # both epochs, every model, once


@pytest.mark.slow
def test_rehearsal_ran_in_the_gpu_machines_python_with_only_the_carried_wheels(rehearsed, need):
    _, work, output = rehearsed
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    need("pyenv's Python 3.12 (the GPU machine's)", bool(list(pyenv.glob("versions/3.12*/bin/python"))),
         "pyenv install 3.12; without it the rehearsal runs in this Python, with its own packages")
    log1, log2 = (work / "call1" / "campaign.log").read_text(), (work / "call2" / "campaign.log").read_text()
    assert " 3.12." in log1.splitlines()[0] and "no Python 3.12" not in output
    assert (work / "site1" / "keras").is_dir()  # call 1: pip installed the wheels; call 2: as without pip
    assert "the wheels unzipped" in log2 and (work / "site2" / "keras").is_dir()


@pytest.mark.slow
def test_rehearsal_publishes_and_renders_every_step(rehearsal):
    for exp in STEPS.values():
        r = _run(rehearsal, exp)
        assert r.provenance["status"] == "complete" and r.provenance["keras_backend"] == "jax", exp
        dev = r.provenance["device"]
        assert dev["backend"] == "jax" and dev["backend_version"] and dev["device"] in ("CPU", "GPU"), exp
        assert (r.run_dir / "notebook.ipynb").is_file() and (r.run_dir / "ledger.csv").is_file(), exp
        nb = json.loads((r.run_dir / "notebook.ipynb").read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, (exp, errors[:1])
    index = paths.project_root() / "_build" / "published-rehearse" / "_build" / "html" / "book" / "intro.html"
    text = index.read_text()
    assert "has no run of" in text and "speedup" in text  # the left-out chapters are named
    assert Path(index.parents[1] / "notebooks" / "01_mnist_cnn.html").is_file()


@pytest.mark.slow
def test_rehearsed_mnist_and_optimizers_learn_under_jax(rehearsal):
    h = _run(rehearsal, "mnist_cnn")["history"]
    assert len(h) == 2 and h["loss"].iloc[-1] < h["loss"].iloc[0]  # it learns
    opt = _run(rehearsal, "optimizers")
    adam = opt["history"].query("variant == 'shared' and optimizer == 'adam'")
    assert adam.groupby("seed")["loss"].apply(lambda s: s.iloc[-1] < s.iloc[0]).all()
    # the campaign's trainer: the seven optimizers of both seeds in one compiled program, as on the H100
    assert opt.provenance["trainer"]["trainer"] == "fused" and (opt["history"]["trained_together"] == 14).all()
    assert opt["history"].groupby(["seed", "epoch"])["epoch_time_s"].nunique().eq(1).all()  # one group wall time
    assert not (opt.run_dir.parent / ".checkpoints").exists() or not any((opt.run_dir.parent / ".checkpoints").iterdir())
    from repro.experiments.optimizers import experiment as e

    label = f"JAX {opt.provenance['device']['backend_version']}, {opt.provenance['device']['device']}"
    figs = [e.plot_curves(opt), e.plot_overlay(opt), e.plot_sensitivity(opt)]
    assert all(_stamped(f, label) for f in figs if f is not None)  # each figure says what it ran on (sensitivity: none untuned)


@pytest.mark.slow
def test_rehearsed_thread_step_makes_two_runs_on_the_cpu(rehearsal):
    """The thread staleness runs twice (a decided verdict needs two runs that agree), its threads on the CPU."""
    runs = sorted(p.parent for p in (rehearsal / "staleness").glob("*/provenance.json"))
    assert len(runs) == 2
    for run in runs:
        r = harness.load_result(run)
        assert r.provenance["device"]["device"] == "CPU" and r.provenance["parameters"]["thread"]["workers"] == [1, 2]
        assert set(r["thread_staleness"]["workers"]) == {1, 2}


@pytest.mark.slow
def test_rehearsed_cost_study_pins_jax_children(rehearsal):
    r = _run(rehearsal, "cost_study")
    runs, dev = r["runs"].query("device == 'cpu'"), r.provenance["device"]
    assert dev["children_backends"] == ["jax"] and r.provenance["gpu"]["backend"] == "jax"
    assert set(runs["backend"]) == {"jax"} and (runs["n_affinity_inside"] == runs["cores"]).all()  # pinned children
    # one core: XLA's Eigen threading off, recorded per child and in provenance; more cores: the affinity bounds it
    flags = runs.set_index("label")["xla_flags"].fillna("")
    assert all((f == training.XLA_SINGLE_THREAD) == (c == 1) for f, c in zip(flags, runs["cores"]))
    assert dev["thread_limits"]["environment"]["1"]["XLA_FLAGS"] == training.XLA_SINGLE_THREAD
    ep = r["epochs"].query("network == 'mnist_cnn' and cores == 1")
    assert ep["loss"].iloc[-1] < ep["loss"].iloc[0]
    from repro.experiments.cost_study import experiment as e

    assert _stamped(e.plot_time_vs_cores(r), f"Keras on JAX {dev['backend_version']}, CPU")
