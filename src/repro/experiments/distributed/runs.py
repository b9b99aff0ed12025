"""The cluster runs of the distributed benchmark: one (method, workers) grid point, the kill-a-worker
runs and the bandwidth sweep, each on a fresh cluster of :func:`repro.cluster.run_cluster`."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pandas as pd

from repro import cluster
from repro.core.params import ParameterError
from repro.core.progress import Progress
from repro.experiments.distributed.arithmetic import (
    images_per_second,
    rate_bits,
    sweep_rows,
)
from repro.experiments.distributed.common import (
    ALLREDUCE,
    FAULT_COLUMNS,
    METHODS,
    PROGRAMS,
)
from repro.experiments.distributed.models import MIN_SIZE, PAPER_SIZE
from repro.experiments.distributed.paramtypes import DistributedParams

log = logging.getLogger(__name__)

SWEEP_COLUMNS = ["method", "bandwidth", "bandwidth_mbps", "model", "workers", "model_mb", "measured_sent_mb_per_step",
                 "measured_received_mb_per_step", "analytic_mb_per_step", "measured_over_analytic",
                 "total_images_per_sec", "comm_bound_images_per_sec", "loopback_images_per_sec",
                 "predicted_images_per_sec", "critical_mbps"]


SLURM_SCOPE = ("the throughput grid and the kill-a-worker runs as SLURM job steps; the bandwidth sweep and the "
               "emulated grid, which shape their own links, as local processes")


def slurm_tasks(p: DistributedParams) -> int:
    """Tasks of the largest cluster the SLURM launcher runs (grid or kill-a-worker run)."""
    n = tasks = max(p.workers)  # all-reduce: the workers
    if any(m.startswith("ps_") for m in p.methods):
        tasks = max(tasks, 1 + p.ps + n)  # chief, parameter servers, workers
    if p.fault_tolerance:
        tasks = max(tasks, 1 + p.ps + 2)
    return tasks


class Grid(Protocol):
    """What one cluster run reads of the grid it belongs to: steps per worker, timed and warm-up (the real grid:
    the parameters themselves; the emulated one: ``p.emulate``; the bandwidth sweep: :func:`sweep_grid`)."""

    @property
    def steps(self) -> int: ...

    @property
    def warmup_steps(self) -> int: ...


@dataclass(frozen=True)
class SweepGrid:
    steps: int
    warmup_steps: int = 1


def sweep_grid(p: DistributedParams) -> SweepGrid:
    """The bandwidth sweep's steps: ``sweep.steps`` timed after one warm-up step."""
    return SweepGrid(p.sweep.steps)


def model_specs(p: DistributedParams, names: list[str] | None = None, image_size: int | None = None) -> list[dict]:
    """``{"name", "image_size"}`` per model of the profile (or ``names`` at ``image_size``, 0: the paper's);
    a one-line error for a size too small."""
    specs = []
    for m in p.models if names is None else names:
        size = (p.image_size if image_size is None else image_size) or PAPER_SIZE[m]
        if size < MIN_SIZE[m]:
            raise ParameterError(f"parameter 'image_size': model {m} needs images of at least {MIN_SIZE[m]} px, "
                                 f"got {size}")
        specs.append({"name": m, "image_size": size})
    return specs


def check_sweep(p: DistributedParams) -> None:
    """One-line errors for the sweep parameters, before anything runs."""
    bws = p.sweep.bandwidths
    if bws is None:
        return
    for bw in bws:
        rate_bits(bw)
    missing = [m for m in p.sweep.models if m not in p.models]
    if missing:
        raise ParameterError(f"parameter 'sweep.models': {missing[0]} is not among models {p.models}")


def _common(p: DistributedParams, grid: Grid, models: list[dict]) -> dict:
    return {"models": models, "batch_size": p.batch_size, "warmup_steps": grid.warmup_steps, "steps": grid.steps,
            "learning_rate": p.learning_rate, "num_classes": p.num_classes, "seed": p.seed}


def cluster_run(method: str, workers: int, p: DistributedParams, cluster_dir: Path, grid: Grid | None = None,
                network=None, models: list[dict] | None = None,
                emulate: dict | None = None) -> tuple[list[dict], list[dict]]:
    """One cluster run (all models in turn) of ``grid`` (its steps; None: the real grid, ``p``): summary rows
    and per-worker rows.

    ``network``: a :class:`repro.cluster.Network` (the bandwidth sweep); then every summary row
    also carries the bytes moved in its timed window (``window_bytes``: task -> sent/received).
    ``emulate``: ``{"t_grad": {model: s}, "dilation": k}`` (emulated compute); seconds are divided by k.
    """
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; choose from: {', '.join(METHODS)}")
    models, grid = models or model_specs(p), grid or p
    opts = dict(timeout=p.timeout, ready_timeout=120, run_dir=cluster_dir,
                env=cluster.thread_env(p.threads_per_worker), network=network,
                launcher=p.launcher if network is None and emulate is None else "local")
    common = _common(p, grid, models) | ({"emulate": emulate} if emulate else {})
    k = float(emulate["dilation"]) if emulate else 1.0
    if method in ALLREDUCE:
        res = cluster.run_cluster(PROGRAMS[method], workers=workers, ps=0, chief=False, program_roles=("worker",),
                                  kwargs=common, **opts)
        return _allreduce_rows(method, workers, p, grid, models, res, network is not None, k)
    res = cluster.run_cluster(PROGRAMS[method], workers=workers, ps=p.ps,
                              kwargs={"method": method, **common}, **opts)
    summary, per_worker = [], []
    for m, r in zip(models, res.results["chief:0"]["models"]):
        steps = r["steps_per_worker"]
        seconds = [r["seconds"] / k] * len(steps)
        extra = {"replicas_identical": None, "optimizer_iterations": r["optimizer_iterations"],
                 "updates": r["updates"], "all_updates": r["all_updates"], "parameters": r["parameters"]}
        if network is not None:
            extra["window_bytes"] = res.bytes_between(*r["window"])
        row = _summary_row(method, workers, m, p, grid, steps, seconds, extra)
        row["scheduled_steps"] = r["scheduled_steps"]
        summary.append(row)
        per_worker += [_worker_row(method, workers, m, i, s, t, p) for i, (s, t) in enumerate(zip(steps, seconds))]
    return summary, per_worker


def _allreduce_rows(method, workers, p, grid: Grid, models, res, network: bool,
                    dilation: float = 1.0) -> tuple[list[dict], list[dict]]:
    per_task = [res.results[f"worker:{i}"] for i in range(workers)]
    summary, per_worker = [], []
    for k, m in enumerate(models):
        tasks = [t["models"][k] for t in per_task]
        steps = [t["steps"] for t in tasks]
        seconds = [t["seconds"] / dilation for t in tasks]
        extra = {"replicas_identical": len({t["weights_sha256"] for t in tasks}) == 1,
                 "optimizer_iterations": None, "updates": steps[0],
                 "all_updates": steps[0] + tasks[0]["warmup_steps"], "parameters": tasks[0]["parameters"]}
        if network:  # each worker's own link, over its own timed window
            extra["window_bytes"] = {f"worker:{i}": res.bytes_between(*t["window"])[f"worker:{i}"]
                                     for i, t in enumerate(tasks)}
        summary.append(_summary_row(method, workers, m, p, grid, steps, seconds, extra))
        per_worker += [_worker_row(method, workers, m, i, s, t, p) for i, (s, t) in enumerate(zip(steps, seconds))]
    return summary, per_worker


def _summary_row(method, workers, m, p, grid: Grid, steps, seconds, extra) -> dict:
    ips = images_per_second(p.batch_size, steps, seconds)
    return {"method": method, "workers": workers, "model": m["name"], "image_size": m["image_size"],
            "batch_size": p.batch_size, "warmup_steps": grid.warmup_steps, "steps_total": int(sum(steps)),
            "scheduled_steps": int(sum(steps)), "seconds": max(seconds),
            "images_per_sec_mean": ips["mean"], "images_per_sec_stderr": ips["stderr"],
            "total_images_per_sec": ips["total"], **extra}


def _worker_row(method, workers, m, i, steps, seconds, p) -> dict:
    return {"method": method, "workers": workers, "model": m["name"], "worker": i, "steps": steps,
            "seconds": seconds, "images_per_sec": steps * p.batch_size / seconds}


def _no_leftovers(run_dir: Path, wait: float = 10.0) -> int:
    """Processes of a cluster run still alive after ``wait`` s (killing a process tree is asynchronous)."""
    deadline = time.monotonic() + wait
    while (left := cluster.leftover_processes(run_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(left)


def _fault_jobs(p: DistributedParams, m: dict) -> list[tuple[str, dict]]:
    common = {"batch_size": p.batch_size, "learning_rate": p.learning_rate, "num_classes": p.num_classes,
              "seed": p.seed}
    jobs = [(method, dict(program=PROGRAMS["ps_fault"], ps=p.ps, fail_fast=False,
                          kwargs={"method": method, "model": m, "steps": p.steps, "kill_after": p.steps,
                                  **common}))
            for method in ("ps_async", "ps_sync")]  # ps_sync: the control
    jobs.append(("ring", dict(program=PROGRAMS["ring"], ps=0, chief=False, program_roles=("worker",),
                              kwargs={"models": [m], "warmup_steps": p.warmup_steps, "steps": p.steps,
                                      "kill_after": p.steps // 2, **common})))
    return jobs


def fault_runs(p: DistributedParams, base: Path) -> pd.DataFrame:
    """Kill worker 1 of 2 mid-run, ``fault_trials`` times: async PS, sync PS as the control (fail_fast off)
    and ring all-reduce (fail_fast on), first model."""
    m = model_specs(p)[0]
    env = cluster.thread_env(p.threads_per_worker)
    rows = []
    trials = p.fault_trials
    with Progress(log, "kill-a-worker runs", trials * len(_fault_jobs(p, m))) as progress:
        for trial in range(1, trials + 1):
            for method, job in _fault_jobs(p, m):
                d = base / (f"{method}-kill" + (f"-{trial}" if trial > 1 else ""))
                t0 = time.perf_counter()
                row = dict.fromkeys(FAULT_COLUMNS, None) | {"trial": trial, "method": method, "workers": 2,
                                                            "model": m["name"], "killed": "worker:1", "outcome": "",
                                                            "error": ""}
                slurm = p.launcher == "slurm"  # worker 1 in a job step of its own: scancel stops it alone
                try:
                    res = cluster.run_cluster(job.pop("program"), workers=2, timeout=p.timeout, ready_timeout=120,
                                              run_dir=d, env=env, launcher=p.launcher,
                                              separate=("worker:1",) if slurm else (), **job)
                    if method.startswith("ps_"):
                        r = res.results["chief:0"]
                        row.update(outcome="finished with the remaining worker", scheduled=r["scheduled"],
                                   completed=r["completed"], lost=r["lost"], updates=r["updates"])
                    else:
                        row.update(outcome="finished")
                except cluster.ClusterInterrupted:
                    raise  # stopped from outside: no outcome of the killed worker
                except (cluster.ClusterError, cluster.ClusterRunFailed) as exc:
                    # the run stopped with an error (a task failed, a time-out: ClusterRunFailed's family) is
                    # the outcome; a machine that lacks something (ClusterUnavailable) is none and propagates
                    row.update(outcome="stopped with an error", error=str(exc).split(";")[0][:200])
                row["seconds"] = time.perf_counter() - t0
                row["orphans"] = _no_leftovers(d)
                rows.append(row)
                progress.done(f"{method}, trial {trial}", str(row["outcome"]))
    return pd.DataFrame(rows, columns=FAULT_COLUMNS)


def bandwidth_sweep(p: DistributedParams, base: Path, throughput: pd.DataFrame) -> pd.DataFrame:
    """Every sweep method at ``sweep.workers`` workers on each emulated bandwidth (see the chapter)."""
    if p.sweep.bandwidths is None:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    n = p.sweep.workers
    models = [m for m in model_specs(p) if m["name"] in p.sweep.models]
    at_n = throughput[throughput["workers"] == n]
    compute_bound = {(r.method, r.model): r.total_images_per_sec for r in at_n.itertuples()}
    rows: list[dict] = []
    with Progress(log, "bandwidth sweep clusters", len(p.sweep.bandwidths) * len(p.sweep.methods)) as progress:
        for bw in p.sweep.bandwidths:
            for method in p.sweep.methods:
                summary, _ = cluster_run(method, n, p, base / f"sweep-{method}-{bw}", grid=sweep_grid(p),
                                         network=cluster.Network(bandwidth=bw), models=models)
                rows += sweep_rows(method, bw, summary, p, compute_bound)
                progress.done(f"{method} at {bw}")
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)
