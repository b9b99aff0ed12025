"""Stopping child processes: SIGTERM, a grace period, SIGKILL, and every one reaped.

:func:`stop_group` is the one teardown of the package's child processes (the cluster launcher, the
cluster supervisor, the cost study's sweep children), over :func:`psutil.wait_procs`.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Callable, Iterable

import psutil


def _signal(popen: subprocess.Popen, sig: int, group: bool) -> None:
    """Send ``sig`` to ``popen`` (to its process group with ``group``); a process already gone is no error."""
    try:
        if group:
            os.killpg(popen.pid, sig)
        else:
            os.kill(popen.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group(procs: Iterable[subprocess.Popen], grace_s: float, *, group: bool = False,
               kill_wait_s: float | None = None,
               on_exit: Callable[[subprocess.Popen], None] | None = None) -> list[int | None]:
    """Stop child processes and reap them: SIGTERM, up to ``grace_s`` seconds for them to exit, then SIGKILL.

    ``group``: signal each one's process group (children started with ``start_new_session=True``),
    so its descendants get the same signals; the SIGKILL then goes to every group, including those
    whose leader exited within the grace period (descendants it left behind). ``kill_wait_s``: how
    long to wait for the killed ones (None: until they are gone). ``on_exit(popen)`` is called as
    each one exits. A Popen reaped here gets its ``returncode`` (negative: the signal that ended
    it), so ``poll()`` and ``wait()`` keep working. Returns the exit codes, in order (None for a
    process still there after ``kill_wait_s``).
    """
    procs = list(procs)
    watched: dict[int, tuple[subprocess.Popen, psutil.Process]] = {}
    for popen in procs:
        if popen.returncode is None:  # not poll(): an exited leader stays unreaped until its group is signalled
            try:
                watched[popen.pid] = (popen, psutil.Process(popen.pid))
            except psutil.NoSuchProcess:  # reaped by someone else: its exit code is lost
                pass

    def ended(p: psutil.Process) -> None:
        popen = watched[p.pid][0]
        if popen.returncode is None and p.returncode is not None:
            popen.returncode = int(p.returncode)
        if on_exit is not None:
            on_exit(popen)

    for popen, _ in watched.values():
        _signal(popen, signal.SIGTERM, group)
    _, alive = psutil.wait_procs([p for _, p in watched.values()], timeout=grace_s, callback=ended)
    # A leader reaped above no longer reserves its group's id, but Linux hands PIDs out cyclically:
    # the id is not reused by another group in the moment before this SIGKILL.
    for popen in (procs if group else [watched[p.pid][0] for p in alive]):
        _signal(popen, signal.SIGKILL, group)
    psutil.wait_procs(alive, timeout=kill_wait_s, callback=ended)
    return [popen.returncode for popen in procs]
