"""K models of one Keras ``Sequential`` architecture run forward as one stacked program (JAX only).

:mod:`repro.ml.fused` trains K copies of a small CNN at once. ``jax.vmap`` of the model's
``stateless_call`` over the copies lets XLA turn each batched convolution into a grouped one
(``feature_group_count=K``), which cuDNN runs as many small kernels and layout transposes: on an H100 the
optimizer comparison's step took 1.3 ms, the GPU busy but mostly on transposes and pooling scatters
(``benchmarks/stacked_step.py``, ``benchmarks/results/gpu-h100-2026-11-27-stacked-step``). Here every
layer that has a stacked form gets one:

* ``Conv2D`` (stride 1, no dilation, one group, ``channels_last``, padding ``valid`` or ``same``): its
  ``kh * kw`` shifted views of the input concatenated along the channels (im2col) and one matrix
  product batched over the model axis (``einsum``), then bias and activation;
* ``MaxPooling2D`` (pool = strides, ``valid``, ``channels_last``): a reshape and a max;
* ``Dense`` (on the last axis), ``Flatten``, ``InputLayer``;

and every other layer (``Dropout``, with its own seed state per model, so each model draws the masks
``model.fit`` draws it; a frozen, LoRA or quantized ``Conv2D`` or ``Dense``) runs ``jax.vmap`` of its own
``stateless_call``. On the H100 the stacked step is
2.1x (TF32) to 2.9x (float32) the vmapped one, its gradients equal within 4e-7. Each layer computes in
its dtype policy's compute dtype (inputs and weights cast as Keras's autocast does). A model that is not a
``Sequential`` of such layers is not stackable (:func:`stackable` says why) and :mod:`repro.ml.fused`
falls back to ``vmap`` of the whole model.
"""

from __future__ import annotations

from typing import Any


def _conv_ok(layer) -> str:
    if tuple(layer.strides) != (1, 1) or tuple(layer.dilation_rate) != (1, 1) or layer.groups != 1:
        return "strides, dilation or groups other than 1"
    if layer.data_format != "channels_last" or layer.padding not in ("valid", "same"):
        return f"data format {layer.data_format}, padding {layer.padding}"
    if layer.padding == "same" and any(k % 2 == 0 for k in layer.kernel_size):
        return "padding same with an even kernel"
    return ""


def _pool_ok(layer) -> str:
    if tuple(layer.pool_size) != tuple(layer.strides) or layer.padding != "valid" \
            or layer.data_format != "channels_last":
        return "pooling other than non-overlapping, valid, channels_last"
    return ""


def _kind(layer) -> tuple[str, str]:
    """(how the layer runs stacked: 'conv', 'pool', 'dense', 'flatten', 'input' or 'vmap'; why not, if not)."""
    from keras import layers

    if type(layer) in (layers.Conv2D, layers.Dense) and (not layer.trainable or getattr(layer, "lora_enabled", False)
                                                        or getattr(layer, "quantization_mode", None)):
        return "vmap", ""  # frozen (weights among the non-trainable values), LoRA or quantized: the layer's own call
    if type(layer) is layers.Conv2D:
        why = _conv_ok(layer)
        return ("conv", "") if not why else ("", f"{layer.name}: {why}")
    if type(layer) is layers.MaxPooling2D:
        why = _pool_ok(layer)
        return ("pool", "") if not why else ("", f"{layer.name}: {why}")
    if type(layer) is layers.Dense:
        return "dense", ""
    if type(layer) is layers.Flatten:
        return ("flatten", "") if layer.data_format == "channels_last" else ("", f"{layer.name}: channels_first")
    if type(layer) is layers.InputLayer:
        return "input", ""
    return "vmap", ""


def stackable(model) -> str:
    """Empty where :func:`forward` runs ``model`` by default; else why not (one line). A float16 or bfloat16
    compute dtype is not stacked by default: its products, summed in float16 by ``einsum`` and by cuDNN's
    grouped convolution in their own orders, move Adam's trajectories apart by more than the 5e-3 in the
    loss that ``tests/jax_cases/fused_cases.py`` allows the vmapped program (9.8e-3 seen); float32 and
    float64 follow ``model.fit`` within 1e-5."""
    import keras

    if not isinstance(model, keras.Sequential):
        return f"{type(model).__name__} is not a Sequential"
    if any(layer.compute_dtype in ("float16", "bfloat16") for layer in model.layers):
        return "a 16-bit compute dtype (mixed precision)"
    whys = [why for layer in model.layers for kind, why in [_kind(layer)] if not kind]
    return "; ".join(whys)


def _conv(x, w, layer):
    """Stacked Conv2D without bias: x (K, B, H, W, C), w (K, kh, kw, C, F)."""
    import jax.numpy as jnp

    kh, kw = layer.kernel_size
    if layer.padding == "same":
        x = jnp.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    h, wd = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    views = [x[:, :, r:r + h, c:c + wd, :] for r in range(kh) for c in range(kw)]
    patches = views[0] if len(views) == 1 else jnp.concatenate(views, axis=-1)
    return jnp.einsum("kbhwi,kio->kbhwo", patches, w.reshape(w.shape[0], -1, w.shape[-1]))


def _pool(x, layer):
    """Stacked non-overlapping max pooling on (K, B, H, W, C), floor as ``valid``."""
    ph, pw = layer.pool_size
    k, n, h, w, c = x.shape
    x = x[:, :, :h // ph * ph, :w // pw * pw, :]
    return x.reshape(k, n, h // ph, ph, w // pw, pw, c).max(axis=(3, 5))


def _dense(x, w):
    import jax.numpy as jnp

    return jnp.einsum("kb...i,kio->kb...o", x, w)  # a Dense acts on the last axis, whatever the rank


def _own(layer, t: list, n: list, t_at: dict, n_at: dict) -> tuple[list, list]:
    """The layer's trainable and non-trainable values (stacked) out of the model's lists."""
    return [t[t_at[id(v)]] for v in layer.trainable_variables], [n[n_at[id(v)]] for v in layer.non_trainable_variables]


def _apply(layer, kind: str, x, tv: list, nv: list, training: bool) -> tuple[Any, list]:
    """One layer on the stacked x: (output, the layer's new non-trainable values)."""
    import jax

    dtype = layer.compute_dtype
    if kind == "vmap":
        def one(tv_, nv_, x_):
            return layer.stateless_call(tv_, nv_, x_, training=training)

        return jax.vmap(one)(tv, nv, x)
    if kind in ("input",):
        return x, nv
    if kind == "flatten":
        return x.reshape(x.shape[0], x.shape[1], -1), nv
    if kind == "pool":
        return _pool(x.astype(dtype), layer), nv
    x, w = x.astype(dtype), tv[0].astype(dtype)
    y = _conv(x, w, layer) if kind == "conv" else _dense(x, w)
    if layer.use_bias:
        b = tv[1].astype(dtype)  # (K, F) against y (K, B, ..., F)
        y = y + b.reshape(b.shape[0], *(1,) * (y.ndim - 2), b.shape[-1])
    return (layer.activation(y) if layer.activation is not None else y), nv


def forward(model, t: list, n: list, x, training: bool) -> tuple[Any, list]:
    """``model.stateless_call`` for K stacked models: ``t``, ``n`` the stacked trainable and non-trainable
    values (leading axis K, in the model's variable order), ``x`` (K, B, ...). Returns (outputs (K, B, ...),
    the new stacked non-trainable values). The model must be :func:`stackable`."""
    t_at = {id(v): i for i, v in enumerate(model.trainable_variables)}
    n_at = {id(v): i for i, v in enumerate(model.non_trainable_variables)}
    n = list(n)
    for layer in model.layers:
        kind, why = _kind(layer)
        if not kind:
            raise ValueError(f"stacked.forward: {why}")
        tv, nv = _own(layer, t, n, t_at, n_at)
        x, new = _apply(layer, kind, x, tv, nv, training)
        for v, val in zip(layer.non_trainable_variables, new):
            n[n_at[id(v)]] = val
    return x, n
