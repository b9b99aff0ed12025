"""Asynchronous SGD with stale gradients, emulated in one process (`savchenko2019`, digest §5).

A reproducible *emulation* of stale gradients, not a distributed run (:func:`train_async`):
gradients arrive one per minibatch; the gradient of arrival ``t`` is computed on the server
parameters as they were at arrival ``t - tau_t`` (a delay queue of parameter snapshots) and then
applied to the current parameters. ``tau_t`` is fixed, or drawn per arrival with mean ``tau``
(``uniform`` on 0..2 tau, or ``geometric`` capped at :data:`GEOMETRIC_CAP` x tau), standing for N
workers of unequal speed. The mitigations (:data:`MITIGATIONS`) are options of the emulation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from repro.experiments.staleness.averaging import EngineError, Trainer, epoch_batches

TAU_DISTS = ("fixed", "uniform", "geometric")
MITIGATIONS = ("none", "scaling", "soft_sync", "bounded", "scaling+soft_sync")
# a geometric draw is capped at 10 x its mean (P(exceed) = e^-10 roughly); keeps the snapshot queue finite
GEOMETRIC_CAP = 10


def draw_staleness(rng: np.random.Generator, tau: int, dist: str) -> int:
    """One delay: ``tau`` (fixed), uniform on 0..2 tau, or geometric with mean tau (capped)."""
    if dist == "fixed" or tau == 0:
        return int(tau)
    if dist == "uniform":
        return int(rng.integers(0, 2 * tau + 1))
    return int(min(rng.geometric(1.0 / (1.0 + tau)) - 1, GEOMETRIC_CAP * tau))


def max_delay(tau: int, dist: str) -> int:
    return {"fixed": tau, "uniform": 2 * tau, "geometric": GEOMETRIC_CAP * tau}[dist]


def staleness_scale(staleness: int, scaling: bool) -> float:
    """lambda(sigma) = 1 / max(sigma, 1): the update of a gradient sigma versions old is divided by sigma."""
    return 1.0 / max(int(staleness), 1) if scaling else 1.0


def wait_charge(delay: int, bound: int | None) -> float:
    """Emulated time (arrival slots) that holding back costs when a drawn ``delay`` exceeds ``bound``.

    Bounded staleness lets at most ``bound + 1`` gradients be in flight: the others wait. With equal-speed
    workers (fixed delay tau) the throughput falls from 1 to ``(bound + 1) / (tau + 1)`` gradients per slot,
    i.e. every arrival costs ``1 + (tau - bound) / (bound + 1)`` slots: the charge is
    ``(delay - bound) / (bound + 1)`` per held-back arrival (exact for fixed delays, an approximation for
    random ones). 0 when nothing is held back.
    """
    if bound is None or delay <= bound:
        return 0.0
    return (int(delay) - int(bound)) / (int(bound) + 1)


def mitigation_options(variant: str, soft_sync: int, bound: int) -> dict:
    """Engine options of a mitigation variant name (see :data:`MITIGATIONS`)."""
    if variant not in MITIGATIONS:
        raise EngineError(f"mitigation must be one of {', '.join(MITIGATIONS)}, got {variant!r}")
    return {
        "scaling": variant in ("scaling", "scaling+soft_sync"),
        "soft_sync": soft_sync if variant in ("soft_sync", "scaling+soft_sync") else 1,
        "bound": bound if variant == "bounded" else None,
    }


@dataclass
class AsyncResult:
    history: list[dict] = field(default_factory=list)  # one row per epoch
    log: list[dict] = field(default_factory=list)  # one row per gradient (LOG_COLUMNS + arrival, drawn, scale)
    updates: int = 0  # server updates applied
    held_back: int = 0  # bounded staleness: arrivals by which fast workers were held back, summed
    wait_time: float = 0.0  # bounded staleness: the waiting charged, in arrival slots (:func:`wait_charge`)
    arrivals: int = 0  # gradients that arrived (all of them unless a time budget stopped the run)
    weights: list = field(default_factory=list)
    trajectory: list = field(default_factory=list)  # weights after every server update (trace=True), initial first
    wall_s: float = 0.0


def check_async_options(tau, tau_dist, soft_sync, bound) -> None:
    if not isinstance(tau, (int, np.integer)) or isinstance(tau, bool) or tau < 0:
        raise EngineError(f"tau must be an integer >= 0, got {tau!r}")
    if tau_dist not in TAU_DISTS:
        raise EngineError(f"tau_dist must be one of {', '.join(TAU_DISTS)}, got {tau_dist!r}")
    if not isinstance(soft_sync, (int, np.integer)) or soft_sync < 1:
        raise EngineError(f"soft_sync (S) must be an integer >= 1, got {soft_sync!r}")
    if bound is not None and (not isinstance(bound, (int, np.integer)) or bound < 0):
        raise EngineError(f"staleness bound must be an integer >= 0 or None, got {bound!r}")


def train_async(server: Trainer, reader: Trainer, x: np.ndarray, y: np.ndarray, *, tau: int, epochs: int,
                batch_size: int, init_weights, tau_dist: str = "fixed", scaling: bool = False, soft_sync: int = 1,
                bound: int | None = None, seed: int = 0, x_test=None, y_test=None, shuffle: bool = True,
                trace: bool = False, log=None, time_budget: float | None = None) -> AsyncResult:
    """Emulated asynchronous SGD with stale gradients (one process, reproducible).

    Gradients *arrive* one per minibatch (arrival ``t = 0, 1, ...``; the minibatches of an epoch
    are a seeded shuffle of the training set). The server has applied ``v = t // S`` updates when
    arrival ``t`` comes in. For arrival ``t`` a delay ``tau_t`` is drawn (:func:`draw_staleness`,
    at most ``t``); the gradient is computed (by ``reader``) on the server parameters as they were
    at arrival ``t - tau_t``, i.e. version ``r = (t - tau_t) // S``; its staleness is ``v - r``
    server updates. Then:

    * no mitigation (S = 1): ``w <- w - lr * g`` at once, so ``w_{t+1} = w_t - lr * grad(w_{t-tau})``;
    * ``scaling``: the gradient is multiplied by ``lambda = 1 / max(staleness, 1)`` (lr / tau);
    * ``soft_sync = S``: the server collects S gradients from any workers and applies their mean
      as one update (a partial group left at the end of training is applied as the mean of what
      arrived);
    * ``bound = s``: bounded staleness. A drawn delay above ``s`` means a fast worker would push an
      update while a slow worker's read is more than ``s`` updates old; holding the fast workers
      back until the slow one has pushed means no gradient is ever applied more than ``s`` arrivals
      late, so the emulation uses ``min(tau_t, s)`` and counts the ``tau_t - s`` arrivals the
      fast workers waited as ``held_back``; the idle time is charged as emulated time
      (:func:`wait_charge`, summed in ``wait_time``). With ``time_budget`` (arrival slots, e.g. the
      arrivals of an unbounded run) the run stops before an arrival whose slot plus charged waiting
      would exceed it, so mitigations can be compared at equal emulated time (``arrivals`` counts the
      gradients that did arrive).

    ``server`` holds the current parameters and the optimizer (plain SGD makes the scaling exactly
    a per-update learning rate); ``reader`` is a second trainer of the same architecture (its
    optimizer is unused) into which snapshots are loaded. ``trace=True`` keeps the weights after
    every update in ``trajectory`` (for tests on tiny models).
    """
    check_async_options(tau, tau_dist, soft_sync, bound)
    if not isinstance(epochs, (int, np.integer)) or epochs < 1:
        raise EngineError(f"epochs must be an integer >= 1, got {epochs!r}")
    if len(y) < batch_size:
        raise EngineError(f"{len(y)} training examples are fewer than one minibatch of {batch_size}")
    t0 = time.perf_counter()
    lag = max_delay(int(tau), tau_dist) if bound is None else min(max_delay(int(tau), tau_dist), int(bound))
    ps = _ParameterServer(server, reader, init_weights, int(soft_sync), keep=lag // int(soft_sync) + 2, trace=trace)
    rng = np.random.default_rng([seed, 3])
    for epoch in range(epochs):
        losses, stop = [], False
        for b in epoch_batches(np.arange(len(y)), batch_size, seed, epoch, 0, shuffle):
            drawn = draw_staleness(rng, int(tau), tau_dist)
            delay = min(drawn, ps.arrivals)
            charge = wait_charge(delay, bound)
            if time_budget is not None and ps.arrivals + ps.res.wait_time + charge + 1 > time_budget + 1e-9:
                stop = True
                break
            if bound is not None and delay > bound:
                ps.res.held_back += delay - int(bound)
                ps.res.wait_time += charge
                delay = int(bound)
            losses.append(ps.arrive(x[b], y[b], delay, drawn, scaling))
        if (stop or epoch == epochs - 1) and ps.group:
            ps.apply_group()
        _epoch_row(ps, server, epoch, losses, x_test, y_test, log, epochs)
        if stop:
            break
    ps.res.weights = server.get_weights()
    ps.res.wall_s = time.perf_counter() - t0
    ps.res.arrivals = ps.arrivals
    return ps.res


def _epoch_row(ps, server: Trainer, epoch: int, losses: list, x_test, y_test, log, epochs: int) -> None:
    test_loss, test_acc = float("nan"), float("nan")
    if x_test is not None and len(y_test):
        test_loss, test_acc = server.evaluate(x_test, y_test)
    ps.res.history.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)) if losses else float("nan"),
                           "test_loss": test_loss, "test_accuracy": test_acc, "updates": ps.res.updates,
                           "arrivals": ps.arrivals, "wait_time": ps.res.wait_time})
    if log:
        log(f"epoch {epoch + 1}/{epochs}: test accuracy {test_acc:.4f}, updates {ps.res.updates}")


class _ParameterServer:
    """The emulation's server: current parameters (``server``), the queue of parameter snapshots a
    stale read can still need, the group of gradients collected for the next update (soft sync)."""

    def __init__(self, server: Trainer, reader: Trainer, init_weights, soft_sync: int, keep: int, trace: bool):
        server.reset(init_weights)
        self.server, self.reader, self.S, self.keep, self.trace = server, reader, soft_sync, keep, trace
        self.snapshots = {0: [np.array(w, copy=True) for w in init_weights]}
        self.reader_version: int | None = None
        self.group: list = []
        self.arrivals = 0
        self.res = AsyncResult()
        if trace:
            self.res.trajectory.append(self.snapshots[0])

    def arrive(self, xb, yb, delay: int, drawn: int, scaling: bool) -> float:
        """Arrival ``t``: a gradient read ``delay`` arrivals ago; logged, collected, applied when S are in."""
        t, version = self.arrivals, self.res.updates  # version == t // S
        read = (t - delay) // self.S
        if read != self.reader_version:
            self.reader.set_weights(self.snapshots[read])
            self.reader_version = read
        loss, grads = self.reader.grads(xb, yb)
        stale = version - read
        lam = staleness_scale(stale, scaling)
        self.group.append((lam, list(grads)))
        self.res.log.append({"update": version + 1, "worker": -1, "read_version": read, "apply_version": version,
                             "staleness": stale, "arrival": t, "drawn_delay": drawn, "scale": lam})
        self.arrivals += 1
        if len(self.group) == self.S:
            self.apply_group()
        return float(loss)

    def apply_group(self) -> None:
        group = self.group
        if len(group) == 1 and group[0][0] == 1.0:
            grads = group[0][1]
        else:
            grads = [sum(lam * g[j] for lam, g in group) / len(group) for j in range(len(group[0][1]))]
        self.server.apply_grads(grads)
        self.group = []
        self.res.updates += 1
        self.snapshots[self.res.updates] = self.server.get_weights()
        if self.trace:
            self.res.trajectory.append(self.snapshots[self.res.updates])
        for old in [k for k in self.snapshots if k < self.res.updates - self.keep]:
            del self.snapshots[old]
