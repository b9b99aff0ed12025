"""Cluster programs that measure the thesis' quantities (`slampa2017`, chapters 3 and 6).

Each public function runs inside the chief process of a local (or real) cluster started by
:func:`repro.cluster.run_cluster`; its JSON-able return value comes back in
``ClusterResult.results["chief:0"]``. TensorFlow and Keras are imported inside the functions.

* :func:`probe` -- the thesis' ``local.py`` and ``transport.py``: on a cluster of one
  parameter server and one worker, ``t_grad`` (one batch's gradients, computed on the worker
  with weights the worker holds) for each batch size asked for, and ``t_comm`` (moving all of
  the network's weights between the PS process and the worker process over TensorFlow's gRPC:
  a *pull* copies the PS variables into the worker's, a *push* the worker's into the PS'),
  plus the fixed cost of one remote call moving 4 bytes (the per-message latency the
  extended model uses). Every quantity is repeated and reported with its spread.
* :func:`train` -- the thesis' ``dist.py``: ``ParameterServerStrategy`` +
  ``ClusterCoordinator``, D batches in one of the thesis' modes on one of its servers:

  - **central**: one PS task holds every variable;
  - **distributed**: one PS task per worker; variables are placed by the thesis' greedy
    Algorithm 3.7 (:func:`assign_shards`), not by TensorFlow's round-robin;
  - **sync-join**: per iteration N closures each pull the weights, compute one whole batch's
    gradients and add them to PS-side accumulators; ``coordinator.join()`` is the barrier,
    then ONE update with the mean gradient is applied on the PS; D/N iterations;
  - **sync-split**: the same with batches of B/N images; D iterations;
  - **async**: D closures, each pulling, computing one whole batch and applying its own
    update on the PS as it arrives;
  - ``semaphore``: the thesis' §7.2 proposal, for the central server: a
    ``tf.CriticalSection`` on the PS per direction, so only one worker pulls and one pushes
    at a time.

  The closures are :class:`repro.cluster.ps_trainer.PSTrainer`'s with ``stateless=True``: each
  pulls the weights explicitly (``tf.identity`` on the worker device) and computes with
  ``model.stateless_call`` on those copies, so a pull and a push are separate, visible steps, as in
  the thesis' protocol. Plain SGD; batch-norm moving statistics are read but not written back (they
  do not affect the timing; the thesis measures time only). Emulated closures wait 0 in the
  warm-up iterations, which are not timed.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable

from repro.cluster import context
from repro.cluster.ps_trainer import PSTrainer, ps_strategy
from repro.ml import models
from repro.ml.data import synthetic_batch

log = logging.getLogger(__name__)

NETWORK_SIDE_CLASSIFIERS = False  # GoogLeNet trains without its two side classifiers here (one output)


def assign_shards(sizes, units: int) -> list[int]:
    """The thesis' Algorithm 3.7: each tensor, in order, goes to the unit with the least assigned so far.

    ``sizes``: number of elements of each tensor, in creation order. Ties go to the lowest unit
    index. Returns the unit index of each tensor.
    """
    if isinstance(units, bool) or not isinstance(units, int) or units < 1:
        raise ValueError(f"units must be an integer >= 1, got {units!r}")
    load = [0] * units
    out = []
    for size in sizes:
        if size < 0:
            raise ValueError(f"tensor sizes must be >= 0, got {size}")
        k = min(range(units), key=lambda u: (load[u], u))
        load[k] += int(size)
        out.append(k)
    return out


NULL_NETWORK = "empty"  # the emulation's check with no communication: two tensors, (3 + 1) x classes weights


def build_network(name: str, image_size: int, num_classes: int):
    """One of the thesis' four networks from :mod:`repro.ml.models` (GoogLeNet without side classifiers),
    or :data:`NULL_NETWORK`: global average pooling and one dense layer (next to nothing to move)."""
    if name == NULL_NETWORK:
        import keras

        return keras.Sequential([keras.Input((image_size, image_size, 3)), keras.layers.GlobalAveragePooling2D(),
                                 keras.layers.Dense(num_classes, activation="softmax")])
    build: Callable[..., Any] = models.SLAMPA2017_NETWORKS[name]
    if name == "GoogLeNet":
        return build(image_size, num_classes, side_classifiers=NETWORK_SIDE_CLASSIFIERS)
    return build(image_size, num_classes)


def _stats(samples: list[float], cpu_seconds: float | None = None) -> dict:
    import numpy as np

    a = np.asarray(samples, dtype=float)
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()), "n": int(a.size),
            "cpu_seconds": cpu_seconds}


def _busy_cpu_seconds() -> float:
    """Processor time this machine spent on anything but idling so far (all cores, all processes)."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _timed(fn, repeats: int, warmup: int) -> tuple[list[float], float]:
    """Wall seconds of each repetition, and the machine's busy CPU-seconds per repetition.

    The CPU-seconds count every process (PS, worker, kernel network stack, this client): what
    one operation costs the whole machine, the input of the extended model's capacity bound.
    """
    for _ in range(warmup):
        fn()
    out = []
    c0 = _busy_cpu_seconds()
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out, (_busy_cpu_seconds() - c0) / repeats


def _task_of(device: str) -> int:
    m = re.search(r"/job:ps/replica:\d+/task:(\d+)", device)
    if not m:
        raise RuntimeError(f"variable not on a parameter server: {device}")
    return int(m.group(1))


# ----------------------------------------------------------------------------- probe


def probe(networks: list[str], image_size: int, num_classes: int, batch_sizes: list[int], repeats: int,
          warmup: int, seed: int) -> dict:
    """t_grad per batch size, t_comm (pull, push) and the 4-byte call latency between ps:0 and worker:0."""
    import tensorflow as tf

    ctx = context()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    tf.config.experimental_connect_to_cluster(resolver.cluster_spec(), job_name=ctx.task.role,
                                              task_index=ctx.task.index)
    return {"networks": [_probe_one(net, image_size, num_classes, batch_sizes, repeats, warmup, seed)
                         for net in networks]}


def worker_device(devices: list[str], job: str = "worker") -> str:
    """Where the probe times ``t_grad``: worker 0's first GPU when the cluster lists one, else its CPU
    (the training closures run on the same device, so ``t_grad`` and training are timed alike)."""
    prefix = f"/job:{job}/replica:0/task:0/device:"
    gpus = sorted(d for d in devices if d.startswith(prefix + "GPU:"))
    return gpus[0] if gpus else prefix + "CPU:0"


def _probe_one(network: str, image_size: int, num_classes: int, batch_sizes: list[int], repeats: int,
               warmup: int, seed: int) -> dict:
    import keras
    import numpy as np
    import tensorflow as tf

    ps_dev = "/job:ps/replica:0/task:0/device:CPU:0"
    worker = worker_device([d.name for d in tf.config.list_logical_devices()])
    with tf.device(worker):
        keras.utils.set_random_seed(seed)
        net = build_network(network, image_size, num_classes)
    tvars = list(net.trainable_variables)
    log.info("probe %s: model built on the worker", network)
    placed = sorted({v.value.device for v in tvars})
    if any("/job:worker" not in d for d in placed):
        raise RuntimeError(f"probe: model variables not on the worker: {placed}")
    nbytes = int(sum(np.prod(v.shape) * v.value.dtype.size for v in tvars))
    with tf.device(ps_dev):
        ps_vars = [tf.Variable(tf.zeros(v.shape, v.value.dtype)) for v in tvars]
        ps_scalar = tf.Variable(0.0)

    out: dict[str, Any] = {"network": network, "image_size": image_size,
                           "parameters": int(sum(np.prod(v.shape) for v in tvars)),
                           "bytes": nbytes, "tensors": len(tvars), "t_grad": {}}
    for b in batch_sizes:
        with tf.device(worker):
            x, y = synthetic_batch(b, image_size, num_classes, seed)

            @tf.function
            def grad_step():
                with tf.GradientTape() as tape:
                    pred = net(x, training=True)
                    loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, pred))
                grads = tape.gradient(loss, tvars)
                return loss + 0.0 * tf.add_n([tf.reduce_sum(g) for g in grads])  # keeps every gradient alive

        def one():
            with tf.device(worker):
                grad_step().numpy()

        out["t_grad"][str(b)] = _stats(*_timed(one, repeats, warmup))

    @tf.function
    def pull():
        with tf.device(worker):
            for w, p in zip(tvars, ps_vars):
                w.value.assign(p)  # read on the PS, sent over gRPC, written on the worker
            return tf.constant(0)

    @tf.function
    def push():
        with tf.device(worker):
            for w, p in zip(tvars, ps_vars):
                p.assign(w.value)  # read on the worker, sent over gRPC, written on the PS
            return tf.constant(0)

    @tf.function
    def ping():
        with tf.device(worker):
            return ps_scalar.read_value() + 1.0  # 4 bytes from the PS to the worker

    def call(fn):
        def go():
            with tf.device(worker):
                fn().numpy()
        return go

    out["t_pull"] = _stats(*_timed(call(pull), repeats, warmup))
    out["t_push"] = _stats(*_timed(call(push), repeats, warmup))
    out["t_latency"] = _stats(*_timed(call(ping), repeats, warmup))
    log.info("probe %s: t_grad %s, pull %.4f s, push %.4f s", network, out["t_grad"], out["t_pull"]["mean"],
             out["t_push"]["mean"])
    return out


# ----------------------------------------------------------------------------- training runs


def _shard_placement(strategy, build, num_ps: int):
    """Build the model under ``strategy`` with its variables placed by Algorithm 3.7 over ``num_ps`` PS tasks.

    A throwaway local build records the variables' sizes in creation order; one anchor variable
    per PS task (TensorFlow's round-robin puts the k-th on task k) gives each shard a place;
    a variable creator then colocates every model variable with its anchor.
    """
    import tensorflow as tf

    sizes = []

    def record(next_creator, **kwargs):
        v = next_creator(**kwargs)
        sizes.append(int(v.shape.num_elements()))
        return v

    with tf.variable_creator_scope(record):
        build()
    assignment = assign_shards(sizes, num_ps)
    with strategy.scope():
        anchors = [tf.Variable(0, dtype=tf.int32, trainable=False) for _ in range(num_ps)]
    by_task = {_task_of(a.device): a for a in anchors}
    if sorted(by_task) != list(range(num_ps)):
        raise RuntimeError(f"anchors did not land one per PS task: {[a.device for a in anchors]}")
    it = iter(assignment)

    def place(next_creator, **kwargs):
        try:
            k = next(it)
        except StopIteration:
            raise RuntimeError("the model created more variables than its local build did") from None
        kwargs["colocate_with"] = by_task[k]
        return next_creator(**kwargs)

    with strategy.scope(), tf.variable_creator_scope(place):
        net = build()
    return net, sizes, assignment


def train(networks: list[str], server: str, image_size: int, num_classes: int, batch_size: int, batches: int,
          modes: list[str], semaphore: bool, learning_rate: float, warmup_iterations: int, seed: int,
          emulate: dict | None = None) -> dict:
    """The chief: for each network, D batches in every mode asked for on this cluster's PS layout.

    ``emulate``: ``{"t_grad": {network: seconds per whole batch}, "dilation": k}`` -- closures wait
    ``t_grad * images / batch_size * k`` instead of computing (:mod:`repro.cluster.compute`).
    """
    ctx = context()
    n = ctx.spec.count("worker")
    if batch_size % n and "sync-split" in modes:
        raise ValueError(f"sync-split needs the batch ({batch_size}) divisible by the workers ({n})")
    strategy, coordinator = ps_strategy()
    return {"networks": [_train_one(strategy, coordinator, net, server, image_size, num_classes, batch_size, batches,
                                    modes, semaphore, learning_rate, warmup_iterations, seed, emulate)
                         for net in networks]}


def _train_one(strategy, coordinator, network, server, image_size, num_classes, batch_size, batches, modes,
               semaphore, learning_rate, warmup_iterations, seed, emulate=None) -> dict:
    """``server``: central (one PS task) or distributed (one PS task per worker; N = 1 has one too)."""
    import keras
    import numpy as np
    import tensorflow as tf

    ctx = context()
    n = ctx.spec.count("worker")
    num_ps = ctx.spec.count("ps")

    def build():
        keras.utils.set_random_seed(seed)
        return build_network(network, image_size, num_classes)

    net, sizes, assignment = _shard_placement(strategy, build, num_ps)
    devices = [_task_of(v.value.device) for v in net.variables]
    shard_elements = [0] * num_ps
    for v, k in zip(net.variables, devices):
        shard_elements[k] += int(np.prod(v.shape))

    def iterator_for(b):
        def dataset_fn():
            x, y = synthetic_batch(b, image_size, num_classes, seed + 1)
            return tf.data.Dataset.from_tensors((x, y)).repeat()
        return iter(coordinator.create_per_worker_dataset(dataset_fn))

    bare = None if emulate else _bare_closures(  # emulated closures wait: this machine's costs are dilated away
        PSTrainer(strategy, coordinator, net, learning_rate, sync=False, stateless=True, wait_s=0.0), coordinator,
        iterator_for(batch_size))
    variants = [(m, False) for m in modes]
    if semaphore and server == "central":
        variants += [(m, True) for m in modes]
    runs = []
    for mode, sem in variants:
        b = batch_size // n if mode == "sync-split" else batch_size
        wait = None if emulate is None else emulate["t_grad"][network] * b / batch_size * emulate["dilation"]
        trainer = PSTrainer(strategy, coordinator, net, learning_rate, sync=mode != "async", stateless=True,
                            semaphore=sem, wait_s=wait)
        iterator = iterator_for(b)

        def go(count, warmup=False):  # async: count closures; sync: count steps of N closures
            if mode == "async":
                trainer.run(1, count, iterator, warmup=warmup)
            else:
                trainer.run(count, n, iterator, warmup=warmup)

        go(warmup_iterations * n if mode == "async" else warmup_iterations, warmup=True)
        before = trainer.counts()
        # sync-join: ceil(D/N) iterations of N whole batches; sync-split: D iterations of N
        # B/N-image closures; async: D closures of whole batches, taken by whichever worker is free
        iterations = -(-batches // n) if mode == "sync-join" else batches
        log.info("%s %s N=%d %s%s: %d iterations of %s-image closures", network, server, n, mode,
                 " +semaphore" if sem else "", iterations, b)
        t0, w0 = time.perf_counter(), time.time()
        go(iterations)
        seconds = time.perf_counter() - t0
        after = trainer.counts()
        per_worker = [a - c for a, c in zip(after, before)]
        runs.append({"mode": mode, "semaphore": sem, "seconds": seconds, "iterations": iterations, "wait_s": wait,
                     "window": [w0, time.time()],
                     "closure_batch": b, "closures_per_worker": per_worker, "closures": int(sum(per_worker))})
    return {"network": network, "server": server, "workers": n, "ps": num_ps, "batches": batches,
            "batch_size": batch_size, "image_size": image_size, "runs": runs,
            "variable_sizes": sizes, "assignment": assignment, "placed": devices,
            "shard_elements": shard_elements, "bare_closure": bare}


def _bare_closures(trainer, coordinator, iterator, repeats: int = 10, warmup: int = 3) -> dict:
    """A closure without its compute, one at a time through the coordinator: it pulls every weight, makes
    zeros of their shapes, pushes them as an update (weights unchanged) and counts itself; ``repeats``
    times (wall seconds, and the machine's busy CPU-seconds per closure).

    What a closure costs beyond the probe's pull, push and call is this machine's: the coordinator's
    dispatch, the per-worker dataset, the closure's graph of per-tensor ops. The probe cluster calls
    the worker directly, so it is measured here, before any timed run; the extended model charges it
    to every closure (:func:`repro.experiments.speedup.measure.extended_time`)."""

    def one():
        trainer.schedule(iterator)
        coordinator.join()

    return _stats(*_timed(one, repeats, warmup))
