"""The thesis' cluster, emulated on this machine: its GPUs' ``t_grad``, its 1 Gb/s links, real tensors.

With ``emulate`` naming a hardware profile (:mod:`repro.predict.hardware`, ``gtx970-1gbit``), the
experiment runs a second grid, next to the CPU one: the same programs
(:mod:`repro.experiments.speedup.programs`) on the thesis' networks at ``input_size`` and
``num_classes`` (224 px, 256 classes), where every closure pulls the real weights, *waits* the
profile's ``t_grad`` (:mod:`repro.cluster.compute`) and pushes tensors of the real gradients'
shapes, over emulated links of the profile's rate. Time dilation ``k``: links at ``rate / k``,
waits ``t_grad * k``, every reported time divided by ``k`` (per cluster: ``dilation = 0`` takes
the smallest ``k >= 1`` whose transfers this machine's cores can carry).

Checks of the emulation itself (``emulation_checks``): a lone transfer takes
``bytes / rate + t_latency`` (probe), and with next to no communication (:data:`NULL`) sync-join
on the distributed server gives ``S = N``; ``dilation_check`` re-runs one cluster at a second
factor. The replay (``replay.networks``): the distributed-server cluster with the most workers, for
those networks and ``replay.modes``, again ``replay.repeats`` times at D = ``replay.batches`` (the
thesis' 128), each time new processes (``replay.repeats``; 0: none): the runs behind the reported speedups. Tables:
``emulated_probes``, ``emulated_runs``, ``emulated_vs_predicted``, ``emulated_errors``,
``emulation_checks``, ``dilation_check``, ``emulated_replay``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from repro import cluster
from repro.core import paper as _paper
from repro.core import verdicts as V
from repro.core.params import ParameterError
from repro.experiments.speedup import measure as sm
from repro.experiments.speedup import rounding
from repro.experiments.speedup.paramtypes import SpeedupEmulate, SpeedupParams
from repro.experiments.speedup.programs import NULL_NETWORK as NULL
from repro.predict import hardware

CHECK_TOLERANCE = hardware.CHECK_TOLERANCE
# copies of the model a cluster holds (PS: weights + accumulators; each worker: pulled weights,
# gradients, a message in flight; chief: the throw-away build and its placement build)
COPIES_PS, COPIES_WORKER, COPIES_CHIEF = 2, 3, 2


@dataclass
class Emulation:
    """One emulated setup: the hardware profile, the cores and memory it may use, its clusters."""

    profile: hardware.Profile
    cores: int
    extra_t_grad: dict = field(default_factory=dict)
    probe_dilation: float = 1.0

    def network(self, link: str, dilation: float, server: str = "central") -> cluster.Network:
        """The emulated links; the distributed server's shard k on worker k's node where the profile says so."""
        return cluster.Network(bandwidth=hardware.dilated_rate(link, dilation),
                               ps_on_workers=self.profile.ps_on_workers and server == "distributed")

    def t_grad_stats(self, network: str, sizes: list[int], batch: int) -> dict:
        """The profile's ``t_grad`` for each closure size, shaped like a probe's measured statistics."""
        out = {}
        for b in sizes:
            t = (self.profile.t_grad(network, b, batch) if network in self.profile.t_grad_s
                 else self.extra_t_grad[network])
            out[str(b)] = {"mean": t, "std": 0.0, "median": t, "min": t, "max": t, "n": 1, "cpu_seconds": 0.0}
        return out


def replay_grid(p: SpeedupParams) -> SpeedupEmulate:
    """The emulated grid at the replay's batches and modes (its clusters: :func:`replay`)."""
    return p.emulate.model_copy(update={"batches": p.replay.batches, "modes": p.replay.modes})


def check(p: SpeedupParams) -> None:
    """One-line errors for an emulated configuration, before anything runs."""
    hardware.check_param(p.emulate.hardware, p.emulate.networks)
    if p.emulate.hardware is None:
        return
    if not p.count_parameters:
        raise ParameterError("parameter 'count_parameters': the emulation needs the model sizes (set it true)")
    sm.check_grid(p.emulate, "emulate")
    if p.replay.repeats:
        if "distributed" not in p.emulate.servers or not set(p.replay.networks) <= set(p.emulate.networks):
            raise ParameterError("parameter 'replay.networks': the replay re-runs the distributed-server cluster "
                                 "of the emulated grid (emulate.servers needs distributed, emulate.networks these "
                                 f"networks), got {p.replay.networks}")
        sm.check_grid(replay_grid(p), "replay")


def flows(server: str, n: int, modes: list[str], ps_on_workers: bool = False) -> int:
    """Link directions busy at once at worst: the central server's link both ways; on the
    distributed server every worker's link, one way in the sync modes, both ways with async or
    where the worker's node also serves its shard to the others (``ps_on_workers``)."""
    if server == "central":
        return 2
    return 2 * n if "async" in modes or ps_on_workers else n


def plan(p: SpeedupParams, emu: Emulation, sizes: dict[str, int], workers=None, factor: float = 1.0) -> list[dict]:
    """Every cluster of the emulated grid with its networks and dilation; refuses before any process starts.

    ``sizes``: bytes of each network's weights. A given ``dilation`` that would need more CPU
    than the cores have is refused with the number; ``0`` takes the least factor that fits.
    """
    out = []
    available = _available_memory()
    rate = emu.profile.link
    for server in p.emulate.servers:
        for n in workers or p.emulate.workers:
            nets = [m for m in p.emulate.networks if not (m == "VGG16E" and n > p.max_workers_vgg16e)]
            if not nets:
                continue
            if p.emulate.validation and server == "distributed":
                nets.append(NULL)  # the check without communication rides in the same cluster
            f = flows(server, n, p.emulate.modes, emu.profile.ps_on_workers)
            what = f"N = {n} on the {server} server"
            if p.dilation > 0:
                k = p.dilation * factor
                hardware.check_dilation(f, rate, k, emu.cores, what)
            else:
                least = hardware.cpu_needed(f, rate, 1.0) / (emu.cores * float(hardware.machine()["headroom"]))
                k = round(max(1.0, least) * factor, 2)
            ps = 1 if server == "central" else n
            copies = COPIES_PS + COPIES_WORKER * n + COPIES_CHIEF
            hardware.check_memory(max(sizes.get(m, 0) for m in nets), copies, n + ps + 1, available,
                                  f"the emulated cluster {what} ({', '.join(nets)})")
            out.append({"server": server, "workers": n, "networks": nets, "dilation": k})
    return out


def _available_memory() -> float:
    import psutil
    return float(psutil.virtual_memory().available)


def lone_transfers(probes: pd.DataFrame, rate: str) -> pd.DataFrame:
    """Each probed transfer next to ``bytes / rate + t_latency`` (MTU 1500 goodput), and the achieved rate."""
    rows = []
    for (link, net), g in probes.groupby(["link", "network"], sort=False):
        q = g.set_index("quantity")
        lat = float(q.loc["t_latency", "mean_s"])
        nbytes = float(q.loc["t_pull", "bytes"])
        expected = hardware.transfer_seconds(nbytes, rate) + lat
        for d in ("t_pull", "t_push"):
            got = float(q.loc[d, "mean_s"])
            rows.append({"check": f"lone transfer ({d[2:]})", "network": net, "workers": 1, "bytes": nbytes,
                         "expected": expected, "measured": got, "error": got / expected - 1,
                         "achieved_mbps": nbytes * 8 / max(got - lat, 1e-9) / 1e6,
                         "dilation": float(q.loc[d, "dilation"])})
    out = pd.DataFrame(rows)
    out["within"] = out["error"].abs() <= CHECK_TOLERANCE
    return out


def no_communication(runs: pd.DataFrame, t_grad: float, d: int) -> pd.DataFrame:
    """Sync-join on the distributed server with :data:`NULL` (4 KB of weights, in the same clusters
    as the thesis' networks): S should be N."""
    runs = runs[(runs["network"] == NULL) & (runs["mode"] == "sync-join") & (runs["server"] == "distributed")]
    rows = []
    for r in runs.itertuples():
        s = d * t_grad / r.seconds
        want = d / -(-d // r.workers)  # = N where N divides D
        rows.append({"check": "no communication: S = N (sync-join, distributed)", "network": NULL,
                     "workers": int(r.workers), "bytes": np.nan, "expected": want, "measured": s,
                     "error": s / want - 1, "achieved_mbps": r.busiest_link_mbps, "dilation": r.dilation})
    out = pd.DataFrame(rows)
    out["within"] = out["error"].abs() <= CHECK_TOLERANCE
    return out


def dilation_check(main: pd.DataFrame, again: pd.DataFrame, t_grad: dict, d: int) -> pd.DataFrame:
    """The same clusters at two dilations: their speedups, and whether they agree within 5 %."""
    keys = ["network", "mode", "server", "semaphore", "workers"]
    both = main.merge(again, on=keys, suffixes=("_a", "_b"))
    out = both[keys].copy()
    out["dilation_a"], out["dilation_b"] = both["dilation_a"], both["dilation_b"]
    tg = both["network"].map(t_grad)
    out["speedup_a"] = d * tg / both["seconds_a"]
    out["speedup_b"] = d * tg / both["seconds_b"]
    out["difference"] = out["speedup_b"] / out["speedup_a"] - 1
    out["within"] = out["difference"].abs() <= CHECK_TOLERANCE
    return out


def profile(p: SpeedupParams) -> hardware.Profile | None:
    """The hardware profile of the emulated grid (``emulate.hardware``; None: no emulation), loaded once in
    ``prepare`` and carried in its inputs."""
    return None if p.emulate.hardware is None else hardware.load(p.emulate.hardware)


def setup(p: SpeedupParams, prof: hardware.Profile) -> Emulation:
    mean = float(np.mean([prof.t_grad(m) for m in p.emulate.networks]))
    return Emulation(profile=prof, cores=os.cpu_count() or 1, extra_t_grad={NULL: mean},
                     probe_dilation=max(1.0, p.dilation))


def measure(run, p: SpeedupParams, prof: hardware.Profile, sizes: dict[str, int]) -> dict[str, pd.DataFrame]:
    """The emulated grid ``p.emulate`` on the hardware profile ``prof``, its checks and its comparison with both
    models (tables named in the module docstring)."""
    emu, grid = setup(p, prof), p.emulate
    todo = plan(p, emu, sizes)  # refuses (CPU, memory) before any process starts
    again = check_clusters(p, emu, sizes)
    run.note("emulation", f"hardware profile {emu.profile.name}: {emu.profile.description}; "
             f"dilations {sorted({c['dilation'] for c in todo})}; topology: {emu.profile.topology}")
    base = run.dir / "clusters" / "emulated"  # the real grid's clusters are in clusters/ (probe-1gbit, ...)
    probes = sm.probes(p, grid, base, emu)
    both = sm.runs(p, grid, base, emu, todo, tag="emulated")
    runs = both[both["network"] != NULL].reset_index(drop=True)
    cmp = sm.compare(runs, probes, p, grid, emu.cores, emu)
    checks = [lone_transfers(probes, emu.profile.link)]
    if p.emulate.validation:
        checks.append(no_communication(both, emu.extra_t_grad[NULL], grid.batches))
    tables = {"emulated_probes": probes, "emulated_runs": runs, "emulated_vs_predicted": cmp,
              "emulated_errors": sm.errors(cmp), "emulation_checks": pd.concat(checks, ignore_index=True)}
    if again:
        second = sm.runs(p, grid, base, emu, again, tag="dilation-check")
        t_grad = {m: emu.profile.t_grad(m) for m in p.emulate.networks}
        tables["dilation_check"] = dilation_check(runs, second, t_grad, grid.batches)
    if p.replay.repeats:
        tables["emulated_replay"] = replay(p, emu, base, todo)
    return tables


def check_clusters(p: SpeedupParams, emu: Emulation, sizes: dict[str, int]) -> list[dict]:
    """The dilation check's clusters: the distributed server's with the most workers at ``dilation_check`` x."""
    again = plan(p, emu, sizes, workers=[max(p.emulate.workers)], factor=p.dilation_check) if p.dilation_check else []
    return [c for c in again if c["server"] == "distributed"]


def replay_cluster(p: SpeedupParams, todo: list[dict]) -> dict:
    """The replay's cluster: the grid's distributed-server cluster with the most workers, ``replay.networks``."""
    n = max(p.emulate.workers)
    k = next((c["dilation"] for c in todo if c["server"] == "distributed" and c["workers"] == n), None)
    if k is None:  # VGG16E alone, beyond max_workers_vgg16e
        raise ParameterError(f"parameter 'replay.networks': no emulated distributed-server cluster of N = {n}")
    return {"server": "distributed", "workers": n, "networks": list(p.replay.networks), "dilation": k}


def replay(p: SpeedupParams, emu: Emulation, base, todo: list[dict]) -> pd.DataFrame:
    """The distributed-server cluster with the most workers, for ``replay.networks`` in ``replay.modes``,
    ``replay.repeats`` times at D = ``replay.batches``, each a new cluster at the grid's dilation for it;
    one row per run, with its speedup D t_grad / seconds."""
    grid = replay_grid(p)
    cluster_ = [replay_cluster(p, todo)]
    out = pd.concat([sm.runs(p, grid, base, emu, cluster_, tag=f"replay{i + 1}").assign(repeat=i + 1)
                     for i in range(p.replay.repeats)], ignore_index=True)
    out = out[~out["semaphore"].astype(bool)].reset_index(drop=True)
    out["batches"] = p.replay.batches
    out["speedup"] = out["batches"] * out["network"].map(emu.profile.t_grad) / out["seconds"]
    return out


# Where the emulated distributed server is not the thesis' (a hardware profile without ps_on_workers, or
# a run published before it: every PS shard its own node), a worker moves all its weights over its link
# (2 t_comm per closure), where the thesis kept shard k on worker k's machine (2 t_comm (N - 1) / N).
# A statement about the distributed server's numbers is then not comparable.
TOPOLOGY_WHY = ("emulated topology: every PS shard is its own node, so a worker moves all its weights over its "
                "link; the thesis kept shard k on worker k's machine")
TOPOLOGY_BOUND = ("one_worker_distributed_measured", "distributed_predictions_trend",
                  "googlenet_split_distributed_measured_down", "squeezenet_split_accurate")
# With shard k on worker k's node, N = 1 moves nothing over a link: its cost is the loopback transfer,
# which runs at this machine's speed (and, dilated, k times faster), not the thesis' machines'.
LOCAL_WHY = ("with one worker and its shard on one node nothing crosses an emulated link: the cost is this "
             "machine's loopback transfer, which the emulation does not replay")
TOPOLOGY_GATE, LOCAL_GATE = V.not_comparable(TOPOLOGY_WHY), V.not_comparable(LOCAL_WHY)
REPLAY = "the emulated replay of the thesis' hardware ({profile}) against the thesis' statement"


def speedups(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Emulated speedup per configuration: the mean over the runs behind it (the dilation check's too), and
    each run's (``each``)."""
    cmp = tables["emulated_vs_predicted"][["network", "mode", "server", "workers", "speedup_measured"]].copy()
    cmp["runs"] = 1
    cmp["each"] = [[float(x)] for x in cmp["speedup_measured"]]
    dc = tables.get("dilation_check")
    if dc is not None and len(dc):
        dc = dc.assign(server=np.where(dc["semaphore"], dc["server"] + "+semaphore", dc["server"]))
        again = dc.set_index(["network", "mode", "server", "workers"])["speedup_b"]
        key = list(zip(cmp["network"], cmp["mode"], cmp["server"], cmp["workers"]))
        second = pd.Series([again.get(k, np.nan) for k in key], index=cmp.index)
        has = second.notna()
        cmp.loc[has, "each"] = pd.Series([e + [float(x)] for e, x in zip(cmp.loc[has, "each"], second[has])],
                                         index=cmp.index[has], dtype=object)
        cmp.loc[has, "speedup_measured"] = (cmp.loc[has, "speedup_measured"] + second[has]) / 2
        cmp.loc[has, "runs"] = 2
    return _replayed(cmp, tables.get("emulated_replay"))


def _replayed(cmp: pd.DataFrame, rep: pd.DataFrame | None) -> pd.DataFrame:
    """``cmp`` with the configurations of the replay (:func:`replay`) taken from its runs alone: they train the
    thesis' D, where the grid's runs train a few batches (``batches``: the replay's D, else nan)."""
    cmp = cmp.assign(batches=np.nan)
    if rep is None or not len(rep):
        return cmp
    for key, g in rep.groupby(["network", "mode", "server", "workers"]):
        hit = (cmp["network"] == key[0]) & (cmp["mode"] == key[1]) & (cmp["server"] == key[2]) \
            & (cmp["workers"] == key[3])
        for i in cmp.index[hit]:
            cmp.at[i, "each"] = [float(x) for x in g["speedup"]]
            cmp.loc[i, ["speedup_measured", "runs", "batches"]] = [float(g["speedup"].mean()), len(g),
                                                                   int(g["batches"].iloc[0])]
    return cmp


def _at(s: pd.DataFrame, net: str, cfg: dict):
    hit = s[(s["network"] == net) & (s["mode"] == cfg["mode"]) & (s["server"] == cfg["server"])
            & (s["workers"] == cfg["workers"])]
    return None if hit.empty else hit.iloc[0]


def shards_on_workers(tables: dict[str, pd.DataFrame]) -> bool:
    """Whether every emulated distributed-server run had shard k on worker k's node (its links say so)."""
    runs = tables["emulated_runs"]
    dist = runs[runs["server"] == "distributed"]
    return "ps_on_workers" in dist and len(dist) > 0 and bool(dist["ps_on_workers"].astype(bool).all())


def distributed_note(tables: dict[str, pd.DataFrame]) -> str:
    """The chapter's sentence on how the ledger treats the distributed server's measured statements."""
    if shards_on_workers(tables):
        return ("shard k ran on worker k's node, as in the thesis, so the ledger decides them against the "
                "thesis' numbers; only the distributed server's N = 1 case is not comparable: one worker and its "
                "shard share a node, nothing crosses an emulated link, and the cost left is this machine's "
                "loopback transfer")
    return ("every parameter-server shard was a node of its own, so a worker moved all its weights over its link "
            "where the thesis kept shard k on worker k's machine; the ledger calls them not comparable and shows "
            "the numbers for what they say, as it does the distributed server's N = 1 case and its trend")


def claim_values(tables: dict[str, pd.DataFrame], specs, said, profile: str, details: bool = False) -> dict:
    """``{claim id: (ours, holds, runs, gate)}`` for the thesis' measured statements the emulated grid speaks
    to; ``gate`` (a not-comparable verdict, else None) where the emulated topology makes the statement not
    comparable (:data:`TOPOLOGY_GATE` without shards on the workers' nodes, :data:`LOCAL_GATE` for N = 1
    with them). ``details``: each tuple also ends with what was compared (the verdict's detail)."""
    local = shards_on_workers(tables)
    distributed = {s["id"] for s in specs if s.get("config", {}).get("server") == "distributed"}
    out = {}
    for cid, (ours, ok, runs, detail, gate) in _values(tables, specs, said, profile).items():
        if cid == "one_worker_distributed_measured":
            gate = LOCAL_GATE if local else TOPOLOGY_GATE
        elif (cid in TOPOLOGY_BOUND or cid in distributed) and not local:
            gate = TOPOLOGY_GATE
        out[cid] = (ours, ok, runs, gate) + ((detail,) if details else ())
    return out


def _values(tables: dict[str, pd.DataFrame], specs, said, profile: str) -> dict:
    """``{claim id: (ours, holds, runs, detail, gate)}`` from the emulated grid, before any topology gate
    (``gate``: a reported number whose interval straddles the thesis' rounding, else None)."""
    s = speedups(tables)
    general = REPLAY.format(profile=profile)
    runs = int(s["runs"].min()) if len(s) else 0  # a grid-wide statement: the fewest runs of any configuration
    out = {cid: (f"{ours} [emulated {profile}]", ok, runs, general, None) for cid, (ours, ok) in
           sm.measured_claims(_averaged(tables, s), said).items()}
    for spec in specs:
        cid = spec["id"]
        if spec["check"] == "measured" and spec.get("config") and said[cid].reported:
            hit = _reported(tables, s, spec, said[cid], profile)
            if hit is not None:
                out[cid] = hit
    out.update({cid: v[:2] + (runs, general, None) for cid, v in _shape_claims(s, profile).items()})
    return out


def _averaged(tables: dict[str, pd.DataFrame], s: pd.DataFrame) -> pd.DataFrame:
    """``emulated_vs_predicted`` with each configuration's speedup the mean of its runs (:func:`speedups`,
    same rows), its time and the thesis model's error following."""
    cmp = tables["emulated_vs_predicted"].copy()
    scale = cmp["speedup_measured"].to_numpy() / s["speedup_measured"].to_numpy()
    cmp["speedup_measured"] = s["speedup_measured"].to_numpy()
    if "measured_s" in cmp:
        cmp["measured_s"] = cmp["measured_s"] * scale
        if "thesis_s" in cmp:
            cmp["error_thesis"] = cmp["thesis_s"] / cmp["measured_s"] - 1
    return cmp


def _reported(tables: dict[str, pd.DataFrame], s: pd.DataFrame, spec: dict, claim, profile: str):
    """The emulated speedup at a reported configuration against the thesis' printed number, or None: the
    interval of its runs (:func:`repro.experiments.speedup.rounding.interval`) against the number's rounding
    (:func:`~repro.experiments.speedup.rounding.tolerance`): wholly within, wholly outside, or not comparable."""
    row = _at(s, spec["network"], spec["config"])
    if row is None:
        return None
    ref, tol, text = claim.reference(), rounding.tolerance(claim), rounding.printed(claim.paper, claim.reported)
    level = claim.threshold("interval_level")
    mean, low, high, t = rounding.interval(row["each"], level)
    runs = int(row["runs"])
    if runs >= 2:
        where = rounding.placed(low, high, ref, tol)
        span = f"{level:.0%} interval {low:.2f}-{high:.2f} (mean ± {t:.2f} standard errors)"
    else:  # one run: the mean alone (the ledger's rules make it not comparable)
        where, span = ("within" if abs(mean - ref) <= tol else "outside"), "one run, no interval"
    each = ", ".join(f"{x:.2f}" for x in row["each"])
    ours = (f"emulated S = {mean:.2f} ({_runs_text(tables, row)}: {each}{_batches_text(tables, row)}; {span}; "
            f"thesis {text} ± {tol:g}) [{profile}]")
    words = {"within": "wholly within", "outside": "wholly outside", "straddles": "neither wholly within nor outside"}
    detail = (f"the emulated replay of the thesis' hardware ({profile}) gives S = {mean:.2f}, {span}, where the "
              f"thesis measured {text}: {words[where]} {ref - tol:g}-{ref + tol:g}, the thesis' rounding")
    gate = V.not_comparable(detail) if where == "straddles" else None
    return ours, where == "within", runs, detail, gate


def _runs_text(tables: dict[str, pd.DataFrame], row) -> str:
    """How the runs behind a configuration came about: the replay's new clusters, or the grid's run and the
    dilation check's (the same cluster again, new processes, k x f)."""
    runs = int(row["runs"])
    if pd.notna(row.get("batches", np.nan)):
        return f"mean of {runs} runs, each a new cluster" if runs != 1 else "1 run"
    if runs != 2:
        return f"{runs} run"
    dc = tables.get("dilation_check")
    if dc is None or not {"dilation_a", "dilation_b"} <= set(dc):
        return "mean of 2 runs: the cluster, and again at another dilation"
    factor = round(float((dc["dilation_b"] / dc["dilation_a"]).median()), 1)  # dilations are rounded to 0.01
    return f"mean of 2 runs: the cluster, and again at {factor:g}x its dilation"


def _batches_text(tables: dict[str, pd.DataFrame], row) -> str:
    """"; D = 8 batches, the thesis' 128": the batches the configuration's runs trained (the replay's D, else the
    closures of the grid's sync-join with one worker, which splits nothing); "" where the runs do not say."""
    thesis = f"the thesis' {_paper.value('slampa2017', 'batches'):g}"
    if pd.notna(row.get("batches", np.nan)):
        return f"; D = {int(row['batches'])} batches, {thesis}"
    runs = tables["emulated_runs"]
    join = runs[(runs["mode"] == "sync-join") & (runs["workers"] == 1)] if {"mode", "closures"} <= set(runs) \
        else runs.iloc[:0]
    if join.empty:
        return ""
    return f"; D = {int(join['closures'].max())} batches, {thesis}"


def _shape_claims(s: pd.DataFrame, profile: str) -> dict:
    out = {}
    plain = s[s["server"].isin(["central", "distributed"])]
    vgg = plain[(plain["network"] == "VGG16E") & (plain["workers"] >= 2)]
    if len(vgg):
        out["vgg16e_below_one_measured"] = (f"VGG16E, N >= 2: emulated S <= {vgg['speedup_measured'].max():.2f} "
                                            f"[{profile}]", bool((vgg["speedup_measured"] < 1).all()), 1)
    sq = plain[(plain["network"] == "SqueezeNet") & (plain["mode"] == "sync-split") & (plain["server"] == "central")]
    if {4, 8} <= set(sq["workers"]):
        best = int(sq.loc[sq["speedup_measured"].idxmax(), "workers"])
        out["squeezenet_split_central_best_4_measured"] = (f"fastest emulated N = {best} [{profile}]", best == 4, 1)
    gs = plain[(plain["network"] == "GoogLeNet") & (plain["mode"] == "sync-split")
               & (plain["server"] == "distributed") & (plain["workers"] >= 2)]
    if len(gs):
        out["googlenet_split_distributed_measured_down"] = (
            f"emulated S = {gs['speedup_measured'].min():.2f}-{gs['speedup_measured'].max():.2f} at N >= 2 [{profile}]",
            bool((gs["speedup_measured"] < 1).all()), 1)
    return out


# ----------------------------------------------------------------------------- the chapter's tables


def reported_table(tables: dict[str, pd.DataFrame], specs, said) -> pd.DataFrame:
    """The thesis' four measured speedups next to the emulated replay and both models, same configuration."""
    s = speedups(tables)
    cmp = tables["emulated_vs_predicted"]
    grid = tables["predictions"]
    rows = []
    for spec in specs:
        cid = spec["id"]
        if spec["check"] != "measured" or not spec.get("config") or not said[cid].reported:
            continue
        cfg, net = spec["config"], spec["network"]
        row, model = _at(s, net, cfg), _at(cmp, net, cfg)
        eq = _at(grid, net, cfg)
        rows.append({"network": net, "configuration": f"{cfg['mode']}, {cfg['server']}, N={cfg['workers']}",
                     "thesis_measured": said[cid].reference(),
                     "emulated": np.nan if row is None else row["speedup_measured"],
                     "runs": 0 if row is None else int(row["runs"]),
                     "thesis_equations_table61": np.nan if eq is None else eq["speedup"],
                     "extended_model": np.nan if model is None else model["speedup_extended"]})
    out = pd.DataFrame(rows)
    out["emulated_vs_thesis"] = out["emulated"] / out["thesis_measured"] - 1
    return out


def predictor_mape(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Both models' MAPE of the predicted training time, on the real CPU runs and on the emulated replay."""
    rows = []
    for name, key in (("real runs on this machine (CPU)", "errors"), ("emulated thesis cluster", "emulated_errors")):
        if key in tables:
            e = tables[key].set_index(["network", "mode", "server"]).loc[("all", "all", "all")]
            rows.append({"runs": name, "configurations": int(e["configurations"]),
                         "mape_thesis": float(e["mape_thesis"]), "mape_extended": float(e["mape_extended"])})
    return pd.DataFrame(rows)


MISS_LIMIT = 0.10  # the package's target for the extended model: MAPE below 10 %


def misses(tables: dict[str, pd.DataFrame], limit: float = MISS_LIMIT) -> pd.DataFrame:
    """The emulated configurations the extended model misses by more than ``limit`` (relative time error)."""
    cmp = tables["emulated_vs_predicted"]
    bad = cmp[cmp["error_extended"].abs() > limit]
    cols = ["network", "mode", "server", "workers", "measured_s", "extended_s", "error_extended"]
    return bad.sort_values("error_extended", key=abs, ascending=False)[cols]
