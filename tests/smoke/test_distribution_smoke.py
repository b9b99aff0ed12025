"""The multi-GPU path of the cost study (``repro.ml.training.gpu_distribution``: TensorFlow's
MirroredStrategy, Keras's DataParallel under JAX) run on two logical CPU devices, since no GPU is here:
data-parallel training over two replicas lands where one device lands at the same global batch."""

import json
import subprocess
import sys

import pytest

from repro.core import paths

CHILD = r"""
import json, sys
import numpy as np
backend = sys.argv[1]
if backend == "tensorflow":
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from repro.ml import data, models, optim, training

ds = data.load("mnist_subset_rgb32", 256, 64, seed=0)

def trained(replicas):
    with training.gpu_distribution(replicas, device_type="cpu"):
        keras.utils.set_random_seed(0)
        model = optim.compile_classifier(models.polishchuk_cnn(ds.input_shape, ds.num_classes, [8, 16, 16], 16, 0.0),
                                         "momentum", 1e-2, 0.9)
        hist = training.fit(model, ds, epochs=2, batch_size=32, seed=0, verbose=0)
        if backend == "jax":  # where the variables live
            return model.get_weights(), hist, len(model.trainable_variables[0].value.devices())
        import tensorflow as tf
        return model.get_weights(), hist, tf.distribute.get_strategy().num_replicas_in_sync

w1, h1, _ = trained(0)
w2, h2, placed = trained(2)
gap = max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2))
moved = max(float(np.max(np.abs(a))) for a in w1)
print(json.dumps({"gap": gap, "weights": moved, "loss_gap": float(np.max(np.abs(h1["loss"] - h2["loss"]))),
                  "replicas": placed}))
"""


@pytest.mark.parametrize("backend", ["tensorflow", pytest.param("jax", marks=pytest.mark.extras)])
def test_two_replicas_train_as_one_device_does(backend, tmp_path, request):
    if backend == "jax":
        request.getfixturevalue("need_jax")
    env = {"KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2", "PATH": "/usr/bin:/bin",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run([sys.executable, "-c", CHILD, backend], env=env, capture_output=True, text=True,
                         timeout=600, cwd=paths.project_root())
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["weights"] > 0.01  # it trained
    assert res["gap"] <= 1e-4 and res["loss_gap"] <= 1e-4, res  # summed replica gradients = one global batch
    assert res["replicas"] == 2  # MirroredStrategy's replicas in sync; under JAX, the devices holding a variable
