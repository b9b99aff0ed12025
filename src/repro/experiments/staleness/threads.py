"""A real asynchronous run on this machine: Python threads sharing one parameter set."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd

from repro.experiments.staleness.averaging import EngineError, default_loss
from repro.experiments.staleness.logs import LOG_COLUMNS
from repro.ml import steps


def threaded_async_run(model_fn, x: np.ndarray, y: np.ndarray, *, workers: int, updates_per_worker: int,
                       batch_size: int, learning_rate: float, seed: int = 0, loss=None) -> pd.DataFrame:
    """Real asynchronous SGD on this machine: ``workers`` Python threads, one shared parameter set.

    Each thread loops: read the shared weights and the server version under a lock, compute a
    gradient on a random minibatch with its own model copy (outside the lock; the backend's
    compiled step releases the GIL, so threads overlap), then, under the lock, apply
    ``w -= lr * g`` and log the update (:data:`LOG_COLUMNS`). Nothing is scheduled or delayed on
    purpose: the staleness is whatever the interleaving of the threads on this machine produced.
    Returns the log.
    """
    import keras

    if not isinstance(workers, (int, np.integer)) or workers < 1:
        raise EngineError(f"workers must be an integer >= 1, got {workers!r}")
    keras.utils.set_random_seed(seed)
    loss = loss or default_loss()
    server = model_fn()
    shared = list(server.trainable_variables)
    copies = [model_fn() for _ in range(workers)]
    fns = [steps.make_steps(m, loss).grads for m in copies]  # compiled for the Keras backend in use
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
                _, grads = fns[i](x[b], y[b])
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
