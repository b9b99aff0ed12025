"""Parameter-averaging period and asynchronous-SGD staleness (`savchenko2019`, digest §5).

The paper makes claims without experiments; this module turns each into a measurement, in
one Python process with custom training loops (``tf.GradientTape``):

1. **Synchronous parameter averaging** (:mod:`repro.experiments.staleness.averaging`): N workers, each on its own
   data shard, take k local minibatch steps, then weights (optionally optimizer state) are
   averaged. Grid over k and N; weights-only vs weights+state with a stateful optimizer;
   a numerical check that k = 1 with plain SGD equals single-machine SGD on the global batch.
2. **Asynchronous SGD emulation** (:func:`train_async`): a reproducible *emulation* of stale
   gradients, not a distributed run. Gradients arrive one per minibatch; the gradient of
   arrival ``t`` is computed on the server parameters as they were at arrival ``t - tau_t``
   (a delay queue of parameter snapshots) and then applied to the current parameters. ``tau_t``
   is fixed, or drawn per arrival with mean ``tau`` (``uniform`` on 0..2 tau, or ``geometric``
   capped at :data:`GEOMETRIC_CAP` x tau), standing for N workers of unequal speed.
3. **Mitigations**, options of the emulation (see :func:`train_async`): staleness-dependent
   step scaling, soft synchronisation, bounded staleness, scaling + soft sync.
4. **Staleness logs**: the format (:data:`LOG_COLUMNS`) and analysis (:func:`staleness_summary`,
   :func:`staleness_distribution`) that a real asynchronous run feeds, and a small real
   asynchronous run with Python threads sharing one parameter set (:func:`threaded_async_run`).

``run(profile, overrides, run_dir)`` runs everything and writes tidy CSV files; the
chapter is ``notebooks/05_staleness.ipynb``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from repro.book import plots
from repro.core import ledger, paper
from repro.core.harness import Result
from repro.core.harness import legacy_start as start
from repro.core.params import ParameterError
from repro.experiments.staleness import averaging as av
from repro.experiments.staleness.averaging import EngineError, Trainer
from repro.ml import data as _data
from repro.ml import models, training

EXPERIMENT = "staleness"
TAU_DISTS = ("fixed", "uniform", "geometric")
MITIGATIONS = ("none", "scaling", "soft_sync", "bounded", "scaling+soft_sync")
GEOMETRIC_CAP = 10  # a geometric draw is capped at 10 x its mean (P(exceed) = e^-10 roughly); keeps the snapshot queue finite
TIE = 0.005  # accuracy differences below half a percentage point are treated as ties (seed noise of these small runs)
EQUIVALENCE_TOLERANCE = 1e-5  # max |w_avg - w_single| for "k = 1 equals single-machine SGD" (float32 rounding)
EQUIVALENCE_STEPS = 10  # averaging rounds of the in-run equivalence check
LOG_COLUMNS = ("update", "worker", "read_version", "apply_version", "staleness")


def paper_period() -> tuple[int, int]:
    """The paper's "averaging every 10-20 minibatches per worker still works acceptably" (paperdata)."""
    return (int(paper.value("savchenko2019", "avg_period_ok_min")), int(paper.value("savchenko2019", "avg_period_ok_max")))


# ----------------------------------------------------------------------------------------------
# Staleness logs: format and analysis
# ----------------------------------------------------------------------------------------------

class StalenessLogError(ValueError):
    """A staleness log that does not follow :data:`LOG_COLUMNS` (one-line message)."""


def read_staleness_log(log) -> pd.DataFrame:
    """Validate a staleness log (a CSV path or a DataFrame) and return it as a DataFrame.

    Format, one row per update a worker pushed to the parameter server:

    ``update``        1-based index of the server update this gradient went into
    ``worker``        worker id
    ``read_version``  number of server updates applied when the worker read the parameters
    ``apply_version`` number of server updates applied just before this one was applied
    ``staleness``     ``apply_version - read_version``: updates applied since the worker read

    Only ``staleness`` is required (non-negative integers); when ``read_version`` and
    ``apply_version`` are present they must agree with it.
    """
    if isinstance(log, (str, Path)):
        path = Path(log)
        if not path.is_file():
            raise StalenessLogError(f"staleness log {path} does not exist")
        try:
            log = pd.read_csv(path)
        except Exception as exc:  # noqa: BLE001 - one line for any parse failure
            raise StalenessLogError(f"staleness log {path} is not a CSV file ({type(exc).__name__})") from None
    df = pd.DataFrame(log).copy()
    if "staleness" not in df.columns:
        if {"read_version", "apply_version"} <= set(df.columns):
            df["staleness"] = df["apply_version"] - df["read_version"]
        else:
            raise StalenessLogError("staleness log needs a 'staleness' column (or 'read_version' and 'apply_version')")
    s = pd.to_numeric(df["staleness"], errors="coerce")
    if s.isna().any() or (s < 0).any() or (s != np.floor(s)).any():
        raise StalenessLogError("staleness values must be non-negative integers")
    df["staleness"] = s.astype(int)
    if {"read_version", "apply_version"} <= set(df.columns):
        if not (df["apply_version"] - df["read_version"] == df["staleness"]).all():
            raise StalenessLogError("staleness must equal apply_version - read_version in every row")
    return df


def _counts(log) -> np.ndarray:
    if isinstance(log, (pd.DataFrame, str, Path)):
        return read_staleness_log(log)["staleness"].to_numpy()
    arr = np.asarray(list(log))
    return read_staleness_log(pd.DataFrame({"staleness": arr}))["staleness"].to_numpy()


def staleness_summary(log) -> dict:
    """Per-update staleness counts (a list, or a log as in :func:`read_staleness_log`) -> statistics."""
    s = _counts(log)
    if len(s) == 0:
        raise StalenessLogError("staleness log is empty")
    return {"updates": int(len(s)), "mean": float(s.mean()), "median": float(np.median(s)),
            "p90": float(np.percentile(s, 90)), "min": int(s.min()), "max": int(s.max()), "std": float(s.std())}


def staleness_distribution(log) -> pd.DataFrame:
    """Distribution of the staleness counts: one row per value (staleness, count, fraction)."""
    s = _counts(log)
    if len(s) == 0:
        raise StalenessLogError("staleness log is empty")
    values, counts = np.unique(s, return_counts=True)
    return pd.DataFrame({"staleness": values.astype(int), "count": counts.astype(int), "fraction": counts / counts.sum()})


# ----------------------------------------------------------------------------------------------
# Asynchronous SGD emulation (delay queue of parameter snapshots) and its mitigations
# ----------------------------------------------------------------------------------------------

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
                trace: bool = False, log=None) -> AsyncResult:
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
      fast workers waited as ``held_back`` (the price in idle worker time, not in accuracy).

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
    server.reset(init_weights)
    S = int(soft_sync)
    lag = max_delay(int(tau), tau_dist) if bound is None else min(max_delay(int(tau), tau_dist), int(bound))
    keep = lag // S + 2  # snapshots a read can still need
    snapshots = {0: [np.array(w, copy=True) for w in init_weights]}
    reader_version = None
    rng = np.random.default_rng([seed, 3])
    res = AsyncResult()
    if trace:
        res.trajectory.append(snapshots[0])
    group: list = []
    t = 0

    def apply_group():
        if len(group) == 1 and group[0][0] == 1.0:
            grads = group[0][1]
        else:
            grads = [sum(lam * g[j] for lam, g in group) / len(group) for j in range(len(group[0][1]))]
        server.apply_grads(grads)
        group.clear()
        res.updates += 1
        snapshots[res.updates] = server.get_weights()
        if trace:
            res.trajectory.append(snapshots[res.updates])
        for old in [k for k in snapshots if k < res.updates - keep]:
            del snapshots[old]

    for epoch in range(epochs):
        losses = []
        for b in av.epoch_batches(np.arange(len(y)), batch_size, seed, epoch, 0, shuffle):
            drawn = draw_staleness(rng, int(tau), tau_dist)
            delay = min(drawn, t)
            if bound is not None and delay > bound:
                res.held_back += delay - int(bound)
                delay = int(bound)
            version = res.updates  # == t // S
            read = (t - delay) // S
            if read != reader_version:
                reader.set_weights(snapshots[read])
                reader_version = read
            loss, grads = reader.grads(x[b], y[b])
            losses.append(float(loss))
            stale = version - read
            lam = staleness_scale(stale, scaling)
            group.append((lam, list(grads)))
            res.log.append({"update": version + 1, "worker": -1, "read_version": read, "apply_version": version,
                            "staleness": stale, "arrival": t, "drawn_delay": drawn, "scale": lam})
            t += 1
            if len(group) == S:
                apply_group()
        if epoch == epochs - 1 and group:
            apply_group()
        test_loss, test_acc = float("nan"), float("nan")
        if x_test is not None and len(y_test):
            test_loss, test_acc = server.evaluate(x_test, y_test)
        res.history.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)) if losses else float("nan"),
                            "test_loss": test_loss, "test_accuracy": test_acc, "updates": res.updates})
        if log:
            log(f"epoch {epoch + 1}/{epochs}: test accuracy {test_acc:.4f}, updates {res.updates}")
    res.weights = server.get_weights()
    res.wall_s = time.perf_counter() - t0
    return res


# ----------------------------------------------------------------------------------------------
# A real asynchronous run: Python threads sharing one parameter set
# ----------------------------------------------------------------------------------------------

def threaded_async_run(model_fn, x: np.ndarray, y: np.ndarray, *, workers: int, updates_per_worker: int,
                       batch_size: int, learning_rate: float, seed: int = 0, loss=None) -> pd.DataFrame:
    """Real asynchronous SGD on this machine: ``workers`` Python threads, one shared parameter set.

    Each thread loops: read the shared weights and the server version under a lock, compute a
    gradient on a random minibatch with its own model copy (outside the lock; TensorFlow releases
    the GIL, so threads overlap), then, under the lock, apply ``w -= lr * g`` and log the update
    (:data:`LOG_COLUMNS`). Nothing is scheduled or delayed on purpose: the staleness is whatever
    the interleaving of the threads on this machine produced. Returns the log.
    """
    import keras
    import tensorflow as tf

    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise EngineError(f"workers must be an integer >= 1, got {workers!r}")
    keras.utils.set_random_seed(seed)
    loss = loss or av.default_loss()
    server = model_fn()
    shared = list(server.trainable_variables)
    copies = [model_fn() for _ in range(workers)]

    def grad_fn_for(model):
        variables = list(model.trainable_variables)

        @tf.function
        def grads(xb, yb):
            with tf.GradientTape() as tape:
                value = loss(yb, model(xb, training=True))
            return tape.gradient(value, variables)

        return grads

    fns = [grad_fn_for(m) for m in copies]
    for fn in fns:  # trace before the clock starts
        fn(x[:batch_size], y[:batch_size])
    lock = threading.Lock()
    barrier = threading.Barrier(workers)
    state = {"version": 0}
    rows: list[dict] = []
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            rng = np.random.default_rng([seed, 4, i])
            mine = list(copies[i].trainable_variables)
            barrier.wait()
            for _ in range(updates_per_worker):
                with lock:
                    weights = [v.numpy() for v in shared]
                    read = state["version"]
                for v, w in zip(mine, weights):
                    v.assign(w)
                b = rng.choice(len(y), size=batch_size, replace=False)
                grads = fns[i](x[b], y[b])
                with lock:
                    applied = state["version"]
                    for v, g in zip(shared, grads):
                        v.assign_sub(learning_rate * g)
                    state["version"] += 1
                    rows.append({"update": state["version"], "worker": i, "read_version": read,
                                 "apply_version": applied, "staleness": applied - read})
        except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,), name=f"async-worker-{i}") for i in range(workers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return pd.DataFrame(rows, columns=list(LOG_COLUMNS))


# ----------------------------------------------------------------------------------------------
# The experiment
# ----------------------------------------------------------------------------------------------

MODEL_BUILDERS = {"small_cnn": models.small_cnn, "mnist_cnn": models.mnist_cnn, "cifar10_cnn": models.cifar10_cnn,
                  "polishchuk_cnn": models.polishchuk_cnn}  # the last with its documented defaults (32-64-64, Dense 64, dropout 0.5)


def check_params(p: dict, n_train: int) -> None:
    """Cross-parameter checks the schema cannot express (one-line :class:`ParameterError`)."""
    for key in ("workers", "state_workers"):
        n_max = max(p[key]) if isinstance(p[key], list) else p[key]
        if n_train // n_max < p["batch_size"]:
            raise ParameterError(
                f"parameter '{key}': {n_train} training examples give each of {n_max} workers fewer than one "
                f"minibatch of {p['batch_size']}; lower it or raise train_samples")
    if n_train < p["batch_size"]:
        raise ParameterError(f"parameter 'batch_size': larger than the {n_train} training examples")


def _mean_sd(df: pd.DataFrame, keys: list[str], value: str = "test_accuracy") -> pd.DataFrame:
    g = df.groupby(keys, sort=True)[value]
    out = g.agg(acc_mean="mean", acc_sd="std", seeds="count").reset_index()
    return out


def _log(msg: str) -> None:
    print(f"[staleness] {msg}", flush=True)


def run(profile: str | None = None, overrides: dict | None = None, run_dir=None) -> Result:
    """All parts of the study; writes tidy CSV files and returns a :class:`Result`."""
    p, profile, open_run = start(EXPERIMENT, profile, overrides, run_dir)
    ds = _data.load(p["dataset"], p["train_samples"] or None, p["test_samples"] or None, seed=0)
    check_params(p, ds.info["n_train"])
    run = open_run()
    run.add_dataset(ds.info)
    run.note("device", training.device_summary())
    import keras

    builder = MODEL_BUILDERS[p["model"]]
    x, y, xt, yt = ds.x_train, ds.y_train, ds.x_test, ds.y_test
    trainers: dict = {}
    inits: dict = {}

    def trainer(opt: str | None, lr: float = 0.0, model: str = p["model"], tag: str = "") -> Trainer:
        key = (model, opt, lr, tag)
        if key not in trainers:
            net = MODEL_BUILDERS[model](ds.input_shape, ds.num_classes)
            trainers[key] = Trainer(net, av.make_optimizer(opt, lr, p["momentum"]) if opt else None)
        return trainers[key]

    def init(seed: int, model: str = p["model"]):
        if (seed, model) not in inits:
            keras.utils.set_random_seed(seed)
            inits[(seed, model)] = MODEL_BUILDERS[model](ds.input_shape, ds.num_classes).get_weights()
        return inits[(seed, model)]

    t_start = time.perf_counter()
    # --- 1a. k = 1 equals single-machine SGD on the global batch (numerical check) -----------------
    n_eq = max(2, max(p["workers"]))
    m_eq = n_eq * p["batch_size"] * EQUIVALENCE_STEPS
    xe, ye = x[:m_eq], y[:m_eq]
    eq_tr = trainer("sgd", p["avg_learning_rate"], "small_cnn")
    seed0 = p["seeds"][0]
    avg_res = av.train_averaging(eq_tr, xe, ye, workers=n_eq, period=1, epochs=1, batch_size=p["batch_size"],
                                 init_weights=init(seed0, "small_cnn"), seed=seed0)
    ref = av.single_machine_reference(eq_tr, xe, ye, workers=n_eq, epochs=1, batch_size=p["batch_size"],
                                      init_weights=init(seed0, "small_cnn"), seed=seed0)
    equivalence = {"workers": n_eq, "rounds": avg_res.rounds, "global_batch": n_eq * p["batch_size"],
                   "model": "small_cnn", "optimizer": "sgd", "learning_rate": p["avg_learning_rate"],
                   "max_abs_weight_difference": av.max_abs_difference(avg_res.weights, ref),
                   "max_abs_weight": float(max(np.abs(w).max() for w in ref)),
                   "tolerance": EQUIVALENCE_TOLERANCE}
    run.write_json("equivalence", equivalence)
    _log(f"k=1 vs single machine (N={n_eq}, {avg_res.rounds} rounds): max |dw| = {equivalence['max_abs_weight_difference']:.2e}")

    # --- 1b. averaging grid (N x k) and 1c. weights-only vs weights+state ----------------------------
    hist_rows = []

    def averaging(part, opt, lr, workers, period, seed, average_state):
        tr = trainer(opt, lr)
        res = av.train_averaging(tr, x, y, workers=workers, period=period, epochs=p["epochs"],
                                 batch_size=p["batch_size"], init_weights=init(seed), average_state=average_state,
                                 seed=seed, x_test=xt, y_test=yt)
        state_avg = average_state and opt != "sgd"
        per_round = tr.weight_bytes() + (tr.state_bytes() if state_avg else 0)
        mode = "weights+state" if state_avg else "weights"
        for h in res.history:
            hist_rows.append({"part": part, "optimizer": opt, "state_mode": mode, "workers": workers,
                              "period": period, "seed": seed, **h, "bytes_per_round": per_round,
                              "comm_mb": h["rounds"] * per_round / 1e6, "wall_s": res.wall_s})
        _log(f"{part}: {opt} N={workers} k={period} {mode} seed={seed}: test accuracy "
             f"{res.history[-1]['test_accuracy']:.4f}, {res.rounds} rounds")

    for seed in p["seeds"]:
        for n in p["workers"]:
            for k in (p["periods"] if n > 1 else [1]):
                averaging("grid", p["avg_optimizer"], p["avg_learning_rate"], n, k, seed, True)
        for k in p["state_periods"]:
            for mode in av.STATE_MODES:
                averaging("state", p["state_optimizer"], p["state_learning_rate"], p["state_workers"], k, seed,
                          mode == "weights+state")
    avg_hist = pd.DataFrame(hist_rows)
    avg_final = avg_hist[avg_hist["epoch"] == p["epochs"]].reset_index(drop=True)

    # --- 2./3. asynchronous SGD emulation, tau sweep and mitigations -------------------------------------
    server = trainer("sgd", p["async_learning_rate"], tag="server")
    reader = trainer(None, tag="reader")
    cache: dict = {}
    async_rows, async_final_rows, emu_stale = [], [], []

    def emulate(part, variant, dist, tau, seed):
        dist = "fixed" if tau == 0 else dist
        opts = mitigation_options(variant, p["soft_sync"], p["staleness_bound"])
        key = (seed, dist, tau, opts["scaling"], opts["soft_sync"], opts["bound"])
        if key not in cache:
            res = train_async(server, reader, x, y, tau=tau, epochs=p["epochs"], batch_size=p["batch_size"],
                              init_weights=init(seed), tau_dist=dist, seed=seed, x_test=xt, y_test=yt, **opts)
            cache[key] = res
            _log(f"async {variant} tau={tau} ({dist}) seed={seed}: test accuracy "
                 f"{res.history[-1]['test_accuracy']:.4f}, {res.updates} updates")
        res = cache[key]
        stale = staleness_summary([r["staleness"] for r in res.log])
        base = {"part": part, "variant": variant, "tau_dist": dist, "tau": tau, "seed": seed}
        for h in res.history:
            async_rows.append({**base, **h})
        async_final_rows.append({**base, "test_accuracy": res.history[-1]["test_accuracy"],
                                 "test_loss": res.history[-1]["test_loss"], "updates": res.updates,
                                 "mean_staleness": stale["mean"], "max_staleness": stale["max"],
                                 "mean_scale": float(np.mean([r["scale"] for r in res.log])),
                                 "held_back": res.held_back, "wall_s": res.wall_s})
        if seed == seed0:
            d = staleness_distribution([r["staleness"] for r in res.log])
            for r in d.to_dict("records"):
                emu_stale.append({**base, **r})

    for seed in p["seeds"]:
        for dist in p["tau_dists"]:
            for tau in p["taus"]:
                if tau == 0 and dist != p["tau_dists"][0]:
                    continue  # tau = 0 is synchronous SGD whatever the distribution
                emulate("tau_sweep", "none", dist, tau, seed)
        for tau in p["mitigation_taus"]:
            for variant in p["mitigations"]:
                emulate("mitigation", variant, p["mitigation_tau_dist"], tau, seed)
    async_hist = pd.DataFrame(async_rows)
    async_final = pd.DataFrame(async_final_rows)
    emulation_staleness = pd.DataFrame(emu_stale)

    # --- 4. real asynchronous run with threads: staleness distribution --------------------------------
    thread_logs = []
    if p["thread_updates"] > 0:
        for n in p["thread_workers"]:
            log = threaded_async_run(lambda: builder(ds.input_shape, ds.num_classes), x, y, workers=n,
                                     updates_per_worker=p["thread_updates"], batch_size=p["batch_size"],
                                     learning_rate=p["async_learning_rate"], seed=seed0)
            log.insert(0, "workers", n)
            thread_logs.append(log)
            _log(f"threads N={n}: mean staleness {log['staleness'].mean():.2f} over {len(log)} updates")
    thread_log = pd.DataFrame(thread_logs and pd.concat(thread_logs, ignore_index=True),
                              columns=["workers", *LOG_COLUMNS])
    thread_summary = pd.DataFrame([{"workers": n, **staleness_summary(g)} for n, g in thread_log.groupby("workers")])
    thread_dist = pd.concat([staleness_distribution(g).assign(workers=n) for n, g in thread_log.groupby("workers")],
                            ignore_index=True) if len(thread_log) else pd.DataFrame(columns=["staleness", "count", "fraction", "workers"])

    # --- summaries, claims -----------------------------------------------------------------------------
    period_summary = _period_summary(avg_final, p)
    state_summary = _state_summary(avg_final)
    tau_summary = _tau_summary(async_final, p)
    mitigation_summary = _mitigation_summary(async_final)
    tables = {
        "averaging_history": avg_hist, "averaging_final": avg_final, "period_summary": period_summary,
        "state_summary": state_summary, "async_history": async_hist, "async_final": async_final,
        "tau_summary": tau_summary, "mitigation_summary": mitigation_summary,
        "emulation_staleness": emulation_staleness, "thread_staleness_log": thread_log,
        "thread_staleness": thread_summary, "thread_staleness_distribution": thread_dist,
    }
    sizes = {"weight_bytes": trainer(p["avg_optimizer"], p["avg_learning_rate"]).weight_bytes(),
             "state_optimizer_state_bytes": trainer(p["state_optimizer"], p["state_learning_rate"]).state_bytes()}
    cheap = (f"{profile} profile: {p['epochs']} epoch(s) on {ds.info['n_train']:,} images, a pipeline check"
             if p["pipeline_check"] else None)
    claims = claims_table(tables, equivalence, sizes, p, cheap)
    tables["claims"] = claims
    run.write_csv("ledger", ledger.frame([
        {"paper": "savchenko2019", "claim": r.claim, "paper_value": r.paper, "ours": r.ours, "verdict": r.verdict,
         "evidence": r.evidence, "basis": r.basis, "runs": r.runs} for r in claims.itertuples()]))
    for name, df in tables.items():
        run.write_csv(name, df)
    summary = _summary(tables, equivalence, sizes, p)
    summary["compute_s"] = time.perf_counter() - t_start
    run.write_json("summary", summary)
    run.note("emulation", "asynchronous SGD is emulated in one process (delay queue of parameter snapshots); "
                          "thread_staleness* come from a real multi-threaded run on this machine")
    final = run.finish()
    return Result(final, p, run.record, tables, summary)


def _period_summary(avg_final: pd.DataFrame, p: dict) -> pd.DataFrame:
    grid = avg_final[avg_final["part"] == "grid"]
    out = _mean_sd(grid, ["workers", "period"])
    extra = grid.groupby(["workers", "period"])[["rounds", "comm_mb"]].mean().reset_index()
    out = out.merge(extra, on=["workers", "period"])
    k1 = out[out["period"] == 1].set_index("workers")["acc_mean"]
    out["drop_vs_k1"] = [k1.get(n, np.nan) - a for n, a in zip(out["workers"], out["acc_mean"])]
    out["acceptable"] = out["drop_vs_k1"] <= p["acceptable_drop"] + 1e-12
    return out


def _state_summary(avg_final: pd.DataFrame) -> pd.DataFrame:
    st = avg_final[avg_final["part"] == "state"]
    out = _mean_sd(st, ["period", "state_mode"])
    extra = st.groupby(["period", "state_mode"])[["rounds", "comm_mb"]].mean().reset_index()
    return out.merge(extra, on=["period", "state_mode"])


def _tau_summary(async_final: pd.DataFrame, p: dict) -> pd.DataFrame:
    sw = async_final[async_final["part"] == "tau_sweep"]
    out = _mean_sd(sw, ["tau_dist", "tau"])
    out = out.merge(sw.groupby(["tau_dist", "tau"])["mean_staleness"].mean().reset_index(), on=["tau_dist", "tau"])
    base = out[out["tau"] == 0]["acc_mean"]
    out["drop_vs_sync"] = (float(base.iloc[0]) - out["acc_mean"]) if len(base) else np.nan
    return out


def _mitigation_summary(async_final: pd.DataFrame) -> pd.DataFrame:
    mi = async_final[async_final["part"] == "mitigation"]
    out = _mean_sd(mi, ["tau", "variant"])
    extra = mi.groupby(["tau", "variant"])[["updates", "mean_staleness", "mean_scale", "held_back"]].mean().reset_index()
    out = out.merge(extra, on=["tau", "variant"])
    none = out[out["variant"] == "none"].set_index("tau")["acc_mean"]
    out["gain_vs_none"] = [a - none.get(t, np.nan) for t, a in zip(out["tau"], out["acc_mean"])]
    order = {v: i for i, v in enumerate(MITIGATIONS)}
    return out.sort_values(["tau", "variant"], key=lambda c: c.map(order) if c.name == "variant" else c).reset_index(drop=True)


def _pts(v: float) -> str:
    return f"{100 * v:+.1f} pts"


def claims_table(t: dict, eq: dict, sizes: dict, p: dict, cheap: str | None = None) -> pd.DataFrame:
    """Each claim of digest §5 with our measurement, a verdict and the id of the evidence table.

    ``cheap`` (e.g. on the smoke profile) names why a run is too small to judge claims about
    accuracy or measured staleness: those verdicts become ``not comparable (<cheap>)``; exact and
    structural checks (k = 1 equivalence, rounds, bytes) keep theirs.
    """
    rows = []

    runs = len(p["seeds"])

    def add(claim, paper_says, ours, verdict, evidence="staleness-claims", measured=True):
        """``measured``: a stochastic quantity (accuracy, measured staleness); False: exact or structural."""
        if cheap and measured and verdict.startswith(("reproduced", "differs")):
            verdict = f"not comparable ({cheap})"
        # here a row that is not measured or not testable has an explanation, not a value, in "ours"
        basis, n = ledger.basis_of(ours, runs, nothing=verdict.startswith(("not measured", "not testable here")))
        rows.append({"claim": claim, "paper": paper_says, "ours": ours, "evidence": evidence, "basis": basis, "runs": n,
                     "verdict": ledger.settle(verdict, basis, n, stochastic=measured)})

    add("data parallelism is preferable to model parallelism", "simpler, even load",
        "only data parallelism is implemented here", "not testable here (no model-parallel implementation)")
    # k = 1 equivalence
    diff = eq["max_abs_weight_difference"]
    add("averaging after every minibatch equals single-machine training", "equal",
        f"max |w_avg - w_single| = {diff:.1e} after {eq['rounds']} rounds (N = {eq['workers']}, plain SGD, "
        f"global batch {eq['global_batch']}, small CNN)",
        "reproduced" if diff <= eq["tolerance"] else f"differs (max difference {diff:.1e} > {eq['tolerance']:.0e})",
        measured=False)
    _averaging_claims(add, t, sizes, p)
    _async_claims(add, t, p)
    _one_machine_claim(add, t)
    return pd.DataFrame(rows)


def _averaging_claims(add, t: dict, sizes: dict, p: dict) -> None:
    """Parameter averaging: a round per minibatch, the 10-20 period, optimizer state (rows via ``add``)."""
    # a round per iteration
    ps = t["period_summary"]
    nmax = int(ps["workers"].max())
    row_k1 = ps[(ps["workers"] == nmax) & (ps["period"] == 1)]
    kmax = int(ps[ps["workers"] == nmax]["period"].max())
    row_kmax = ps[(ps["workers"] == nmax) & (ps["period"] == kmax)]
    grid_final = t["averaging_final"][(t["averaging_final"]["part"] == "grid") & (t["averaging_final"]["workers"] == nmax)]
    if nmax > 1 and len(row_k1):
        steps = int(grid_final[grid_final["period"] == 1]["local_steps"].iloc[0])
        r1 = float(row_k1["rounds"].iloc[0])
        add("averaging after every minibatch costs a network round every iteration", "one round per minibatch",
            f"N = {nmax}: k = 1 needs {r1:.0f} rounds for {steps} local steps ({float(row_k1['comm_mb'].iloc[0]):.2f} MB "
            f"per worker and direction); k = {kmax}: {float(row_kmax['rounds'].iloc[0]):.0f} rounds "
            f"({float(row_kmax['comm_mb'].iloc[0]):.2f} MB)",
            # our averaging sends a round per minibatch by design: counting them confirms the code, not the paper
            f"not comparable (true by construction of our averaging: {'rounds = local steps' if r1 == steps else 'rounds != local steps, a bug'})",
            "staleness-periods", measured=False)
    else:
        add("averaging after every minibatch costs a network round every iteration", "one round per minibatch",
            "no multi-worker run", "not testable here (no run with N > 1)")
    # 10-20 minibatches acceptable
    lo, hi = paper_period()
    mid = ps[(ps["period"] >= lo) & (ps["period"] <= hi) & (ps["workers"] > 1)]
    thr = p["acceptable_drop"]
    if len(mid):
        parts = [f"N = {int(r.workers)}, k = {int(r.period)}: {_pts(-r.drop_vs_k1)}" for r in mid.itertuples()]
        bad = mid[~mid["acceptable"]]
        tested = sorted(int(k) for k in mid["period"].unique())
        verdict = "reproduced" if bad.empty else "differs (" + ", ".join(
            f"N = {int(r.workers)} loses {100 * r.drop_vs_k1:.1f} pts" for r in bad.itertuples()) + f" > {100 * thr:.1f})"
        if bad.empty and not {lo, hi} <= set(tested):  # "10-20" is a range: both ends must be run
            verdict = (f"partly (acceptable at k = {', '.join(map(str, tested))}; the range {lo}-{hi} needs k = {lo} "
                       f"and k = {hi} too)")
        add("averaging every 10-20 minibatches per worker still works acceptably",
            f"acceptable (ours: within {100 * thr:.1f} pts of k = 1)", "accuracy vs k = 1: " + "; ".join(parts), verdict,
            "staleness-periods")
    else:
        add("averaging every 10-20 minibatches per worker still works acceptably", "acceptable",
            "no period between 10 and 20 in this profile", "not testable here (no period in 10-20 in this profile)")
    # optimizer state averaging
    ss = t["state_summary"]
    if len(ss):
        piv = ss.pivot(index="period", columns="state_mode", values="acc_mean")
        gains = (piv["weights+state"] - piv["weights"]).dropna()
        txt = "; ".join(f"k = {int(k)}: {_pts(g)}" for k, g in gains.items())
        verdict = ("reproduced" if (gains > thr).any() else
                   f"differs (averaging the {p['state_optimizer']} state gains at most {100 * gains.max():.1f} pts, "
                   f"threshold {100 * thr:.1f})")
        add(f"optimizers with internal state need the state averaged too ({p['state_optimizer']}, N = {p['state_workers']})",
            "needed", "weights+state minus weights-only accuracy: " + txt, verdict, "staleness-state")
        ratio = sizes["state_optimizer_state_bytes"] / sizes["weight_bytes"]
        add("averaging optimizer state adds network load", "more traffic",
            f"{p['state_optimizer']} state is {ratio:.0f}x the weights: a round moves "
            f"{(1 + ratio) * sizes['weight_bytes'] / 1e6:.3f} MB instead of {sizes['weight_bytes'] / 1e6:.3f} MB per worker",
            "not comparable (true by construction: averaging the state sends its bytes too; the sizes are "
            f"{'counted' if ratio > 0 else 'zero: no state'}, nothing is measured)", "staleness-state", measured=False)

def _async_claims(add, t: dict, p: dict) -> None:
    """Asynchronous SGD: throughput, mean staleness, staleness hurts, the mitigations (rows via ``add``)."""
    thr = p["acceptable_drop"]
    add("asynchronous SGD has higher throughput than synchronous", "higher",
        "the emulation has no clock", "not testable here (needs the async parameter-server run)")
    # staleness = N
    th = t["thread_staleness"]
    if len(th):
        ratio = paper.value("savchenko2019", "async_mean_staleness_per_worker")  # mean staleness / N = 1
        # The paper's count (the one under which round-robin workers have mean exactly N): the version an
        # update creates minus the version its gradient read, i.e. our log's staleness (other workers'
        # updates since the read, N - 1 for round robin) plus the update itself.
        ok = all(abs(r.mean + 1 - ratio * r.workers) <= 0.5 for r in th.itertuples())
        txt = "; ".join(f"N = {int(r.workers)}: mean {r.mean + 1:.2f}" for r in th.itertuples())
        add("mean staleness equals the number of workers N (threads sharing one parameter set, this machine)",
            "mean = N", txt + " (staleness = version created - version read; our log's updates-since-read + 1)",
            "reproduced" if ok else "differs (" + ", ".join(
                f"N = {int(r.workers)}: {r.mean + 1:.2f}" for r in th.itertuples()) + "; within 0.5 of N required)",
            "staleness-threads")
    add("mean staleness equals the number of workers N (parameter-server cluster)", "mean = N",
        "not measured yet: the async parameter-server run that logs per-update staleness is another experiment",
        "not measured yet (needs the async parameter-server run)", "staleness-threads")
    # staleness hurts
    ts = t["tau_summary"]
    fixed = ts[ts["tau_dist"] == "fixed"] if (ts["tau_dist"] == "fixed").any() else ts
    if len(fixed) and (fixed["tau"] > 0).any():
        top = fixed[fixed["tau"] == fixed["tau"].max()].iloc[0]
        over = fixed[(fixed["tau"] > 0) & (fixed["drop_vs_sync"] > thr)]
        first = f"; first tau losing more than {100 * thr:.1f} pts: {int(over['tau'].min())}" if len(over) else ""
        add("stale gradients hurt training", "staleness is the problem of async SGD",
            f"tau = {int(top.tau)} ({top.tau_dist}): {_pts(-top.drop_vs_sync)} vs tau = 0{first}",
            "reproduced" if len(over) else f"differs (no tau up to {int(fixed['tau'].max())} loses more than {100 * thr:.1f} pts)",
            "staleness-tau")
    # mitigations
    ms = t["mitigation_summary"]
    if len(ms) and (ms["tau"] > 0).any():
        tmax = int(ms["tau"].max())
        at = ms[ms["tau"] == tmax].set_index("variant")
        for variant in [v for v in MITIGATIONS if v != "none" and v in at.index]:
            g = float(at.loc[variant, "gain_vs_none"])
            verdict = "reproduced" if g > TIE else f"differs ({_pts(g)}, not above the {100 * TIE:.1f}-pt tie band)"
            if variant == "bounded" and g > TIE:  # accuracy per update, but bounding costs waiting we do not charge
                verdict = ("not comparable (accuracy per update improves, but the emulation delays the fastest "
                           "workers for free: the waiting that bounding costs is not charged)")
            add(f"mitigation '{variant}' improves on plain async SGD", "helps",
                f"tau = {tmax} ({p['mitigation_tau_dist']}): {_pts(g)} vs no mitigation", verdict,
                "staleness-mitigations")
        if "scaling+soft_sync" in at.index and len(at) > 1:
            verdicts = []
            for tau_v, grp in ms[ms["tau"] > 0].groupby("tau"):
                best = grp.set_index("variant")["acc_mean"]
                if "scaling+soft_sync" in best.index:
                    verdicts.append((int(tau_v), best.idxmax(), float(best["scaling+soft_sync"] - best.max())))
            ok = all(gap >= -TIE for _, _, gap in verdicts)
            add("scaling + soft synchronisation combine best", "best of the mitigations",
                "; ".join(f"tau = {tv}: best {b}, combined {_pts(gap)} vs best" for tv, b, gap in verdicts),
                "reproduced" if ok else "differs (" + ", ".join(f"best at tau = {tv}: {b}" for tv, b, gap in verdicts
                                                                if gap < -TIE) + ")",
                "staleness-mitigations")

def _one_machine_claim(add, t: dict) -> None:
    """"Train on one machine as long as you can", at equal epochs (row via ``add``)."""
    ps = t["period_summary"]
    nmax = int(ps["workers"].max())
    kmax = int(ps[ps["workers"] == nmax]["period"].max())
    # one machine
    one = ps[ps["workers"] == 1]
    if len(one) and nmax > 1:
        kk = 16 if (ps[ps["workers"] == nmax]["period"] == 16).any() else kmax
        many = ps[(ps["workers"] == nmax) & (ps["period"] == kk)].iloc[0]
        a1 = float(one["acc_mean"].iloc[0])
        add("distributed training is not free: train on one machine as long as you can", "advice",
            f"same epochs: one machine {a1:.3f}, N = {nmax} with k = {kk}: {many.acc_mean:.3f} accuracy and "
            f"{many.comm_mb:.2f} MB per worker and direction (wall-clock speedup not measured in one process)",
            "not comparable (compared at equal epochs; the advice is about wall time, which one process does not "
            "measure)" if a1 >= many.acc_mean - TIE else "differs (the distributed run was more accurate per epoch)",
            "staleness-periods")
    else:
        add("distributed training is not free: train on one machine as long as you can", "advice",
            "no single-worker run in this profile", "not testable here (no N = 1 run in this profile)", "staleness-periods")

def _summary(t: dict, eq: dict, sizes: dict, p: dict) -> dict:
    ps, ts, ms, th = t["period_summary"], t["tau_summary"], t["mitigation_summary"], t["thread_staleness"]
    out = {"equivalence_max_abs_difference": eq["max_abs_weight_difference"], **sizes,
           "runs_averaging": int(len(t["averaging_final"])), "runs_async": int(len(t["async_final"]))}
    if (ps["period"] == 1).any():
        out["k1_accuracy_max_workers"] = float(ps[(ps["period"] == 1)].sort_values("workers")["acc_mean"].iloc[-1])
    mid = ps[(ps["period"] >= paper_period()[0]) & (ps["period"] <= paper_period()[1]) & (ps["workers"] > 1)]
    if len(mid):
        out["period_mid_worst_drop"] = float(mid["drop_vs_k1"].max())
    if len(ts):
        out["sync_accuracy"] = float(ts[ts["tau"] == 0]["acc_mean"].iloc[0]) if (ts["tau"] == 0).any() else float("nan")
        top = ts[ts["tau"] == ts["tau"].max()]
        out["max_tau"] = int(ts["tau"].max())
        out["max_tau_accuracy"] = {r.tau_dist: float(r.acc_mean) for r in top.itertuples()}
    if len(ms):
        tmax = ms["tau"].max()
        out["mitigation_tau"] = int(tmax)
        out["mitigation_accuracy"] = {r.variant: float(r.acc_mean) for r in ms[ms["tau"] == tmax].itertuples()}
    if len(th):
        out["thread_mean_staleness"] = {int(r.workers): float(r.mean) for r in th.itertuples()}
    return out


# ----------------------------------------------------------------------------------------------
# Figures and glued numbers for the chapter
# ----------------------------------------------------------------------------------------------

def _int_ticks(ax, values) -> None:
    """Ticks at the measured values, labelled as integers (log axes otherwise show powers of ten)."""
    from matplotlib.ticker import NullLocator

    ax.set_xticks([float(v) for v in values])
    ax.set_xticklabels([str(int(v)) for v in values])
    ax.xaxis.set_minor_locator(NullLocator())


def plot_accuracy_vs_period(result: Result):
    """Final test accuracy vs averaging period k, one line per N (mean, error bars = sd over seeds),
    and the communication volume per worker vs k."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    fin = result["averaging_final"]
    grid = fin[(fin["part"] == "grid") & (fin["workers"] > 1)].copy()
    grid["N"] = grid["workers"].astype(str)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    sns.lineplot(data=grid, x="period", y="test_accuracy", hue="N", marker="o", errorbar="sd",
                 err_style="bars", ax=axes[0])
    one = fin[(fin["part"] == "grid") & (fin["workers"] == 1)]
    if len(one):
        axes[0].axhline(one["test_accuracy"].mean(), color="k", ls="--", lw=1, label="one machine (N = 1)")
    lo, hi = paper_period()
    axes[0].axvspan(lo, hi, color="0.85", zorder=0, label=f"paper: {lo}-{hi} still fine")
    axes[0].set(xscale="log", xlabel="averaging period k (local minibatches per round)", ylabel="final test accuracy")
    axes[0].legend(fontsize=8, title="N")
    sns.lineplot(data=grid, x="period", y="comm_mb", hue="N", marker="o", ax=axes[1], errorbar=None)
    axes[1].set(xscale="log", yscale="log", xlabel="averaging period k", ylabel="MB per worker and direction")
    for ax in axes:
        _int_ticks(ax, sorted(grid["period"].unique()))
    fig.suptitle("Synchronous parameter averaging: accuracy and communication vs period", y=1.02)
    fig.tight_layout()
    return fig


def plot_averaging_curves(result: Result):
    """Test accuracy per epoch for every (N, k) of the grid (mean over seeds, band = sd)."""
    import seaborn as sns

    plots.style()
    h = result["averaging_history"]
    h = h[(h["part"] == "grid") & (h["workers"] > 1)].copy()
    h["k"] = h["period"].astype(str)
    grid = sns.relplot(data=h, x="epoch", y="test_accuracy", hue="k", col="workers", kind="line", marker="o",
                       errorbar="sd", height=3, aspect=1.1)
    grid.set_titles("N = {col_name}")
    grid.figure.suptitle("Test accuracy per epoch by averaging period k", y=1.04)
    return grid


def plot_state_comparison(result: Result):
    """Weights-only vs weights+state averaging with the stateful optimizer, final accuracy vs k."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    fin = result["averaging_final"]
    st = fin[fin["part"] == "state"]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    sns.lineplot(data=st, x="period", y="test_accuracy", hue="state_mode", marker="o", errorbar="sd",
                 err_style="bars", ax=ax)
    ax.set(xscale="log", xlabel="averaging period k", ylabel="final test accuracy",
           title=f"{result.params['state_optimizer']}, N = {result.params['state_workers']}: what is averaged")
    _int_ticks(ax, sorted(st["period"].unique()))
    fig.tight_layout()
    return fig


def plot_accuracy_vs_tau(result: Result):
    """Final test accuracy vs staleness tau (emulation), one line per delay distribution."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    fin = result["async_final"]
    sw = fin[fin["part"] == "tau_sweep"].copy()
    zero = sw[sw["tau"] == 0]
    rows = [sw[sw["tau"] > 0]] + [zero.assign(tau_dist=d) for d in sw["tau_dist"].unique() if d != "fixed"]
    sw = pd.concat(rows + [zero], ignore_index=True)
    fig, ax = plt.subplots(figsize=(6, 3.8))
    sns.lineplot(data=sw, x="tau", y="test_accuracy", hue="tau_dist", marker="o", errorbar="sd", err_style="bars", ax=ax)
    ax.set_xscale("symlog", linthresh=1)
    _int_ticks(ax, sorted(sw["tau"].unique()))
    ax.set(xlabel="staleness tau (fixed) or its mean (random)", ylabel="final test accuracy",
           title="Asynchronous SGD emulation: accuracy vs staleness")
    fig.tight_layout()
    return fig


def plot_mitigations(result: Result):
    """Test accuracy per epoch for each mitigation variant (columns: mean staleness tau)."""
    import seaborn as sns

    plots.style()
    h = result["async_history"]
    h = h[h["part"] == "mitigation"]
    grid = sns.relplot(data=h, x="epoch", y="test_accuracy", hue="variant", col="tau", kind="line", marker="o",
                       errorbar="sd", height=3.2, aspect=1.2, hue_order=[v for v in MITIGATIONS if v in set(h["variant"])])
    grid.set_titles("mean tau = {col_name} (" + result.params["mitigation_tau_dist"] + ")")
    grid.figure.suptitle("Mitigations of stale gradients", y=1.04)
    return grid


def plot_staleness_distribution(result: Result):
    """Staleness distribution of the real multi-threaded runs (one panel per N)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    plots.style()
    d = result["thread_staleness_distribution"]
    if not len(d):
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.text(0.5, 0.5, "thread run skipped (thread_updates = 0)", ha="center")
        ax.axis("off")
        return fig
    grid = sns.catplot(data=d, x="staleness", y="fraction", col="workers", kind="bar", height=3, aspect=1.1,
                       sharex=False, color="C0")
    grid.set_titles("N = {col_name} threads")
    for ax, (_, row) in zip(grid.axes.flat, result["thread_staleness"].iterrows()):
        ax.set_title(f"N = {int(row.workers)} threads: mean {row['mean']:.2f}")
    grid.figure.suptitle("Real asynchronous run (Python threads): updates since read", y=1.05)
    return grid


def period_table(result: Result) -> pd.DataFrame:
    """The N x k summary, for display."""
    df = result["period_summary"].copy()
    return df[["workers", "period", "acc_mean", "acc_sd", "seeds", "rounds", "comm_mb", "drop_vs_k1", "acceptable"]]


def guide_markdown(result: Result) -> str:
    """A short practical guide, each point derived from this run's numbers (markdown bullets)."""
    p, t = result.params, result.tables
    thr = p["acceptable_drop"]
    out = []
    ps = t["period_summary"]
    for n, grp in ps[ps["workers"] > 1].groupby("workers"):
        ok = grp[grp["acceptable"]]
        kbest = int(ok["period"].max()) if len(ok) else 1
        r1 = float(grp[grp["period"] == 1]["rounds"].iloc[0]) if (grp["period"] == 1).any() else float("nan")
        rk = float(grp[grp["period"] == kbest]["rounds"].iloc[0])
        out.append(f"- **Averaging period, N = {int(n)}**: the longest period within {100 * thr:.1f} points of k = 1 was "
                   f"k = {kbest} ({r1 / max(rk, 1):.0f}x fewer averaging rounds than k = 1).")
    ss = t["state_summary"]
    if len(ss):
        piv = ss.pivot(index="period", columns="state_mode", values="acc_mean")
        gain = (piv["weights+state"] - piv["weights"]).dropna()
        ratio = result.summary["state_optimizer_state_bytes"] / result.summary["weight_bytes"]
        worth = "worth its traffic here" if (gain > thr).any() else "not worth its traffic here"
        span = (f"{100 * gain.min():+.1f} points" if len(gain) == 1 or gain.min() == gain.max()
                else f"{100 * gain.min():+.1f} to {100 * gain.max():+.1f} points")
        out.append(f"- **Optimizer state ({p['state_optimizer']})**: averaging it changed final accuracy by "
                   f"{span} and multiplies the bytes per round by "
                   f"{1 + ratio:.0f}: {worth}.")
    ts = t["tau_summary"]
    fixed = ts[ts["tau_dist"] == "fixed"]
    if len(fixed) > 1:
        fine = fixed[fixed["drop_vs_sync"] <= thr]
        tau_ok = int(fine["tau"].max()) if len(fine) else 0
        out.append(f"- **Asynchronous SGD** (plain SGD, lr {p['async_learning_rate']:g}): fixed staleness up to tau = "
                   f"{tau_ok} stayed within {100 * thr:.1f} points of synchronous SGD; since mean staleness grows with "
                   f"the number of workers, that bounds the worker count at which plain async SGD is safe with this "
                   f"learning rate.")
    ms = t["mitigation_summary"]
    for tau_v, grp in ms[ms["tau"] > 0].groupby("tau"):
        g = grp.set_index("variant")["acc_mean"]
        best = g.idxmax()
        none = g.get("none", float("nan"))
        out.append(f"- **Mitigation at mean tau = {int(tau_v)}** ({p['mitigation_tau_dist']} delays): best was "
                   f"*{best}* ({g[best]:.3f} vs {none:.3f} without mitigation).")
    one = ps[ps["workers"] == 1]
    if len(one) and (ps["workers"] > 1).any():
        nmax = int(ps["workers"].max())
        many = ps[ps["workers"] == nmax]
        out.append(f"- **One machine first**: at equal epochs one machine reached {float(one['acc_mean'].iloc[0]):.3f}; "
                   f"N = {nmax} workers reached {float(many['acc_mean'].min()):.3f}-{float(many['acc_mean'].max()):.3f} "
                   f"depending on k, because they take {nmax}x fewer (larger-batch) steps per epoch. Distributing pays "
                   f"only if the wall-clock time per epoch falls enough to buy the extra epochs, which this "
                   f"one-process study does not measure.")
    return "\n".join(out)


def glue_numbers(result: Result) -> None:
    """Headline numbers for the chapter's prose (names start with ``stale_``)."""
    from repro.book.report import glue

    p, s = result.params, result.summary
    ds = result.provenance["datasets"][0]
    tb = result.tables
    glue("stale_dataset", ds["name"])
    glue("stale_n_train", f"{ds['n_train']:,}")
    glue("stale_n_test", f"{ds['n_test']:,}")
    glue("stale_model", p["model"])
    glue("stale_epochs", p["epochs"])
    glue("stale_batch", p["batch_size"])
    glue("stale_seeds", len(p["seeds"]))
    glue("stale_threshold_pts", 100 * p["acceptable_drop"])
    glue("stale_eq_diff", f"{s['equivalence_max_abs_difference']:.1e}")
    glue("stale_eq_tol", f"{EQUIVALENCE_TOLERANCE:.0e}")
    glue("stale_weight_kb", s["weight_bytes"] / 1e3)
    glue("stale_state_ratio", s["state_optimizer_state_bytes"] / s["weight_bytes"])
    glue("stale_runs", s["runs_averaging"] + s["runs_async"])
    ps = tb["period_summary"]
    mid = ps[(ps["period"] >= paper_period()[0]) & (ps["period"] <= paper_period()[1]) & (ps["workers"] > 1)]
    glue("stale_mid_worst_drop_pts", 100 * float(mid["drop_vs_k1"].max()) if len(mid) else float("nan"))
    big = ps[(ps["workers"] > 1) & (ps["period"] > 1)]
    if len(big):
        worst = big.loc[big["drop_vs_k1"].idxmax()]
        glue("stale_worst_drop_pts", 100 * float(worst["drop_vs_k1"]))
        glue("stale_worst_drop_where", f"N = {int(worst.workers)}, k = {int(worst.period)}")
    glue("stale_sync_acc", s.get("sync_accuracy", float("nan")))
    glue("stale_max_tau", s.get("max_tau", 0))
    glue("stale_max_tau_acc_fixed", s.get("max_tau_accuracy", {}).get("fixed", float("nan")))
    glue("stale_mitigation_tau", s.get("mitigation_tau", 0))
    macc = s.get("mitigation_accuracy", {})
    glue("stale_mitigation_best", max(macc, key=macc.get) if macc else "-")
    glue("stale_mitigation_none_acc", macc.get("none", float("nan")))
    glue("stale_mitigation_best_acc", max(macc.values()) if macc else float("nan"))
    th = s.get("thread_mean_staleness", {})
    glue("stale_thread_means", ", ".join(f"{v:.2f} for N = {k}" for k, v in th.items()) or "not run")
    claims = tb["claims"]
    glue("stale_claims_reproduced", int((claims["verdict"] == "reproduced").sum()))
    glue("stale_claims_total", int(len(claims)))


# ----------------------------------------------------------------------------------------------
# Command line: analyse a staleness log
# ----------------------------------------------------------------------------------------------

def _cmd_staleness_log(args) -> int:
    import sys

    try:
        summary = staleness_summary(args.log)
        dist = staleness_distribution(args.log)
    except StalenessLogError as exc:
        print(f"repro: error: {exc}", file=sys.stderr)
        return 2
    print(f"updates {summary['updates']}  mean staleness {summary['mean']:.3f}  median {summary['median']:g}  "
          f"p90 {summary['p90']:g}  max {summary['max']}")
    if args.workers:
        print(f"mean / N = {summary['mean'] / args.workers:.3f}   (the paper: mean staleness = N)")
    for r in dist.itertuples():
        print(f"  {r.staleness:>5}  {r.count:>8}  {r.fraction:7.2%}")
    return 0


def add_cli(subparsers) -> None:
    """``repro staleness-log LOG.csv [--workers N]``: distribution and mean of a per-update staleness log."""
    p = subparsers.add_parser("staleness-log", help="staleness distribution and mean of an async run's per-update log (CSV)")
    p.add_argument("log", help="CSV with a 'staleness' column (or read_version and apply_version); see repro.experiments.staleness.experiment.LOG_COLUMNS")
    p.add_argument("--workers", type=int, default=None, help="N, to print mean staleness / N")
    p.set_defaults(func=_cmd_staleness_log)
