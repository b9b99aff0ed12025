"""The GPU campaign's rehearsal: every step under JAX on this CPU, on a JAX-only machine, collected,
rendered, built as a book; and what each step's run must hold for the campaign to be worth running.

The rehearsal runs with ``tensorflow`` and ``torch`` unimportable in every process it starts (a
``sitecustomize`` on ``PYTHONPATH``), as on the lent GPU machine: any TensorFlow-only path of an
experiment, of its notebook or of the book build would make it fail. Keras itself imports TensorFlow
lazily where it is installed (seeding, serialization); with it blocked, Keras does without.
"""

import json
import subprocess
from pathlib import Path

import pytest

from repro.core import harness, paths
from repro.ml import training

STEPS = {"mnist": "mnist_cnn", "optimizers": "optimizers", "cost": "cost_study"}


@pytest.fixture(scope="module")
def rehearsal(jax_only_env, tmp_path_factory) -> Path:
    """``tools/gpu_campaign.sh --rehearse`` into a temporary published-like dir, TensorFlow and PyTorch blocked."""
    tmp = tmp_path_factory.mktemp("rehearsal")
    out = subprocess.run([str(paths.project_root() / "tools" / "gpu_campaign.sh"), "--rehearse", str(tmp / "pub")],
                         check=False, env=jax_only_env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    return tmp / "pub" / "rehearse"


def _run(pub: Path, exp: str) -> harness.Result:
    base = pub / exp
    return harness.load_result(base / (base / "LATEST").read_text().strip())


def _stamped(fig, label: str) -> bool:
    fig = getattr(fig, "figure", fig)
    sup = getattr(fig, "_suptitle", None)
    return label in " | ".join([sup.get_text() if sup else ""] + [ax.get_title() for ax in fig.axes])


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
    # the campaign's trainer: the seven optimizers of a seed in one compiled program, as on the H100
    assert opt.provenance["trainer"]["trainer"] == "fused" and (opt["history"]["trained_together"] == 7).all()
    assert opt["history"].groupby(["seed", "epoch"])["epoch_time_s"].nunique().eq(1).all()  # one group wall time
    assert not (opt.run_dir.parent / ".checkpoints").exists() or not any((opt.run_dir.parent / ".checkpoints").iterdir())
    from repro.experiments.optimizers import experiment as e

    label = f"JAX {opt.provenance['device']['backend_version']}, {opt.provenance['device']['device']}"
    figs = [e.plot_curves(opt), e.plot_overlay(opt), e.plot_sensitivity(opt)]
    assert all(_stamped(f, label) for f in figs if f is not None)  # each figure says what it ran on (sensitivity: none untuned)


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
