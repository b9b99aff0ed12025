"""papermill runner: failures are one line, leave no finished run, keep the notebook."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from repro.core import runner

# ------------------------------------------------------------------ interrupting a run


def _fake_kernel(ignore_sigint: bool):
    """A child in its own session whose command line names ipykernel, as jupyter_client starts kernels."""
    # explicit either way: a test run started in the background by a shell inherits SIGINT ignored
    code = ("import signal, time\n"
            + f"signal.signal(signal.SIGINT, signal.{'SIG_IGN' if ignore_sigint else 'SIG_DFL'})\n"
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


