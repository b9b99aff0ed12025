"""Tiny cluster programs: used by the tests and as templates (``python -m repro.cluster local``).

Each is a plain function run by ``python -m repro.cluster.node run repro.cluster.examples:NAME``
inside a cluster process; only :func:`tf_ping` imports TensorFlow.
"""

from __future__ import annotations

import time

from .faults import stop_task
from .node import context
from .spec import exposure_report


def hello() -> dict:
    """Return this task's name and the cluster as the program sees it (TF_CONFIG)."""
    ctx = context()
    return {"task": ctx.task.name, "cluster": ctx.spec.as_dict()}


def sleep(seconds: float = 3600.0, message: str = "step 1 done") -> str:
    """Print ``message`` and sleep: a job that hangs (for the timeout and interrupt tests)."""
    print(message, flush=True)
    time.sleep(seconds)
    return "slept"


def fail(message: str = "something broke") -> None:
    print("about to fail", flush=True)
    raise RuntimeError(message)


def kill_task(target: str = "worker:1", then_sleep: float = 2.0) -> dict:
    """Stop another task of the cluster (fault injection: SIGKILL locally, ``scancel`` of its step under
    SLURM), then go on for ``then_sleep`` s."""
    how = stop_task(target)
    print(f"killed {target} ({how})", flush=True)
    time.sleep(then_sleep)
    return {"killed": target}


def sockets() -> dict:
    """The cluster namespace's interfaces and TCP listeners, seen from inside (loopback check)."""
    ctx = context()
    return exposure_report(ports=[t.port for t in ctx.spec.tasks])


def bandwidth(target: str = "worker:0", megabytes: float = 4.0) -> dict:
    """Send ``megabytes`` to a ``server="tcp"`` task and time it until it confirms receipt.

    Returns bytes confirmed, seconds and the achieved rate in Mbit/s (10^6 bit/s). ``"ps:same"``:
    the PS task with the caller's index (its own shard's node with ``Network(ps_on_workers=True)``).
    """
    import socket

    ctx = context()
    role, index = target.split(":")
    task = ctx.spec.task(role, ctx.task.index if index == "same" else int(index))
    payload = b"\0" * (1 << 16)
    n = int(megabytes * 1e6)
    with socket.create_connection((task.host, task.port), timeout=60) as s:
        t0 = time.perf_counter()
        sent = 0
        while sent < n:
            sent += s.send(payload[: min(len(payload), n - sent)])
        s.shutdown(socket.SHUT_WR)
        got = int.from_bytes(s.recv(8), "big")
        seconds = time.perf_counter() - t0
    return {"bytes": got, "seconds": seconds, "mbit_per_s": got * 8 / seconds / 1e6}


def tf_ping(value: float = 3.0) -> dict:
    """From the chief: a variable on ps:0 updated and read over gRPC, and an op on every worker.

    Proves the cluster is up: returns the PS variable after ``assign_add(value)`` from 1.0,
    ``value**2`` computed on each worker, and the devices used.
    """
    import tensorflow as tf

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    tf.config.experimental_connect_to_cluster(resolver, job_name=resolver.task_type, task_index=resolver.task_id)
    ctx = context()
    with tf.device("/job:ps/task:0/device:CPU:0"):
        v = tf.Variable(1.0)
        v.assign_add(value)
    squares = {}
    for i in range(ctx.spec.count("worker")):
        with tf.device(f"/job:worker/task:{i}/device:CPU:0"):
            x = tf.constant(value)
            y = x * x
        squares[f"worker:{i}"] = {"value": float(y.numpy()), "device": y.device}
    return {"ps_variable": float(v.numpy()), "ps_device": v.device, "squares": squares}
