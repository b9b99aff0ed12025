"""The backend-portability pieces, without a backend: labels, figure stamps, thread settings, gates.

The experiments themselves run under JAX on a JAX-only machine in the GPU campaign's rehearsal
(``tests/smoke/test_gpu_campaign_smoke.py``).
"""

import pytest

from repro.book import plots
from repro.core import provenance
from repro.ml import training


def _titles(fig) -> str:
    """Every title text of a figure (suptitle and axes' titles)."""
    sup = getattr(fig, "_suptitle", None)
    return " | ".join([sup.get_text() if sup else ""] + [ax.get_title() for ax in fig.axes])

def test_backend_label_reads_new_and_old_records_and_never_raises():
    new = {"device": {"backend": "jax", "backend_version": "0.4.38", "device": "CPU"}, "keras_backend": "jax"}
    assert provenance.backend_label(new) == "JAX 0.4.38, CPU"
    old = {"packages": {"tensorflow-cpu": "2.21.0"}}  # runs made before the device record existed
    assert provenance.backend_label(old) == "TensorFlow 2.21.0"
    assert provenance.backend_label({}) == "TensorFlow"
    assert provenance.backend_label(None) == "TensorFlow"
    assert provenance.backend_label({"device": "weird", "packages": None}) == "TensorFlow"
    assert provenance.backend_label({"device": {"backend": "torch"}}) == "PyTorch"


def test_stamp_puts_the_backend_on_every_kind_of_figure():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = {"device": {"backend": "jax", "backend_version": "0.4.38", "device": "GPU"}}
    fig, ax = plt.subplots()
    ax.set_title("Learning-rate sensitivity")
    assert plots.stamp(ax, rec).get_title() == "Learning-rate sensitivity\nKeras on JAX 0.4.38, GPU"
    fig2 = plt.figure()
    fig2.suptitle("Run time")
    plots.stamp(fig2, rec)
    assert _titles(fig2).startswith("Run time\nKeras on JAX 0.4.38, GPU")
    fig3 = plt.figure()
    assert "Keras on TensorFlow" in _titles(plots.stamp(fig3, {"keras_backend": "tensorflow"}))
    plt.close("all")


def test_thread_env_sets_xla_flags_only_for_jax_on_one_core(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    one = training.thread_env(1, {"XLA_FLAGS": "--xla_dump_to=/tmp/x"})
    assert one["XLA_FLAGS"] == "--xla_dump_to=/tmp/x " + training.XLA_SINGLE_THREAD and one["OMP_NUM_THREADS"] == "1"
    assert training.thread_env(1, {"XLA_FLAGS": training.XLA_SINGLE_THREAD}).get("XLA_FLAGS") is None  # not twice
    assert "XLA_FLAGS" not in training.thread_env(4, {}) and training.thread_env(4, {})["TF_NUM_INTRAOP_THREADS"] == "4"
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    assert "XLA_FLAGS" not in training.thread_env(1, {})


def test_configure_threads_under_jax_records_and_imports_nothing(monkeypatch):
    monkeypatch.setattr(training, "backend", lambda: "jax")
    monkeypatch.setenv("XLA_FLAGS", training.XLA_SINGLE_THREAD)
    rec = training.configure_threads(1)
    assert rec["backend"] == "jax" and rec["xla_flags"] == training.XLA_SINGLE_THREAD and "affinity" in rec["limit"]


def test_backend_info_needs_no_backend(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    info = training.backend_info()
    assert info["backend"] == "jax" and info["backend_version"]  # "unknown" where jax is not installed


def test_the_memory_gate_names_the_backend_the_children_ran():
    import pandas as pd

    from repro.core import paramtypes
    from repro.experiments.cost_study import verdicts

    one_run = paramtypes.partial("cost_study", {"repetitions": 1})
    memory = pd.DataFrame({"device": ["cpu"], "network": ["mnist_cnn"], "peak_rss_mb_mean": [700.0],
                           "rss_over_weights": [150.0]})
    jax_run = verdicts.memory_over_weights({"memory": memory, "runs": pd.DataFrame({"backend": ["jax"]})},
                                           one_run)
    assert "includes JAX itself" in jax_run.gate.detail
    old_run = verdicts.memory_over_weights({"memory": memory, "runs": pd.DataFrame({"cores": [1]})}, one_run)
    assert "includes TensorFlow itself" in old_run.gate.detail  # runs made before the backend column: TensorFlow
