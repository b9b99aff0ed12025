"""papermill runner: failures are one line, leave no finished run, keep the notebook."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from repro.core import runner


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


# ------------------------------------------------------------------ interrupting a run


def _fake_kernel(ignore_sigint: bool):
    """A child in its own session whose command line names ipykernel, as jupyter_client starts kernels."""
    code = ("import signal, time\n"
            + ("signal.signal(signal.SIGINT, signal.SIG_IGN)\n" if ignore_sigint else "")
            + "time.sleep(120)\n")
    return subprocess.Popen([sys.executable, "-c", code, "ipykernel_launcher"], start_new_session=True,
                            stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("ignore_sigint", [False, True])
def test_sigint_to_this_process_alone_stops_the_kernel_and_raises(ignore_sigint):
    """A SIGINT sent to the runner's process only (kill -INT PID) interrupts the kernel's group; a kernel
    that ignores it is terminated after the grace time; either way KeyboardInterrupt, nothing left."""
    kernel = _fake_kernel(ignore_sigint)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in `repro` (pytest may differ)
    t0 = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.interruptible(kernel.wait, grace=1.0)
    finally:
        signal.signal(signal.SIGINT, previous)
    elapsed = time.monotonic() - t0
    assert kernel.wait(timeout=1) == (-signal.SIGTERM if ignore_sigint else -signal.SIGINT)
    assert elapsed < (4.0 if ignore_sigint else 2.5)


def test_interruptible_passes_results_and_errors_through():
    assert runner.interruptible(lambda: 42) == 42
    with pytest.raises(ValueError, match="boom"):
        runner.interruptible(lambda: (_ for _ in ()).throw(ValueError("boom")))


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
