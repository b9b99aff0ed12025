"""papermill runner: failures are one line, leave no finished run, keep the notebook."""

import os
import signal
import subprocess
import sys
import threading
import time

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


@pytest.mark.slow
def test_kill_int_on_repro_run_prints_one_line_and_leaves_nothing(tmp_path):
    """`kill -INT PID` of `repro run` alone (not its group) stops the run within seconds: one line, exit
    130, the run directory marked failed, no kernel or cluster process left."""
    import psutil

    env = {**os.environ, "REPRO_RESULTS": str(tmp_path / "results"), "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "repro.cli", "run", "distributed", "--profile", "smoke"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    for line in proc.stdout:  # the cell that starts clusters
        if "Executing Cell 4" in line or time.monotonic() > deadline:
            break
    # keep reading: a run blocked on a full stdout pipe would not be what this test measures
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    time.sleep(8)
    family = psutil.Process(proc.pid).children(recursive=True)
    assert family, "the run started no kernel"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    elapsed = time.monotonic() - t0
    err = [line for line in proc.stderr.read().splitlines()
           if line.strip() and not any(n in line for n in ("oneDNN", "absl::", "IPKernelApp", "port.cc"))]
    assert proc.returncode == 130 and err == ["repro: interrupted"], err
    assert elapsed < 30
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, [p.pid for p in alive]
    base = tmp_path / "results" / "smoke" / "distributed"
    assert [p.name.startswith(".failed-") for p in base.iterdir() if p.name != "LATEST"] == [True]
