"""The work of one child process of the sweep (runs inside a process pinned to k cores).

Keras and its backend (``KERAS_BACKEND``: TensorFlow, JAX, ...) are imported here only, inside the
functions: the parent never starts them. Everything backend-specific goes through
:mod:`repro.ml.training` (thread limits, GPU count, multi-GPU distribution, GPU peak memory). The sweep
(:func:`repro.experiments.cost_study.sweep.run_child`) calls these by their entry strings
:data:`TRAIN_ENTRY` and :data:`COUNT_GPUS_ENTRY`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from repro.experiments.cost_study import sweep
from repro.ml import data as _data
from repro.ml import models, optim, training

TRAIN_ENTRY = "repro.experiments.cost_study.child:train_task"
COUNT_GPUS_ENTRY = "repro.experiments.cost_study.child:count_gpus_task"


def build_network(network: str, input_shape, num_classes: int, learning_rate: float):
    """The paper's network, compiled with Adam and categorical cross-entropy."""
    build = models.mnist_cnn if network == "mnist_cnn" else models.cifar10_cnn
    return optim.compile_classifier(build(input_shape, num_classes), "adam", learning_rate)


def train_task(task: dict) -> dict:
    """Child entry point: start Keras on its backend pinned to the task's cores, then time every phase."""
    t0 = time.perf_counter()
    affinity = sorted(os.sched_getaffinity(0))
    import keras

    threads = training.configure_threads(len(task["cores"]))
    device = training.device_summary()  # the backend's own device list (starts the backend)
    t_framework = time.perf_counter() - t0

    t1 = time.perf_counter()
    ds = _data.load(task["dataset"], task["n_train"] or None, task["n_test"] or None, seed=task["seed"])
    t_data = time.perf_counter() - t1

    g = int(task["gpus"])
    with training.gpu_distribution(g):  # MirroredStrategy (TensorFlow) or DataParallel (JAX) on g GPUs
        t2 = time.perf_counter()
        keras.utils.set_random_seed(task["seed"])
        model = build_network(task["network"], ds.input_shape, ds.num_classes, task["learning_rate"])
        t_build = time.perf_counter() - t2

        t3 = time.perf_counter()
        history = training.fit(model, ds, epochs=task["epochs"], batch_size=task["batch_size"], seed=task["seed"],
                               verbose=0, evaluate=True)
        t_fit = time.perf_counter() - t3
    t_verify = float(history["eval_time_s"].sum())

    t4 = time.perf_counter()
    out_dir = Path(task["workdir"]) / "saved"
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(out_dir / "model.keras")
    history.to_csv(out_dir / "history.csv", index=False)
    saved_bytes = sum(p.stat().st_size for p in out_dir.iterdir())
    t_save = time.perf_counter() - t4

    gpu_peak = training.gpu_peak_memory_mb(g)
    return {
        "affinity_inside": affinity,
        "backend": device["backend"], "backend_version": device["backend_version"],
        "intra_op_threads": threads.get("intra_op_threads", float("nan")),
        "inter_op_threads": threads.get("inter_op_threads", float("nan")),
        "xla_flags": threads.get("xla_flags", ""),
        "threads_inside": len(os.listdir("/proc/self/task")),
        "gpus_visible_inside": device["gpus_visible"],
        "t_framework_s": t_framework, "t_data_load_s": t_data, "t_build_s": t_build,
        "t_learn_s": t_fit - t_verify, "t_verify_s": t_verify, "t_save_data_s": t_save,
        "t_epochs_train_s": float(history["epoch_time_s"].sum()),
        "peak_rss_mb": sweep.peak_rss_mb(),
        "peak_gpu_mem_mb": max(gpu_peak) if gpu_peak else float("nan"),
        "saved_bytes": saved_bytes,
        "parameters": int(model.count_params()),
        "n_train": int(ds.info["n_train"]), "n_test": int(ds.info["n_test"]),
        "final_test_accuracy": float(history["test_accuracy"].iloc[-1]),
        "history": history.to_dict("records"),
    }


def count_gpus_task(task: dict) -> dict:
    """Child entry point: the backend and how many GPUs it sees (keeps the backend out of the parent)."""
    return training.device_summary()
