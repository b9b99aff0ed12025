"""Write src/repro/predict/layers.csv: per layer of each model the analytic model knows, its trainable
weights (the gradient bytes that become ready when its backward step ends) and its forward FLOPs (2 per
multiply-accumulate of Conv2D and Dense, the share of the backward pass it takes).

Run once where Keras is installed (``.venv/bin/python tools/layer_table.py``); the CSV is committed, so
``repro predict`` never builds a model. Models: keras.applications at 224x224 (Inception V3 at 299x299),
1000 classes, include_top, weights=None; AlexNet as the one-tower network of Krizhevsky 2014 ("One weird
trick", the variant distributed benchmarks ran: 64-192-384-256-256 filters, 4096-4096-1000 dense).
"""

from __future__ import annotations

import csv
import logging
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "src" / "repro" / "cluster" / "layers.csv"
log = logging.getLogger("layer_table")


def _alexnet(keras):
    L = keras.layers
    return keras.Sequential([
        keras.Input((224, 224, 3)),
        L.Conv2D(64, 11, strides=4, padding="same", activation="relu"), L.MaxPooling2D(3, 2),
        L.Conv2D(192, 5, padding="same", activation="relu"), L.MaxPooling2D(3, 2),
        L.Conv2D(384, 3, padding="same", activation="relu"), L.Conv2D(256, 3, padding="same", activation="relu"),
        L.Conv2D(256, 3, padding="same", activation="relu"), L.MaxPooling2D(3, 2), L.Flatten(),
        L.Dense(4096, activation="relu"), L.Dense(4096, activation="relu"), L.Dense(1000)])


def _models(keras):
    apps = keras.applications
    return {"vgg16": lambda: apps.VGG16(weights=None), "vgg19": lambda: apps.VGG19(weights=None),
            "resnet50": lambda: apps.ResNet50(weights=None), "resnet101": lambda: apps.ResNet101(weights=None),
            "resnet152": lambda: apps.ResNet152(weights=None), "inception_v3": lambda: apps.InceptionV3(weights=None),
            "alexnet": lambda: _alexnet(keras)}


def _flops(layer) -> int:
    kind = type(layer).__name__
    if kind == "Conv2D":
        out, cin = layer.output.shape, int(layer.input.shape[-1])
        kh, kw = layer.kernel_size
        return 2 * int(out[1]) * int(out[2]) * int(out[3]) * kh * kw * cin // layer.groups
    if kind == "Dense":
        return 2 * int(layer.input.shape[-1]) * layer.units
    return 0


def rows(name, model):
    for i, layer in enumerate(model.layers):
        params = int(sum(np.prod(w.shape) for w in layer.trainable_weights))
        if params:
            yield {"model": name, "order": i, "layer": layer.name, "params": params, "flops": _flops(layer)}


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    import keras

    out = []
    for name, build in _models(keras).items():
        model = build()
        got = list(rows(name, model))
        log.info("%s: %d layers with weights, %.1f M trainable, %.2f GFLOPs", name, len(got),
                 sum(r["params"] for r in got) / 1e6, sum(r["flops"] for r in got) / 1e9)
        out += got
        keras.backend.clear_session()
    with open(OUT, "w", newline="") as fh:
        w = csv.DictWriter(fh, ["model", "order", "layer", "params", "flops"])
        w.writeheader()
        w.writerows(out)
    log.info("wrote %s (%d rows)", OUT, len(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
