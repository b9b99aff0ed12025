"""The study's training runs (`savchenko2019`, digest §5), each part returning tidy tables.

1. :func:`equivalence_check`: k = 1 averaging with plain SGD equals single-machine SGD on the
   global batch (a numerical check);
2. :func:`averaging_runs`: the N x k grid, and weights-only vs weights+state averaging;
3. :func:`async_runs`: the asynchronous-SGD emulation, a tau sweep and the mitigations;
4. :func:`thread_runs`: real asynchronous runs with Python threads (staleness distributions).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from repro.core import claims
from repro.core.params import ParameterError
from repro.core.progress import Progress
from repro.experiments.staleness import averaging as av
from repro.experiments.staleness.async_sgd import mitigation_options, train_async
from repro.experiments.staleness.averaging import Trainer
from repro.experiments.staleness.logs import (
    LOG_COLUMNS,
    staleness_distribution,
    staleness_summary,
)
from repro.experiments.staleness.paramtypes import StalenessParams
from repro.experiments.staleness.threads import threaded_async_run
from repro.ml import models

EQUIVALENCE_TOLERANCE = claims.load("staleness")["k1_equals_single_machine"].threshold(
    "max_abs_weight_difference")  # max |w_avg - w_single| for "k = 1 equals single-machine SGD" (claims.yaml)
EQUIVALENCE_STEPS = 10  # averaging rounds of the in-run equivalence check
# the last with its documented defaults (32-64-64, Dense 64, dropout 0.5)
MODEL_BUILDERS = {"small_cnn": models.small_cnn, "mnist_cnn": models.mnist_cnn, "cifar10_cnn": models.cifar10_cnn,
                  "polishchuk_cnn": models.polishchuk_cnn}


def log(msg: str) -> None:
    logging.getLogger(__name__).info(msg)


def check_params(p: StalenessParams, n_train: int) -> None:
    """Cross-parameter checks the schema cannot express (one-line :class:`ParameterError`)."""
    for key, n_max in (("workers", max(p.workers)), ("state_workers", p.state.workers)):
        if n_train // n_max < p.batch_size:
            raise ParameterError(
                f"parameter '{key}': {n_train} training examples give each of {n_max} workers fewer than one "
                f"minibatch of {p.batch_size}; lower it or raise train_samples")
    if n_train < p.batch_size:
        raise ParameterError(f"parameter 'batch_size': larger than the {n_train} training examples")


class Models:
    """Trainers (one per model, optimizer, learning rate and tag) and initial weights (one per seed and
    model), built once: a trainer's steps are traced once however many configurations it trains."""

    def __init__(self, p: StalenessParams, ds):
        self.p, self.ds = p, ds
        self._trainers: dict = {}
        self._inits: dict = {}

    def build(self, model: str | None = None):
        return MODEL_BUILDERS[model or self.p.model](self.ds.input_shape, self.ds.num_classes)

    def trainer(self, opt: str | None, lr: float = 0.0, model: str | None = None, tag: str = "") -> Trainer:
        key = (model or self.p.model, opt, lr, tag)
        if key not in self._trainers:
            optimizer = av.make_optimizer(opt, lr, self.p.momentum) if opt else None
            self._trainers[key] = Trainer(self.build(model), optimizer)
        return self._trainers[key]

    def init(self, seed: int, model: str | None = None):
        key = (seed, model or self.p.model)
        if key not in self._inits:
            import keras

            keras.utils.set_random_seed(seed)
            self._inits[key] = self.build(key[1]).get_weights()
        return self._inits[key]

    def sizes(self) -> dict:
        p = self.p
        return {"weight_bytes": self.trainer(p.avg.optimizer, p.avg.learning_rate).weight_bytes(),
                "state_optimizer_state_bytes": self.trainer(p.state.optimizer,
                                                            p.state.learning_rate).state_bytes()}


def equivalence_check(m: Models) -> dict:
    """k = 1 averaging (plain SGD, N = max(2, max workers)) vs single-machine SGD on the global batch."""
    p, ds = m.p, m.ds
    n_eq = max(2, max(p.workers))
    m_eq = n_eq * p.batch_size * EQUIVALENCE_STEPS
    xe, ye = ds.x_train[:m_eq], ds.y_train[:m_eq]
    tr = m.trainer("sgd", p.avg.learning_rate, "small_cnn")
    seed0 = p.seeds[0]
    res = av.train_averaging(tr, xe, ye, workers=n_eq, period=1, epochs=1, batch_size=p.batch_size,
                             init_weights=m.init(seed0, "small_cnn"), seed=seed0)
    ref = av.single_machine_reference(tr, xe, ye, workers=n_eq, epochs=1, batch_size=p.batch_size,
                                      init_weights=m.init(seed0, "small_cnn"), seed=seed0)
    out = {"workers": n_eq, "rounds": res.rounds, "global_batch": n_eq * p.batch_size,
           "model": "small_cnn", "optimizer": "sgd", "learning_rate": p.avg.learning_rate,
           "max_abs_weight_difference": av.max_abs_difference(res.weights, ref),
           "max_abs_weight": float(max(np.abs(w).max() for w in ref)), "tolerance": EQUIVALENCE_TOLERANCE}
    log(f"k=1 vs single machine (N={n_eq}, {res.rounds} rounds): max |dw| = {out['max_abs_weight_difference']:.2e}")
    return out


def _averaging_rows(m: Models, part: str, opt: str, lr: float, workers: int, period: int, seed: int,
                    average_state: bool) -> list[dict]:
    p, ds = m.p, m.ds
    tr = m.trainer(opt, lr)
    res = av.train_averaging(tr, ds.x_train, ds.y_train, workers=workers, period=period, epochs=p.epochs,
                             batch_size=p.batch_size, init_weights=m.init(seed), average_state=average_state,
                             seed=seed, x_test=ds.x_test, y_test=ds.y_test)
    state_avg = average_state and opt != "sgd"
    per_round = tr.weight_bytes() + (tr.state_bytes() if state_avg else 0)
    mode = "weights+state" if state_avg else "weights"
    log(f"{part}: {opt} N={workers} k={period} {mode} seed={seed}: test accuracy "
        f"{res.history[-1]['test_accuracy']:.4f}, {res.rounds} rounds")
    return [{"part": part, "optimizer": opt, "state_mode": mode, "workers": workers, "period": period, "seed": seed,
             **h, "bytes_per_round": per_round, "comm_mb": h["rounds"] * per_round / 1e6, "wall_s": res.wall_s}
            for h in res.history]


def averaging_runs(m: Models) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The N x k grid and the weights-only vs weights+state comparison: (history, final epoch)."""
    p = m.p
    jobs = []
    for seed in p.seeds:
        jobs += [("grid", p.avg.optimizer, p.avg.learning_rate, n, k, seed, True)
                 for n in p.workers for k in (p.periods if n > 1 else [1])]
        jobs += [("state", p.state.optimizer, p.state.learning_rate, p.state.workers, k, seed, mode == "weights+state")
                 for k in p.state.periods for mode in av.STATE_MODES]
    rows: list[dict] = []
    with Progress(logging.getLogger(__name__), "averaging trainings", len(jobs)) as progress:
        for job in jobs:
            rows += _averaging_rows(m, *job)
            part = job[0] if job[0] == "grid" else ("weights+state" if job[6] else "weights only")
            progress.done(f"{part} N={job[3]} k={job[4]} seed={job[5]}")
    hist = pd.DataFrame(rows)
    return hist, hist[hist["epoch"] == p.epochs].reset_index(drop=True)


CONTROL_PREFIX = "lr_control:"  # variant name of a mitigation's learning-rate control: plain async SGD at its lr


def control_factor(variant: str, mean_scale: float, soft_sync: int) -> float | None:
    """The factor by which a mitigation changes the learning rate per gradient (None: it does not).

    ``scaling`` multiplies each step by lambda (mean ``mean_scale``); ``soft_sync`` applies the mean of S
    gradients as one step (lr / S per gradient); ``scaling+soft_sync`` both. ``bounded`` keeps the lr.
    """
    return {"scaling": mean_scale, "soft_sync": 1.0 / soft_sync,
            "scaling+soft_sync": mean_scale / soft_sync}.get(variant)


def _emulate(m: Models, cache: dict, part: str, variant: str, dist: str, tau: int, seed: int,
             lr_factor: float = 1.0):
    """One emulated async run (cached by its engine options): history rows, final row, staleness rows.

    ``bounded`` runs under a time budget (the arrivals of an unbounded run) with its waiting charged;
    a ``lr_control:<variant>`` run is plain async SGD at ``lr_factor`` x the learning rate."""
    p, ds = m.p, m.ds
    dist = "fixed" if tau == 0 else dist
    control = variant.startswith(CONTROL_PREFIX)
    opts = mitigation_options("none" if control else variant, p.soft_sync, p.staleness_bound)
    budget = p.epochs * (len(ds.y_train) // p.batch_size) if opts["bound"] is not None else None
    lr = p.async_learning_rate * lr_factor
    key = (seed, dist, tau, opts["scaling"], opts["soft_sync"], opts["bound"], lr)
    if key not in cache:
        res = train_async(m.trainer("sgd", lr, tag="server"), m.trainer(None, tag="reader"),
                          ds.x_train, ds.y_train, tau=tau, epochs=p.epochs, batch_size=p.batch_size,
                          init_weights=m.init(seed), tau_dist=dist, seed=seed, x_test=ds.x_test, y_test=ds.y_test,
                          time_budget=budget, **opts)
        cache[key] = res
        log(f"async {variant} tau={tau} ({dist}) lr={lr:.3g} seed={seed}: test accuracy "
            f"{res.history[-1]['test_accuracy']:.4f}, {res.updates} updates, waiting charged {res.wait_time:.0f}")
    res = cache[key]
    counts = [r["staleness"] for r in res.log]
    stale = staleness_summary(counts)
    base = {"part": part, "variant": variant, "tau_dist": dist, "tau": tau, "seed": seed}
    final = {**base, "test_accuracy": res.history[-1]["test_accuracy"], "test_loss": res.history[-1]["test_loss"],
             "updates": res.updates, "mean_staleness": stale["mean"], "max_staleness": stale["max"],
             "mean_scale": float(np.mean([r["scale"] for r in res.log])), "held_back": res.held_back,
             "arrivals": res.arrivals, "wait_time": res.wait_time, "emulated_time": res.arrivals + res.wait_time,
             "learning_rate": lr, "lr_factor": lr_factor, "wall_s": res.wall_s}
    dist_rows = ([{**base, **r} for r in staleness_distribution(counts).to_dict("records")] if seed == p.seeds[0]
                 else [])
    return [{**base, **h} for h in res.history], final, dist_rows


def async_runs(m: Models) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The tau sweep, the mitigations (bounded with its waiting charged) and, with ``lr_controls``, one
    learning-rate control per lr-changing mitigation: (history, final, staleness distribution of seed 1)."""
    p = m.p
    cache: dict = {}
    hist: list = []
    final: list = []
    stale: list = []
    configs = []
    for seed in p.seeds:
        for dist in p.tau_dists:
            for tau in p.taus:
                if tau == 0 and dist != p.tau_dists[0]:
                    continue  # tau = 0 is synchronous SGD whatever the distribution
                configs.append(("tau_sweep", "none", dist, tau, seed))
        for tau in p.mitigation_taus:
            for variant in p.mitigations:
                configs.append(("mitigation", variant, p.mitigation_tau_dist, tau, seed))
    with Progress(logging.getLogger(__name__), "async emulations", len(configs)) as progress:
        for cfg in configs:
            hist, final, stale = _emulate_with_control(m, cache, cfg, (hist, final, stale))
            progress.done(f"{cfg[1]} tau={cfg[3]} ({cfg[2]}) seed={cfg[4]}")
    return pd.DataFrame(hist), pd.DataFrame(final), pd.DataFrame(stale)


def _emulate_with_control(m: Models, cache: dict, cfg: tuple[str, str, str, int, int], acc: tuple) -> tuple:
    """One configuration of :func:`async_runs` (and its learning-rate control), added to ``acc``."""
    p, (hist, final, stale) = m.p, acc
    h, f, s = _emulate(m, cache, *cfg)
    hist += h
    final.append(f)
    stale += s
    factor = control_factor(cfg[1], f["mean_scale"], p.soft_sync) if cfg[0] == "mitigation" else None
    if p.lr_controls and factor is not None:
        h, f, s = _emulate(m, cache, "mitigation", CONTROL_PREFIX + cfg[1], *cfg[2:], lr_factor=factor)
        hist += h
        final.append(f)
    return hist, final, stale


def thread_runs(m: Models) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Real multi-threaded async runs, one per N and thread seed (``thread_seeds``): (log, staleness summary per
    N pooled over the seeds with the number of runs and the sd of the per-run means, distribution per N)."""
    p, ds = m.p, m.ds
    logs = []
    if p.thread.updates > 0:
        for seed in p.thread.seeds:
            for n in p.thread.workers:
                one = threaded_async_run(m.build, ds.x_train, ds.y_train, workers=n,
                                         updates_per_worker=p.thread.updates, batch_size=p.batch_size,
                                         learning_rate=p.async_learning_rate, seed=seed)
                one.insert(0, "seed", seed)
                one.insert(0, "workers", n)
                logs.append(one)
                log(f"threads N={n} seed={seed}: mean staleness {one['staleness'].mean():.2f} over {len(one)} updates")
    thread_log = pd.DataFrame(logs and pd.concat(logs, ignore_index=True), columns=["workers", "seed", *LOG_COLUMNS])
    summary = pd.DataFrame([{"workers": n, **staleness_summary(g), "runs": int(g["seed"].nunique()),
                             "run_mean_sd": float(g.groupby("seed")["staleness"].mean().std())}
                            for n, g in thread_log.groupby("workers")])
    dist = (pd.concat([staleness_distribution(g).assign(workers=n) for n, g in thread_log.groupby("workers")],
                      ignore_index=True) if len(thread_log)
            else pd.DataFrame(columns=["staleness", "count", "fraction", "workers"]))
    return thread_log, summary, dist
