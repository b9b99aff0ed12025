"""`optimizers` and `cost_study` run unchanged under KERAS_BACKEND=jax, on a machine without TensorFlow.

Each run is a subprocess (its children too, for the cost study) in which importing ``tensorflow`` or
``torch`` fails (a ``sitecustomize`` on ``PYTHONPATH``), as on a JAX-only install: any TensorFlow-only
path of the experiment would make it fail. Keras itself imports TensorFlow lazily where it is
installed (seeding, serialization); with it blocked, Keras does without.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.book import plots
from repro.core import provenance
from repro.ml import training

BLOCK = '''import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a JAX-only machine)")
sys.meta_path.insert(0, _Block())
'''



def _run_under_jax(tmp_path: Path, code: str) -> dict:
    """Run ``code`` (which prints one JSON line last) under JAX with TensorFlow and PyTorch unimportable."""
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCK)
    env = {**os.environ, "KERAS_BACKEND": "jax", "REPRO_RESULTS": str(tmp_path / "results"), "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(block), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _titles(fig) -> str:
    """Every title text of a figure (suptitle and axes' titles)."""
    sup = getattr(fig, "_suptitle", None)
    return " | ".join([sup.get_text() if sup else ""] + [ax.get_title() for ax in fig.axes])


OPTIMIZERS_CODE = """
import json, sys
from repro.experiments.optimizers import experiment as e
r = e.run('smoke', {'optimizers': ['sgd', 'adam'], 'train_samples': 384, 'test_samples': 128, 'epochs': 2,
                    'learning_rate': 0.003, 'lr_grid': [0.003], 'filters': [8, 16, 16], 'dense_units': 32,
                    'dropout': 0.2})
figs = [e.plot_curves(r).figure, e.plot_overlay(r).figure, e.plot_sensitivity(r).figure]
h = r['history'].query("variant == 'shared' and optimizer == 'adam'")
print(json.dumps({'device': r.provenance['device'], 'run_dir': str(r.run_dir), 'losses': h['loss'].tolist(),
                  'test_accuracy': h['test_accuracy'].tolist(), 'variants': sorted(set(r['history']['variant'])),
                  'titles': [(f._suptitle.get_text() if f._suptitle else '') + ' ' + ' '.join(a.get_title() for a in f.axes)
                             for f in figs],
                  'tf': 'tensorflow' in sys.modules}))
"""


def test_optimizers_runs_unchanged_under_jax(need_jax, tmp_path):
    out = _run_under_jax(tmp_path, OPTIMIZERS_CODE)
    dev = out["device"]
    assert dev["backend"] == "jax" and dev["backend_version"] and dev["device"] in ("CPU", "GPU")
    assert not out["tf"] and out["variants"] == ["shared", "tuned"]
    assert out["losses"][1] < out["losses"][0] and max(out["test_accuracy"]) > 0.2  # it learns (chance: 0.1)
    run_dir = Path(out["run_dir"])
    assert (run_dir / "ledger.csv").is_file() and (run_dir / "history.csv").is_file()
    assert json.loads((run_dir / "provenance.json").read_text())["device"]["backend"] == "jax"
    assert all(f"JAX {dev['backend_version']}, {dev['device']}" in t for t in out["titles"]), out["titles"]
    assert not (run_dir.parent / ".checkpoints").exists() or not any((run_dir.parent / ".checkpoints").iterdir())


COST_CODE = """
import json, sys
from repro.experiments.cost_study import experiment as e
r = e.run('smoke', {'networks': ['mnist_cnn'], 'mnist_train_samples': 600, 'mnist_test_samples': 200,
                    'mnist_epochs': 2, 'cores': [1, 2], 'gpu_sweep': True})
figs = [e.plot_time_vs_cores(r).figure, e.plot_scaling(r), e.plot_resources(r).figure, e.plot_time_vs_cost(r).figure,
        e.plot_cost_vs_step(r).figure]
runs, ep = r['runs'], r['epochs']
print(json.dumps({'device': r.provenance['device'], 'gpu': r.provenance['gpu'], 'run_dir': str(r.run_dir),
                  'backends': runs['backend'].tolist(), 'xla_flags': runs['xla_flags'].fillna('').tolist(),
                  'affinity': runs['n_affinity_inside'].tolist(), 'cores': runs['cores'].tolist(),
                  'losses': ep[ep['cores'] == 1]['loss'].tolist(), 'accuracy': runs['final_test_accuracy'].tolist(),
                  'titles': [(f._suptitle.get_text() if f._suptitle else '') for f in figs],
                  'tf': 'tensorflow' in sys.modules}))
"""


def test_cost_study_runs_unchanged_under_jax(need_jax, tmp_path):
    out = _run_under_jax(tmp_path, COST_CODE)
    dev = out["device"]
    assert dev["backend"] == "jax" and dev["backend_version"] and dev["children_backends"] == ["jax"]
    assert out["gpu"]["backend"] == "jax" and not out["tf"]
    assert out["backends"] == ["jax", "jax"] and out["affinity"] == out["cores"] == [1, 2]  # pinned children
    # one core: XLA's Eigen threading off, recorded per child and in provenance; more cores: the affinity bounds it
    assert out["xla_flags"] == [training.XLA_SINGLE_THREAD, ""]
    assert dev["thread_limits"]["environment"]["1"]["XLA_FLAGS"] == training.XLA_SINGLE_THREAD
    assert out["losses"][1] < out["losses"][0] and min(out["accuracy"]) > 0.3  # it learns (chance: 0.1)
    run_dir = Path(out["run_dir"])
    assert (run_dir / "ledger.csv").is_file() and (run_dir / "runs.csv").is_file()
    assert all(f"Keras on JAX {dev['backend_version']}, CPU" in t for t in out["titles"]), out["titles"]


# ---------------------------------------------------------------------------------------------
# the pieces, without a backend

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

    from repro.experiments.cost_study import verdicts

    memory = pd.DataFrame({"device": ["cpu"], "network": ["mnist_cnn"], "peak_rss_mb_mean": [700.0],
                           "rss_over_weights": [150.0]})
    jax_run = verdicts.memory_over_weights({"memory": memory, "runs": pd.DataFrame({"backend": ["jax"]})},
                                           {"repetitions": 1})
    assert "includes JAX itself" in jax_run.gate
    old_run = verdicts.memory_over_weights({"memory": memory, "runs": pd.DataFrame({"cores": [1]})}, {"repetitions": 1})
    assert "includes TensorFlow itself" in old_run.gate  # runs made before the backend column: TensorFlow
