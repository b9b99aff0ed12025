"""repro.core.procs.stop_group: SIGTERM, grace, SIGKILL, every process reaped with its exit code."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest

from repro.core.procs import stop_group

# one test at a time (the marker in pyproject.toml): it times how soon a child is stopped
pytestmark = pytest.mark.alone

DEAF = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
# a group leader that leaves behind a child deaf to SIGTERM, then exits on SIGTERM itself
LEADER = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', %r], stdout=subprocess.PIPE); "
          "c.stdout.readline(); print(c.pid, flush=True); time.sleep(60)" % DEAF)


def _ready(popen: subprocess.Popen) -> str:
    return popen.stdout.readline().strip()


def test_terminate_then_kill_each_process():
    polite = subprocess.Popen(["sleep", "60"])
    deaf = subprocess.Popen([sys.executable, "-c", DEAF], stdout=subprocess.PIPE, text=True)
    done = subprocess.Popen(["true"])
    assert _ready(deaf) == "ready"
    done.wait()
    seen = []
    t0 = time.monotonic()
    codes = stop_group([polite, deaf, done], 0.5, on_exit=seen.append)
    elapsed = time.monotonic() - t0
    assert codes == [-signal.SIGTERM, -signal.SIGKILL, 0]
    assert (polite.poll(), deaf.poll()) == (-signal.SIGTERM, -signal.SIGKILL)  # the Popen objects know
    assert seen == [polite, deaf] and 0.5 <= elapsed < 5
    deaf.stdout.close()


def test_a_group_loses_the_descendants_its_leader_left_behind():
    leader = subprocess.Popen([sys.executable, "-c", LEADER], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    grandchild = psutil.Process(int(_ready(leader)))
    assert stop_group([leader], 2.0, group=True) == [-signal.SIGTERM]
    psutil.wait_procs([grandchild], timeout=5)
    assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE
    leader.stdout.close()


def test_nothing_to_stop():
    assert stop_group([], 1.0) == []
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert stop_group([gone], 1.0, group=True) == [0]
