"""What runs in each cluster process: a server (``serve``) or a program (``run``).

``python -m repro.cluster._entry node serve --kind tf``   a ``tf.distribute.Server`` for the task in
                                                  ``$TF_CONFIG``, serving until it is stopped;
``python -m repro.cluster._entry node serve --kind tcp``  a stand-in that only listens on the task's
                                                  port like TF does (wildcard address); for tests;
``python -m repro.cluster._entry node run MOD:FUNC``      import ``MOD``, call ``FUNC(**kwargs)``
                                                  (kwargs from ``$REPRO_CLUSTER_KWARGS``), write
                                                  its return value as JSON to
                                                  ``$REPRO_CLUSTER_DIR/results/<role>-<index>.json``;
``python -m repro.cluster._entry node run path/to/script.py``   run a script (``__main__``).

Programs learn where they are with :func:`context`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import runpy
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from repro.core import atomic

from .spec import ClusterError, ClusterSpec, Task, from_tf_config, name_of_slug

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Context:
    """A cluster process' view: the cluster, its own task, the run directory."""

    spec: ClusterSpec
    task: Task
    run_dir: Path | None

    @property
    def cluster_dir(self) -> Path:
        """:attr:`run_dir`, which every launcher sets; a one-line error outside a launched cluster."""
        if self.run_dir is None:
            raise ClusterError("not in a launched cluster: $REPRO_CLUSTER_DIR is not set")
        return self.run_dir

    def pids(self) -> dict[str, int]:
        """PIDs of the cluster's processes (as seen inside the cluster), by ``role:index``."""
        return json.loads((self.cluster_dir / "pids.json").read_text())


def context() -> Context:
    spec, task = from_tf_config()
    run_dir = os.environ.get("REPRO_CLUSTER_DIR")
    return Context(spec, task, Path(run_dir) if run_dir else None)


def serve_tf() -> None:
    import tensorflow as tf

    spec, task = from_tf_config()
    server = tf.distribute.Server(tf.train.ClusterSpec(spec.as_dict()), job_name=task.role,
                                  task_index=task.index, protocol="grpc", start=True)
    log.info("%s serving %s", task.name, server.target)
    server.join()


def serve_tcp() -> None:
    """A stand-in server: listens on the task's port on the wildcard address, as a TF server does.

    Each connection is drained until the peer shuts down its side; the server then answers with
    the number of bytes it received (8 bytes, big-endian), which makes it a bandwidth sink.
    """
    import threading

    _, task = from_tf_config()
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", task.port))
    s.listen(64)
    log.info("%s listening on *:%d", task.name, task.port)

    def drain(conn):
        total = 0
        with conn:
            try:
                while chunk := conn.recv(1 << 16):
                    total += len(chunk)
                conn.sendall(total.to_bytes(8, "big"))
            except OSError:
                pass

    while True:
        conn, _ = s.accept()
        threading.Thread(target=drain, args=(conn,), daemon=True).start()


def run_program(target: str) -> None:
    kwargs = json.loads(os.environ.get("REPRO_CLUSTER_KWARGS") or "{}")
    if target.endswith(".py"):
        sys.argv = [target]
        runpy.run_path(target, run_name="__main__")
        return
    module_name, sep, func_name = target.partition(":")
    if not sep:
        raise SystemExit(f"repro.cluster: program must be MODULE:FUNCTION or a .py file, got {target!r}")
    func = getattr(importlib.import_module(module_name), func_name)
    t0 = time.perf_counter()
    value = func(**kwargs)
    elapsed = time.perf_counter() - t0
    run_dir = os.environ.get("REPRO_CLUSTER_DIR")
    if run_dir:
        _, task = from_tf_config()
        atomic.write_json(Path(run_dir) / "results" / f"{task.slug}.json", {"value": value, "seconds": elapsed})


def read_results(run_dir: Path) -> dict:
    """What :func:`run_program` wrote: the programs' return values by task name (either launcher)."""
    return {name_of_slug(p.stem): json.loads(p.read_text())["value"]
            for p in sorted((Path(run_dir) / "results").glob("*.json"))}


def _wait_address(timeout: float = 30.0) -> None:
    """Emulated network: wait until this namespace has the task's address (set up by the supervisor), then
    make it the host name of the node's own UTS namespace. A program that finds its address by resolving
    ``gethostname()`` then gets the node's, not the shared ``/etc/hosts``' loopback entry: Horovod 0.28
    builds the Gloo device of its process sets that way, whatever ``HOROVOD_GLOO_IFACE`` says."""
    spec, task = from_tf_config()
    peer = next((t.host for t in spec.tasks if t.host != task.host), task.host)
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.socket() as s:
                s.bind((task.host, 0))
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((peer, 9))  # a route lookup only (UDP sends nothing): raises ENETUNREACH until routed
            socket.sethostname(task.host)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"repro.cluster: address {task.host} never appeared in this namespace")
            time.sleep(0.02)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repro.cluster._entry node")
    parser.add_argument("--cluster-dir", help="the run directory (also marks the process in ps listings)")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("serve")
    p.add_argument("--kind", choices=["tf", "tcp"], default="tf")
    p = sub.add_parser("run")
    p.add_argument("target")
    args = parser.parse_args(argv)
    if args.cluster_dir:
        os.environ["REPRO_CLUSTER_DIR"] = args.cluster_dir
    if os.environ.get("REPRO_CLUSTER_WAIT_ADDRESS"):
        _wait_address()
    if args.cmd == "serve":
        (serve_tf if args.kind == "tf" else serve_tcp)()
    else:
        run_program(args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
