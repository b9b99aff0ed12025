"""`slampa2017` measured: t_grad / t_comm over gRPC, real distributed runs, and two models' errors.

Called by the experiment's ``measure`` (:mod:`repro.experiments.speedup.experiment`) when the
parameter ``measure`` is true. Every number comes from real processes started by
:func:`repro.cluster.run_cluster` (private network namespace; on an emulated link when
``train_link`` names a rate) running :mod:`repro.experiments.speedup.programs`:

1. **probes** (one cluster per link in ``probe_links``: one PS, one worker): ``t_grad`` for
   every closure batch size, ``t_pull`` / ``t_push`` (all weights PS -> worker / worker -> PS)
   and the 4-byte call latency, each repeated ``repeats`` times;
2. **runs** (one cluster per server type and worker count, every network and mode inside it):
   wall time of D batches; measured speedup ``S = D t_grad(B) / t_parallel`` (eq. 4.23, with
   the sequential ``t_grad`` of one whole batch on one worker);
3. **predictions** for the same grid from the probe on ``train_link``:

   * *thesis*: :func:`repro.experiments.speedup.equations.estimate` with ``t_comm = (t_pull + t_push) / 2``;
   * *extended* (:func:`extended_time`): the thesis' structure with these corrections, every
     input measured (by the probe, and a closure without its compute before each cluster's timed runs),
     nothing fitted to the runs:

     - **core contention**: N workers computing at once on C cores each take
       ``t_grad(b) * max(1, N u / C)``, ``u`` = cores one worker keeps busy
       (``threads_per_worker``, or C when TensorFlow uses every core), and the run cannot be
       shorter than its closures' measured busy CPU-seconds spread over C cores;
     - **measured per-closure batch**: sync-split uses ``t_grad(B/N)`` measured, not
       ``t_grad / N`` (small batches use the cores less well);
     - **overlap**: transfers overlap the forward / backward pass they feed;
     - **which schedule**: without the semaphore the central server's transfers share its link
       (the thesis' worst case), with it they are serialised (its best case); links are full
       duplex;
     - **latency and overhead**: every synchronous update pays the measured round trip ``t_lat``,
       every closure also ``t_extra``: a closure without its compute (pull, zeros pushed, through the
       coordinator), timed in each training cluster before its timed runs, minus the probe's
       ``t_lat + t_pull + t_push`` (the coordinator, the per-worker dataset, the closure's per-tensor
       ops: the probe calls the worker directly and has none of them); and with the distributed
       server the N shards are separate processes here (no shard is local to its worker), so a
       worker moves all its weights: ``2 t_comm``, not
       ``2 t_comm (N-1)/N`` (the emulated thesis cluster puts shard k on worker k's node:
       :func:`remote_share`).

4. **errors**: absolute percentage error of each model's predicted time per configuration,
   their mean (MAPE) per mode and server, and whether each model picks the measured best
   worker count and server type.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from repro import cluster
from repro.book import plots as book_plots
from repro.core.params import ParameterError
from repro.core.progress import Progress
from repro.experiments.speedup import accuracy
from repro.experiments.speedup import equations as eq
from repro.experiments.speedup.paramtypes import SpeedupGrid, SpeedupMeasure, SpeedupParams

log = logging.getLogger(__name__)

PROGRAMS = "repro.experiments.speedup.programs"
MODEL_NAMES = ("thesis", "extended")


def contention(n, cores: int, threads_per_worker: int):
    """Slow-down of one worker's gradients when ``n`` workers compute at once on ``cores`` cores."""
    u = threads_per_worker if threads_per_worker else cores
    return np.maximum(1.0, np.asarray(n, dtype=float) * u / cores)


FORWARD_SHARE = 1 / 3  # forward pass / (forward + backward): the usual "backward costs twice the forward"


def extended_time(mode: str, server: str, n: int, d: int, t_grad_b: float, t_pull: float, t_push: float,
                  t_lat: float, cores: int, threads_per_worker: int, semaphore: bool = False,
                  cpu_closure: float = 0.0, overlap: bool = True, remote_share: float = 1.0,
                  t_extra: float = 0.0) -> float:
    """Predicted training time of D batches (the extended model; see the module docstring).

    ``t_grad_b``: measured gradient time of the closure's batch (B, or B/N for sync-split);
    ``cpu_closure``: measured busy CPU-seconds of one closure (gradient + pull + push + call, or gradient +
    a closure without its compute); ``t_extra``: what a closure costs beyond pull, push and call (0: not
    measured; see :func:`compare`).

    * one closure: ``c + max(pull, f g) + max(push, (1 - f) g)``, ``c = t_lat + t_extra`` -- TensorFlow
      starts the forward pass as weights arrive and sends each gradient as backpropagation produces it,
      so transfers overlap compute (``f`` = :data:`FORWARD_SHARE`, ``g`` = ``t_grad_b`` x contention);
    * central server without the semaphore: the N transfers share its link (TCP fair share), so
      all of them end after ``N t_pull`` / ``N t_push`` (the thesis' worst case); with the
      semaphore they are serialised, the last worker pulls at ``N t_pull`` and pushes alone
      (the thesis' best case); async on the central server: the N workers start together, so
      their first closures share the link like a synchronous iteration, then they cycle through
      the server's two link directions and their own compute at the rate of a closed queueing
      network (:func:`closed_cycle_rate`): ``D max(t_pull, t_push)`` (full duplex) for many workers,
      ``D`` closures one after another for one;
    * distributed server: each worker moves its weights over its own link (shards are separate
      processes here), ``t_pull`` + ``t_push`` per closure; times ``remote_share`` where shard k is
      on worker k's node (:func:`remote_share`);
    * sync modes pay one more call per iteration (the update applied on the PS);
    * capacity: the whole run cannot be shorter than its closures' CPU-seconds spread over C cores.

    ``overlap=False`` (emulated compute, which waits for every weight before it starts and sends
    when it ends): a closure is ``c + pull + g + push``.
    """
    g = t_grad_b * float(contention(n, cores, threads_per_worker))
    f = FORWARD_SHARE if overlap else 0.0
    call = t_lat + t_extra

    def closure(pull: float, push: float) -> float:
        if not overlap:
            return call + pull + g + push
        return call + max(pull, f * g) + max(push, (1 - f) * g)

    if mode in ("sync-join", "sync-split"):
        its = -(-d // n) if mode == "sync-join" else d
        if server == "central":
            t_iter = (call + n * t_pull + (max(t_push, (1 - f) * g) if overlap else g + t_push) if semaphore
                      else closure(n * t_pull, n * t_push))
        else:
            t_iter = closure(t_pull * remote_share, t_push * remote_share)
        total, closures = its * (t_iter + t_lat), its * n
    else:
        if server == "central":
            z = closure(t_pull, t_push) - t_pull - t_push  # a closure's time off the server's link
            total = closure(n * t_pull, n * t_push) + max(d - n, 0) / closed_cycle_rate(n, t_pull, t_push, z)
        else:
            total = d / n * closure(t_pull * remote_share, t_push * remote_share)
        closures = d
    return max(total, closures * cpu_closure / cores)


def closed_cycle_rate(n: int, down: float, up: float, think: float) -> float:
    """Closures per second of ``n`` workers that each pull (``down`` s alone on the server's link), then
    spend ``think`` s elsewhere, then push (``up`` s alone), forever: exact mean-value analysis of a closed
    queueing network with two processor-sharing stations (TCP's fair share of each link direction) and
    one delay station. One worker: ``1 / (down + think + up)``; many: ``1 / max(down, up)``."""
    q_down = q_up = rate = 0.0
    for k in range(1, n + 1):
        r_down, r_up = down * (1 + q_down), up * (1 + q_up)
        rate = k / (r_down + r_up + max(think, 0.0))
        q_down, q_up = rate * r_down, rate * r_up
    return rate


def remote_share(shard_elements: list[int]) -> float:
    """With shard k on worker k's node: the busiest link direction's bytes per synchronous pull (or push),
    as a share of all the weights. Node k receives what worker k pulls from the other shards,
    ``W - s_k``, and sends what the other N - 1 workers pull from shard k, ``(N - 1) s_k``; the
    thesis' ``(N - 1) / N`` where the shards are equal (Algorithm 3.7 balances them as far as the
    layers allow)."""
    w, n = float(sum(shard_elements)), len(shard_elements)
    return max(max(w - s, (n - 1) * s) for s in shard_elements) / w


# ----------------------------------------------------------------------------- running


def _network_arg(link: str):
    return None if link == "loopback" else cluster.Network(bandwidth=link)


SLURM_SCOPE = ("the probe and training clusters on link 'loopback' (no emulated link) as SLURM job steps on the "
               "cluster's own network; clusters on an emulated link and the emulated ones as local processes")


def launcher(p: SpeedupParams, network) -> str:
    """The profile's launcher for a cluster without an emulated link; a cluster that shapes its own links
    runs locally whatever the launcher."""
    return p.launcher if network is None else "local"


def slurm_tasks(p: SpeedupParams) -> int:
    """Tasks of the largest measured cluster the SLURM launcher would run (0: none would)."""
    if p.launcher != "slurm" or "loopback" not in p.probe_links:
        return 0
    n = max(p.measure.workers)
    train = (1 + n + (n if "distributed" in p.measure.servers else 1)) if p.train_link == "loopback" else 0
    return max(3, train)


def check(p: SpeedupParams) -> None:
    """One-line errors for the measuring configuration (``p.measure`` on ``probe_links``), before anything runs."""
    check_grid(p.measure, "measure")
    if p.train_link not in p.probe_links:
        raise ParameterError(f"parameter 'train_link': {p.train_link!r} must be one of probe_links "
                             f"{p.probe_links} (its probe gives the predictions' inputs)")


def check_grid(grid: SpeedupGrid, group: str) -> None:
    """One-line errors for one grid (``p.measure``, ``p.emulate``; ``group`` names its parameters)."""
    for n in grid.workers:
        if "sync-split" in grid.modes and grid.batch % n:
            raise ParameterError(f"parameter '{group}.batch': sync-split needs it divisible by every worker count, "
                                 f"{grid.batch} is not divisible by {n}")
        if grid.batches < n:
            raise ParameterError(f"parameter '{group}.batches': D = {grid.batches} is smaller than {n} workers")


def inputs(p: SpeedupParams, grid: SpeedupGrid) -> tuple[int, int]:
    """(input size, classes) of a grid's networks: the measured grid's own; else ``input_size``, ``num_classes``."""
    return (grid.image_size, grid.classes) if isinstance(grid, SpeedupMeasure) else (p.input_size, p.num_classes)


def train_link(p: SpeedupParams, emu=None) -> str:  # of a grid's training clusters: the profile's where emulated
    return emu.profile.link if emu else p.train_link


def probes(p: SpeedupParams, grid: SpeedupGrid, base: Path, emu=None) -> pd.DataFrame:
    """One probe cluster per link (``probe_links``; emulated: the profile's): t_grad per batch size of ``grid``,
    t_pull, t_push, t_lat per network. ``emu`` (:class:`repro.experiments.speedup.emulation.Emulation`): the link
    runs dilated, times are divided by the dilation, and ``t_grad`` is the hardware profile's, not measured."""
    sizes = sorted({grid.batch} | {grid.batch // n for n in grid.workers if "sync-split" in grid.modes})
    image_size, classes = inputs(p, grid)
    rows = []
    env = cluster.thread_env(p.threads_per_worker)
    k = emu.probe_dilation if emu else 1.0
    for link in ([emu.profile.link] if emu else p.probe_links):
        net = emu.network(link, k) if emu else _network_arg(link)
        res = cluster.run_cluster(f"{PROGRAMS}:probe", workers=1, ps=1, network=net, env=env,
                                  launcher=launcher(p, net),
                                  kwargs={"networks": grid.networks, "image_size": image_size,
                                          "num_classes": classes, "batch_sizes": [] if emu else sizes,
                                          "repeats": p.repeats, "warmup": 2, "seed": p.seed},
                                  timeout=p.timeout, ready_timeout=120, run_dir=base / f"probe-{link}")
        for r in res.results["chief:0"]["networks"]:
            common = {"link": link, "network": r["network"], "image_size": r["image_size"],
                      "parameters": r["parameters"], "bytes": r["bytes"], "dilation": k}
            for q in ("t_pull", "t_push", "t_latency"):
                rows.append({**common, "quantity": q, "batch": np.nan, **_stat_cols(r[q], k)})
            t_grad = emu.t_grad_stats(r["network"], sizes, grid.batch) if emu else r["t_grad"]
            for b, st in t_grad.items():
                rows.append({**common, "quantity": "t_grad", "batch": int(b), **_stat_cols(st)})
    return pd.DataFrame(rows)


def _stat_cols(st: dict, dilation: float = 1.0) -> dict:
    k = float(dilation)
    return {"mean_s": st["mean"] / k, "std_s": st["std"] / k, "median_s": st["median"] / k, "min_s": st["min"] / k,
            "max_s": st["max"] / k, "repeats": st["n"], "cpu_s": st["cpu_seconds"]}


def runs(p: SpeedupParams, grid: SpeedupGrid, base: Path, emu=None, plan=None, tag: str = "train") -> pd.DataFrame:
    """One training cluster per (server, N) of ``grid``: every network and mode; wall time of D batches.
    ``emu``: emulated compute; ``plan`` (from ``emu.plan``) gives each cluster its networks and
    dilation; seconds are divided by the dilation and the busiest link's rate is recorded."""
    rows = []
    env = cluster.thread_env(p.threads_per_worker)
    image_size, classes = inputs(p, grid)
    plan = plan or [{"server": s, "workers": n, "networks": grid.networks, "dilation": 1.0}
                    for s in grid.servers for n in grid.workers]
    with Progress(log, f"speedup {tag} clusters", len(plan),
                  weights=[c["dilation"] * len(c["networks"]) for c in plan]) as progress:
        for c in plan:
            server, n, k = c["server"], c["workers"], c["dilation"]
            kwargs = {"networks": c["networks"], "server": server, "image_size": image_size,
                      "num_classes": classes, "batch_size": grid.batch, "batches": grid.batches, "modes": grid.modes,
                      "semaphore": p.semaphore and n > 1,  # one worker: nothing to serialise
                      "learning_rate": 0.01, "warmup_iterations": 1, "seed": p.seed}
            if emu:
                kwargs["emulate"] = {"t_grad": emu.profile.t_grad_s | emu.extra_t_grad, "dilation": k}
            link = emu.network(train_link(p, emu), k, server) if emu else _network_arg(p.train_link)
            res = cluster.run_cluster(
                f"{PROGRAMS}:train", workers=n, ps=1 if server == "central" else n, network=link, env=env,
                launcher=launcher(p, link), timeout=p.timeout, ready_timeout=180,
                run_dir=base / f"{tag}-{server}-{n}", kwargs=kwargs)
            for net in res.results["chief:0"]["networks"]:
                rows += [_run_row(net, r, n, k, res if emu else None) for r in net["runs"]]
            progress.done(f"{server} server, N = {n}", f"{', '.join(c['networks'])}; dilation {k:g}")
    return pd.DataFrame(rows)


def _run_row(net: dict, r: dict, n: int, k: float, res) -> dict:
    row = {"network": net["network"], "server": net["server"], "workers": n,
           "mode": r["mode"], "semaphore": bool(r["semaphore"]), "seconds": r["seconds"] / k,
           "iterations": r["iterations"], "closure_batch": r["closure_batch"], "closures": r["closures"],
           "closures_per_worker": " ".join(map(str, r["closures_per_worker"])),
           "ps_tasks": net["ps"], "shard_elements": " ".join(map(str, net["shard_elements"])),
           "assignment_matches": net["placed"] == net["assignment"]}
    if net.get("bare_closure"):  # a closure without its compute, through the coordinator, before the timed runs
        bare = net["bare_closure"]
        row.update({"t_bare_closure_s": bare["mean"], "cpu_bare_closure_s": bare["cpu_seconds"]})
    if res is not None:  # emulated: the dilation, and the busiest link direction's rate in emulated time
        moved = res.bytes_between(*r["window"])
        busiest = max(max(v["sent"], v["received"]) for v in moved.values())
        row.update({"dilation": k, "wall_s": r["seconds"], "busiest_link_mbps": busiest * 8 / r["seconds"] * k / 1e6,
                    "ps_on_workers": any("+" in link for link in moved)})
    return row


# ----------------------------------------------------------------------------- comparing


def _probe_value(pr: pd.DataFrame, link: str, network: str, quantity: str, batch=None, column="mean_s") -> float:
    sel = pr[(pr["link"] == link) & (pr["network"] == network) & (pr["quantity"] == quantity)]
    if batch is not None:
        sel = sel[sel["batch"] == batch]
    return float(sel[column].iloc[0])


def compare(measured: pd.DataFrame, pr: pd.DataFrame, p: SpeedupParams, grid: SpeedupGrid, cores: int,
            emu=None) -> pd.DataFrame:
    """Measured time and speedup of ``grid``'s runs next to the thesis' and the extended model's, per configuration.
    ``emu`` (emulated): every worker has its own emulated GPU (no core contention, no CPU bound) and waits for all
    its weights before it computes (no overlap)."""
    link, d, b, emulated = train_link(p, emu), grid.batches, grid.batch, emu is not None
    rows = []
    for r in measured.itertuples():
        t_grad = _probe_value(pr, link, r.network, "t_grad", b)
        t_grad_b = _probe_value(pr, link, r.network, "t_grad", r.closure_batch)
        t_pull = _probe_value(pr, link, r.network, "t_pull")
        t_push = _probe_value(pr, link, r.network, "t_push")
        t_lat = _probe_value(pr, link, r.network, "t_latency")
        t_comm = (t_pull + t_push) / 2
        bare, cpu_bare = _measured(r, "t_bare_closure_s"), _measured(r, "cpu_bare_closure_s")
        extra = max(0.0, bare - t_lat - t_pull - t_push) if bare else 0.0
        cpu = _probe_value(pr, link, r.network, "t_grad", r.closure_batch, "cpu_s") + (cpu_bare if bare else sum(
            _probe_value(pr, link, r.network, q, None, "cpu_s") for q in ("t_pull", "t_push", "t_latency")))
        local = r.server == "distributed" and bool(getattr(r, "ps_on_workers", False))
        share = remote_share([int(x) for x in str(r.shard_elements).split()]) if local else 1.0
        thesis = float(eq.estimate(t_grad, t_comm, r.mode, r.server, [int(r.workers)], d,
                                   semaphore=bool(r.semaphore))["t_train"].iloc[0])
        ext = extended_time(r.mode, r.server, int(r.workers), d, t_grad_b, t_pull, t_push, t_lat,
                            max(cores, int(r.workers)) if emulated else cores,
                            1 if emulated else p.threads_per_worker, bool(r.semaphore),
                            0.0 if emulated else cpu, overlap=not emulated, remote_share=share,
                            t_extra=0.0 if emulated else extra)
        server = r.server + ("+semaphore" if r.semaphore else "")
        rows.append({"network": r.network, "mode": r.mode, "server": server, "workers": int(r.workers),
                     "t_grad": t_grad, "t_comm": t_comm, "measured_s": r.seconds,
                     "thesis_s": thesis, "extended_s": ext,
                     "speedup_measured": d * t_grad / r.seconds, "speedup_thesis": d * t_grad / thesis,
                     "speedup_extended": d * t_grad / ext,
                     "error_thesis": thesis / r.seconds - 1, "error_extended": ext / r.seconds - 1})
    return pd.DataFrame(rows)


def _measured(row, column: str) -> float:
    """A run row's optional measurement; 0 where its run predates it (NaN or no column)."""
    v = getattr(row, column, np.nan)
    return 0.0 if pd.isna(v) else float(v)


def errors(cmp: pd.DataFrame) -> pd.DataFrame:
    """Mean absolute percentage error of each model per network, mode and server, plus an 'all' row."""
    rows = []
    for keys, g in cmp.groupby(["network", "mode", "server"], sort=False):
        rows.append({"network": keys[0], "mode": keys[1], "server": keys[2], "configurations": len(g),
                     **{f"mape_{m}": float(g[f"error_{m}"].abs().mean() * 100) for m in MODEL_NAMES}})
    rows.append({"network": "all", "mode": "all", "server": "all", "configurations": len(cmp),
                 **{f"mape_{m}": float(cmp[f"error_{m}"].abs().mean() * 100) for m in MODEL_NAMES}})
    return pd.DataFrame(rows)


def choices(cmp: pd.DataFrame) -> pd.DataFrame:
    """Per network and mode: the measured best (server, N) and each model's pick (thesis' servers only)."""
    rows = []
    plain = cmp[~cmp["server"].str.endswith("+semaphore")]
    for (net, mode), g in plain.groupby(["network", "mode"], sort=False):
        def pick(col):
            best = g.loc[g[col].idxmax()]
            return f"{best['server']} N={int(best['workers'])}"
        measured = pick("speedup_measured")
        row = {"network": net, "mode": mode, "measured_best": measured}
        for m in MODEL_NAMES:
            row[f"{m}_pick"] = pick(f"speedup_{m}")
            row[f"{m}_right"] = row[f"{m}_pick"] == measured
        rows.append(row)
    return pd.DataFrame(rows)


def semaphore_effect(cmp: pd.DataFrame, d: int) -> pd.DataFrame:
    """Central server with and without the semaphore: measured times and the thesis' best case."""
    keys = ["network", "mode", "workers"]
    both = cmp[cmp["server"] == "central"].merge(cmp[cmp["server"] == "central+semaphore"], on=keys,
                                                  suffixes=("", "_sem"))
    rows = []
    for r in both.itertuples():
        best = float(eq.estimate(r.t_grad, r.t_comm, r.mode, "central", [int(r.workers)], d)["t_train_best"].iloc[0])
        rows.append({"network": r.network, "mode": r.mode, "workers": int(r.workers), "measured_s": r.measured_s,
                     "semaphore_s": r.measured_s_sem, "thesis_best_s": best,
                     "semaphore_over_plain": r.measured_s_sem / r.measured_s,
                     "closer_to_best": abs(r.measured_s_sem - best) < abs(r.measured_s - best)})
    return pd.DataFrame(rows)


def _trend_right(g: pd.DataFrame, col: str) -> bool:
    g = g.sort_values("workers")
    return bool((np.sign(np.diff(g[col])) == np.sign(np.diff(g["speedup_measured"]))).all())


def measured_claims(cmp: pd.DataFrame, said: dict) -> dict:
    """The thesis' general statements about its measurements, checked on ours: {claim id: (ours, passed)}.

    ``said``: the experiment's claims (:func:`repro.core.claims.load`), whose thresholds decide.
    Statements tied to the thesis' GPUs and 224 px networks (SqueezeNet's 6.5, ...) are not
    comparable with a CPU run and are not in here.
    """
    out = {}
    plain = cmp[cmp["server"].isin(["central", "distributed"])]
    one = plain[(plain["workers"] == 1) & (plain["server"] == "distributed")]
    if not one.empty:
        lo, hi = float(one["speedup_measured"].min()), float(one["speedup_measured"].max())
        least = said["one_worker_distributed_measured"].threshold("slightly_slower_min")
        out["one_worker_distributed_measured"] = (
            f"N = 1, distributed: measured speedup {lo:.2f}-{hi:.2f} (slightly slower: {least:g} <= S < 1)",
            least <= lo and hi < 1)
    wide = plain.pivot_table(index=["network", "mode", "workers"], columns="server", values="speedup_measured")
    if {"central", "distributed"} <= set(wide.columns):
        w = wide.dropna()
        w = w[w.index.get_level_values("workers") > 1]
        if len(w):
            ratio = w["distributed"] / w["central"]
            out["distributed_never_worse_measured"] = (
                f"distributed / central measured speedup at N > 1: {ratio.min():.2f}-{ratio.max():.2f}",
                bool((ratio >= 1.0).all()))
    out.update(_model_claims(plain, said))
    out.update(accuracy.split_accurate(plain, said))
    out.update(_semaphore_claim(cmp, said))
    return out


def _model_claims(plain: pd.DataFrame, said: dict) -> dict:
    """The thesis model's accuracy on the central server, and its trend in N on the distributed one."""
    out: dict[str, Any] = {}
    central = plain[plain["server"] == "central"]
    if central.empty:
        return out
    mape = float(central["error_thesis"].abs().mean() * 100)
    limit = said["central_predictions_accurate"].threshold("accurate_mape")
    out["central_predictions_accurate"] = (f"thesis model, central server: MAPE {mape:.0f} % "
                                           f"(accurate: <= {limit:.0f} %)", mape <= limit)
    dist = plain[plain["server"] == "distributed"]
    groups = [g for _, g in dist.groupby(["network", "mode"]) if len(g) > 1]
    if groups:
        right = sum(_trend_right(g, "speedup_thesis") for g in groups)
        mape_d = float(dist["error_thesis"].abs().mean() * 100)
        out["distributed_predictions_trend"] = (
            f"thesis model, distributed: MAPE {mape_d:.0f} % (central {mape:.0f} %); trend in N right in "
            f"{right} of {len(groups)} (network, mode)", right == len(groups) and mape_d >= mape)
    return out


def _semaphore_claim(cmp: pd.DataFrame, said: dict) -> dict:
    """Training time through the central server with the semaphore over without it, per (network, mode, N)."""
    keys = ["network", "mode", "workers"]
    both = cmp[cmp["server"] == "central"].merge(cmp[cmp["server"] == "central+semaphore"], on=keys,
                                                  suffixes=("", "_sem"))
    if both.empty:
        return {}
    ratio = both["measured_s_sem"] / both["measured_s"]
    rtol = said["semaphore_never_worse"].threshold("slower_rtol")
    worst = both.loc[ratio.idxmax()]
    return {"semaphore_never_worse": (
        f"time with / without the semaphore: {ratio.min():.2f}-{ratio.max():.2f} over {len(both)} configurations, "
        f"largest at {worst['network']}, {worst['mode']}, N={int(worst['workers'])} (never worse: <= {1 + rtol:g})",
        bool(ratio.max() <= 1 + rtol))}


# ----------------------------------------------------------------------------- figure


def plot_measured(cmp: pd.DataFrame, dpi: int = 100,
                  title: str = "slampa2017 on this machine: measured speedup (points), thesis model (dashed), "
                               "extended (solid)"):
    """Measured speedup (points) and both models' predictions (lines), per network and mode."""
    import matplotlib.pyplot as plt

    book_plots.style()
    nets, modes = list(dict.fromkeys(cmp["network"])), list(dict.fromkeys(cmp["mode"]))
    servers = list(dict.fromkeys(cmp["server"]))
    fig, axes = plt.subplots(len(nets), len(modes), figsize=(4.2 * len(modes), 3.2 * len(nets)), squeeze=False,
                             dpi=dpi)
    colors = dict(zip(servers, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for i, net in enumerate(nets):
        for j, mode in enumerate(modes):
            ax = axes[i][j]
            for server in servers:
                g = cmp[(cmp["network"] == net) & (cmp["mode"] == mode) & (cmp["server"] == server)]
                g = g.sort_values("workers")
                if g.empty:
                    continue
                c = colors[server]
                ax.plot(g["workers"], g["speedup_measured"], "o", color=c, label=f"{server} measured")
                ax.plot(g["workers"], g["speedup_thesis"], "--", color=c, lw=1, label=f"{server} thesis")
                ax.plot(g["workers"], g["speedup_extended"], "-", color=c, lw=1.4, label=f"{server} extended")
            ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
            ax.set_title(f"{net}, {mode}")
            ax.set_xlabel("workers N")
            ax.set_ylabel("speedup S")
            ax.set_xticks(sorted(cmp["workers"].unique()))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.02 - 0.03 * len(servers)),
               frameon=False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
