"""``python -m repro.cluster`` (and ``repro cluster`` where an experiment hooks :func:`add_cli`).

    check FILE [--ps N] [--index I]        parse a cluster file, print the role of every line
    node --cluster-file F --index I        run this machine's task of a real cluster
    node --slurm [--ps N] [--chief]        the same under SLURM (one task per srun task)
    node --slurm --cluster-dir D --indices I,J   a task of a run_cluster(launcher="slurm") step
    local MOD:FUNC --workers N --ps N      a local cluster in a private namespace (tests, demos)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from repro.core import errors

from .spec import ClusterError, check_ports_free, parse_cluster_file

PROG = "repro cluster"


def _cmd_check(args) -> int:
    spec = parse_cluster_file(args.file, ps=args.ps)
    for i, t in enumerate(spec.tasks):
        print(f"{i:>3}  {t.name:<12} {t.address}")
    if args.index is not None:
        t = spec.by_global_index(args.index)
        print(f"TF_CONFIG={json.dumps(spec.tf_config(t.role, t.index))}")
    return 0


def _cmd_node(args) -> int:
    if args.slurm:  # a task of a run_cluster(launcher="slurm") job step: the one SLURM path
        if not (args.cluster_dir and args.indices):
            raise ClusterError("node --slurm needs --cluster-dir and --indices (the SLURM launcher's tasks; start a "
                               "cluster under SLURM with run_cluster(..., launcher='slurm'))")
        from . import slurm_task
        return slurm_task.main(args.cluster_dir, args.indices)
    if not args.cluster_file:
        raise ClusterError("node needs --cluster-file")
    spec = parse_cluster_file(args.cluster_file, ps=args.ps)
    if args.index is not None:
        task = spec.by_global_index(args.index)
    elif args.role:
        task = spec.task(args.role, args.task_index)
    else:
        raise ClusterError("node needs --index I (line of the cluster file) or --role R --task-index K")
    check_ports_free([task])
    os.environ["TF_CONFIG"] = json.dumps(spec.tf_config(task.role, task.index))
    os.environ.setdefault("REPRO_CLUSTER_TASK", task.name)
    print(f"[repro.cluster] {task.name} at {task.address} of {len(spec.tasks)} tasks", flush=True)
    from . import node
    if args.program and task.role in args.program_roles.split(","):
        node.run_program(args.program)
    elif args.server == "tf":
        node.serve_tf()
    else:
        node.serve_tcp()
    return 0


def _cmd_local(args) -> int:
    from .launch import Network, run_cluster
    res = run_cluster(args.program, workers=args.workers, ps=args.ps, chief=not args.no_chief,
                      program_roles=tuple(args.program_roles.split(",")), kwargs=json.loads(args.kwargs),
                      server=args.server, timeout=args.timeout, ready_timeout=args.ready_timeout,
                      run_dir=args.run_dir, isolation=args.isolation, allow_exposed=args.allow_exposed,
                      network=Network(args.bandwidth) if args.bandwidth else None)
    print(f"[repro.cluster] {res.isolation} cluster {json.dumps(res.cluster)} done in {res.elapsed_s:.1f} s; "
          f"logs in {res.run_dir}")
    for name, value in res.results.items():
        print(f"{name}: {json.dumps(value, default=str)}")
    return 0


def add_cli(subparsers) -> None:
    """Add ``cluster`` (check / node / local) to an argparse subparsers object."""
    p = subparsers.add_parser("cluster", help="cluster runtime: check a cluster file, run a node or a local cluster")
    _fill(p)


def _fill(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="cluster_command", required=True, metavar="SUBCOMMAND")
    q = sub.add_parser("check", help="parse a cluster file and print each line's role:index")
    q.add_argument("file")
    q.add_argument("--ps", type=int, default=1, help="bare host:port files: how many leading lines are ps (default 1)")
    q.add_argument("--index", type=int, default=None, help="also print the TF_CONFIG of this line")
    q.set_defaults(func=run, impl=_cmd_check)

    q = sub.add_parser("node", help="run this machine's task of a real cluster")
    q.add_argument("--cluster-file")
    q.add_argument("--index", type=int, default=None, help="line (task) of the cluster file, from 0")
    q.add_argument("--role", choices=["chief", "ps", "worker", "evaluator"])
    q.add_argument("--task-index", type=int, default=0)
    q.add_argument("--ps", type=int, default=1, help="bare host:port files: number of ps tasks")
    q.add_argument("--slurm", action="store_true",
                   help="a task of the SLURM launcher's job step (with --cluster-dir and --indices)")
    q.add_argument("--program", default=None, help="MOD:FUNC or script.py run by the --program-roles tasks")
    q.add_argument("--program-roles", default="chief",
                   help="comma-separated roles that run --program (default chief); the others serve")
    q.add_argument("--server", choices=["tf", "tcp"], default="tf")
    q.add_argument("--cluster-dir", default=None,
                   help="SLURM launcher: the run directory (shared filesystem) holding the launcher's plan.json")
    q.add_argument("--indices", default=None, help="SLURM launcher: global task index of each task of this step")
    q.set_defaults(func=run, impl=_cmd_node)

    q = sub.add_parser("local", help="run a program on a local cluster of real processes")
    q.add_argument("program", help="MOD:FUNC or script.py (e.g. repro.cluster.examples:tf_ping)")
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--ps", type=int, default=1)
    q.add_argument("--no-chief", action="store_true")
    q.add_argument("--program-roles", default="chief", help="comma-separated roles that run the program")
    q.add_argument("--kwargs", default="{}", help="JSON keyword arguments for the program")
    q.add_argument("--server", choices=["tf", "tcp"], default="tf")
    q.add_argument("--timeout", type=float, default=300.0)
    q.add_argument("--ready-timeout", type=float, default=60.0)
    q.add_argument("--run-dir", default=None)
    q.add_argument("--isolation", choices=["auto", "netns", "none"], default="auto")
    q.add_argument("--bandwidth", default=None,
                   help="emulated network: each task in its own namespace, links limited to this rate (e.g. 1gbit)")
    q.add_argument("--allow-exposed", action="store_true",
                   help="accept a cluster reachable from other machines where no private namespace can be made")
    q.set_defaults(func=run, impl=_cmd_local)


def main(argv: list[str] | None = None) -> int:
    """``python -m repro.cluster``: one-line errors as ``repro`` gives them (exit 2 bad input, 1 a failed run)."""
    parser = argparse.ArgumentParser(prog="python -m repro.cluster", description=__doc__.splitlines()[0])
    _fill(parser)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except errors.ReproError as exc:
        return errors.report(exc)
    except KeyboardInterrupt:
        print("repro: interrupted", file=sys.stderr)
        return 130


def run(args) -> int:
    """Dispatch parsed arguments (a malformed cluster file is bad input; errors go to the entry point's handler)."""
    try:
        return args.impl(args)
    except json.JSONDecodeError as exc:
        raise ClusterError(f"not valid JSON: {exc}") from None
