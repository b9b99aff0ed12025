"""The paper's models of the distributed benchmark (`polishchuk2019` part B): their input sizes, how they
are built (``keras.applications``, no pretrained weights; InceptionV4 by :mod:`.inception_v4`) and a digest
of their weights (are the replicas identical?). Keras is imported inside the functions: cluster programs
import this module before TensorFlow."""

from __future__ import annotations

import hashlib

PAPER_SIZE = {"tiny": 32, "vgg16": 224, "vgg19": 224, "resnet50": 224, "resnet152": 224, "inception_v3": 299,
              "inception_v4": 299}
MIN_SIZE = {"tiny": 16, "vgg16": 32, "vgg19": 32, "resnet50": 32, "resnet152": 32, "inception_v3": 75,
            "inception_v4": 75}
APPLICATIONS = {"vgg16": "VGG16", "vgg19": "VGG19", "resnet50": "ResNet50", "resnet152": "ResNet152",
                "inception_v3": "InceptionV3"}


def build_model(name: str, image_size: int, num_classes: int):
    """A Keras model: ``tiny`` = :func:`repro.ml.models.small_cnn`, ``inception_v4`` =
    :func:`.inception_v4.inception_v4`, else ``keras.applications`` with ``weights=None``."""
    import keras

    shape = (image_size, image_size, 3)
    if name == "tiny":
        from repro.ml.models import small_cnn

        return small_cnn(shape, num_classes)
    if name == "inception_v4":
        from repro.experiments.distributed.inception_v4 import inception_v4

        return inception_v4(shape, num_classes)
    app = getattr(keras.applications, APPLICATIONS[name])
    return app(weights=None, input_shape=shape, classes=num_classes)


def weights_digest(model) -> dict:
    """SHA-256 and sum of the trainable weights (batch-norm moving statistics are per replica, not all-reduced)."""
    import numpy as np

    arrays = [np.ascontiguousarray(v.numpy()) for v in model.trainable_weights]
    h = hashlib.sha256()
    for a in arrays:  # the bytes in place and a float64 accumulator: no copies (VGG16: 0.6 s, not 3.2)
        h.update(a.data.cast("B"))
    return {"weights_sha256": h.hexdigest(), "weights_sum": float(sum(float(a.sum(dtype=np.float64)) for a in arrays))}
