"""How to run K copies of the optimizer comparison's CNN in one program: the training step's variants, timed.

Pure JAX (no Keras: it runs on the lent GPU machine as it comes). The network is polishchuk2019's CNN
as ``repro.ml.models.polishchuk_cnn`` builds it (three valid 3x3 convolutions 32-64-64 with ReLU, each
followed by 2x2 max pooling, Dense(64) ReLU, dropout 0.5, Dense(10) softmax; 73,418 parameters), K
models at batch B, cross-entropy, an Adam update of every model (the costliest of the seven optimizers'
element-wise updates), ``STEPS`` minibatches per ``lax.scan`` dispatch. Variants:

* ``vmap``: ``jax.vmap`` of one model's step over the K models (what ``repro.ml.fused`` does through
  Keras today: XLA turns the batched convolutions into grouped ones, ``feature_group_count=K``);
* ``im2col``: the K models stacked by hand: each convolution as its 9 shifted views concatenated and
  one batched matrix product over the model axis (``einsum``), pooling as reshape + max;
* ``im2col-flat``: ``im2col`` with each model's parameters and Adam moments one flat vector (one fused
  update instead of one per variable);
* each at ``precision=highest`` (float32 throughout) and ``default`` (TF32 on an Ampere or later GPU).

For each: milliseconds per step, images/s over the K models, and the ratio to ``vmap`` at the same
precision; the largest relative difference of the gradients from ``vmap``'s at ``highest``. With
``--trace DIR`` a ``jax.profiler`` trace of a few steps of each variant is written there.
A benchmark, not a test: timings are never asserted.

    python benchmarks/stacked_step.py [--k 14] [--batch 32] [--steps 64] [--reps 5] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import time
from pathlib import Path

import numpy as np

log = logging.getLogger("stacked_step")
FILTERS, DENSE, CLASSES, SIDE = (32, 64, 64), 64, 10, 32


def _shapes() -> list[tuple[int, ...]]:
    shapes, c, side = [], 3, SIDE
    for f in FILTERS:
        shapes += [(3, 3, c, f), (f,)]
        c, side = f, (side - 2) // 2
    return shapes + [(side * side * c, DENSE), (DENSE,), (DENSE, CLASSES), (CLASSES,)]


def _init(k: int, rng: np.random.Generator) -> list:
    import jax.numpy as jnp

    return [jnp.asarray((rng.normal(size=(k, *s)) * (0.1 if len(s) > 1 else 0.0)).astype("float32"))
            for s in _shapes()]


def _pool(x):  # 2x2 max pooling, floor, on (..., H, W, C)
    *b, h, w, c = x.shape
    return x[..., :h // 2 * 2, :w // 2 * 2, :].reshape(*b, h // 2, 2, w // 2, 2, c).max(axis=(-4, -2))


def _head(x, params, key, prec):
    """Flattened features -> Dense ReLU -> dropout -> Dense softmax logits (stacked: leading K axis)."""
    import jax
    import jax.numpy as jnp

    w1, b1, w2, b2 = params
    h = jax.nn.relu(jnp.einsum("...bi,...io->...bo", x, w1, precision=prec) + b1[..., None, :])
    if key is not None:  # dropout 0.5 (None: without, to compare the variants' gradients)
        h = jnp.where(jax.random.bernoulli(key, 0.5, h.shape), h / 0.5, 0.0)
    return jnp.einsum("...bi,...io->...bo", h, w2, precision=prec) + b2[..., None, :]


def _one_model(params, x, key, prec):
    """One model's logits: (B, 32, 32, 3) -> (B, 10) with lax convolutions (vmapped over K by the caller)."""
    import jax

    for i in range(3):
        w, b = params[2 * i], params[2 * i + 1]
        x = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         precision=prec)
        x = jax.lax.reduce_window(jax.nn.relu(x + b), -np.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return _head(x.reshape(x.shape[0], -1), params[6:], key, prec)


def _stacked(params, x, key, prec):
    """All K models' logits at once: (K, B, 32, 32, 3) -> (K, B, 10), convolutions as batched products."""
    import jax
    import jax.numpy as jnp

    for i in range(3):
        w, b = params[2 * i], params[2 * i + 1]
        h, wd = x.shape[2] - 2, x.shape[3] - 2
        patches = jnp.concatenate([x[:, :, r:r + h, c:c + wd, :] for r in range(3) for c in range(3)], -1)
        y = jnp.einsum("kbhwi,kio->kbhwo", patches, w.reshape(w.shape[0], -1, w.shape[-1]), precision=prec)
        x = _pool(jax.nn.relu(y + b[:, None, None, None, :]))
    return _head(x.reshape(*x.shape[:2], -1), params[6:], key, prec)


def _xent(logits, y):
    import jax

    return -(jax.nn.log_softmax(logits) * y).sum(-1).mean(-1)


def _adam(p, g, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-7):
    import jax.numpy as jnp

    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return p - lr * (m / (1 - b1 ** t)) / (jnp.sqrt(v / (1 - b2 ** t)) + eps), m, v


def _step_fn(variant: str, prec):
    """(state, (x, y, key)) -> (state, loss (K,)) for one minibatch of all K models."""
    import jax
    import jax.numpy as jnp

    if variant == "vmap":
        def losses(params, x, y, key):
            keys = jax.random.split(key, x.shape[0])
            return jax.vmap(lambda p, xb, yb, kk: _xent(_one_model(p, xb, kk, prec), yb))(params, x, y, keys)
    else:
        def losses(params, x, y, key):
            return _xent(_stacked(params, x, key, prec), y)

    def step(state, batch):
        params, m, v, t = state
        x, y, key = batch
        if variant == "im2col-flat":  # params, m, v: one (K, P) array each
            def total(flat):
                return losses(_unflatten(flat), x, y, key).sum()
            loss = losses(_unflatten(params), x, y, key)
            g = jax.grad(total)(params)
            params, m, v = _adam(params, g, m, v, t + 1)
            return (params, m, v, t + 1), loss
        loss, vjp = jax.vjp(lambda p: losses(p, x, y, key), params)
        g = vjp(jnp.ones_like(loss))[0]
        new = [_adam(p, gi, mi, vi, t + 1) for p, gi, mi, vi in zip(params, g, m, v)]
        return ([n[0] for n in new], [n[1] for n in new], [n[2] for n in new], t + 1), loss

    return step


_SIZES = [int(np.prod(s)) for s in _shapes()]


def _unflatten(flat):
    out, at = [], 0
    for s, n in zip(_shapes(), _SIZES):
        out.append(flat[:, at:at + n].reshape(flat.shape[0], *s))
        at += n
    return out


def _run(variant: str, precision: str, k: int, batch: int, steps: int, reps: int, trace: str | None) -> dict:
    import jax
    import jax.numpy as jnp

    prec = jax.lax.Precision.HIGHEST if precision == "highest" else jax.lax.Precision.DEFAULT
    rng = np.random.default_rng(0)
    params = _init(k, rng)
    if variant == "im2col-flat":
        params = jnp.concatenate([p.reshape(k, -1) for p in params], 1)
        m, v = jnp.zeros_like(params), jnp.zeros_like(params)
    else:
        m, v = [jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params]
    xs = jnp.asarray(rng.random((steps, k, batch, SIDE, SIDE, 3), dtype="float32"))
    ys = jax.nn.one_hot(jnp.asarray(rng.integers(0, CLASSES, (steps, k, batch))), CLASSES)
    keys = jax.random.split(jax.random.key(0), steps)
    step = _step_fn(variant, prec)
    run = jax.jit(lambda s, b: jax.lax.scan(step, s, b))
    state = (params, m, v, jnp.float32(0))
    t0 = time.perf_counter()
    jax.block_until_ready(run(state, (xs, ys, keys)))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(run(state, (xs, ys, keys)))
        times.append(time.perf_counter() - t0)
    if trace:
        with jax.profiler.trace(str(Path(trace) / f"{variant}-{precision}")):
            jax.block_until_ready(run(state, (xs, ys, keys)))
    ms = float(np.median(times)) / steps * 1e3
    return {"variant": variant, "precision": precision, "compile_s": compile_s, "ms_per_step": ms,
            "images_per_s": k * batch / ms * 1e3, "step_times_s": times}


def _grad_gap(k: int, batch: int) -> float:
    """Largest relative difference of the im2col gradients from the vmap ones (float32, highest)."""
    import jax
    import jax.numpy as jnp

    prec = jax.lax.Precision.HIGHEST
    rng = np.random.default_rng(1)
    params = _init(k, rng)
    x = jnp.asarray(rng.random((k, batch, SIDE, SIDE, 3), dtype="float32"))
    y = jax.nn.one_hot(jnp.asarray(rng.integers(0, CLASSES, (k, batch))), CLASSES)
    key = None  # without dropout: the variants draw their masks differently
    ga = jax.grad(lambda p: _xent(jax.vmap(lambda q, xb: _one_model(q, xb, key, prec))(p, x), y).sum())(params)
    gb = jax.grad(lambda p: _xent(_stacked(p, x, key, prec), y).sum())(params)
    return max(float(jnp.abs(a - b).max() / (jnp.abs(a).max() + 1e-30)) for a, b in zip(ga, gb))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=14, help="models (7 optimizers x 2 seeds)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=64, help="minibatches per scan dispatch")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--variants", default="vmap,im2col,im2col-flat")
    ap.add_argument("--precisions", default="highest,default")
    ap.add_argument("--trace", default=None, help="a directory for jax.profiler traces")
    ap.add_argument("--out", default=None, help="JSON file of the results")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    import jax

    dev = jax.devices()[0]
    report = {"args": vars(args), "jax": jax.__version__, "device": dev.device_kind, "backend": jax.default_backend(),
              "host": platform.node(), "grad_gap_im2col_vs_vmap": _grad_gap(min(args.k, 4), 8), "runs": []}
    log.info("%s (%s): gradient gap im2col vs vmap %.2e", dev.device_kind, jax.default_backend(),
             report["grad_gap_im2col_vs_vmap"])
    combos = [(v, p) for p in args.precisions.split(",") for v in args.variants.split(",")]
    for i, (variant, precision) in enumerate(combos):
        r = _run(variant, precision, args.k, args.batch, args.steps, args.reps, args.trace)
        base = next((b for b in report["runs"] if b["variant"] == "vmap" and b["precision"] == precision), r)
        r["ratio_to_vmap"] = base["ms_per_step"] / r["ms_per_step"]
        report["runs"].append(r)
        log.info("%d/%d %s %s: compile %.1f s, %.3f ms/step, %s img/s over %d models, %.2fx vmap",
                 i + 1, len(combos), variant, precision, r["compile_s"], r["ms_per_step"],
                 f"{r['images_per_s']:,.0f}", args.k, r["ratio_to_vmap"])
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
