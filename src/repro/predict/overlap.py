"""Communication overlapped with the backward pass: when each layer's gradients are ready, how
they are packed into messages, and when the last message is through.

Sources of each term:

* **Backward share** :data:`BACKWARD_SHARE`: the backward pass computes two products per forward
  one (the gradient of the layer's input and of its weights), so it takes 2/3 of a step's compute;
  a layer's share of the backward pass is its share of the model's forward FLOPs. Layers become
  ready in reverse order: the last layer's gradients first.
* **Layer sizes and FLOPs**: ``layers.csv`` beside this module, written by ``tools/layer_table.py``
  from the Keras models (trainable weights; 2 FLOPs per multiply-accumulate of Conv2D and Dense).
* **Fusion and cycle time** (Horovod's tensor fusion): a background thread wakes every
  ``cycle_s`` and all-reduces the tensors that are ready by then, packed into buffers of at most
  ``fusion_bytes`` (Horovod 0.11-0.16 defaults: ``HOROVOD_CYCLE_TIME`` 5 ms,
  ``HOROVOD_FUSION_THRESHOLD`` 64 MiB). TensorFlow's own collectives and a parameter server's
  per-variable pushes send each tensor when it is ready: ``fusion_bytes = 0`` (one message per
  layer), ``cycle_s = 0``.
* **DDP's buckets** (:func:`buckets`): PyTorch DistributedDataParallel cuts the gradients once into buckets of
  ``bucket_cap_mb`` (25 MiB; the first 1 MiB) in the order the backward pass makes them ready and all-reduces a
  bucket once its last gradient is ready (Li et al., VLDB 2020, section 3.2.3): a profile with a fusion buffer and
  no cycle (``cycle_s = 0``) has them.
* **Weights read as the forward pass needs them** (a TensorFlow parameter server): each layer
  waits for its weights, which arrive in forward order (:func:`forward_end`).
* **One channel**: messages go through the network one after another (an all-reduce or a push
  takes every link of its path); Horovod's single background thread packs what is ready whenever
  the channel is free, so a slow channel sends fewer, larger messages (:func:`finish`).
"""

from __future__ import annotations

import csv
import math
from functools import lru_cache
from importlib import resources

from .errors import PredictError

BACKWARD_SHARE = 2 / 3
HOROVOD_FUSION_BYTES = 64 * 2**20
HOROVOD_CYCLE_S = 0.005


@lru_cache(maxsize=1)
def _table() -> dict[str, list[tuple[int, int]]]:
    text = resources.files(__package__).joinpath("layers.csv").read_text(encoding="utf-8")
    out: dict[str, list[tuple[int, int]]] = {}
    for row in csv.DictReader(text.splitlines()):
        out.setdefault(row["model"], []).append((int(row["params"]), int(row["flops"])))
    return out


def models() -> list[str]:
    """The models whose layers are known (the others are modelled without overlap)."""
    return list(_table())


def layers(model: str) -> list[tuple[int, int]]:
    """(trainable weights, forward FLOPs) of each layer with weights, in forward order."""
    if model not in _table():
        raise PredictError(f"model {model!r} has no layer table (known: {', '.join(models())})")
    return _table()[model]


def ready(model: str, compute_s: float) -> list[tuple[float, float]]:
    """(seconds after the step starts, bytes of float32 gradients) of each layer, in the order the
    backward pass finishes them."""
    rows = layers(model)
    total = sum(f for _, f in rows) or 1.0
    t, out = (1 - BACKWARD_SHARE) * compute_s, []
    for params, flops in reversed(rows):
        t += BACKWARD_SHARE * compute_s * flops / total
        out.append((t, 4.0 * params))
    return out


def forward_end(model: str, compute_s: float, nbytes: float, seconds) -> float:
    """When the forward pass ends if each layer runs only once its weights have arrived: the weights
    (``nbytes`` in all, shared by the layers as their trainable weights) come in forward order over
    one channel (``seconds(bytes)`` a layer's time on it), as TensorFlow reads a parameter server's
    variables when the forward pass needs them."""
    rows = layers(model)
    flops, weights = sum(f for _, f in rows) or 1.0, sum(n for n, _ in rows)
    arrived = t = 0.0
    for params, f in rows:
        arrived += seconds(nbytes * params / weights)
        t = max(t, arrived) + (1 - BACKWARD_SHARE) * compute_s * f / flops
    return t


DDP_FIRST_BUCKET_BYTES = 2**20  # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES (1 MiB)


def buckets(events: list[tuple[float, float]], cap_bytes: float,
            first_bytes: float = DDP_FIRST_BUCKET_BYTES) -> list[tuple[float, float]]:
    """PyTorch DDP's buckets: the gradients, in the order the backward pass makes them ready, cut once into buckets
    of at most ``cap_bytes`` (``bucket_cap_mb``, 25 MiB by default; the first one ``first_bytes``, so that the
    first all-reduce starts early), each bucket ready when its last gradient is (Li et al., "PyTorch Distributed",
    VLDB 2020, section 3.2.3: a bucket is all-reduced once every gradient in it is ready). Unlike Horovod's fusion,
    which packs whatever is ready when the channel is free, a bucket waits for its own last layer: the all-reduce
    can hide only behind the backward pass that remains by then. Returns (seconds, bytes) per bucket."""
    out: list[tuple[float, float]] = []
    fill, cap, ready = 0.0, first_bytes, 0.0
    for t, b in events:
        if fill and fill + b > cap:
            out.append((ready, fill))
            fill, cap = 0.0, cap_bytes
        fill, ready = fill + b, t
    if fill:
        out.append((ready, fill))
    return out


def finish(events: list[tuple[float, float]], fusion_bytes: float, cycle_s: float, seconds) -> float:
    """When the last gradient is through one channel (``seconds(bytes)``: one message's time on it).

    With fusion (``fusion_bytes > 0``, Horovod) one background thread sends one message at a time: at
    the first cycle tick after the channel is free and a tensor is ready, it packs every tensor ready
    by then, up to ``fusion_bytes`` (a larger tensor goes alone); tensors that become ready while a
    message is on the wire wait for the next, so a slow channel sends fewer, larger messages. Without
    fusion each tensor is one message, sent when it is ready and the channel is free."""
    end, i = 0.0, 0
    while i < len(events):
        t = max(end, events[i][0])
        if fusion_bytes > 0 and cycle_s > 0:
            t = math.ceil(t / cycle_s - 1e-9) * cycle_s
        fill = 0.0
        while i < len(events) and events[i][0] <= t + 1e-12 and (not fill or fill + events[i][1] <= fusion_bytes):
            fill += events[i][1]
            i += 1
        end = t + seconds(fill)
    return end
