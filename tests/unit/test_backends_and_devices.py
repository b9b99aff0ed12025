"""Keras-backend portability and the GPU paths' logic, checked on any machine."""

import numpy as np
import pytest

from repro.cluster.spec import ClusterError, device_env, visible_gpus
from repro.core import provenance
from repro.experiments.speedup.programs import worker_device
from repro.ml import training


def test_gpus_are_handed_to_workers_round_robin_and_nothing_else():
    gpus = visible_gpus({"CUDA_VISIBLE_DEVICES": "2,5"})
    assert gpus == ["2", "5"]
    assert [device_env("worker", i, gpus)["CUDA_VISIBLE_DEVICES"] for i in range(3)] == ["2", "5", "2"]
    for role in ("ps", "chief", "evaluator"):
        assert device_env(role, 0, gpus)["CUDA_VISIBLE_DEVICES"] == ""  # servers never grab a GPU
    assert device_env("worker", 0, gpus)["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert device_env("worker", 1, [])["CUDA_VISIBLE_DEVICES"] == ""  # no GPU: CPU only
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == [] and visible_gpus({}, count=2) == ["0", "1"]
    with pytest.raises(ClusterError, match="role must be one of"):
        device_env("boss", 0, gpus)


def test_the_speedup_probe_times_t_grad_where_training_runs():
    cpu_only = ["/job:worker/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:0/device:CPU:0"]
    assert worker_device(cpu_only) == "/job:worker/replica:0/task:0/device:CPU:0"
    with_gpu = cpu_only + ["/job:worker/replica:0/task:0/device:GPU:1", "/job:worker/replica:0/task:0/device:GPU:0",
                           "/job:ps/replica:0/task:0/device:GPU:0"]
    assert worker_device(with_gpu) == "/job:worker/replica:0/task:0/device:GPU:0"


def test_numpy_input_is_one_hot_and_shuffled_per_seed(monkeypatch):
    monkeypatch.setattr(training, "backend", lambda: "jax")
    x, y = np.arange(10, dtype="float32")[:, None], np.arange(10) % 3
    a = training.epoch_input(x, y, 3, 4, shuffle_seed=7)
    b = training.epoch_input(x, y, 3, 4, shuffle_seed=7)
    c = training.epoch_input(x, y, 3, 4, shuffle_seed=8)
    assert np.array_equal(a["x"], b["x"]) and not np.array_equal(a["x"], c["x"])
    assert a["y"].shape == (10, 3) and np.array_equal(a["y"].argmax(1), (a["x"][:, 0].astype(int)) % 3)
    assert a["batch_size"] == 4 and sorted(a["x"][:, 0]) == list(range(10))


def test_the_backend_is_read_without_importing_keras(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert provenance.keras_backend() == "jax"
    monkeypatch.delenv("KERAS_BACKEND")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    assert provenance.keras_backend() == "tensorflow"
    (tmp_path / "keras.json").write_text('{"backend": "torch"}')
    assert provenance.keras_backend() == "torch"
