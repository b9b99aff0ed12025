"""The papers' dataset files in their real formats with random content, for tests of the real-data path:
CIFAR-10's python archive (five training batches and a test batch of pickled dicts, and ``batches.meta``)
and Keras's ``mnist.npz``. Each writer returns the digests a test trusts through
``REPRO_TEST_TRUSTED_DIGESTS`` (repro.ml.archives)."""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
from pathlib import Path

import numpy as np

LABELS = [b"airplane", b"automobile", b"bird", b"cat", b"deer", b"dog", b"frog", b"horse", b"ship", b"truck"]


def _batch(rng, n: int, label: bytes) -> bytes:
    d = {b"batch_label": label, b"labels": [int(v) for v in rng.integers(0, 10, n)],
         b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"filenames": [b"x.png"] * n}
    return pickle.dumps(d, protocol=4)


def cifar10_members(per_batch: int = 40, n_test: int = 40, seed: int = 0) -> dict[str, bytes]:
    rng = np.random.default_rng(seed)
    out = {f"data_batch_{i}": _batch(rng, per_batch, f"training batch {i} of 5".encode()) for i in range(1, 6)}
    out["test_batch"] = _batch(rng, n_test, b"testing batch 1 of 1")
    out["batches.meta"] = pickle.dumps({b"label_names": LABELS, b"num_cases_per_batch": per_batch}, protocol=4)
    return out


def write_cifar10_archive(path: Path, **kw) -> str:
    """``cifar-10-python.tar.gz``'s format at ``path``; returns its SHA-256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, raw in cifar10_members(**kw).items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_cifar10_folder(folder: Path, **kw) -> list[str]:
    """The unpacked ``cifar-10-batches-py`` folder; returns its files' MD5s."""
    folder.mkdir(parents=True, exist_ok=True)
    digests = []
    for name, raw in cifar10_members(**kw).items():
        (folder / name).write_bytes(raw)
        digests.append(hashlib.md5(raw).hexdigest())
    return digests


def write_mnist_npz(path: Path, n_train: int = 200, n_test: int = 100, seed: int = 0) -> str:
    """Keras's ``mnist.npz`` format (uint8 28x28 digits, uint8 labels); returns its SHA-256."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "y_train": rng.integers(0, 10, n_train).astype(np.uint8),
              "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "y_test": rng.integers(0, 10, n_test).astype(np.uint8)}
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return hashlib.sha256(path.read_bytes()).hexdigest()
