"""Several Keras classifiers of one architecture trained at once in one compiled JAX program.

The optimizer comparison trains fourteen copies of one small CNN (seven optimizers, two seeds) that
differ only in their optimizer, initial weights and data order. Trained one after another with
``model.fit`` at batch 32, such a CNN leaves a large GPU mostly idle: the per-step dispatch from
Python dominates. :func:`fit_many` instead

* puts the training and test arrays on the device once;
* stacks the K models' weights along a new leading axis and runs one forward and backward pass over
  them: layer by layer stacked (:mod:`repro.ml.stacked`: each convolution one matrix product batched
  over the models), or, for an architecture that module cannot stack, ``jax.vmap`` of the whole model
  (XLA's grouped convolutions: on an H100 the stacked step is 2-3x faster); then each optimizer's own
  ``stateless_apply`` on its models' slice (models with the same optimizer configuration are one
  slice, the update ``vmap``-ed over it);
* advances all K models by ``steps_per_execution`` minibatches per compiled call (unrolled), and on
  an accelerator runs the epoch's chunks of that many full batches as one ``lax.scan``: one dispatch
  for them, one per remaining full batch and one for the partial last batch (4 at 50,000 / 32 / 8;
  ``scan``; off on CPU, where XLA runs the convolutions of a scan body about 6x slower);
* evaluates all K models on the test set in one compiled function per test batch.

Each model sees exactly what :func:`repro.ml.training.fit` would give it: the order of examples of
its ``(seed, epoch)``, the same partial last batch, the same dropout masks (its seed state is reset
per epoch by the same rule), categorical cross-entropy averaged over the batch, its own optimizer's
``stateless_apply`` (with the loss scaling of a ``LossScaleOptimizer`` under mixed precision), and
per-epoch training loss and accuracy averaged over the epoch's examples as Keras reports them. Only
the order of floating-point operations differs (tests: trajectories equal to ``fit``'s within 1e-5 in
float32; under ``mixed_float16``, which is vmapped, float16 rounds the grouped convolution differently:
losses within 5e-3).

Times are those of the group: ``epoch_time_s`` is the wall time in which every one of the K models
finished its epoch. Checkpoints are ``fit``'s (``model.keras`` + ``history.csv`` per model), written
every ``checkpoint_every_s`` seconds, after the last epoch and when :func:`repro.ml.training.stop_reason`
stops training (``REPRO_DEADLINE``), so either trainer resumes the other's run. JAX only; imported
inside functions. The GPU campaign's probe of this program is ``python -m repro.experiments.optimizers.probe OUT.json``.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd

from repro.core.progress import Progress
from repro.ml import stacked, training
from repro.ml.data import Dataset

log = logging.getLogger(__name__)

SEED_STATE = "seed_generator_state"


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


def _unnamed(config):
    """A Keras config without its ``name`` entries (Keras numbers the layers of each new model)."""
    if isinstance(config, dict):
        return {k: _unnamed(v) for k, v in config.items() if k != "name"}
    if isinstance(config, (list, tuple)):
        return [_unnamed(v) for v in config]
    return config


def _key(config) -> str:
    return json.dumps(_unnamed(config), sort_keys=True, default=str)


def _arch_key(model) -> str:
    """The architecture, dtype policies included (``_unnamed`` drops a policy's ``name``)."""
    return _key([model.get_config(), [layer.dtype_policy.name for layer in model.layers]])


def _opt_key(opt) -> str:
    """The optimizer's class (and a LossScaleOptimizer's inner one) with its configuration: two classes with
    the same hyperparameters (Nadam, Adamax) are different optimizers."""
    inner = getattr(opt, "inner_optimizer", None)
    return _key([type(opt).__name__, type(inner).__name__ if inner is not None else None, opt.get_config()])


class Layout:
    """The K models in slice order: models with the same optimizer configuration next to each other.

    ``order[j]`` is the model at stacked position j; ``slices`` are (optimizer of the slice, start, stop)."""

    def __init__(self, models: list, stack: bool | None = None):
        arch = {_arch_key(m) for m in models}
        if len(arch) != 1:
            raise ValueError("fit_many: the models must share one architecture (they are stacked)")
        by_opt: dict[str, list[int]] = {}
        for i, m in enumerate(models):
            by_opt.setdefault(_opt_key(m.optimizer), []).append(i)
        self.order = [i for members in by_opt.values() for i in members]
        self.slices, start = [], 0
        for members in by_opt.values():
            self.slices.append((models[members[0]].optimizer, start, start + len(members)))
            start += len(members)
        why = stacked.stackable(models[0])
        if stack and why:
            raise ValueError(f"fit_many: stacked=True, but the models cannot be stacked: {why}")
        self.stacked = not why if stack is None else stack  # stacked layers (repro.ml.stacked), else vmap
        self.key = json.dumps([next(iter(arch)), [[k, len(v)] for k, v in by_opt.items()], self.stacked])

    def stack(self, models: list) -> tuple:
        """(trainable, non-trainable, optimizer variables per slice), each stacked over its models."""
        import jax.numpy as jnp

        vals = [_values(models[i]) for i in self.order]
        t = [jnp.stack(col) for col in zip(*[v[0] for v in vals])]
        n = [jnp.stack(col) for col in zip(*[v[1] for v in vals])]
        o = [[jnp.stack(col) for col in zip(*[v[2] for v in vals[a:b]])] for _, a, b in self.slices]
        return t, n, o

    def unstack(self, models: list, state) -> None:
        """Each model's variables set from the stacked state (for checkpoints and the caller)."""
        import jax

        t, n, o = jax.device_get(state)  # one transfer of the whole stacked state to NumPy
        for j, i in enumerate(self.order):
            s = next(k for k, (_, a, b) in enumerate(self.slices) if a <= j < b)
            _store(models[i], ([v[j] for v in t], [v[j] for v in n], [v[j - self.slices[s][1]] for v in o[s]]))


_COMPILED: dict[str, tuple] = {}  # the last layout's functions, reused by a group of the same configuration


def _compiled(models, layout: Layout):
    """:func:`_compile` for ``layout``, or the functions compiled for an earlier group of models with the
    same architecture and optimizer slices: they are stateless in the models' values, so they serve any
    such group (the next variant, a resumed run), and XLA's compilation is not repeated."""
    if layout.key not in _COMPILED:
        _COMPILED.clear()
        _COMPILED[layout.key] = _compile(models[layout.order[0]], layout)
    return _COMPILED[layout.key]


def _step_fn(proto, layout: Layout):
    """One minibatch of all K models: (state, xb (K, b, ...), yb (K, b, c)) -> (state, sums (K, 2))."""
    import jax
    import jax.numpy as jnp
    import keras

    xent = keras.losses.CategoricalCrossentropy()

    def grads_one(t, n, xb, yb, scale):
        def loss_fn(t, n):
            pred, n = proto.stateless_call(t, n, xb, training=True)
            loss = xent(yb, pred)
            return loss * scale.astype(loss.dtype), (loss, pred, n)

        (_, (loss, pred, n)), g = jax.value_and_grad(loss_fn, has_aux=True)(t, n)
        right = jnp.sum(jnp.argmax(pred, -1) == jnp.argmax(yb, -1)).astype("float32")
        return g, n, jnp.stack([loss.astype("float32") * xb.shape[0], right])

    def loss_scale(opt, o, size):
        # a LossScaleOptimizer (mixed precision) scales the loss by its dynamic scale; others by 1
        if not hasattr(opt, "dynamic_scale"):
            return jnp.ones((size,), "float32")
        return o[[id(v) for v in opt.variables].index(id(opt.dynamic_scale))].astype("float32")

    def grads_stacked(t, n, xb, yb, scale):  # the same per-model gradients, the K models as one program
        def loss_fn(t, n):
            pred, n = stacked.forward(proto, t, n, xb, training=True)
            loss = jax.vmap(xent)(yb, pred)
            return jnp.sum((loss * scale.astype(loss.dtype)).astype("float32")), (loss, pred, n)

        (_, (loss, pred, n)), g = jax.value_and_grad(loss_fn, has_aux=True)(t, n)
        right = jnp.sum(jnp.argmax(pred, -1) == jnp.argmax(yb, -1), axis=-1).astype("float32")
        return g, n, jnp.stack([loss.astype("float32") * xb.shape[1], right], axis=-1)

    grads = grads_stacked if layout.stacked else jax.vmap(grads_one)

    def step(state, xb, yb):
        t, n, o = state
        scale = jnp.concatenate([loss_scale(opt, o[s], b - a) for s, (opt, a, b) in enumerate(layout.slices)])
        g, n, sums = grads(t, n, xb, yb, scale)
        parts, new_o = [], []
        for s, (opt, a, b) in enumerate(layout.slices):
            ts, os_ = jax.vmap(opt.stateless_apply)(o[s], [v[a:b] for v in g], [v[a:b] for v in t])
            parts.append(ts)
            new_o.append(os_)
        t = [jnp.concatenate([p[i] for p in parts]) for i in range(len(t))] if len(parts) > 1 else parts[0]
        return (t, n, new_o), sums

    return step


def _compile(proto, layout: Layout):
    """(train_chunk, train_scan, evaluate), jitted over the stacked state and the device-resident arrays."""
    import jax
    import jax.numpy as jnp
    import keras

    step = _step_fn(proto, layout)
    xent = keras.losses.CategoricalCrossentropy()

    def chunk(state, sums, x, y, idx):  # idx (K, s, b): s minibatches, unrolled
        for i in range(idx.shape[1]):
            state, got = step(state, x[idx[:, i]], y[idx[:, i]])
            sums = sums + got
        return state, sums

    @jax.jit
    def train_scan(state, sums, x, y, idx):  # idx (C, K, s, b): C chunks in one dispatch
        return jax.lax.scan(lambda c, i: (chunk(*c, x, y, i), None), (state, sums), idx)[0]

    def evaluate_one(t, n, xb, yb):
        pred, _ = proto.stateless_call(t, n, xb, training=False)
        right = jnp.sum(jnp.argmax(pred, -1) == jnp.argmax(yb, -1)).astype("float32")
        return jnp.stack([xent(yb, pred).astype("float32") * xb.shape[0], right])

    def evaluate_stacked(t, n, xb, yb):
        pred, _ = stacked.forward(proto, t, n, jnp.broadcast_to(xb, (len(layout.order), *xb.shape)), training=False)
        right = jnp.sum(jnp.argmax(pred, -1) == jnp.argmax(yb, -1), axis=-1).astype("float32")
        loss = jax.vmap(xent, in_axes=(None, 0))(yb, pred).astype("float32") * xb.shape[0]
        return jnp.stack([loss, right], axis=-1)

    evaluate = jax.jit(evaluate_stacked if layout.stacked else jax.vmap(evaluate_one, in_axes=(0, 0, None, None)))
    return jax.jit(chunk), train_scan, evaluate


def _chunks(order: np.ndarray, batch_size: int, steps: int) -> list[np.ndarray]:
    """The epoch's batches as index arrays of shape (K, s, b): chunks of ``steps`` full batches, each
    remaining full batch alone, then the partial last batch (what ``model.fit`` would do). ``order`` is
    (K, n): each model's permutation. At most three shapes: three compilations, each reused every epoch."""
    n = order.shape[1]
    full = n // batch_size
    rows = order[:, :full * batch_size].reshape(order.shape[0], full, batch_size)
    cut = full - full % steps
    out = [rows[:, i:i + steps] for i in range(0, cut, steps)] + [rows[:, i:i + 1] for i in range(cut, full)]
    if n % batch_size:
        out.append(order[:, full * batch_size:][:, None, :])
    return [c.astype("int32") for c in out]


def dispatches_per_epoch(n: int, batch_size: int, steps: int, scan: bool) -> int:
    """Compiled calls per training epoch of :func:`fit_many` (``model.fit``: ``ceil(n / batch_size)`` per model)."""
    full, partial = divmod(n, batch_size)
    chunks, lone = divmod(full, steps)
    if scan and chunks > 1:
        return 1 + lone + (partial > 0)
    return chunks + lone + (partial > 0)


def _reseeded(layout: Layout, models: list, n: list, seeds: list[int], epoch: int) -> list:
    """The stacked non-trainable values with each model's dropout seed states reset for ``epoch`` by
    :func:`repro.ml.training._reseed`'s rule (``[epoch_seed * 1000 + i, 0]``, i over the model's states)."""
    import jax.numpy as jnp

    proto = models[layout.order[0]]
    rank = {id(v): i for i, v in enumerate(v for v in proto.variables if v.path.endswith(SEED_STATE))}
    out = list(n)
    for j, v in enumerate(proto.non_trainable_variables):
        if id(v) in rank:
            es = [seeds[i] * 100_003 + epoch for i in layout.order]
            out[j] = jnp.asarray(np.array([[e * 1_000 + rank[id(v)], 0] for e in es], dtype=n[j].dtype))
    return out


def _epoch(fns, layout, models, state, dev, seeds, epoch, batch_size, steps, eval_batch, scan):
    """One epoch of all models: (state, train sums (K, 2), test sums (K, 2), train s, test s, dispatches),
    rows in stacked order."""
    import jax
    import jax.numpy as jnp

    train_chunk, train_scan, evaluate = fns
    x, y, xt, yt = dev
    t, n, o = state
    state = (t, _reseeded(layout, models, n, seeds, epoch), o)
    order = np.stack([np.random.default_rng(seeds[i] * 100_003 + epoch).permutation(x.shape[0]) for i in layout.order])
    chunks = _chunks(order, batch_size, steps)
    t0 = time.perf_counter()
    sums = jnp.zeros((len(layout.order), 2), "float32")
    full = chunks[:(order.shape[1] // batch_size) // steps] if scan else []  # the chunks of `steps` full batches
    if len(full) > 1:
        state, sums = train_scan(state, sums, x, y, jnp.asarray(np.stack(full)))
    rest = chunks[len(full):] if len(full) > 1 else chunks
    for idx in rest:
        state, sums = train_chunk(state, sums, x, y, jnp.asarray(idx))
    sums = np.asarray(jax.block_until_ready(sums))
    t1 = time.perf_counter()
    test = np.zeros((len(layout.order), 2))
    if layout.stacked:  # the test batch is copied to every model and im2col-ed: keep K x batch near eval_batch x 2
        eval_batch = max(32, 2 * eval_batch // len(layout.order))
    for i in range(0, xt.shape[0], eval_batch):
        test += np.asarray(evaluate(state[0], state[1], xt[i:i + eval_batch], yt[i:i + eval_batch]))
    return state, sums, test, t1 - t0, time.perf_counter() - t1, len(rest) + (len(full) > 1)


def _device_arrays(data: Dataset):
    import jax.numpy as jnp

    eye = np.eye(data.num_classes, dtype="float32")
    return (jnp.asarray(data.x_train, "float32"), jnp.asarray(eye[data.y_train]),
            jnp.asarray(data.x_test, "float32"), jnp.asarray(eye[data.y_test]))


def _resume(models: list, dirs: list) -> tuple[list, list[list[dict]]]:
    """Each model's checkpoint where one exists (model replaced, its history rows), else fresh."""
    out = list(models)
    rows: list[list[dict]] = [[] for _ in models]
    for i, d in enumerate(dirs):
        if d is None:
            continue
        saved, hist = training.load_checkpoint(Path(d))
        if saved is not None:
            out[i], rows[i] = saved, hist.to_dict("records")
    return out, rows


def on_accelerator() -> bool:
    import jax

    return jax.default_backend() != "cpu"


def fit_many(models: list, data: Dataset, *, epochs: int, batch_size: int, seed: int | list[int] = 0,
             steps_per_execution: int = 1, eval_batch_size: int = 1000, checkpoint_dirs: list | None = None,
             checkpoint_every_s: float = 60.0, labels: list[str] | None = None, verbose: int = 2,
             log_prefix: str = "", scan: bool | None = None, stack: bool | None = None) -> list[pd.DataFrame]:
    """Train the compiled classifiers ``models`` (one architecture) together (see the module docstring);
    one history per model (:data:`repro.ml.training.HISTORY_COLUMNS`), as :func:`repro.ml.training.fit`
    returns. ``seed``: one for all models or one per model (data order and dropout, as ``fit``'s).
    ``scan``: one dispatch per epoch (default: on an accelerator only). ``stack``: the layers run stacked
    (:mod:`repro.ml.stacked`) rather than ``vmap``-ed (default: where the architecture allows it).

    With ``checkpoint_dirs`` (one per model), earlier interrupted runs are resumed; models whose
    checkpoints stopped at different epochs are trained in groups, one per starting epoch."""
    dirs = list(checkpoint_dirs or [None] * len(models))
    labels = list(labels or [str(i) for i in range(len(models))])
    seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed] * len(models)
    scan = on_accelerator() if scan is None else scan
    models, rows = _resume(models, dirs)
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(len(r), []).append(i)
    dev = _device_arrays(data) if any(start < epochs for start in groups) else None
    for start, members in sorted(groups.items()):
        if start >= epochs:
            continue
        if verbose and start:
            log.info("%sresuming %s after epoch %d", log_prefix, ", ".join(labels[i] for i in members), start)
        pick = lambda xs: [xs[i] for i in members]  # noqa: E731
        group = _Group(pick(models), pick(rows), pick(dirs), pick(labels), pick(seeds), stack)
        group.train(dev, data, start, epochs, batch_size, steps_per_execution, eval_batch_size, checkpoint_every_s,
                    verbose, log_prefix, scan)
    return [pd.DataFrame(r, columns=training.HISTORY_COLUMNS) for r in rows]


class _Group:
    """Models that start at the same epoch, their history rows (appended to), checkpoint dirs, labels, seeds."""

    def __init__(self, models, rows, dirs, labels, seeds, stack=None):
        self.models, self.rows, self.dirs, self.labels, self.seeds = models, rows, dirs, labels, seeds
        self.layout = Layout(models, stack)

    def checkpoint(self, state) -> None:
        if any(d is not None for d in self.dirs):
            self.layout.unstack(self.models, state)
            for m, r, d in zip(self.models, self.rows, self.dirs):
                if d is not None:
                    training._save_checkpoint(m, pd.DataFrame(r, columns=training.HISTORY_COLUMNS), Path(d))

    def record(self, epoch, train, test, t_train, t_test, n, n_test) -> None:
        for j, i in enumerate(self.layout.order):
            r = self.rows[i]
            total = (float(r[-1]["train_time_s"]) if r else 0.0) + t_train
            r.append({"epoch": epoch + 1, "loss": train[j, 0] / n, "accuracy": train[j, 1] / n,
                      "test_loss": test[j, 0] / n_test if n_test else np.nan,
                      "test_accuracy": test[j, 1] / n_test if n_test else np.nan,
                      "epoch_time_s": t_train, "eval_time_s": t_test, "train_time_s": total})

    def train(self, dev, data, start, epochs, batch_size, steps, eval_batch, every_s, verbose, log_prefix, scan):
        """Epochs ``start``..``epochs``; appends to each model's rows, checkpoints, stops at the deadline."""
        fns = _compiled(self.models, self.layout)
        state = self.layout.stack(self.models)
        n, n_test, k = len(data.y_train), len(data.y_test), len(self.models)
        last_save, last_s = time.perf_counter(), 0.0
        progress = Progress(log, f"{log_prefix}epochs", max(epochs - start, 0)) if verbose else None
        for epoch in range(start, epochs):
            if any(d is not None for d in self.dirs) and (why := training.stop_reason(last_s)):
                self.checkpoint(state)
                raise training.DeadlineReached(f"{log_prefix}stopped after epoch {epoch} of {epochs} ({why}); "
                                               "checkpoints written")
            t0 = time.perf_counter()
            try:
                out = _epoch(fns, self.layout, self.models, state, dev, self.seeds, epoch, batch_size, steps,
                             eval_batch, scan)
            except KeyboardInterrupt:  # a hard stop (SIGINT, the campaign's timeout): keep what is done
                self.checkpoint(state)
                raise
            state, train, test, t_train, t_test, calls = out
            self.record(epoch, train, test, t_train, t_test, n, n_test)
            training.epoch_done()
            if progress:
                accs = ", ".join(f"{self.labels[i]} {self.rows[i][-1]['test_accuracy']:.3f}" for i in range(k))
                progress.done(f"(epoch {epoch + 1}/{epochs})", f"{t_train:.1f} s train + {t_test:.1f} s test, "
                              f"{k * n / t_train:,.0f} img/s over {k} models, {calls} dispatches; "
                              f"test accuracy: {accs}")
            if time.perf_counter() - last_save >= every_s or epoch + 1 == epochs:
                self.checkpoint(state)
                last_save = time.perf_counter()
            last_s = time.perf_counter() - t0
        self.layout.unstack(self.models, state)
