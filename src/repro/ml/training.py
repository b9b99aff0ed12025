"""Training helper shared by the experiments: per-epoch metrics and wall time, resume, any Keras backend.

The input pipeline is ``tf.data`` under the TensorFlow backend and NumPy arrays (shuffled per
``(seed, epoch)`` the same way) under JAX or PyTorch, so the experiments run unchanged with
``KERAS_BACKEND=tensorflow|jax|torch``.

:func:`fit` trains a compiled Keras model one epoch per ``model.fit`` call so that

* every epoch's shuffle order depends only on ``(seed, epoch)`` and a run resumed from a
  checkpoint sees exactly the batches an uninterrupted run would have seen;
* after each epoch the model (weights and optimizer state) and the history so far can be
  checkpointed atomically, and a later call with the same ``checkpoint_dir`` continues from
  the last completed epoch.

Epoch wall time is measured around the training part only (the test-set evaluation that
follows is timed separately), which is what the papers report.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from repro.core import errors
from repro.core.progress import Progress
from repro.core.results import csv_text
from repro.ml.data import Dataset

log = logging.getLogger(__name__)

HISTORY_COLUMNS = ["epoch", "loss", "accuracy", "test_loss", "test_accuracy", "epoch_time_s", "eval_time_s",
                   "train_time_s"]


THREAD_ENV = ("OMP_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "MKL_NUM_THREADS",
              "OPENBLAS_NUM_THREADS")
XLA_SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false"

DEADLINE_ENV = "REPRO_DEADLINE"  # unix time (s): no checkpointed epoch starts that would end after it
STOP_AFTER_ENV = "REPRO_STOP_AFTER_EPOCHS"  # stop the same way after this many epochs in this process (tests)
_EPOCHS_DONE = [0]  # epochs trained in this process by checkpointed training (fit, fused.fit_many)


# checkpointed training stopped before an epoch at ``REPRO_DEADLINE`` (or after ``REPRO_STOP_AFTER_EPOCHS``);
# its checkpoints are written, and a rerun resumes from them (exit 3)
DeadlineReached = errors.DeadlineReached


def stop_reason(next_epoch_s: float) -> str | None:
    """Why the next epoch, expected to take ``next_epoch_s``, must not start; None if it may."""
    stop = os.environ.get(STOP_AFTER_ENV)
    if stop and _EPOCHS_DONE[0] >= int(stop):
        return f"{STOP_AFTER_ENV}={stop}: {_EPOCHS_DONE[0]} epochs trained in this process"
    deadline = os.environ.get(DEADLINE_ENV)
    if deadline and time.time() + next_epoch_s > float(deadline):
        return f"the next epoch (~{next_epoch_s:.1f} s) would end after {DEADLINE_ENV}"
    return None


def epoch_done() -> None:
    _EPOCHS_DONE[0] += 1


def thread_env(cores: int, environ: dict | None = None) -> dict:
    """Environment limiting a process that will run Keras to ``cores`` threads, whatever the backend.

    Set it before the backend is imported. TensorFlow reads its ``TF_NUM_*`` variables (and
    :func:`configure_threads` sets its pools too); BLAS/OpenMP read theirs. JAX 0.4.38 has no
    thread-count flag: XLA sizes its CPU thread pools from the process's CPU affinity (pin with
    ``sched_setaffinity``), and with one core ``--xla_cpu_multi_thread_eigen=false`` (appended to
    ``XLA_FLAGS``) also turns off Eigen's intra-op threading. (``intra_op_parallelism_threads=N``,
    often quoted, is not an XLA flag: XLA ignores it.)
    """
    from repro.core.provenance import keras_backend

    env = {name: str(cores) for name in THREAD_ENV}
    flags = (environ if environ is not None else os.environ).get("XLA_FLAGS", "")
    if keras_backend() == "jax" and cores == 1 and XLA_SINGLE_THREAD not in flags:
        env["XLA_FLAGS"] = f"{flags} {XLA_SINGLE_THREAD}".strip()
    return env


def configure_threads(cores: int | None) -> dict:
    """Limit the backend's thread pools to ``cores`` (call before the backend runs any op); returns
    what was set, for provenance. TensorFlow: its intra-/inter-op pools. JAX: nothing can be set
    once it is imported; the record says what :func:`thread_env` put in ``XLA_FLAGS`` and the
    affinity XLA sizes its pools from. PyTorch: ``torch.set_num_threads``."""
    name = backend()
    out = {"backend": name, "cores": cores or None}
    if name == "tensorflow":
        import tensorflow as tf

        if cores:
            tf.config.threading.set_intra_op_parallelism_threads(cores)
            tf.config.threading.set_inter_op_parallelism_threads(cores)
        out.update(intra_op_threads=tf.config.threading.get_intra_op_parallelism_threads(),
                   inter_op_threads=tf.config.threading.get_inter_op_parallelism_threads())
    elif name == "jax":
        out.update(xla_flags=os.environ.get("XLA_FLAGS", ""),
                   limit="XLA thread pools sized from the CPU affinity" + (f" ({cores} cores)" if cores else ""))
    elif name == "torch":
        import torch

        if cores:
            torch.set_num_threads(cores)
        out.update(intra_op_threads=torch.get_num_threads())
    return out


def backend() -> str:
    """The Keras backend in use (``KERAS_BACKEND``): tensorflow, jax or torch."""
    import keras

    return keras.backend.backend()


def gpu_count(name: str | None = None) -> int:
    """GPUs the backend ``name`` (default: Keras's) sees, from the backend's own device list."""
    name = name or backend()
    if name == "tensorflow":
        import tensorflow as tf

        return len(tf.config.list_physical_devices("GPU"))
    if name == "jax":
        import jax

        return sum(d.platform == "gpu" for d in jax.devices())
    if name == "torch":
        import torch

        return torch.cuda.device_count()
    return 0


_gpus = gpu_count


def gpu_peak_memory_mb(g: int) -> list[float]:
    """Peak memory (MB) of each of the first ``g`` GPUs, as the backend reports it (NaN where it cannot)."""
    name, out = backend(), []
    for i in range(g):
        try:
            if name == "tensorflow":
                import tensorflow as tf

                peak = tf.config.experimental.get_memory_info(f"GPU:{i}")["peak"]
            elif name == "jax":
                import jax

                peak = (jax.devices("gpu")[i].memory_stats() or {})["peak_bytes_in_use"]
            else:
                import torch

                peak = torch.cuda.max_memory_allocated(i)
            out.append(peak / 2**20)
        except (ValueError, RuntimeError, KeyError, IndexError):
            out.append(float("nan"))
    return out


def gpu_distribution(g: int, device_type: str = "gpu"):
    """Context for building and training on ``g`` GPUs: TensorFlow's MirroredStrategy, Keras's
    DataParallel distribution under JAX, nothing for ``g == 0`` (or one GPU under PyTorch).
    ``device_type="cpu"`` spreads over logical CPU devices instead (how the tests run these paths
    without a GPU)."""
    from contextlib import nullcontext

    if g <= 0:
        return nullcontext()
    name = backend()
    if name == "tensorflow":
        import tensorflow as tf

        return tf.distribute.MirroredStrategy(devices=[f"/{device_type}:{i}" for i in range(g)]).scope()
    if name == "jax":
        import keras

        return keras.distribution.DataParallel(devices=keras.distribution.list_devices(device_type)[:g]).scope()
    if g == 1:
        return nullcontext()
    raise NotImplementedError(f"training on {g} GPUs is not supported on the {name} backend here")


def backend_info(name: str | None = None) -> dict:
    """The backend's name and version, read without importing Keras or the backend."""
    from importlib import metadata

    from repro.core.provenance import keras_backend

    name = name or keras_backend()
    dist = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",), "torch": ("torch",)}.get(name, (name,))
    version = next((v for d in dist if (v := _version(metadata, d))), "unknown")
    return {"backend": name, "backend_version": version}


def device_summary() -> dict:
    """Which backend and device Keras trains on here (recorded in provenance)."""
    name = backend()
    gpus = gpu_count(name)
    return {"device": "GPU" if gpus else "CPU", "gpus_visible": gpus, **backend_info(name),
            "matmul_precision_now": matmul_precision_now(name, gpus)}


def matmul_precision_now(name: str, gpus: int) -> str:
    """The precision the backend gives float32 convolutions and matrix products at this moment: on a GPU,
    JAX's and TensorFlow's defaults are TF32 on NVIDIA Ampere and later (what a run that sets nothing gets)."""
    if name == "jax":
        import jax

        setting = getattr(jax.config, "jax_default_matmul_precision")  # noqa: B009 (not in the type stubs)
        if setting is None:
            return "JAX default: TF32 products on an NVIDIA Ampere or later GPU" if gpus else "JAX default: float32"
        return f"jax_default_matmul_precision={setting}"
    if name == "tensorflow":
        import tensorflow as tf

        on = tf.config.experimental.tensor_float_32_execution_enabled()
        return f"TensorFlow TF32 execution {'enabled' if on else 'disabled'}" + ("" if gpus else " (CPU: float32)")
    return f"{name}: its own default"


MATMUL_PRECISION = {"float32": "highest", "tf32": "tensorfloat32"}  # the choice -> jax_default_matmul_precision


def set_matmul_precision(choice: str, device: dict) -> dict:
    """Set the backend's precision of convolutions and matrix products (``float32``, or ``tf32`` where the
    GPU has it) and say, for provenance, what was set and what it is on ``device`` (:func:`device_summary`).
    JAX on an NVIDIA Ampere or later GPU otherwise takes TF32 by default, unsaid."""
    name = backend()
    if name == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", MATMUL_PRECISION[choice])
        setting = f"jax_default_matmul_precision={MATMUL_PRECISION[choice]}"
    elif name == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(choice == "tf32")
        setting = f"tf.config.experimental.enable_tensor_float_32_execution({choice == 'tf32'})"
    else:
        setting = f"not set (backend {name}: its own default)"
    tf32 = choice == "tf32" and device.get("device") == "GPU" and name in ("jax", "tensorflow")
    return {"requested": choice, "setting": setting,
            "effective": "TF32 products (10-bit mantissas), float32 sums, on an Ampere or later GPU" if tf32
            else "float32" if name in ("jax", "tensorflow") else "the backend's default"}


def precision_deviation(device: dict | None, requested: str | None = None) -> str:
    """Why a run's convolutions and matrix products were not float32 (empty where they were), from its
    device record (:func:`device_summary`; ``matmul_precision`` where the run set it), else from what it
    ``requested``: a GPU run under JAX or TensorFlow that set nothing got its backend's default, which on
    an Ampere or later GPU is TF32 (the papers' runs predate TF32)."""
    from repro.core.provenance import BACKEND_NAMES

    recorded = (device or {}).get("matmul_precision")
    if isinstance(recorded, dict):
        return "TF32 products, not float32" if "TF32" in str(recorded.get("effective")) else ""
    if device and device.get("device") == "GPU" and device.get("backend") in ("jax", "tensorflow"):
        return f"matmul precision not recorded ({BACKEND_NAMES.get(device['backend'], device['backend'])}'s " \
               "default on an Ampere or later GPU: TF32 products)"
    return "TF32 products, not float32" if requested == "tf32" and device is None else ""


def _version(metadata, dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def epoch_input(x: np.ndarray, y: np.ndarray, num_classes: int, batch_size: int,
                shuffle_seed: int | None = None) -> dict:
    """``model.fit``/``validation_data`` input for one epoch: a ``tf.data`` pipeline under TensorFlow,
    else one-hot NumPy arrays in the order of a permutation seeded by ``shuffle_seed``."""
    if backend() == "tensorflow":
        return {"x": to_tf_dataset(x, y, num_classes, batch_size, shuffle_seed)}
    order = np.random.default_rng(shuffle_seed).permutation(len(y)) if shuffle_seed is not None else slice(None)
    return {"x": x[order], "y": np.eye(num_classes, dtype="float32")[y[order]], "batch_size": batch_size}


def to_tf_dataset(x: np.ndarray, y: np.ndarray, num_classes: int, batch_size: int, shuffle_seed: int | None = None):
    """Batched, prefetched ``tf.data`` pipeline with one-hot labels (categorical cross-entropy)."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(y), seed=shuffle_seed, reshuffle_each_iteration=False)
    ds = ds.batch(batch_size).map(
        lambda xb, yb: (xb, tf.one_hot(yb, num_classes)), num_parallel_calls=tf.data.AUTOTUNE
    )
    return ds.prefetch(tf.data.AUTOTUNE)


def _wait_for(model) -> None:
    """Until the model's last step has run: Keras's JAX trainer dispatches steps asynchronously and syncs no
    earlier than a callback needs a batch's logs, so a clock read at the end of an epoch's training without
    this stops while the device still works (on this CPU, 2026-11-28: a 16-step epoch timed at 0.03 s instead
    of ~0.3 s). TensorFlow and PyTorch run their steps before returning them: nothing to wait for."""
    if backend() == "jax":
        import jax

        jax.block_until_ready([v.value for v in model.trainable_variables])


def _callback_class():
    import keras

    class EpochTimer(keras.callbacks.Callback):
        """Times the training part of an epoch and, separately, its evaluation."""

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()
            self.t_train_end = None

        def on_test_begin(self, logs=None):
            if self.t_train_end is None:
                _wait_for(self.model)
                self.t_train_end = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            _wait_for(self.model)
            now = time.perf_counter()
            end = self.t_train_end or now
            self.epoch_time = end - self.t0
            self.eval_time = now - end

    return EpochTimer


def _reseed(model, epoch_seed: int) -> None:
    """Restart every random stream of the model (dropout's seed generators) from ``epoch_seed``.

    Keras keeps dropout's random state in ``seed_generator_state`` variables; resetting them
    at each epoch makes the masks a function of (seed, epoch), so a resumed run repeats
    exactly what an uninterrupted one would have done.
    """
    import keras

    keras.utils.set_random_seed(epoch_seed)
    states = [v for v in model.variables if v.path.endswith("seed_generator_state")]
    for i, var in enumerate(states):
        var.assign(np.array([epoch_seed * 1_000 + i, 0], dtype=var.dtype))


def load_checkpoint(checkpoint_dir: Path):
    """(model, history DataFrame) saved by :func:`fit`, or (None, None)."""
    import keras

    model_path, hist_path = Path(checkpoint_dir) / "model.keras", Path(checkpoint_dir) / "history.csv"
    if not (model_path.is_file() and hist_path.is_file()):
        return None, None
    return keras.models.load_model(model_path), pd.read_csv(hist_path)


def _save_checkpoint(model, history: pd.DataFrame, checkpoint_dir: Path) -> None:
    """``model.keras`` and ``history.csv``, both written to temporary files first and then renamed one
    right after the other: an interruption while saving (a slow ``model.save``) leaves the last pair."""
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    tmp, tmp_hist = checkpoint_dir / ".model.keras.tmp.keras", checkpoint_dir / ".history.csv.tmp"
    tmp_hist.write_text(csv_text(history))
    model.save(tmp)
    os.replace(tmp, checkpoint_dir / "model.keras")
    os.replace(tmp_hist, checkpoint_dir / "history.csv")


def fit(
    model,
    data: Dataset,
    *,
    epochs: int,
    batch_size: int,
    seed: int = 0,
    verbose: int = 2,
    evaluate: bool = True,
    checkpoint_dir: str | Path | None = None,
    callbacks: list | None = None,
    log_prefix: str = "",
) -> pd.DataFrame:
    """Train ``model`` for ``epochs`` epochs; returns one row per epoch (:data:`HISTORY_COLUMNS`).

    With ``checkpoint_dir``, an earlier interrupted call is resumed: its model and history
    are loaded and training continues after the last completed epoch (``model`` is then
    replaced by the checkpointed one; get it back with :func:`load_checkpoint`).
    """

    rows: list[dict] = []
    start_epoch = 0
    if checkpoint_dir is not None:
        checkpoint_dir = Path(checkpoint_dir)
        saved_model, saved_hist = load_checkpoint(checkpoint_dir)
        if saved_model is not None:
            model, rows = saved_model, saved_hist.to_dict("records")
            start_epoch = len(rows)
            if verbose:
                log.info("%sresuming after epoch %d from %s", log_prefix, start_epoch, checkpoint_dir)
    timer = _callback_class()()
    ev = epoch_input(data.x_test, data.y_test, data.num_classes, batch_size) if evaluate and len(data.y_test) else None
    val = None if ev is None else (ev["x"] if "y" not in ev else (ev["x"], ev["y"]))
    train_total = float(rows[-1]["train_time_s"]) if rows else 0.0
    progress = Progress(log, f"{log_prefix}epochs", epochs - start_epoch) if verbose and start_epoch < epochs else None
    last_s = 0.0
    for epoch in range(start_epoch, epochs):
        if checkpoint_dir is not None and (why := stop_reason(last_s)):
            raise DeadlineReached(f"{log_prefix}stopped after epoch {epoch} of {epochs} ({why}); checkpoint in "
                                  f"{checkpoint_dir}")
        t_epoch = time.perf_counter()
        _reseed(model, seed * 100_003 + epoch)  # dropout masks depend on (seed, epoch) only
        train = epoch_input(data.x_train, data.y_train, data.num_classes, batch_size, seed * 100_003 + epoch)
        hist = model.fit(
            **train,
            validation_data=val,
            epochs=epoch + 1,
            initial_epoch=epoch,
            verbose=verbose,
            shuffle=False,  # the pipeline is already shuffled per (seed, epoch)
            callbacks=[timer, *(callbacks or [])],
        )
        logs = {k: v[-1] for k, v in hist.history.items()}
        train_total += timer.epoch_time
        rows.append({
            "epoch": epoch + 1,
            "loss": float(logs["loss"]),
            "accuracy": float(logs.get("accuracy", np.nan)),
            "test_loss": float(logs.get("val_loss", np.nan)),
            "test_accuracy": float(logs.get("val_accuracy", np.nan)),
            "epoch_time_s": timer.epoch_time,
            "eval_time_s": timer.eval_time,
            "train_time_s": train_total,
        })
        if checkpoint_dir is not None:
            _save_checkpoint(model, pd.DataFrame(rows, columns=HISTORY_COLUMNS), checkpoint_dir)
            epoch_done()
        last_s = time.perf_counter() - t_epoch
        if progress:
            progress.done(detail=f"test accuracy {rows[-1]['test_accuracy']:.4f}")
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def images_per_second(history: pd.DataFrame, n_train: int) -> float:
    """Training throughput over all epochs of a history."""
    return n_train * len(history) / float(history["epoch_time_s"].sum())
