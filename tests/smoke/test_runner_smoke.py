"""`repro run` end to end: failures are one line and leave no finished run; Ctrl-C stops clusters started
in the command's own process; a notebook executed directly still measures."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from repro.experiments.distributed.common import HOROVOD_NOT_INSTALLED
from repro.experiments.distributed.programs import horovod_available

# one test at a time (the marker in pyproject.toml): it times how soon an interrupted run stops
pytestmark = pytest.mark.alone


@pytest.mark.slow
def test_unavailable_dataset_is_one_clear_line_before_any_run_directory(tmp_path):
    env = {**os.environ, "REPRO_RESULTS": str(tmp_path / "results"),
           "KERAS_HOME": str(tmp_path / "keras"), "REPRO_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "repro.cli", "run", "mnist_cnn", "--profile", "smoke", "-p", "dataset=mnist"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("repro: error:")]
    assert len(errors) == 1 and "dataset 'mnist'" in errors[0] and "mnist_subset" in errors[0]
    assert "Traceback" not in proc.stderr
    base = tmp_path / "results" / "smoke" / "mnist_cnn"  # prepare runs before the run directory exists
    assert not base.exists() or not [p for p in base.iterdir() if p.name != "LATEST"]


@pytest.mark.slow
def test_a_notebook_executed_directly_with_papermill_measures(tmp_path):
    """Without a run directory (Run All on a Jupyter server, `papermill NOTEBOOK OUT -p profile smoke`)
    the notebook measures itself and shows what it measured."""
    import json

    from repro.core import results

    env = {**os.environ, "REPRO_RESULTS": str(tmp_path / "results"), "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = tmp_path / "out.ipynb"
    proc = subprocess.run([sys.executable, "-m", "papermill", "notebooks/01_mnist_cnn.ipynb", str(out),
                           "-p", "profile", "smoke", "--cwd", "notebooks", "--no-progress-bar"],
                          capture_output=True, text=True, env=env, timeout=600,
                          cwd=results.project_root())
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = results.finished_runs("mnist_cnn", "smoke", tmp_path / "results")
    assert len(runs) == 1 and (runs[0] / "ledger.csv").is_file()
    shown = json.loads(out.read_text())
    assert any(c.get("outputs") for c in shown["cells"] if c["cell_type"] == "code")


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_kill_int_on_repro_run_prints_one_line_and_leaves_nothing(tmp_path, sig):
    """`kill -INT PID` of `repro run` alone (not its group) stops the run within seconds: one line, exit
    130, the run directory marked failed, no kernel or cluster process left."""
    import psutil

    env = {**os.environ, "REPRO_RESULTS": str(tmp_path / "results"), "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "repro.cli", "run", "distributed", "--profile", "smoke"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    for line in proc.stdout:  # the harness measures in this process: clusters are its children
        if ": measuring" in line or time.monotonic() > deadline:
            break
    # keep reading: a run blocked on a full stdout pipe would not be what this test measures
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    family, waited = [], time.monotonic() + 120
    while not family and time.monotonic() < waited and proc.poll() is None:  # until a cluster is up
        time.sleep(1)
        family = psutil.Process(proc.pid).children(recursive=True)
    assert family, f"the run started no cluster process (exit {proc.poll()}): {proc.stderr.read()[-1500:]}"
    time.sleep(3)
    family = psutil.Process(proc.pid).children(recursive=True)
    t0 = time.monotonic()
    proc.send_signal(sig)  # Ctrl-C, or `timeout` / a cancelled job: the same stop
    proc.wait(timeout=60)
    elapsed = time.monotonic() - t0
    log_line = re.compile(r"^\d\d:\d\d:\d\d repro[.\w]*: ")  # progress lines (repro.core.progress) are not errors
    err = [line for line in proc.stderr.read().splitlines()
           if line.strip() and not log_line.match(line)
           and not any(n in line for n in ("oneDNN", "absl::", "IPKernelApp", "port.cc"))]
    # where Horovod is not installed (a bare machine) the run announces it in its one line before measuring
    announced = [f"repro: {HOROVOD_NOT_INSTALLED}; the Horovod rows say so"] if not horovod_available() else []
    assert proc.returncode == 130 and err == [*announced, "repro: interrupted"], err
    assert elapsed < 30
    gone, alive = psutil.wait_procs(family, timeout=10)
    assert not alive, [p.pid for p in alive]
    base = tmp_path / "results" / "smoke" / "distributed"
    assert [p.name.startswith(".failed-") for p in base.iterdir() if p.name != "LATEST"] == [True]
