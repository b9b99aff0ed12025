"""Shared cluster runtime: real multi-process TensorFlow clusters, locally and on real clusters.

Local (one machine, private network namespace, everything torn down whatever happens)::

    from repro import cluster
    res = cluster.run_cluster("mypkg.jobs:train", workers=2, ps=1, kwargs={"steps": 10},
                              timeout=600, run_dir=run.path / "cluster")
    res.results["chief:0"]          # the program's return value
    res.log("worker:1")             # a task's stdout+stderr

Real clusters: a cluster file (``ps node1:2222`` / ``worker node2:2222`` lines, bare
``host:port`` lines like the thesis' nodefile, or a TF_CONFIG-style JSON/YAML mapping) parsed by
:func:`parse_cluster_file`, each machine running its task with
``python -m repro.cluster node --cluster-file F --index I``; under SLURM
``run_cluster(..., launcher="slurm")``: the same call, each cluster run as SLURM job steps whose tasks meet
through a file in the shared run directory (:mod:`repro.cluster.slurm`; ``docs/slurm.md``).

Programs read their place in the cluster with :func:`context`. Nothing here imports TensorFlow
at import time. Errors are one line, each of its family: :class:`ClusterError` (bad input, a ``ValueError``),
:class:`ClusterUnavailable` (this machine lacks a command, a network namespace, SLURM; the message says how
to get it), :class:`ClusterRunFailed` and its :class:`TaskFailed`, :class:`ClusterTimeout` and
:class:`ClusterInterrupted` (a run that started and failed).
"""

from .launch import (
                   ClusterInterrupted,
                   ClusterResult,
                   Network,
                   leftover_processes,
                   netns_available,
                   resolve_isolation,
                   run_cluster,
                   thread_env,
)
from .node import Context, context
from .spec import (
                   ROLES,
                   ClusterError,
                   ClusterRunFailed,
                   ClusterSpec,
                   ClusterUnavailable,
                   Task,
                   check_ports_free,
                   exposure_report,
                   free_ports,
                   from_tf_config,
                   interface_bytes,
                   listening_sockets,
                   make_spec,
                   parse_cluster_file,
                   parse_cluster_mapping,
                   parse_cluster_text,
                   port_in_use,
)
from .supervisor import ClusterTimeout, TaskFailed

__all__ = [
    "ROLES", "ClusterError", "ClusterInterrupted", "ClusterResult", "ClusterRunFailed", "ClusterSpec", "ClusterTimeout",
    "ClusterUnavailable", "Context",
    "Network", "Task", "TaskFailed", "check_ports_free", "context", "exposure_report", "free_ports",
    "from_tf_config", "interface_bytes", "leftover_processes", "listening_sockets", "make_spec", "netns_available",
    "parse_cluster_file", "parse_cluster_mapping", "parse_cluster_text", "port_in_use", "resolve_isolation",
    "run_cluster", "thread_env",
]
