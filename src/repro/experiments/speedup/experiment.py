"""`slampa2017`: the thesis' equations for the speedup of distributed training.

Šlampa (2017, chapter 4) predicts the time of distributed data-parallel training on N
workers from two measured numbers: ``t_grad`` (gradients of one batch on one worker) and
``t_comm`` (moving the network's weights between the server and one worker). Preparation,
finishing and weight updates are neglected. Every equation below is a vectorised numpy
function (``n`` may be an array of worker counts):

=====================  =========================================================  ======
quantity               formula                                                    thesis
=====================  =========================================================  ======
sync, central, best    ``t_iter = (N + 1) t_comm + t_grad``                        4.4-4.6
sync, central, worst   ``t_iter = 2 N t_comm + t_grad``                            4.7-4.9
sync, central, mean    ``(best + worst) / 2``; ``t_train = I t_iter``              4.11, 4.2
sync, distributed      ``t_iter = 2 t_comm (N - 1) / N + t_grad``                  4.12
async, central, best   ``max((D + 1) t_comm + t_grad,
                       (N - 1) t_comm + D/N (2 t_comm + t_grad))``                 4.13-4.15
async, central, worst  ``D/N (2 N t_comm + t_grad)``                               4.16-4.18
async, central, mean   ``(best + worst) / 2``                                      4.20
async, distributed     ``t_train = D/N (2 t_comm (N - 1)/N + t_grad)``             4.21
speedup                ``S = D t_grad / t_parallel``                               4.23
=====================  =========================================================  ======

Modes (thesis §6.1): **sync-join** (every worker one whole batch per iteration, I = D/N
iterations), **sync-split** (every worker 1/N of a batch, per-worker gradient time
``t_grad / N``, I = D iterations) and **async** (every worker D/N whole batches). Servers:
**central** (one parameter server) and **distributed** (one weight shard per worker).

Readings where the thesis leaves a choice (each documented in the chapter):

* ``D/N`` when N does not divide D (the thesis' own runs have D = 128 and N = 3, 5, 6, 7):
  the thesis' ``estimate.py`` (Python 3) uses true division, a fractional number of
  iterations / batches per worker; that is our default ``rounding="exact"``.
  ``rounding="ceil"`` uses ``ceil(D/N)`` instead: the slowest worker's whole number of
  batches (sync-join: iterations; async: batches of the busiest worker; the central
  server's total of D downloads in 4.14 stays D).
* The semaphore of §7.2 (exclusive access to the central server, one semaphore per
  direction): a transfer then takes ``t_sem`` between ``t_comm`` (empty queue, 7.1) and
  ``N t_comm`` (N - 1 workers queued, 7.2), never more than parallel transfer
  ``t_par = N t_comm`` (7.3). Serialised transfers are exactly the thesis' best-case
  schedule (Figs. 4.1, 4.4: the last of N workers waits for N - 1 downloads, its own
  download takes ``t_comm``), and the thesis proposes the semaphore to guarantee that
  schedule "every time". So ``semaphore=True`` makes the central estimate the best case;
  the worst case stays as the bound 7.3 guarantees (``t_sem <= t_par``). The distributed
  server already assumes contention-free transfers, so the option does not change it.
* "best" / "worst" columns are the best- / worst-case communication schedule: the
  largest / smallest speedup; for the distributed server all three are equal.
"""

from __future__ import annotations

import math
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from repro.core import ledger, paper
from repro.core.harness import Result
from repro.core.harness import legacy_start as start

EXPERIMENT = "speedup"
PAPER = "slampa2017"
MODES = ("sync-join", "sync-split", "async")
SERVERS = ("central", "distributed")
ROUNDINGS = ("exact", "ceil")
NETWORKS = ("VGG16E", "GoogLeNet", "SqueezeNet", "Resnet34")
LINE_RATE_MBPS = 1000.0  # the thesis' 1 Gb/s Ethernet
BYTES_PER_WEIGHT = 4  # float32
# Relative tolerance of our parameter counts (224x224, 1000 classes) against the published ones:
# VGG19, SqueezeNet 1.0 and Resnet34 are fully specified, so counts must match exactly; GoogLeNet's
# published "6.8M" is a rounded sum of a per-layer column that disagrees with the layer shapes it
# lists (conv1 "2.7K" vs 7x7x3x64 = 9.4K, 4c "463K" vs 509K): counting the shapes gives 6.99M (+2.9 %).
PARAMS_TOLERANCE = {"VGG16E": 0.0, "GoogLeNet": 0.05, "SqueezeNet": 0.0, "Resnet34": 0.0}
TIE_RTOL = 1e-9  # speedups this close count as equal (sync-join and async coincide on the distributed server)


class EstimateError(ValueError):
    """Bad input to the estimator (one-line message)."""


# --- the equations (thesis chapter 4), vectorised over the number of workers n -----------------


def sync_central_best(t_grad, t_comm, n):
    """Eq. 4.4-4.6: one iteration, best-case schedule: ``(N + 1) t_comm + t_grad``."""
    return (np.asarray(n) + 1) * t_comm + t_grad


def sync_central_worst(t_grad, t_comm, n):
    """Eq. 4.7-4.9: one iteration, all transfers in parallel: ``2 N t_comm + t_grad``."""
    return 2 * np.asarray(n) * t_comm + t_grad


def sync_central_mean(t_grad, t_comm, n):
    """Eq. 4.11: the estimate, mean of best and worst iteration time."""
    return (sync_central_best(t_grad, t_comm, n) + sync_central_worst(t_grad, t_comm, n)) / 2


def sync_distributed(t_grad, t_comm, n):
    """Eq. 4.12: one iteration with one weight shard per worker: ``2 t_comm (N-1)/N + t_grad``."""
    n = np.asarray(n, dtype=float)
    return 2 * t_comm * (n - 1) / n + t_grad


def batches_per_worker(d, n, rounding: str = "exact"):
    """``D/N``: true division (the thesis' estimate.py) or ``ceil(D/N)`` (the busiest worker)."""
    per = np.asarray(d, dtype=float) / np.asarray(n, dtype=float)
    if rounding == "ceil":
        return np.ceil(per - 1e-12)
    if rounding != "exact":
        raise EstimateError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    return per


def async_central_best(t_grad, t_comm, n, d, rounding: str = "exact"):
    """Eq. 4.13-4.15: whole training, best case: the later of server (4.14) and last worker (4.13)."""
    n = np.asarray(n, dtype=float)
    server = (d + 1) * t_comm + t_grad
    worker = (n - 1) * t_comm + batches_per_worker(d, n, rounding) * (2 * t_comm + t_grad)
    return np.maximum(server, worker)


def async_central_worst(t_grad, t_comm, n, d, rounding: str = "exact"):
    """Eq. 4.16-4.18: whole training, all transfers in parallel: ``D/N (2 N t_comm + t_grad)``."""
    n = np.asarray(n, dtype=float)
    return batches_per_worker(d, n, rounding) * (2 * n * t_comm + t_grad)


def async_central_mean(t_grad, t_comm, n, d, rounding: str = "exact"):
    """Eq. 4.20: the estimate, mean of best and worst training time."""
    return (async_central_best(t_grad, t_comm, n, d, rounding) + async_central_worst(t_grad, t_comm, n, d, rounding)) / 2


def async_distributed(t_grad, t_comm, n, d, rounding: str = "exact"):
    """Eq. 4.21: whole training with one shard per worker: ``D/N (2 t_comm (N-1)/N + t_grad)``."""
    n = np.asarray(n, dtype=float)
    return batches_per_worker(d, n, rounding) * (2 * t_comm * (n - 1) / n + t_grad)


def speedup(t_grad, d, t_parallel):
    """Eq. 4.23: ``S = D t_grad / t_parallel`` (``t_grad``: one whole batch on one worker)."""
    return d * t_grad / np.asarray(t_parallel, dtype=float)


def semaphore_transfer_time(t_comm, n):
    """Eq. 7.1-7.2: one transfer through the semaphore: (best, worst) = (t_comm, N t_comm)."""
    n = np.asarray(n, dtype=float)
    return t_comm * np.ones_like(n), n * t_comm


def iterations(mode: str, d, n, rounding: str = "exact"):
    """Number of synchronous iterations I (eq. 4.2): D/N for sync-join, D for sync-split."""
    if mode == "sync-join":
        return batches_per_worker(d, n, rounding)
    if mode == "sync-split":
        return np.full(np.shape(n), float(d))
    raise EstimateError(f"mode {mode!r} has no iterations (only sync-join and sync-split do)")


# --- estimates for a whole configuration ---------------------------------------------------


def check_inputs(t_grad, t_comm, mode, server, workers, batches, rounding="exact") -> None:
    """Raise :class:`EstimateError` (one line) on bad input."""
    for name, value in (("t-grad", t_grad), ("t-comm", t_comm)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
            raise EstimateError(f"--{name} must be a positive number of seconds, got {value!r}")
    if mode not in MODES:
        raise EstimateError(f"unknown mode {mode!r}; choose from: {', '.join(MODES)}")
    if server not in SERVERS:
        raise EstimateError(f"unknown server {server!r}; choose from: {', '.join(SERVERS)}")
    if rounding not in ROUNDINGS:
        raise EstimateError(f"unknown rounding {rounding!r}; choose from: {', '.join(ROUNDINGS)}")
    for name, value in (("workers", workers), ("batches", batches)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise EstimateError(f"--{name} must be an integer >= 1, got {value!r}")
    if mode in ("sync-join", "async") and batches < workers:
        raise EstimateError(
            f"--batches ({batches}) must be >= --workers ({workers}) for {mode}: every worker needs a whole batch"
        )


def estimate(t_grad: float, t_comm: float, mode: str, server: str, workers, batches: int,
             semaphore: bool = False, rounding: str = "exact") -> pd.DataFrame:
    """Training time and speedup for each worker count in ``workers`` (an int or a list).

    Columns: workers, t_train (the estimate), t_train_best, t_train_worst, speedup,
    speedup_best, speedup_worst (best = best-case communication schedule).
    """
    n = np.atleast_1d(np.asarray(workers))
    check_inputs(t_grad, t_comm, mode, server, int(n.max()) if n.size else 0, batches, rounding)
    if n.size == 0 or (n < 1).any() or not np.issubdtype(n.dtype, np.integer):
        raise EstimateError(f"--workers must be integers >= 1, got {workers!r}")
    if mode == "async":
        if server == "central":
            best = async_central_best(t_grad, t_comm, n, batches, rounding)
            worst = async_central_worst(t_grad, t_comm, n, batches, rounding)
        else:
            best = worst = async_distributed(t_grad, t_comm, n, batches, rounding)
    else:
        t_worker = t_grad / n if mode == "sync-split" else np.full(n.shape, float(t_grad))
        its = iterations(mode, batches, n, rounding)
        if server == "central":
            best = its * sync_central_best(t_worker, t_comm, n)
            worst = its * sync_central_worst(t_worker, t_comm, n)
        else:
            best = worst = its * sync_distributed(t_worker, t_comm, n)
    best, worst = np.asarray(best, dtype=float), np.asarray(worst, dtype=float)
    mean = best if (semaphore and server == "central") else (best + worst) / 2
    return pd.DataFrame({
        "workers": n.astype(int),
        "t_train": mean,
        "t_train_best": best,
        "t_train_worst": worst,
        "speedup": speedup(t_grad, batches, mean),
        "speedup_best": speedup(t_grad, batches, best),
        "speedup_worst": speedup(t_grad, batches, worst),
    })


# --- the thesis' data and predictions ------------------------------------------------------


def table_6_1(networks=NETWORKS) -> pd.DataFrame:
    """Thesis Table 6.1: measured mean t_grad and t_comm (seconds) per network."""
    rows = [{"network": net,
             "t_grad": paper.value(PAPER, f"t_grad_{net}"),
             "t_comm": paper.value(PAPER, f"t_comm_{net}")} for net in networks]
    df = pd.DataFrame(rows)
    df["t_comm_over_t_grad"] = df["t_comm"] / df["t_grad"]
    return df


def predict_grid(table: pd.DataFrame, batches: int, max_workers: dict | int, semaphore: bool = True,
                 rounding: str = "exact") -> pd.DataFrame:
    """Predicted speedups for every network of ``table`` x mode x server x N = 1..max_workers.

    ``max_workers``: one int, or ``{network: int}``. With ``semaphore`` a third server
    variant ``central+semaphore`` is added. Long format, one row per configuration.
    """
    frames = []
    variants = [(s, False) for s in SERVERS] + ([("central", True)] if semaphore else [])
    for row in table.itertuples(index=False):
        top = max_workers[row.network] if isinstance(max_workers, dict) else max_workers
        workers = np.arange(1, min(top, batches) + 1)
        for mode in MODES:
            for server, sem in variants:
                df = estimate(row.t_grad, row.t_comm, mode, server, workers, batches, semaphore=sem, rounding=rounding)
                df.insert(0, "server", server + ("+semaphore" if sem else ""))
                df.insert(0, "mode", mode)
                df.insert(0, "network", row.network)
                frames.append(df)
    return pd.concat(frames, ignore_index=True)


def best_per_configuration(grid: pd.DataFrame) -> pd.DataFrame:
    """Per network, mode and server: the best N, its predicted speedup, and the speedup at the largest N."""
    rows = []
    for (net, mode, server), sub in grid.groupby(["network", "mode", "server"], sort=False):
        best = sub.loc[sub["speedup"].idxmax()]
        last = sub.loc[sub["workers"].idxmax()]
        rows.append({"network": net, "mode": mode, "server": server, "best_workers": int(best["workers"]),
                     "speedup_at_best": float(best["speedup"]), "largest_workers": int(last["workers"]),
                     "speedup_at_largest": float(last["speedup"]),
                     "range_at_largest": f"{last['speedup_worst']:.2f}..{last['speedup_best']:.2f}"})
    return pd.DataFrame(rows)


# --- claims: the thesis' statements about its predictions, checked -------------------------


@lru_cache(maxsize=None)
def thesis_claims() -> tuple[dict, ...]:
    """The statements of digest §4 (and thesis chapters 6-7), as data (slampa2017_claims.yaml in this folder)."""
    text = resources.files(__package__).joinpath("slampa2017_claims.yaml").read_text(encoding="utf-8")
    return tuple(yaml.safe_load(text)["claims"])


def _select(grid: pd.DataFrame, claim: dict) -> pd.DataFrame:
    sel = grid
    if claim.get("network"):
        sel = sel[sel["network"] == claim["network"]]
    for key, col in (("modes", "mode"), ("servers", "server")):
        if claim.get(key):
            sel = sel[sel[col].isin(claim[key])]
    if not claim.get("servers"):  # the semaphore variant is a proposal, not one of the thesis' servers
        sel = sel[sel["server"].isin(SERVERS)]
    if claim.get("workers"):
        lo, hi = claim["workers"]
        sel = sel[(sel["workers"] >= lo) & (sel["workers"] <= hi)]
    return sel


def _config(row) -> str:
    return f"{row['mode']}, {row['server']}, N={int(row['workers'])}"


_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def check_claim(grid: pd.DataFrame, claim: dict) -> dict:
    """Evaluate one claim on a predictions grid (columns network, mode, server, workers, speedup).

    Claim kinds (``check``):

    * ``all``: every mean speedup of the selection satisfies ``op value``; shows the extreme.
    * ``best_workers``: the N with the largest speedup for one (network, mode, server) is ``expect``.
    * ``best_config``: the expected (mode, server, N) is among the best of the selection (ties allowed).
    * ``any``: at least one speedup of the selection satisfies ``op value``; shows the extreme.
    * ``server_order``: distributed >= central for every (network, mode, N) of the selection.
    * ``measured``: a statement about the thesis' measurements; verdict ``needs measurement``
      (if ``config`` is given, the prediction there is shown next to the reported value).

    Returns ``{"ours": str, "verdict": "pass" | "fail" | "needs measurement"}``.
    """
    kind = claim["check"]
    sel = _select(grid, claim)
    if kind == "measured":
        ours = "–"
        if claim.get("config"):
            cfg = claim["config"]
            hit = sel[(sel["mode"] == cfg["mode"]) & (sel["server"] == cfg["server"]) & (sel["workers"] == cfg["workers"])]
            if not hit.empty:
                ours = f"predicted {hit['speedup'].iloc[0]:.2f} at {_config(hit.iloc[0])}"
        return {"ours": ours, "verdict": "needs measurement"}
    if sel.empty:
        raise ValueError(f"claim {claim['id']}: no predictions match its selection")
    if kind in ("all", "any"):
        ok = _OPS[claim["op"]](sel["speedup"].to_numpy(), claim["value"])
        passed = bool(ok.all()) if kind == "all" else bool(ok.any())
        # all: show the value closest to breaking the bound; any: show the best witness
        show_max = (claim["op"] in ("<", "<=")) == (kind == "all")
        extreme = sel.loc[sel["speedup"].idxmax() if show_max else sel["speedup"].idxmin()]
        return {"ours": f"{'max' if show_max else 'min'} {extreme['speedup']:.3f} ({_config(extreme)})",
                "verdict": "pass" if passed else "fail"}
    if kind == "best_workers":
        best = sel.loc[sel["speedup"].idxmax()]
        return {"ours": f"best N={int(best['workers'])} (S={best['speedup']:.3f})",
                "verdict": "pass" if int(best["workers"]) == int(claim["expect"]) else "fail"}
    if kind == "best_config":
        top = sel["speedup"].max()
        ties = sel[np.isclose(sel["speedup"], top, rtol=TIE_RTOL, atol=0)]
        exp = claim["expect"]
        hit = ((ties["mode"].isin(exp["modes"]) if "modes" in exp else True)
               & ((ties["server"] == exp["server"]) if "server" in exp else True)
               & ((ties["workers"] == exp["workers"]) if "workers" in exp else True))
        shown = "; ".join(_config(r) for _, r in ties.iterrows())
        return {"ours": f"best S={top:.3f} at {shown}", "verdict": "pass" if bool(np.any(hit)) else "fail"}
    if kind == "server_order":
        wide = sel.pivot_table(index=["network", "mode", "workers"], columns="server", values="speedup")
        diff = wide["distributed"] - wide["central"]
        worst = diff.idxmin()
        return {"ours": f"min(distributed - central) = {diff.min():.3f} ({worst[0]}, {worst[1]}, N={worst[2]})",
                "verdict": "pass" if bool((diff >= -1e-12).all()) else "fail"}
    raise ValueError(f"claim {claim.get('id')}: unknown check {kind!r}")


def evaluate_claims(grid: pd.DataFrame, claims=None) -> pd.DataFrame:
    """The claims table: one row per statement with what we computed and pass / fail / needs measurement."""
    rows = []
    for claim in claims if claims is not None else thesis_claims():
        res = check_claim(grid, claim)
        rows.append({"id": claim["id"], "network": claim.get("network") or "all", "source": claim["source"],
                     "kind": "measurement" if claim["check"] == "measured" else "prediction",
                     "statement": claim["statement"], "ours": res["ours"], "verdict": res["verdict"],
                     "note": claim.get("note", "")})
    return pd.DataFrame(rows)


def reported_vs_predicted(grid: pd.DataFrame, claims=None) -> pd.DataFrame:
    """The thesis' measured speedups next to what its own equations predict for the same configuration."""
    rows = []
    for claim in claims if claims is not None else thesis_claims():
        if claim["check"] != "measured" or not claim.get("reported"):
            continue
        cfg = claim["config"]
        hit = grid[(grid["network"] == claim["network"]) & (grid["mode"] == cfg["mode"])
                   & (grid["server"] == cfg["server"]) & (grid["workers"] == cfg["workers"])]
        measured = paper.value(PAPER, claim["reported"])
        predicted = float(hit["speedup"].iloc[0]) if not hit.empty else float("nan")
        rows.append({"network": claim["network"], "configuration": f"{cfg['mode']}, {cfg['server']}, N={cfg['workers']}",
                     "thesis_measured": measured, "thesis_equations": predicted,
                     "equations_error": (predicted - measured) / measured,
                     "verdict": "not testable here (our measurement needs the cluster runtime, issue 6)"})
    return pd.DataFrame(rows)


def parameter_table(input_size: int, num_classes: int, networks=NETWORKS) -> pd.DataFrame:
    """Parameters of our builds of the four networks, published counts, and the transfer rate t_comm implies.

    ``published`` and ``ours_1000`` are at 224x224 and 1000 classes (the published
    architectures); ``ours`` at ``input_size`` / ``num_classes`` (the thesis: 224 / 256).
    ``implied_mbps``: ``4 bytes x ours / t_comm`` in Mb/s, to set against the thesis' 1 Gb/s link.
    """
    import keras

    from repro.ml import models

    table = table_6_1(networks).set_index("network")
    rows = []
    for net in networks:
        build = models.SLAMPA2017_NETWORKS[net]
        counts = {}
        for key, size, classes in (("ours_1000", 224, 1000), ("ours", input_size, num_classes)):
            kwargs = {"side_classifiers": False} if net == "GoogLeNet" else {}
            model = build(size, classes, **kwargs)
            counts[key] = models.trainable_parameters(model)
            del model
            keras.backend.clear_session()
        if net == "GoogLeNet":
            model = build(input_size, num_classes, side_classifiers=True)
            counts["ours_with_side"] = models.trainable_parameters(model)
            del model
            keras.backend.clear_session()
        published = paper.value(PAPER, f"params_published_{net}")
        tol = PARAMS_TOLERANCE[net]
        rel = counts["ours_1000"] / published - 1
        rows.append({
            "network": net, "published": published, "ours_1000": counts["ours_1000"],
            "relative_difference": rel,
            "verdict": "reproduced" if abs(rel) <= tol else f"differs ({rel:+.1%}, tolerance {tol:.1%})",
            "ours": counts["ours"], "ours_with_side_classifiers": counts.get("ours_with_side", counts["ours"]),
            "t_comm": table.loc[net, "t_comm"],
            "implied_mbps": BYTES_PER_WEIGHT * 8 * counts["ours"] / table.loc[net, "t_comm"] / 1e6,
            "implied_mbps_with_side_classifiers":
                BYTES_PER_WEIGHT * 8 * counts.get("ours_with_side", counts["ours"]) / table.loc[net, "t_comm"] / 1e6,
        })
    df = pd.DataFrame(rows)
    df["within_line_rate"] = df["implied_mbps"] <= LINE_RATE_MBPS
    df["within_line_rate_with_side_classifiers"] = df["implied_mbps_with_side_classifiers"] <= LINE_RATE_MBPS
    ref = df.set_index("network")
    base = "SqueezeNet" if "SqueezeNet" in ref.index else networks[0]
    df["t_comm_ratio"] = df["t_comm"] / ref.loc[base, "t_comm"]
    df["parameter_ratio"] = df["ours"] / ref.loc[base, "ours"]
    return df


# --- the experiment ------------------------------------------------------------------------


LEDGER_VERDICTS = {  # claims-table verdict -> (ledger verdict, basis)
    "pass": ("consistent (the thesis' own equations on its Table 6.1 inputs give this)", "equations"),
    "fail": ("differs (the thesis' own equations and Table 6.1 say otherwise)", "equations"),
    "needs measurement": ("not measured yet (measure=false in this profile)", "none"),
    "pass (measured here)": ("reproduced", "measured"),
    "fail (measured here)": ("differs (our measured runs, see the chapter)", "measured"),
    "not comparable": ("not comparable (the thesis' GPUs at 224 px; our runs: CPU, small inputs)", "none"),
}


def ledger_rows(claims_df: pd.DataFrame) -> pd.DataFrame:
    """The thesis' statements for the book's ledger.

    A statement checked by feeding Table 6.1 into the thesis' equations is *consistent* (basis
    equations): it shows the thesis agrees with itself, it reproduces nothing. A statement checked on
    our runs has basis measured and one timed run per configuration (so never *reproduced* by the
    ledger's rule for stochastic quantities)."""
    rows = []
    for r in claims_df.itertuples():
        verdict, basis = LEDGER_VERDICTS[r.verdict]
        rows.append({"paper": "slampa2017", "claim": r.statement, "paper_value": f"{r.kind} ({r.source})",
                     "ours": r.ours, "verdict": verdict, "evidence": "speedup-claims", "basis": basis,
                     "runs": 1 if basis == "measured" else 0, "stochastic": basis == "measured"})
    return ledger.frame(rows)


def run(profile: str | None = None, overrides: dict | None = None, run_dir=None) -> Result:
    """Predictions for the thesis' four networks, the claims table and parameter counts."""
    p, profile, open_run = start(EXPERIMENT, profile, overrides, run_dir)
    if p["measure"]:
        from repro import cluster
        from repro.experiments.speedup import measure as speedup_measure

        speedup_measure.check(p)
        cluster.resolve_isolation("auto")  # no private namespace: one-line error before the run opens
    run = open_run()
    run.note("inputs", "t_grad and t_comm of thesis Table 6.1 (repro/paperdata/reported.csv); no dataset is used")
    table = table_6_1(p["networks"])
    run.write_csv("table61", table)
    limits = {net: (p["max_workers_vgg16e"] if net == "VGG16E" else p["max_workers"]) for net in p["networks"]}
    grid = predict_grid(table, p["batches"], limits, semaphore=p["semaphore"], rounding=p["rounding"])
    run.write_csv("predictions", grid)
    best = best_per_configuration(grid)
    run.write_csv("best_per_configuration", best)
    claims = [c for c in thesis_claims() if not c.get("network") or c["network"] in p["networks"]]
    claims_df = evaluate_claims(grid, claims)
    run.write_csv("claims", claims_df)
    reported = reported_vs_predicted(grid, claims)
    run.write_csv("reported_vs_predicted", reported)
    run.write_csv("ledger", ledger_rows(claims_df))
    tables = {"table61": table, "predictions": grid, "best_per_configuration": best, "claims": claims_df,
              "reported_vs_predicted": reported}
    if p["count_parameters"]:
        params_df = parameter_table(p["input_size"], p["num_classes"], p["networks"])
        run.write_csv("parameters", params_df)
        tables["parameters"] = params_df
    if p["measure"]:
        measured = _measure(run, p, tables)
        claims_df = apply_measured_claims(claims_df, measured)
        tables["claims"] = claims_df
        run.write_csv("claims", claims_df)
        run.write_csv("ledger", ledger_rows(claims_df))
    else:
        run.note("measurements", "not run (measure=false): the thesis' predictions only")
    summary = summarise(grid, claims_df, p)
    if p["measure"]:
        summary["measured"] = _measured_summary(tables)
    run.write_json("summary", summary)
    final = run.finish()
    return Result(final, p, run.record, tables, summary)


def _measure(run, p: dict, tables: dict) -> dict:
    """Probes, distributed runs and both models' predictions (repro.experiments.speedup.measure); tables added in place."""
    import os

    from repro.experiments.speedup import measure as sm

    cores = os.cpu_count() or 1
    run.note("cores", cores)
    run.note("measurement", f"networks {p['measure_networks']} at {p['measure_image_size']} px, batch "
             f"{p['measure_batch']}, D = {p['measure_batches']}, synthetic data; runs on link {p['train_link']}")
    run.add_dataset({"name": "synthetic", "source": "tf.random.stateless_uniform, one fixed batch per worker",
                     "stand_in_for": "Caltech256 at 224x224 (the thesis)", "shape": [p["measure_image_size"],
                                                                                    p["measure_image_size"], 3],
                     "classes": p["measure_classes"], "n_train": p["measure_batch"], "n_test": 0})
    base = run.dir / "clusters"
    probes = sm.probes(p, base)
    measured = sm.runs(p, base)
    cmp = sm.compare(measured, probes, p, cores)
    errs, picks, sem = sm.errors(cmp), sm.choices(cmp), sm.semaphore_effect(cmp, p["measure_batches"])
    for name, df in (("probes", probes), ("runs", measured), ("measured_vs_predicted", cmp), ("errors", errs),
                     ("choices", picks), ("semaphore_effect", sem)):
        run.write_csv(name, df)
        tables[name] = df
    return sm.measured_claims(cmp)


def apply_measured_claims(claims_df: pd.DataFrame, measured: dict) -> pd.DataFrame:
    """Claims about the thesis' measurements: our verdict where our runs test them, else 'not comparable'."""
    out = claims_df.copy()
    for i, r in out.iterrows():
        if r["verdict"] != "needs measurement":
            continue
        if r["id"] in measured:
            ours, ok = measured[r["id"]]
            out.at[i, "ours"] = ours
            out.at[i, "verdict"] = "pass (measured here)" if ok else "fail (measured here)"
        else:
            out.at[i, "verdict"] = "not comparable"
    return out


def _measured_summary(tables: dict) -> dict:
    errs = tables["errors"].set_index(["network", "mode", "server"])
    total = errs.loc[("all", "all", "all")]
    picks = tables["choices"]
    return {"mape_thesis": float(total["mape_thesis"]), "mape_extended": float(total["mape_extended"]),
            "configurations": int(total["configurations"]),
            "picks_right_thesis": int(picks["thesis_right"].sum()),
            "picks_right_extended": int(picks["extended_right"].sum()), "picks_total": int(len(picks))}


def summarise(grid: pd.DataFrame, claims: pd.DataFrame, p: dict) -> dict:
    """Headline numbers: claim counts and the predicted best configuration per network."""
    thesis = grid[grid["server"].isin(SERVERS)]
    out = {"claims_total": int(len(claims)),
           "claims_pass": int((claims["verdict"] == "pass").sum()),
           "claims_fail": int((claims["verdict"] == "fail").sum()),
           "claims_need_measurement": int((claims["verdict"] == "needs measurement").sum()),
           "claims_measured_pass": int((claims["verdict"] == "pass (measured here)").sum()),
           "claims_measured_fail": int((claims["verdict"] == "fail (measured here)").sum()),
           "claims_not_comparable": int((claims["verdict"] == "not comparable").sum()),
           "batches": p["batches"], "best": {}}
    for net, sub in thesis.groupby("network", sort=False):
        best = sub.loc[sub["speedup"].idxmax()]
        out["best"][net] = {"speedup": float(best["speedup"]), "mode": best["mode"], "server": best["server"],
                            "workers": int(best["workers"])}
    sq = grid[(grid["network"] == "SqueezeNet") & (grid["mode"] == "sync-split") & (grid["server"] == "central")]
    if not sq.empty:
        out["squeezenet_split_central_best_workers"] = int(sq.loc[sq["speedup"].idxmax(), "workers"])
    sem = grid[(grid["network"] == "GoogLeNet") & (grid["mode"] == "sync-join")]
    sem = sem[sem["workers"] == sem["workers"].max()] if not sem.empty else sem
    if (sem["server"] == "central+semaphore").any():
        by = sem.set_index("server")["speedup"]
        out["semaphore_googlenet_join"] = {"workers": int(sem["workers"].iloc[0]), "central": float(by["central"]),
                                           "semaphore": float(by["central+semaphore"]),
                                           "distributed": float(by["distributed"])}
    vgg = thesis[(thesis["network"] == "VGG16E") & (thesis["workers"] >= 2)]
    if not vgg.empty:
        out["vgg16e_max_parallel_speedup"] = float(vgg["speedup"].max())
    return out


# --- figures and glue ----------------------------------------------------------------------


def plot_predictions(result: Result, dpi: int | None = None):
    """Predicted (mean-case) speedup vs workers: one facet per network, lines per mode and server."""
    import seaborn as sns

    from repro.book import plots

    plots.style()
    grid = result["predictions"]
    g = sns.relplot(data=grid, x="workers", y="speedup", hue="mode", style="server", col="network",
                    col_wrap=2, kind="line", marker="o", height=3.2, aspect=1.35,
                    facet_kws={"sharex": False, "sharey": False})
    from matplotlib.ticker import MaxNLocator

    for ax in g.axes.flat:
        ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    g.set_axis_labels("workers N", "predicted speedup S")
    g.set_titles("{col_name}")
    g.figure.suptitle(f"slampa2017: predicted speedup from Table 6.1 (D = {result.params['batches']} batches)", y=1.02)
    g.figure.set_dpi(dpi or result.params.get("plot_dpi", 100))
    return g


def plot_estimate(df: pd.DataFrame, title: str = ""):
    """One configuration: the estimate with the best / worst schedule as a band (CLI ``--output plot``)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from repro.book import plots

    plots.style()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.fill_between(df["workers"], df["speedup_worst"], df["speedup_best"], alpha=0.25, label="worst..best schedule")
    ax.plot(df["workers"], df["speedup"], marker="o", label="estimate (mean)")
    ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("workers N")
    ax.set_ylabel("speedup S")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def glue_numbers(result: Result) -> None:
    """Headline numbers for the chapter's prose."""
    from repro.book.report import glue

    s = result.summary
    glue("sp_batches", s["batches"])
    glue("sp_claims_total", s["claims_total"])
    glue("sp_claims_pass", s["claims_pass"])
    glue("sp_claims_fail", s["claims_fail"])
    glue("sp_claims_measure", s["claims_need_measurement"])
    for net, best in s["best"].items():
        key = net.lower()
        glue(f"sp_best_{key}", best["speedup"])
        glue(f"sp_best_{key}_config", "one worker, i.e. sequential training" if best["workers"] == 1
             else f"{best['mode']}, {best['server']} server, {best['workers']} workers")
    if "squeezenet_split_central_best_workers" in s:
        glue("sp_sq_split_best_n", s["squeezenet_split_central_best_workers"])
    if "semaphore_googlenet_join" in s:
        sem = s["semaphore_googlenet_join"]
        glue("sp_sem_n", sem["workers"])
        glue("sp_sem_central", sem["central"])
        glue("sp_sem_semaphore", sem["semaphore"])
        glue("sp_sem_distributed", sem["distributed"])
    if "vgg16e_max_parallel_speedup" in s:
        glue("sp_vgg_max", s["vgg16e_max_parallel_speedup"])
    glue("sp_claims_measured_pass", s["claims_measured_pass"])
    glue("sp_claims_measured_fail", s["claims_measured_fail"])
    glue("sp_claims_not_comparable", s["claims_not_comparable"])
    if "measured" in s:
        m, p = s["measured"], result.params
        glue("sp_mape_thesis", m["mape_thesis"])
        glue("sp_mape_extended", m["mape_extended"])
        glue("sp_configs", m["configurations"])
        glue("sp_picks_thesis", m["picks_right_thesis"])
        glue("sp_picks_extended", m["picks_right_extended"])
        glue("sp_picks_total", m["picks_total"])
        glue("sp_train_link", "an emulated " + p["train_link"].replace("gbit", " Gb/s").replace("mbit", " Mb/s")
             + " network" if p["train_link"] != "loopback" else "loopback")
        glue("sp_measure_networks", ", ".join(p["measure_networks"]))
        glue("sp_measure_shape", f"{p['measure_image_size']}x{p['measure_image_size']} px, batch {p['measure_batch']}, "
             f"D = {p['measure_batches']}, N = {', '.join(map(str, p['measure_workers']))}")
        sem = result["semaphore_effect"]
        glue("sp_sem_closer", int(sem["closer_to_best"].sum()) if len(sem) else 0)
        glue("sp_sem_total", int(len(sem)))
        glue("sp_sem_ratio_median", float(sem["semaphore_over_plain"].median()) if len(sem) else float("nan"))
    rep = result["reported_vs_predicted"]
    if not rep.empty:
        glue("sp_err_min", float(rep["equations_error"].abs().min()))
        glue("sp_err_max", float(rep["equations_error"].abs().max()))
    if "parameters" in result.tables:
        par = result["parameters"].set_index("network")
        glue("sp_input_size", result.params["input_size"])
        glue("sp_num_classes", result.params["num_classes"])
        glue("sp_mbps_min", float(par["implied_mbps"].min()))
        glue("sp_mbps_max", float(par["implied_mbps"].max()))
        if "GoogLeNet" in par.index:
            glue("sp_googlenet_side_mbps", float(par.loc["GoogLeNet", "implied_mbps_with_side_classifiers"]))


# --- command line: `repro estimate` (the thesis' estimate.py) -------------------------------


def _number(text, name: str) -> float:
    if text is None:
        raise EstimateError(f"--{name} is required")
    try:
        return float(text)
    except ValueError:
        raise EstimateError(f"--{name} must be a positive number of seconds, got {text!r}") from None


def _integer(text, name: str, default=None) -> int:
    if text is None:
        if default is None:
            raise EstimateError(f"--{name} is required")
        return default
    try:
        return int(text)
    except ValueError:
        raise EstimateError(f"--{name} must be an integer >= 1, got {text!r}") from None


def _fmt(x: float) -> str:
    return format(float(x), ".10g")


def _cmd_estimate(args) -> int:
    try:
        t_grad = _number(args.t_grad, "t-grad")
        t_comm = _number(args.t_comm, "t-comm")
        workers = _integer(args.workers, "workers")
        batches = _integer(args.batches, "batches", default=128)
        if args.output not in ("single", "csv", "plot"):
            raise EstimateError(f"unknown output {args.output!r}; choose from: single, csv, plot")
        check_inputs(t_grad, t_comm, args.mode, args.server, workers, batches, args.rounding)
        if args.output == "single":
            df = estimate(t_grad, t_comm, args.mode, args.server, [workers], batches, args.semaphore, args.rounding)
            print(_fmt(df["speedup"].iloc[0]))
            return 0
        df = estimate(t_grad, t_comm, args.mode, args.server, list(range(1, workers + 1)), batches,
                      args.semaphore, args.rounding)
        if args.output == "csv":
            print("workers,speedup,speedup_best,speedup_worst")
            for r in df.itertuples(index=False):
                print(f"{r.workers},{_fmt(r.speedup)},{_fmt(r.speedup_best)},{_fmt(r.speedup_worst)}")
            return 0
        sem = "+semaphore" if args.semaphore and args.server == "central" else ""
        out = Path(args.out) if args.out else Path.cwd() / f"speedup_{args.mode}_{args.server}{sem}.png"
        if out.parent and not out.parent.is_dir():
            raise EstimateError(f"--out: directory {str(out.parent)!r} does not exist")
        fig = plot_estimate(df, f"{args.mode}, {args.server}{sem} server: t_grad={t_grad:g} s, "
                                f"t_comm={t_comm:g} s, D={batches}")
        fig.savefig(out, dpi=args.dpi)
        import matplotlib.pyplot as plt

        plt.close(fig)
        print(out)
        return 0
    except EstimateError as exc:
        print(f"repro: error: {exc}", file=sys.stderr)
        return 2


def add_cli(subparsers) -> None:
    """``repro estimate``: the thesis' estimate.py (speedup of distributed training)."""
    p = subparsers.add_parser(
        "estimate", help="predicted speedup of distributed training (slampa2017's estimate.py)",
        description="Speedup S = D*t_grad/t_parallel predicted by the equations of Šlampa (2017), chapter 4.",
    )
    p.add_argument("--t-grad", metavar="T", help="seconds to compute the gradients of one batch on one worker")
    p.add_argument("--t-comm", metavar="T", help="seconds to move the network's weights between server and one worker")
    p.add_argument("--mode", "--type", dest="mode", default="async", metavar="MODE",
                   help="sync-join, sync-split or async (default: async, as estimate.py)")
    p.add_argument("--server", default="central", metavar="SERVER", help="central or distributed (default: central)")
    p.add_argument("--workers", metavar="N", help="number of workers (csv and plot: 1..N)")
    p.add_argument("--batches", metavar="D", help="number of batches to train (default: 128, as the thesis)")
    p.add_argument("--output", default="single", metavar="FORM",
                   help="single (mean-case speedup at N), csv (rows 1..N) or plot (PNG; prints its path)")
    p.add_argument("--out", metavar="PATH", help="PNG path for --output plot (default: ./speedup_<mode>_<server>.png)")
    p.add_argument("--dpi", type=int, default=120, help="PNG resolution for --output plot (default: 120)")
    p.add_argument("--semaphore", action="store_true",
                   help="central server with the thesis' proposed semaphore (§7.2): the estimate is the best case")
    p.add_argument("--rounding", default="exact", metavar="R",
                   help="D/N when N does not divide D: exact (true division, as estimate.py) or ceil")
    p.set_defaults(func=_cmd_estimate)
