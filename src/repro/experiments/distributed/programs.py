"""Cluster programs of the distributed benchmark (`polishchuk2019` part B).

Each public function here runs inside a process of a local (or real) cluster started by
:func:`repro.cluster.run_cluster`; its JSON-able return value comes back in
``ClusterResult.results``. TensorFlow and Keras are imported inside the functions.

* :func:`ring` -- every worker runs it: ``MultiWorkerMirroredStrategy`` with RING collectives;
  each step all-reduces the gradients and every replica applies the same update.
* :func:`parameter_server` -- the chief (coordinator) runs it: ``ParameterServerStrategy`` +
  ``ClusterCoordinator``, variables on the parameter server(s), in one of two modes:

  - ``ps_async``: each scheduled step computes one worker's gradient and applies it to the PS
    variables as soon as it arrives (no barrier);
  - ``ps_sync``: per step, N gradient closures add their gradients into PS-hosted accumulators
    (``assign_add``), ``coordinator.join()`` is the barrier, then ONE update with the average is
    applied on the PS and the accumulators are zeroed.

  Both are :class:`repro.cluster.ps_trainer.PSTrainer`'s closures calling the model (async updates
  through a Keras SGD optimizer, whose ``iterations`` the result reports).

* :func:`horovod` -- every worker runs it: Horovod (Gloo, no MPI) with ``hvd.DistributedGradientTape``;
  worker 0 hosts the rendezvous server ``horovodrun`` would start, inside the cluster's private
  namespaces. On the emulated network each worker is its own Horovod host (local size 1).
* :func:`sync_probe` -- one synchronous step of a tiny linear model on given data (the test of
  "one aggregated update per step").

Measurement (tf_cnn_benchmarks style): one fixed synthetic ImageNet-shaped batch per worker,
``warmup_steps`` steps not timed, then ``steps`` timed steps, counted by this code (a per-worker
counter on the PS methods, the loop on ring), never by ``optimizer.iterations`` (which loses
increments under asynchronous updates).
"""

from __future__ import annotations

import logging
import time

from repro.cluster import context
from repro.cluster.compute import wait_tensors, wait_then_zeros
from repro.cluster.ps_trainer import PSTrainer, ps_strategy
from repro.experiments.distributed.common import horovod_available  # noqa: F401 (part of this module's API)
from repro.experiments.distributed.models import build_model, weights_digest
from repro.ml.data import synthetic_batch

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------- ring all-reduce


def _wait(emulate: dict | None, model: str) -> float | None:
    """Seconds an emulated worker waits per step (``t_grad`` x dilation), None when it computes."""
    return None if emulate is None else emulate["t_grad"][model] * emulate["dilation"]


def ring(models: list[dict], batch_size: int, warmup_steps: int, steps: int, learning_rate: float,
         num_classes: int, seed: int, kill_after: int | None = None, emulate: dict | None = None) -> dict:
    """Every worker: MWMS (RING) training on its own synthetic batch; its own step count and time per model.

    ``kill_after``: fault injection -- worker 0 SIGKILLs worker 1 after that many timed steps.
    ``emulate``: ``{"t_grad": {model: s}, "dilation": k}`` -- the worker waits instead of computing
    (:mod:`repro.cluster.compute`) and all-reduces tensors of the real gradients' shapes.
    """
    import keras
    import tensorflow as tf

    ctx = context()
    n = ctx.spec.count("worker")
    rank = ctx.task.index
    comm = tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CommunicationImplementation.RING)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=comm)
    out = []
    for m in models:
        with strategy.scope():
            keras.utils.set_random_seed(seed)
            net = build_model(m["name"], m["image_size"], num_classes)
            opt = keras.optimizers.SGD(learning_rate=learning_rate)
            opt.build(net.trainable_variables)
        initial = weights_digest(net)
        x, y = synthetic_batch(batch_size, m["image_size"], num_classes, seed * 1000 + rank + 1)
        global_batch = float(batch_size * n)
        wait = _wait(emulate, m["name"])

        @tf.function
        def step(wait_s):
            def replica_fn():
                if wait is not None:  # emulated: wait t_grad, then all-reduce zeros of the real shapes
                    loss, grads = wait_then_zeros([v.value for v in net.trainable_variables], wait_s)
                    opt.apply_gradients(zip(grads, net.trainable_variables))
                    return loss
                with tf.GradientTape() as tape:
                    pred = net(x, training=True)
                    # summed by the all-reduce: scale by the global batch, as in any MWMS custom loop
                    loss = tf.reduce_sum(keras.losses.sparse_categorical_crossentropy(y, pred)) / global_batch
                grads = tape.gradient(loss, net.trainable_variables)
                opt.apply_gradients(zip(grads, net.trainable_variables))
                return loss
            return strategy.run(replica_fn)

        def block(value):
            return float(strategy.experimental_local_results(value)[0].numpy())

        warm, timed_wait = wait_tensors(wait)
        done = 0
        for _ in range(warmup_steps):
            block(step(warm))
            done += 1
        t0, w0 = time.perf_counter(), time.time()
        timed = 0
        loss = None
        for _ in range(steps):
            if kill_after is not None and rank == 0 and timed == kill_after:
                _kill("worker:1")
            loss = step(timed_wait)
            timed += 1
        last_loss = block(loss) if loss is not None else float("nan")
        seconds = time.perf_counter() - t0
        out.append({"model": m["name"], "image_size": m["image_size"], "task": ctx.task.name,
                    "window": [w0, time.time()],
                    "warmup_steps": done, "steps": timed, "seconds": seconds, "last_loss": last_loss,
                    "parameters": int(net.count_params()), **weights_digest(net),
                    "initial_weights_sha256": initial["weights_sha256"]})
    return {"task": ctx.task.name, "workers": n, "models": out}


# ----------------------------------------------------------------------------- Horovod


def _log_phases(what: str, phase: dict, seconds: float) -> None:
    """One progress line per model: wall seconds of each set-up phase (in order), then the timed steps."""
    names, marks = list(phase), list(phase.values())
    parts = [f"{b} {t1 - t0:.1f} s" for b, t0, t1 in zip(names[1:], marks, marks[1:])]
    log.info("%s: %s", what, ", ".join(parts + [f"timed {seconds:.1f} s"]))


def _iface_of(address: str) -> str:
    """The network interface holding ``address`` (loopback: ``lo``; an emulated node or a SLURM node: its own)."""
    import socket

    import psutil

    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address for a in addrs):
            return name
    return "lo" if address.startswith("127.") else "eth0"


def _horovod_init(ctx, timeout: float = 60.0):
    """Rendezvous (worker 0 serves it) and ``hvd.init()`` with the environment horovodrun would set, and
    a Gloo timeout of an hour (the run's own timeout rules): with the default 30 s, workers building VGG16
    on shared cores arrive at the first broadcast too far apart, and a dilated all-reduce can take longer."""
    import json
    import os

    from repro.core import atomic

    n = ctx.spec.count("worker")
    rank = ctx.task.index
    hosts = [next(t.host for t in ctx.spec.tasks if t.name == f"worker:{i}") for i in range(n)]
    # one machine (loopback): one host with n slots, as horovodrun -np n; emulated network: every
    # worker its own host (its own address, local size 1); Gloo resolves the host names
    one_host = len(set(hosts)) == 1
    names = ["localhost"] * n if one_host else hosts
    port_file = ctx.run_dir / "horovod-rendezvous.json"
    server = None
    if rank == 0:
        from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
        from horovod.runner.http.http_server import RendezvousServer

        plan = f"localhost:{n}" if one_host else ",".join(f"{h}:1" for h in hosts)
        server = RendezvousServer(verbose=0)
        port = server.start()
        server.init(get_host_assignments(parse_hosts(plan), n))
        atomic.write_json(port_file, {"port": port})
    deadline = time.monotonic() + timeout
    while not port_file.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"horovod: no rendezvous port from worker 0 within {timeout:g} s")
        time.sleep(0.05)
    port = json.loads(port_file.read_text())["port"]
    iface = _iface_of(ctx.task.host)
    os.environ.update({
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": hosts[0], "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
        "HOROVOD_CONTROLLER": "gloo", "HOROVOD_CPU_OPERATIONS": "gloo", "HOROVOD_GLOO_IFACE": iface,
        "HOROVOD_HOSTNAME": names[rank], "HOROVOD_RANK": str(rank), "HOROVOD_SIZE": str(n),
        "HOROVOD_LOCAL_RANK": str(rank if one_host else 0), "HOROVOD_LOCAL_SIZE": str(n if one_host else 1),
        "HOROVOD_CROSS_RANK": str(0 if one_host else rank), "HOROVOD_CROSS_SIZE": str(1 if one_host else n),
        "HOROVOD_GLOO_TIMEOUT_SECONDS": os.environ.get("HOROVOD_GLOO_TIMEOUT_SECONDS", "3600")})  # see below
    import horovod.tensorflow as hvd

    log.info("horovod rank %d/%d: rendezvous %s:%s, Gloo on %s", rank, n, hosts[0], port, iface)
    hvd.init()
    if hvd.size() != n or hvd.rank() != rank:
        raise RuntimeError(f"horovod: rank {hvd.rank()} of {hvd.size()}, expected {rank} of {n}")
    return hvd, server


def horovod(models: list[dict], batch_size: int, warmup_steps: int, steps: int, learning_rate: float,
            num_classes: int, seed: int, emulate: dict | None = None) -> dict:
    """Every worker: Horovod ring all-reduce training on its own synthetic batch, like :func:`ring`
    (``emulate`` too: the worker waits ``t_grad`` and all-reduces zeros of the real gradients' shapes)."""
    import keras
    import tensorflow as tf

    ctx = context()
    hvd, server = _horovod_init(ctx)
    n, rank = hvd.size(), hvd.rank()
    out = []
    for m in models:
        phase = {"start": time.perf_counter()}
        keras.utils.set_random_seed(seed)
        net = build_model(m["name"], m["image_size"], num_classes)
        opt = keras.optimizers.SGD(learning_rate=learning_rate)
        opt.build(net.trainable_variables)
        # Horovod's TF ops need tf.Variables: Keras 3 wraps them (KerasVariable.value)
        tvars = [v.value for v in net.trainable_variables]
        phase["build"] = time.perf_counter()
        if emulate is None:  # every replica starts from worker 0's weights
            hvd.broadcast_variables(tvars, root_rank=0)
            phase["broadcast"] = time.perf_counter()
        # emulated: the same seed gave every replica the same weights already (replicas_identical checks
        # it); a broadcast over the dilated links only adds untimed wall time (4 workers: 23-33 s a model)
        initial = weights_digest(net)
        phase["digest"] = time.perf_counter()
        x, y = synthetic_batch(batch_size, m["image_size"], num_classes, seed * 1000 + rank + 1)
        wait = _wait(emulate, m["name"])

        @tf.function
        def step(wait_s):
            if wait is not None:  # emulated: wait t_grad, then average zeros of the real shapes over the ring
                loss, grads = wait_then_zeros(tvars, wait_s)
                opt.apply_gradients(zip([hvd.allreduce(g, op=hvd.Average) for g in grads], net.trainable_variables))
                return loss
            with tf.GradientTape() as tape:
                pred = net(x, training=True)
                loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, pred))
            tape = hvd.DistributedGradientTape(tape)  # averages the gradients over the ring
            grads = tape.gradient(loss, tvars)
            opt.apply_gradients(zip(grads, net.trainable_variables))
            return loss

        warm, timed_wait = wait_tensors(wait)
        for _ in range(warmup_steps):
            step(warm).numpy()
        phase["warmup"] = time.perf_counter()
        t0, w0 = time.perf_counter(), time.time()
        loss = None
        for _ in range(steps):
            loss = step(timed_wait)
        last_loss = float(loss.numpy()) if loss is not None else float("nan")
        seconds = time.perf_counter() - t0
        _log_phases(f"horovod {m['name']}", phase, seconds)
        out.append({"model": m["name"], "image_size": m["image_size"], "task": ctx.task.name,
                    "window": [w0, time.time()], "warmup_steps": warmup_steps, "steps": steps, "seconds": seconds,
                    "last_loss": last_loss,
                    "parameters": int(net.count_params()), **weights_digest(net),
                    "initial_weights_sha256": initial["weights_sha256"]})
    hvd.join()
    hvd.shutdown()
    if server is not None:
        server.stop()
    return {"task": ctx.task.name, "workers": n, "models": out}


# ----------------------------------------------------------------------------- parameter server


def _dataset_fn(batch_size: int, image_size: int, num_classes: int, seed: int):
    def dataset_fn():
        import tensorflow as tf

        x, y = synthetic_batch(batch_size, image_size, num_classes, seed)
        return tf.data.Dataset.from_tensors((x, y)).repeat()

    return dataset_fn


def parameter_server(method: str, models: list[dict], batch_size: int, warmup_steps: int, steps: int,
                     learning_rate: float, num_classes: int, seed: int, emulate: dict | None = None) -> dict:
    """The chief: PS training of each model in turn; per-worker step counts and the timed window
    (``emulate``: as :func:`ring`)."""
    import keras

    if method not in ("ps_async", "ps_sync"):
        raise ValueError(f"method must be ps_async or ps_sync, got {method!r}")
    ctx = context()
    n = ctx.spec.count("worker")
    strategy, coordinator = ps_strategy()
    out = []
    for m in models:
        phase = {"start": time.perf_counter()}
        with strategy.scope():
            keras.utils.set_random_seed(seed)
            net = build_model(m["name"], m["image_size"], num_classes)
        trainer = PSTrainer(strategy, coordinator, net, learning_rate, sync=method == "ps_sync",
                            optimizer=True, wait_s=_wait(emulate, m["name"]))
        phase["build"] = time.perf_counter()
        dataset_fn = _dataset_fn(batch_size, m["image_size"], num_classes, seed * 1000 + 1)
        iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
        phase["datasets"] = time.perf_counter()
        log.info("%s %s: %d warm-up steps", method, m["name"], warmup_steps)
        trainer.run(warmup_steps, n, iterator, warmup=True)
        phase["warmup"] = time.perf_counter()
        before = trainer.counts()
        log.info("%s %s: counters %s; %d timed steps", method, m["name"], before, steps)
        scheduled0, updates0 = trainer.scheduled, trainer.updates
        t0, w0 = time.perf_counter(), time.time()
        trainer.run(steps, n, iterator)
        seconds = time.perf_counter() - t0
        window = [w0, time.time()]
        _log_phases(f"{method} {m['name']}", phase, seconds)
        after = trainer.counts()
        iterations = int(trainer.opt.iterations.numpy()) if method == "ps_async" else None
        out.append({"model": m["name"], "image_size": m["image_size"], "method": method, "window": window,
                    "steps_per_worker": [a - b for a, b in zip(after, before)], "seconds": seconds,
                    "warmup_steps_per_worker": before, "scheduled_steps": trainer.scheduled - scheduled0,
                    "updates": trainer.updates - updates0, "all_updates": trainer.updates,
                    "optimizer_iterations": iterations,
                    "parameters": int(net.count_params())})
    return {"task": ctx.task.name, "workers": n, "models": out}


def _kill(task: str) -> None:
    """SIGKILL (local launcher) or ``scancel`` of the task's own job step (SLURM launcher)."""
    from repro.cluster.faults import stop_task

    log.info("killed %s: %s", task, stop_task(task))


def ps_fault(method: str, model: dict, batch_size: int, steps: int, learning_rate: float, num_classes: int,
             seed: int, kill_after: int) -> dict:
    """PS training with fault injection: SIGKILL worker 1 after ``kill_after`` scheduled closures.

    ``method`` ps_async (the paper's claim) or ps_sync (the control: is tolerance a property of
    asynchrony, or of the PS design where the coordinator re-queues a dead worker's closures?).
    Returns closures scheduled, completed (their results fetched), lost, and aggregated updates
    (sync). The coordinator's threads keep waiting for the dead worker to come back, so this
    process ends itself (``os._exit(0)``) a few seconds after returning, once its result is written.
    """
    import os
    import threading

    import keras

    ctx = context()
    n = ctx.spec.count("worker")
    strategy, coordinator = ps_strategy()
    with strategy.scope():
        keras.utils.set_random_seed(seed)
        net = build_model(model["name"], model["image_size"], num_classes)
    trainer = PSTrainer(strategy, coordinator, net, learning_rate, sync=method == "ps_sync", optimizer=True)
    iterator = iter(coordinator.create_per_worker_dataset(
        _dataset_fn(batch_size, model["image_size"], num_classes, seed * 1000 + 1)))
    remote = []
    t0 = time.perf_counter()
    for _ in range(steps):
        for _ in range(n):
            remote.append(trainer.schedule(iterator))
            if len(remote) == kill_after:
                _kill("worker:1")
        if method == "ps_sync":  # barrier, then ONE update with the mean gradient, as PSTrainer.run does
            trainer.update(n)
    coordinator.join()
    seconds = time.perf_counter() - t0
    completed = 0
    for r in remote:
        try:
            r.fetch()
            completed += 1
        except Exception:  # noqa: BLE001 - a step that failed for good
            pass
    timer = threading.Timer(5.0, os._exit, args=(0,))
    timer.daemon = True
    timer.start()
    return {"scheduled": len(remote), "completed": completed, "lost": len(remote) - completed,
            "updates": trainer.updates if method == "ps_sync" else completed, "killed_after": kill_after,
            "seconds": seconds}


def sync_probe(batches: list[list], initial_weights: list[float], learning_rate: float) -> dict:
    """One ``ps_sync`` step of a linear model ``y = x . w`` (MSE) on the given per-worker batches.

    ``batches``: one ``[x, y]`` per gradient closure (x: rows of features, y: targets).
    Returns the weights before and after, and the per-worker counters.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    strategy, coordinator = ps_strategy()
    w0 = np.asarray(initial_weights, dtype="float32").reshape(-1, 1)
    with strategy.scope():
        dense = keras.layers.Dense(1, use_bias=False, kernel_initializer=keras.initializers.Constant(w0))
        net = keras.Sequential([keras.Input(shape=(w0.shape[0],)), dense])
    trainer = PSTrainer(strategy, coordinator, net, learning_rate, sync=True,
                        loss_fn=lambda y, p: tf.square(tf.reshape(p, [-1]) - y))
    args = [(tf.constant(np.asarray(x, "float32")), tf.constant(np.asarray(y, "float32"))) for x, y in batches]
    before = net.trainable_variables[0].numpy().ravel().tolist()
    trainer.run(1, len(args), batches=args)
    return {"before": before, "after": net.trainable_variables[0].numpy().ravel().tolist(),
            "counts": trainer.counts(), "updates": trainer.updates, "scheduled": trainer.scheduled}
