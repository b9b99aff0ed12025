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

import numpy as np
import pandas as pd

from repro.core import errors, paper

PAPER = "slampa2017"
MODES = ("sync-join", "sync-split", "async")
SERVERS = ("central", "distributed")
ROUNDINGS = ("exact", "ceil")
NETWORKS = ("VGG16E", "GoogLeNet", "SqueezeNet", "Resnet34")


EstimateError = errors.BadInput  # Bad input to the estimator (one-line message).


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
    return (async_central_best(t_grad, t_comm, n, d, rounding)
            + async_central_worst(t_grad, t_comm, n, d, rounding)) / 2


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

