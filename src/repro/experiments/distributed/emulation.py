"""`polishchuk2019` part B's cluster, emulated on this machine: K80 ``t_grad``, 25 Gb/s links, real tensors.

With ``emulate`` naming a hardware profile (``k80-p2.16xlarge``, :mod:`repro.predict.hardware`)
the experiment runs a second grid next to the real one: the same programs
(:mod:`repro.experiments.distributed.programs`) on the paper's models at their paper sizes, where a
worker *waits* the profile's ``t_grad`` (batch / images per second of tf_cnn_benchmarks on one
K80) instead of computing, and moves tensors of the real gradients' shapes through the real
strategy (MWMS ring all-reduce, or the parameter server, which applies them) over emulated links of
the profile's rate, every process its own node. Time dilation as in :mod:`repro.predict.hardware`:
per cluster the least factor the cores can carry (25 Gb/s per link needs a large one), times
divided by it. Horovod runs there too (each node names its host by its own address, which Horovod
0.28 resolves for the Gloo device of its process sets); where it is not installed, its rows are not
measured and the run says so.

Tables: ``emulated_runs`` (every cluster run; ``emulate.repeats`` independent runs of the grid),
``emulated_throughput`` (their mean, with ``runs`` and the spread), ``emulated_scaling``,
``emulated_ratios`` (as the real ones, from the means), ``emulated_dilation_check`` (with
``dilation_check``: each method's smallest multi-worker cluster again at a second dilation) and
``emulation_checks`` (one all-reduce worker, no communication: images/sec = batch / t_grad, every
run; the two dilations agree).
"""

from __future__ import annotations

import logging
import os

import pandas as pd

from repro import cluster
from repro.core.params import ParameterError
from repro.core.progress import Progress
from repro.experiments.distributed import runs
from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency
from repro.experiments.distributed.common import HOROVOD_NOT_INSTALLED, horovod_available
from repro.experiments.distributed.paramtypes import DistributedParams
from repro.predict import hardware

log = logging.getLogger(__name__)
CHECK_TOLERANCE = hardware.CHECK_TOLERANCE
COPIES_WORKER, COPIES_PS, COPIES_CHIEF = 3, 2, 1  # weights, gradients, a message in flight; PS: weights + update


def check(p: DistributedParams) -> None:
    """One-line errors for an emulated configuration, before anything runs."""
    hardware.check_param(p.emulate.hardware, p.emulate.models)
    if p.emulate.hardware is None or not p.dilation_check.factor:
        return
    extra = [m for m in p.dilation_check.models if m not in p.emulate.models]
    if extra:
        raise ParameterError(f"parameter 'dilation_check.models': {extra[0]} is not in emulate.models "
                             f"({', '.join(p.emulate.models)})")
    if max(p.emulate.workers) < 2:
        raise ParameterError("parameter 'dilation_check.factor': needs a cluster of two or more workers in "
                             "emulate.workers")


def profile(p: DistributedParams) -> hardware.Profile | None:
    """The hardware profile of the emulated grid (``emulate.hardware``; None: no emulation), loaded once in
    ``prepare`` and carried in its inputs."""
    return None if p.emulate.hardware is None else hardware.load(p.emulate.hardware)


def flows(method: str, n: int, ps: int) -> int:
    """Link directions busy at once at worst: every worker's link both ways for a ring of two or
    more (one worker all-reduces with itself); the parameter servers' links both ways."""
    if method in ("ring", "horovod"):
        return 2 * n if n > 1 else 0
    return 2 * ps


def _model_bytes(p: DistributedParams, audit: pd.DataFrame) -> dict[str, float]:
    """Bytes of each emulated model's weights, from the Table 1 audit (built at the paper's sizes)."""
    a = audit.set_index("model")
    missing = [m for m in p.emulate.models if m not in a.index or pd.isna(a.loc[m, "ours_params_m"])]
    if missing:
        raise ParameterError(f"parameter 'audit_models': the emulation needs the size of {missing[0]} (audit it)")
    return {m: 4e6 * float(a.loc[m, "ours_params_m"]) for m in p.emulate.models}


def least_dilation(method: str, n: int, p: DistributedParams, link: str, cores: int) -> float:
    """The least time dilation (>= 1) whose transfers ``cores`` x headroom can carry."""
    room = cores * float(hardware.machine()["headroom"])
    return max(1.0, hardware.cpu_needed(flows(method, n, p.ps), link, 1.0) / room)


def footprint(method: str, n: int, p: DistributedParams) -> tuple[float, int]:
    """(copies of the model, TensorFlow processes) of one emulated cluster."""
    ps = 0 if method in ("ring", "horovod") else p.ps
    return COPIES_WORKER * n + COPIES_PS * ps + (COPIES_CHIEF if ps else 0), n + ps + (1 if ps else 0)


def dilations(p: DistributedParams, prof: hardware.Profile, cores: int) -> list[dict]:
    """Every emulated cluster with its dilation (``dilation``, else the least the cores can carry)."""
    out = []
    for method in p.emulate.methods:
        for n in p.emulate.workers:
            f, what = flows(method, n, p.ps), f"{method} with {n} workers"
            if p.dilation > 0:
                k = p.dilation
                hardware.check_dilation(f, prof.link, k, cores, what)
            else:
                k = round(least_dilation(method, n, p, prof.link, cores), 2)
            out.append({"method": method, "workers": n, "dilation": k})
    return _same_baseline(out)


def plan(p: DistributedParams, prof: hardware.Profile, audit: pd.DataFrame, cores: int | None = None,
         available: float | None = None) -> list[dict]:
    """Every emulated cluster with its dilation; refuses CPU or memory it would not have, before any process."""
    import psutil

    available = available if available is not None else float(psutil.virtual_memory().available)
    sizes = _model_bytes(p, audit)
    todo = dilations(p, prof, cores or os.cpu_count() or 1)
    for c in todo:
        copies, processes = footprint(c["method"], c["workers"], p)
        hardware.check_memory(max(sizes.values()), copies, processes, available,
                              f"the emulated cluster {c['method']} with {c['workers']} workers "
                              f"({', '.join(p.emulate.models)})")
    return todo


def check_waits(p: DistributedParams, prof: hardware.Profile, cores: int | None = None) -> None:
    """Refuse (one line, before anything trains) an emulated cluster whose waits alone exceed ``timeout``:
    every timed step waits ``t_grad x dilation`` of each model (the warm-up waits nothing), which no machine
    speed shortens, in one run under one ``timeout``."""
    cores = cores or os.cpu_count() or 1
    todo = dilations(p, prof, cores)
    named = [(c, p.emulate.models, "emulate.steps", "the emulated grid") for c in todo]
    named += [(c, p.dilation_check.models, "dilation_check.factor", "the dilation check")
              for c in check_plan(p, prof, todo, cores)]
    for c, models, param, what in named:
        seconds = p.emulate.steps * c["dilation"] * sum(prof.t_grad(m, p.batch_size, prof.batch) for m in models)
        where = f"{what}'s cluster of {c['method']} with {c['workers']} workers (dilation {c['dilation']:g})"
        hardware.check_waits(seconds, p.timeout, param, where)


def check_plan(p: DistributedParams, prof: hardware.Profile, todo: list[dict],
               cores: int | None = None) -> list[dict]:
    """The dilation check's clusters: each method's smallest multi-worker cluster of ``todo`` again, at its
    dilation x ``dilation_check`` (refused, like any dilation, where the cores could not carry it)."""
    if not p.dilation_check.factor:
        return []
    link, out = prof.link, []
    for method in p.emulate.methods:
        multi = [c for c in todo if c["method"] == method and c["workers"] > 1]
        if multi:
            c = min(multi, key=lambda c: c["workers"])
            k = round(c["dilation"] * p.dilation_check.factor, 2)
            hardware.check_dilation(flows(method, c["workers"], p.ps), link, k, cores or os.cpu_count() or 1,
                                    f"the dilation check of {method} with {c['workers']} workers")
            out.append({"method": method, "workers": c["workers"], "dilation": k, "against": c["dilation"]})
    return out


def _same_baseline(todo: list[dict]) -> list[dict]:
    """One all-reduce worker has no link, so it would run undilated, and this machine's own CPU work (the
    update applied, Horovod's buffer copies) would weigh k times more in its time than in the clusters it
    is the baseline of: it runs at the dilation of its method's smallest multi-worker cluster instead."""
    for c in todo:
        if c["workers"] == 1 and c["method"] in ("ring", "horovod"):
            more = [d for d in todo if d["method"] == c["method"] and d["workers"] > 1]
            if more:
                c["dilation"] = min(more, key=lambda d: d["workers"])["dilation"]
    return todo


def measure(run, p: DistributedParams, prof: hardware.Profile, audit: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The emulated grid ``p.emulate`` on the hardware profile ``prof`` (see the module docstring); ``audit``
    gives the models' sizes for the memory check."""
    todo = plan(p, prof, audit)
    second = check_plan(p, prof, todo)  # refuses, like plan, before any process starts
    models = runs.model_specs(p, p.emulate.models, image_size=0)  # the paper's sizes
    # seconds for one worker's batch: the profile's images/s at its batch, scaled to ours
    t_grad = {m["name"]: prof.t_grad(m["name"], p.batch_size, prof.batch) for m in models}
    run.note("emulation", f"hardware profile {prof.name}: {prof.description}; source: {prof.source}; "
             f"dilations {sorted({c['dilation'] for c in todo})}; topology: {prof.topology}")
    summary = []
    skip = {"horovod"} if "horovod" in p.emulate.methods and not horovod_available() else set()
    if skip:
        run.note("emulated horovod", HOROVOD_NOT_INSTALLED)
    repeats, grid = p.emulate.repeats, [c for c in todo if c["method"] not in skip]
    weights = [c["dilation"] * c["workers"] for _ in range(repeats) for c in grid]
    with Progress(log, "emulated clusters", repeats * len(grid), weights=weights) as progress:
        for rep in range(1, repeats + 1):  # the whole grid once, then again: a slow spell of the machine hits one run
            for c in grid:
                name = f"emulated-{c['method']}-{c['workers']}" + (f"-run{rep}" if repeats > 1 else "")
                net = cluster.Network(bandwidth=hardware.dilated_rate(prof.link, c["dilation"]))
                s, _ = runs.cluster_run(c["method"], c["workers"], p, run.dir / "clusters" / name, grid=p.emulate,
                                        network=net, models=models,
                                        emulate={"t_grad": t_grad, "dilation": c["dilation"]})
                summary += [dict(r, dilation=c["dilation"], hardware=prof.name, run=rep) for r in s]
                progress.done(f"{c['method']}, {c['workers']} worker(s), run {rep}", f"dilation {c['dilation']:g}")
    each = pd.DataFrame(summary).drop(columns=["window_bytes"], errors="ignore")
    tp = mean_of_runs(each)
    out = {"emulated_runs": each, "emulated_throughput": tp, "emulated_scaling": scaling_efficiency(tp),
           "emulated_ratios": ratios(tp), "emulation_checks": checks(each, t_grad, p.batch_size),
           "emulated_limits": limits(p, prof, audit)}
    again = _dilation_check(run, p, prof, [c for c in second if c["method"] not in skip], models, t_grad)
    if len(again):
        out["emulated_dilation_check"] = again
        out["emulation_checks"] = pd.concat([out["emulation_checks"], dilation_checks(tp, again)], ignore_index=True)
    return out


def _dilation_check(run, p: DistributedParams, prof: hardware.Profile, todo: list[dict], models: list[dict],
                    t_grad: dict) -> pd.DataFrame:
    """The clusters of :func:`check_plan`, run with ``dilation_check.models`` (their summary rows)."""
    rows = []
    chosen = [m for m in models if m["name"] in p.dilation_check.models]
    with Progress(log, "dilation-check clusters", len(todo)) as progress:
        for c in todo:
            net = cluster.Network(bandwidth=hardware.dilated_rate(prof.link, c["dilation"]))
            s, _ = runs.cluster_run(c["method"], c["workers"], p,
                                    run.dir / "clusters" / f"dilation-check-{c['method']}", grid=p.emulate,
                                    network=net, models=chosen, emulate={"t_grad": t_grad, "dilation": c["dilation"]})
            rows += [dict(r, dilation=c["dilation"], against=c["against"], hardware=prof.name) for r in s]
            progress.done(f"{c['method']}, {c['workers']} worker(s)", f"dilation {c['dilation']:g}")
    return pd.DataFrame(rows).drop(columns=["window_bytes"], errors="ignore")


KEYS = ["model", "method", "workers"]


def mean_of_runs(each: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, method, workers): the mean of its independent runs, their count (``runs``) and
    the relative spread of their total images/sec (max / min - 1)."""
    numeric = [c for c in each.select_dtypes("number").columns if c not in KEYS + ["run"]]
    other = [c for c in each.columns if c not in numeric + KEYS + ["run"]]
    g = each.groupby(KEYS, sort=False)
    out = g.agg({**{c: "mean" for c in numeric}, **{c: "first" for c in other}})
    out["runs"] = g.size()
    tot = g["total_images_per_sec"]
    out["run_spread"] = tot.max() / tot.min() - 1
    return out.reset_index()[[c for c in each.columns if c != "run"] + ["runs", "run_spread"]]


LIMIT_WORKERS = (2, 4, 6, 8, 10, 12, 16, 20)  # the paper's PS grid went to 10 processes, Horovod to 20


def limits(p: DistributedParams, prof: hardware.Profile, audit: pd.DataFrame, workers=LIMIT_WORKERS,
           cores: int | None = None, available: float | None = None) -> pd.DataFrame:
    """Where the emulated grid stops on this machine, and why: per method, model and worker count the
    dilation the cores need (:func:`flows`), the memory the cluster needs (refused above what is
    available), and the wall minutes of one warm-up plus one timed step (the dilated wait and the
    busiest link's transfer: a ring member's 2 (N - 1) / N of the weights, the PS link's N copies)."""
    import psutil

    cores = cores or os.cpu_count() or 1
    available = available if available is not None else float(psutil.virtual_memory().available)
    a = audit.set_index("model")
    models = [m for m in a.index if m in prof.t_grad_s and pd.notna(a.loc[m, "ours_params_m"])]
    rows = []
    for method in ("ring", "ps_sync"):
        for n in workers:
            k = least_dilation(method, n, p, prof.link, cores)
            copies, processes = footprint(method, n, p)
            for m in models:
                size = 4e6 * float(a.loc[m, "ours_params_m"])
                need = size * copies + processes * hardware.PROCESS_BASE_BYTES
                busiest = 2 * (n - 1) / n * size if method == "ring" else n * size / p.ps
                step = k * (prof.t_grad(m, p.batch_size, prof.batch) + hardware.transfer_seconds(busiest, prof.link))
                rows.append({"method": method, "workers": n, "model": m, "dilation": round(k, 1),
                             "memory_gb": need / 1e9, "fits_in_memory": need <= available,
                             "minutes_warmup_and_step": 2 * step / 60})
    return pd.DataFrame(rows)


def checks(tp: pd.DataFrame, t_grad: dict, batch: int) -> pd.DataFrame:
    """One all-reduce worker has nothing to communicate: its images/sec must be batch / t_grad (every run)."""
    rows = []
    for r in tp[tp["method"].isin(["ring", "horovod"]) & (tp["workers"] == 1)].itertuples():
        want = batch / t_grad[r.model]
        rows.append({"check": f"one {r.method} worker, no communication: images/sec = batch / t_grad", "model": r.model,
                     "run": getattr(r, "run", 1), "expected": want, "measured": r.total_images_per_sec,
                     "error": r.total_images_per_sec / want - 1, "dilation": r.dilation})
    out = pd.DataFrame(rows, columns=["check", "model", "run", "expected", "measured", "error", "dilation"])
    out["within"] = out["error"].abs() <= CHECK_TOLERANCE
    return out


def dilation_checks(tp: pd.DataFrame, again: pd.DataFrame) -> pd.DataFrame:
    """Time dilation changes no result: a cluster run again at a second dilation gives the images/sec (in
    emulated time) of the grid's mean at the first, within 5 %."""
    rows = []
    ref = tp.set_index(KEYS)
    for r in again.itertuples():
        want = float(ref.loc[(r.model, r.method, r.workers), "total_images_per_sec"])
        rows.append({"check": f"two dilations: {r.method} with {r.workers} workers, images/sec at dilation "
                              f"{r.dilation:g} = at {r.against:g}", "model": r.model, "run": 1, "expected": want,
                     "measured": r.total_images_per_sec, "error": r.total_images_per_sec / want - 1,
                     "dilation": r.dilation})
    out = pd.DataFrame(rows, columns=["check", "model", "run", "expected", "measured", "error", "dilation"])
    out["within"] = out["error"].abs() <= CHECK_TOLERANCE
    return out
