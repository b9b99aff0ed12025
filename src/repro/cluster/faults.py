"""Fault injection inside a running cluster, whichever launcher started it."""

from __future__ import annotations

import os
import signal
import subprocess

from .node import context
from .slurm_task import step_of


def stop_task(name: str) -> str:
    """Fault injection: stop task ``name`` of this cluster now; says how.

    Local launcher: SIGKILL to its process. SLURM launcher: ``scancel`` of its job step, which must
    hold that task alone (``run_cluster(..., separate=(name,))``): the scheduler stops it."""
    ctx = context()
    if os.environ.get("REPRO_CLUSTER_LAUNCHER") != "slurm":
        os.kill(ctx.pids()[name], signal.SIGKILL)
        return f"SIGKILL to {name}"
    step = step_of(ctx.cluster_dir, name)
    r = subprocess.run(["scancel", step], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"scancel {step} failed: {r.stderr.strip()}")
    return f"scancel {step} ({name})"
