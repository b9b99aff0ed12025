"""papermill runner: failures are one line, leave no finished run, keep the notebook."""

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_unavailable_dataset_inside_a_run_is_one_clear_line(tmp_path):
    env = {**__import__("os").environ, "REPRO_RESULTS": str(tmp_path / "results"),
           "KERAS_HOME": str(tmp_path / "keras"), "REPRO_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "repro.cli", "run", "mnist_cnn", "--profile", "smoke", "-p", "dataset=mnist"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("repro: error:")]
    assert len(errors) == 1 and "DatasetUnavailable: dataset 'mnist'" in errors[0] and "mnist_subset" in errors[0]
    base = tmp_path / "results" / "smoke" / "mnist_cnn"
    kept = [p.name for p in base.iterdir()]
    assert len(kept) == 1 and kept[0].startswith(".failed-")  # never read as a result
    assert (base / kept[0] / "notebook.ipynb").is_file()
