"""The staleness experiment's custom training loops on a JAX-only machine (TensorFlow and PyTorch
unimportable, as on the lent GPU machine): the engines' hand-computed cases hold under JAX as they
do under TensorFlow, and the smoke run, notebook included, completes and names its backend."""

import json
import subprocess
import sys

import pytest

from repro.core import harness, paths, results

pytestmark = pytest.mark.extras  # every test here needs an optional part (see tests/conftest.py)

# tests/smoke/test_staleness_engines_smoke.py's engine cases: trajectories computed by hand, k = 1 averaging equal to
# one machine on the global batch, a NumPy re-implementation of averaging, the threaded run's log
ENGINE_CASES = ("tau_zero", "delay_queue", "scaling_divides", "soft_sync_applies", "scaling_plus_soft_sync",
                "bounded_staleness_holds", "time_budget", "k1_averaging", "longer_period", "numpy_reimplementation",
                "rounds_count", "weights_only_keeps", "threaded_run")


def test_engine_cases_hold_under_jax(jax_only_env):
    test_file = paths.project_root() / "tests" / "smoke" / "test_staleness_engines_smoke.py"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file),
                          "-k", " or ".join(ENGINE_CASES)], env=jax_only_env, capture_output=True, text=True,
                         timeout=600, cwd=paths.project_root())
    tail = (out.stdout + out.stderr)[-3000:]
    assert out.returncode == 0, tail
    assert " passed" in tail and "skipped" not in tail and "deselected" in tail, tail
    passed = int(tail.split(" passed")[0].split()[-1])
    assert passed == len(ENGINE_CASES) + 1, tail  # the k = 1 case runs for two optimizers


@pytest.mark.slow
def test_smoke_run_under_jax_completes_and_names_its_backend(jax_only_env, tmp_path):
    env = {**jax_only_env, "REPRO_RESULTS": str(tmp_path)}
    repro = [sys.executable, "-m", "repro.cli"]
    out = subprocess.run([*repro, "run", "staleness", "--profile", "smoke"], env=env, capture_output=True, text=True,
                         timeout=900, cwd=paths.project_root())
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    run_dir = results.latest_run("staleness", "smoke", tmp_path, need="notebook.ipynb")
    assert run_dir is not None
    result = harness.load_result(run_dir)
    prov = result.provenance
    assert prov["keras_backend"] == "jax" and prov["device"]["backend"] == "jax"
    eq = json.loads((run_dir / "equivalence.json").read_text())
    assert eq["max_abs_weight_difference"] <= eq["tolerance"]
    assert len(result["thread_staleness_log"]) > 0 and result["averaging_final"]["test_accuracy"].between(0, 1).all()

    from repro.experiments.staleness import experiment as st

    fig = st.plot_accuracy_vs_period(result)
    sup = fig._suptitle.get_text()
    assert "Keras on JAX" in sup, sup
