"""Several Keras classifiers trained at once in one compiled JAX program, the data resident on the device.

The optimizer comparison trains seven copies of one small CNN that differ only in their optimizer.
Trained one after another with ``model.fit`` at batch 32, such a CNN leaves a large GPU mostly idle
and the per-step dispatch from Python dominates (Keras 3's ``steps_per_execution`` under JAX still
dispatches one compiled step per batch). :func:`fit_many` instead

* puts the training and test arrays on the device once;
* compiles one function that advances *all* K models by ``steps_per_execution`` minibatches
  (unrolled over rows of batch indices, gathered on the device), so one dispatch does
  K x ``steps_per_execution`` optimizer steps;
* evaluates all K models on the test set in one compiled function per test batch.

Each model sees exactly what :func:`repro.ml.training.fit` would give it: the same order of
examples per ``(seed, epoch)``, the same partial last batch, the same dropout masks (its seed
state is reset per epoch by the same rule), categorical cross-entropy averaged over the batch, its
own optimizer's ``stateless_apply`` (with the optimizer's loss scaling under mixed precision), and
per-epoch training loss and accuracy averaged over the epoch's examples as Keras reports them. Only
the order of floating-point operations differs (tests: trajectories equal to ``fit``'s within 1e-4).

Times are those of the group: ``epoch_time_s`` is the wall time in which every one of the K
models finished its epoch. Checkpoints are ``fit``'s (``model.keras`` + ``history.csv`` per model),
written every ``checkpoint_every_s`` seconds and after the last epoch, so either trainer resumes
the other's run. JAX only; imported inside functions.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from repro.ml import training
from repro.ml.data import Dataset


def _values(model) -> tuple[list, list, list]:
    opt = model.optimizer
    if not opt.built:
        opt.build(model.trainable_variables)
    return ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
            [v.value for v in opt.variables])


def _store(model, state) -> None:
    t, n, o = state
    for vs, new in ((model.trainable_variables, t), (model.non_trainable_variables, n), (model.optimizer.variables, o)):
        for v, a in zip(vs, new):
            v.assign(a)


_COMPILED: dict[str, tuple] = {}  # the last group's functions, reused by a group of the same configuration


def _compiled(models):
    """:func:`_compile` of ``models``, or the functions compiled for an earlier group of models with the
    same architecture and optimizer configurations (the next seed): they are stateless in the models'
    values, so they serve any such group, and XLA's compilation is not repeated."""
    key = json.dumps(_unnamed([[m.get_config(), m.optimizer.get_config()] for m in models]), sort_keys=True,
                     default=str)
    if key not in _COMPILED:
        _COMPILED.clear()
        _COMPILED[key] = _compile(models)
    return _COMPILED[key]


def _unnamed(config):
    """A Keras config without its ``name`` entries (Keras numbers the layers of each new model)."""
    if isinstance(config, dict):
        return {k: _unnamed(v) for k, v in config.items() if k != "name"}
    if isinstance(config, (list, tuple)):
        return [_unnamed(v) for v in config]
    return config


def _compile(models):
    """(train_chunk, evaluate): jitted over the K models' states and the device-resident arrays."""
    import jax
    import jax.numpy as jnp
    import keras
    from keras.src.backend import StatelessScope

    xent = keras.losses.CategoricalCrossentropy()

    def one_step(model, state, xb, yb):
        t, n, o = state
        opt = model.optimizer

        def loss_fn(t, n):
            pred, n = model.stateless_call(t, n, xb, training=True)
            loss = xent(yb, pred)
            with StatelessScope(state_mapping=list(zip(opt.variables, o))):
                scaled = opt.scale_loss(loss)  # identity unless a LossScaleOptimizer (mixed precision)
            return scaled, (loss, pred, n)

        (_, (loss, pred, n)), grads = jax.value_and_grad(loss_fn, has_aux=True)(t, n)
        t, o = opt.stateless_apply(o, grads, t)
        right = jnp.sum(jnp.argmax(pred, -1) == jnp.argmax(yb, -1)).astype("float32")
        return (t, n, o), loss.astype("float32") * xb.shape[0], right

    @jax.jit
    def train_chunk(states, sums, x, y, idx):
        # unrolled at trace time: XLA:CPU runs the convolutions of a lax.scan body about 6x slower
        for i in range(idx.shape[0]):
            xb, yb = x[idx[i]], y[idx[i]]
            out = [one_step(m, s, xb, yb) for m, s in zip(models, states)]
            states = [o[0] for o in out]
            sums = sums + jnp.stack([jnp.stack([o[1], o[2]]) for o in out])
        return states, sums

    @jax.jit
    def evaluate(tn, xb, yb):
        rows = []
        for m, (t, n) in zip(models, tn):
            pred, _ = m.stateless_call(t, n, xb, training=False)
            right = jnp.sum(jnp.argmax(pred, -1) == jnp.argmax(yb, -1)).astype("float32")
            rows.append(jnp.stack([xent(yb, pred).astype("float32") * xb.shape[0], right]))
        return jnp.stack(rows)

    return train_chunk, evaluate


def _chunks(order: np.ndarray, batch_size: int, steps: int) -> list[np.ndarray]:
    """The epoch's batches as index arrays of shape (s, b): chunks of ``steps`` full batches, each
    remaining full batch alone, then the partial last batch (what ``model.fit`` would do). At most
    three shapes: three compilations, each reused every epoch."""
    full = len(order) // batch_size
    rows = order[:full * batch_size].reshape(full, batch_size)
    cut = full - full % steps
    out = [rows[i:i + steps] for i in range(0, cut, steps)] + [rows[i:i + 1] for i in range(cut, full)]
    if len(order) % batch_size:
        out.append(order[full * batch_size:][None, :])
    return [c.astype("int32") for c in out]


def _epoch(fns, models, dev, seed: int, epoch: int, batch_size: int, steps: int, eval_batch: int):
    """One epoch of all models: (train sums (K, 2), test sums (K, 2), train s, test s)."""
    import jax
    import jax.numpy as jnp

    train_chunk, evaluate = fns
    x, y, xt, yt = dev
    epoch_seed = seed * 100_003 + epoch
    for m in models:
        training._reseed(m, epoch_seed)  # dropout masks depend on (seed, epoch) only, as in fit
    states = [_values(m) for m in models]
    order = np.random.default_rng(epoch_seed).permutation(x.shape[0])
    t0 = time.perf_counter()
    sums = jnp.zeros((len(models), 2), "float32")
    for idx in _chunks(order, batch_size, steps):
        states, sums = train_chunk(states, sums, x, y, jnp.asarray(idx))
    sums = np.asarray(jax.block_until_ready(sums))
    t1 = time.perf_counter()
    for m, s in zip(models, states):
        _store(m, s)
    test = np.zeros((len(models), 2))
    tn = [(s[0], s[1]) for s in states]
    for i in range(0, xt.shape[0], eval_batch):
        test += np.asarray(evaluate(tn, xt[i:i + eval_batch], yt[i:i + eval_batch]))
    return sums, test, t1 - t0, time.perf_counter() - t1


def _device_arrays(data: Dataset):
    import jax.numpy as jnp

    eye = np.eye(data.num_classes, dtype="float32")
    return (jnp.asarray(data.x_train, "float32"), jnp.asarray(eye[data.y_train]),
            jnp.asarray(data.x_test, "float32"), jnp.asarray(eye[data.y_test]))


def _resume(models: list, dirs: list) -> tuple[list, list[list[dict]]]:
    """Each model's checkpoint where one exists (model replaced, its history rows), else fresh."""
    out, rows = list(models), [[] for _ in models]
    for i, d in enumerate(dirs):
        if d is None:
            continue
        saved, hist = training.load_checkpoint(Path(d))
        if saved is not None:
            out[i], rows[i] = saved, hist.to_dict("records")
    return out, rows


def fit_many(models: list, data: Dataset, *, epochs: int, batch_size: int, seed: int = 0,
             steps_per_execution: int = 1, eval_batch_size: int = 1000, checkpoint_dirs: list | None = None,
             checkpoint_every_s: float = 60.0, labels: list[str] | None = None, verbose: int = 2,
             log_prefix: str = "") -> list[pd.DataFrame]:
    """Train the compiled classifiers ``models`` together (see the module docstring); one history per
    model (:data:`repro.ml.training.HISTORY_COLUMNS`), as :func:`repro.ml.training.fit` returns.

    With ``checkpoint_dirs`` (one per model), earlier interrupted runs are resumed; models whose
    checkpoints stopped at different epochs are trained in groups, one per starting epoch."""
    dirs = list(checkpoint_dirs or [None] * len(models))
    labels = list(labels or [str(i) for i in range(len(models))])
    models, rows = _resume(models, dirs)
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(len(r), []).append(i)
    dev = _device_arrays(data) if any(start < epochs for start in groups) else None
    for start, members in sorted(groups.items()):
        if start >= epochs:
            continue
        if verbose and start:
            print(f"{log_prefix}resuming {', '.join(labels[i] for i in members)} after epoch {start}", flush=True)
        _train_group([models[i] for i in members], [rows[i] for i in members], [dirs[i] for i in members],
                     [labels[i] for i in members], dev, data, start, epochs, batch_size, seed,
                     steps_per_execution, eval_batch_size, checkpoint_every_s, verbose, log_prefix)
    return [pd.DataFrame(r, columns=training.HISTORY_COLUMNS) for r in rows]


def _train_group(models, rows, dirs, labels, dev, data, start, epochs, batch_size, seed, steps, eval_batch,
                 every_s, verbose, log_prefix) -> None:
    """Epochs ``start``..``epochs`` of one group; appends to each model's ``rows`` and checkpoints."""
    fns = _compiled(models)
    n, n_test = len(data.y_train), len(data.y_test)
    last_save = time.perf_counter()
    for epoch in range(start, epochs):
        train, test, t_train, t_test = _epoch(fns, models, dev, seed, epoch, batch_size, steps, eval_batch)
        for k, r in enumerate(rows):
            total = (float(r[-1]["train_time_s"]) if r else 0.0) + t_train
            r.append({"epoch": epoch + 1, "loss": train[k, 0] / n, "accuracy": train[k, 1] / n,
                      "test_loss": test[k, 0] / n_test if n_test else np.nan,
                      "test_accuracy": test[k, 1] / n_test if n_test else np.nan,
                      "epoch_time_s": t_train, "eval_time_s": t_test, "train_time_s": total})
        if verbose:
            accs = ", ".join(f"{lab} {r[-1]['test_accuracy']:.3f}" for lab, r in zip(labels, rows))
            print(f"{log_prefix}epoch {epoch + 1}/{epochs} - {t_train:.1f} s train + {t_test:.1f} s test - "
                  f"{len(models) * n / t_train:,.0f} img/s over {len(models)} models - test accuracy: {accs}",
                  flush=True)
        if time.perf_counter() - last_save >= every_s or epoch + 1 == epochs:
            for m, r, d in zip(models, rows, dirs):
                if d is not None:
                    training._save_checkpoint(m, pd.DataFrame(r, columns=training.HISTORY_COLUMNS), Path(d))
            last_save = time.perf_counter()
