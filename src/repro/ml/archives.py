"""The papers' datasets from the files a user keeps: where they are looked for, the published checksums they
are verified against, and how they are read (no Keras, no download, nothing unpickled but numpy arrays).

CIFAR-10 (``cifar-10-python.tar.gz``, or the ``cifar-10-batches-py`` folder it unpacks to) and MNIST
(``mnist.npz``) are looked for, in this order, in

1. repro's data directory, ``$REPRO_DATA_DIR`` (default ``~/.cache/repro/datasets``), where ``repro data import
   FILE`` and ``repro data fetch NAME`` put them;
2. each directory of ``$REPRO_OFFLINE_DIRS`` (the search path of :mod:`repro.ml.data`);
3. Keras's cache (``$KERAS_HOME/datasets``, default ``~/.keras/datasets``) in each layout Keras writes there:
   Keras 3 (``cifar-10-batches-py-target_archive``, unpacked into ``cifar-10-batches-py-target/``), Keras 2
   (``cifar-10-batches-py.tar.gz``, unpacked into ``cifar-10-batches-py/``), and files copied there by hand.

What is read is what is verified: an archive by its published SHA-256 (the one Keras checks its downloads
against), an unpacked folder file by file by the MD5s published with the dataset (those torchvision checks).
The first copy that verifies is used; where none does, the first one found, recorded ``verified: false``
with the checksum that failed, so that a run on it is judged *not comparable* ("the data is not the
paper's"), never silently as the paper's. ``$REPRO_TEST_TRUSTED_DIGESTS`` (comma-separated hex digests) is
for tests only: files whose digest it lists count as published, and the record says so.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TRUST_ENV = "REPRO_TEST_TRUSTED_DIGESTS"  # tests only: digests accepted as published (recorded as such)
DATA_DIR_ENV = "REPRO_DATA_DIR"
DEFAULT_OFFLINE_DIRS = "/usr/share/datasets"


@dataclass(frozen=True)
class Spec:
    """A dataset's published file: its name, SHA-256, origin, and (for an archive) the files it unpacks to."""

    name: str
    archive: str
    sha256: str
    url: str
    digest_source: str
    folder: str | None = None  # the folder the archive unpacks to
    members: dict[str, str] = field(default_factory=dict)  # file of ``folder`` -> its published MD5
    keras_aliases: tuple[str, ...] = ()  # the names Keras gives the archive in its cache


CIFAR10 = Spec(
    name="cifar10",
    archive="cifar-10-python.tar.gz",
    sha256="6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    digest_source="archive: Keras's file_hash (keras.datasets.cifar10); files: the MD5s torchvision checks "
                  "(torchvision.datasets.CIFAR10; the archive's MD5 c58f30108f718f92721af3b95e74349a)",
    folder="cifar-10-batches-py",
    members={"data_batch_1": "c99cafc152244af753f735de768cd75f", "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
             "data_batch_3": "54ebc095f3ab1f0389bbae665268c751", "data_batch_4": "634d18415352ddfa80567beed471001a",
             "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb", "test_batch": "40351d587109b95175f43aff81a1287e",
             "batches.meta": "5ff9c542aee3614f3951f8cda6e48888"},
    keras_aliases=("cifar-10-batches-py-target_archive", "cifar-10-batches-py.tar.gz"),
)
MNIST = Spec(
    name="mnist",
    archive="mnist.npz",
    sha256="731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
    url="https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",
    digest_source="Keras's file_hash (keras.datasets.mnist)",
)
SPECS = {s.name: s for s in (CIFAR10, MNIST)}


@dataclass(frozen=True)
class Copy:
    """One copy of a dataset on disk: an archive file or an unpacked folder, and where it was found."""

    spec: Spec
    path: Path
    layout: str  # "archive" | "folder"
    where: str  # which search location ("repro data directory", "REPRO_OFFLINE_DIRS", "Keras 3 cache", ...)


def data_dir() -> Path:
    """repro's own data directory: ``$REPRO_DATA_DIR``, else ``~/.cache/repro/datasets``."""
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "repro" / "datasets"


def offline_dirs() -> list[Path]:
    """Where offline dataset files are searched: ``$REPRO_OFFLINE_DIRS``, else ``/usr/share/datasets``."""
    value = os.environ.get("REPRO_OFFLINE_DIRS", DEFAULT_OFFLINE_DIRS)
    return [Path(d).expanduser() for d in value.split(os.pathsep) if d.strip()]


def keras_cache_dir() -> Path:
    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(base) / "datasets"


def _in(directory: Path, spec: Spec, where: str) -> list[Copy]:
    found = [Copy(spec, directory / spec.archive, "archive", where)]
    if spec.folder:
        found.append(Copy(spec, directory / spec.folder, "folder", where))
    return found


def candidates(spec: Spec) -> list[Copy]:
    """Every place a copy of ``spec`` is looked for, in order (module docstring), whether it exists or not."""
    out = _in(data_dir(), spec, "repro data directory")
    for d in offline_dirs():
        out += _in(d, spec, f"REPRO_OFFLINE_DIRS ({d})")
    keras = keras_cache_dir()
    if spec.folder:  # Keras 3 downloads `<folder>-target_archive` and unpacks it into `<folder>-target/<folder>`
        out += [Copy(spec, keras / spec.keras_aliases[0], "archive", "Keras 3 cache"),
                Copy(spec, keras / f"{spec.folder}-target" / spec.folder, "folder", "Keras 3 cache"),
                Copy(spec, keras / spec.keras_aliases[1], "archive", "Keras 2 cache")]
    out += _in(keras, spec, "Keras cache")
    return out


def present(spec: Spec) -> list[Copy]:
    """The copies of ``spec`` that exist (an unpacked folder only where it has every file)."""
    return [c for c in candidates(spec) if (c.path.is_file() if c.layout == "archive"
                                            else all((c.path / m).is_file() for m in c.spec.members))]


def _file_digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _trusted() -> set[str]:
    return {d.strip().lower() for d in os.environ.get(TRUST_ENV, "").split(",") if d.strip()}


def verify(copy: Copy) -> dict:
    """Check ``copy`` against the published checksums: a record for provenance (``verified``, the digest
    found, the one published, the seconds it took, and the reason where it fails)."""
    t0, trusted = time.perf_counter(), _trusted()
    spec = copy.spec
    if copy.layout == "archive":
        found = {copy.path.name: _file_digest(copy.path, "sha256")}
        published, algorithm = {copy.path.name: spec.sha256}, "sha256"
    else:
        found = {m: _file_digest(copy.path / m, "md5") for m in spec.members}
        published, algorithm = dict(spec.members), "md5"
    wrong = [f for f in found if found[f] != published[f] and found[f] not in trusted]
    by_test = [f for f in found if found[f] != published[f] and found[f] in trusted]
    record = {"verified": not wrong, "algorithm": algorithm, "digest": found, "published": published,
              "digest_source": spec.digest_source, "path": str(copy.path), "layout": copy.layout,
              "where": copy.where, "verify_seconds": round(time.perf_counter() - t0, 3)}
    if by_test:
        record["trusted_by"] = f"{TRUST_ENV} (a test setting; not the published checksum)"
    if wrong:
        f = wrong[0]
        record["reason"] = (f"the data is not the paper's: checksum {algorithm} {found[f][:12]}... of {f} is not "
                            f"the published {published[f][:12]}..." + (f" ({len(wrong)} files differ)"
                                                                        if len(wrong) > 1 else ""))
    return record


def locate(spec: Spec) -> tuple[Copy, dict] | None:
    """The copy of ``spec`` to use and its verification: the first that verifies, else the first found
    (``verified: false``); None where no copy is here."""
    checked = [(c, verify(c)) for c in present(spec)]
    for c, record in checked:
        if record["verified"]:
            return c, record
    return checked[0] if checked else None


class _ArraysOnly(pickle.Unpickler):
    """Unpickles CIFAR-10's batches (dicts of lists, bytes and numpy arrays) and nothing that runs code."""

    _ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
                ("numpy._core.multiarray", "scalar")}

    def find_class(self, module, name):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"CIFAR-10 batch holds {module}.{name}, which is not a numpy array")
        if module.startswith("numpy.core") and hasattr(np, "_core"):
            module = "numpy._core" + module.removeprefix("numpy.core")
        return super().find_class(module, name)


def _batch(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    d = _ArraysOnly(io.BytesIO(raw), encoding="bytes").load()
    x = np.asarray(d[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return x, np.asarray(d[b"labels"], dtype=np.int64)


def _cifar_members(copy: Copy, names: list[str]) -> dict[str, bytes]:
    if copy.layout == "folder":
        return {n: (copy.path / n).read_bytes() for n in names}
    out = {}
    with tarfile.open(copy.path, "r:gz") as tar:
        for n in names:
            member = tar.extractfile(f"{CIFAR10.folder}/{n}")
            if member is None:
                raise OSError(f"{copy.path} has no {CIFAR10.folder}/{n}")
            out[n] = member.read()
    return out


def read_cifar10(copy: Copy) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CIFAR-10's 50,000 training and 10,000 test images (uint8, NHWC) and labels, from an archive or a folder."""
    train = [f"data_batch_{i}" for i in range(1, 6)]
    raw = _cifar_members(copy, train + ["test_batch"])
    xs, ys = zip(*(_batch(raw[n]) for n in train))
    xte, yte = _batch(raw["test_batch"])
    return np.concatenate(xs), np.concatenate(ys), xte, yte


def read_mnist(copy: Copy) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    with np.load(copy.path, allow_pickle=False) as f:
        return f["x_train"], f["y_train"], f["x_test"], f["y_test"]


def read(copy: Copy) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return read_cifar10(copy) if copy.spec is CIFAR10 else read_mnist(copy)


def how_to_get(spec: Spec) -> str:
    """One line: where to put the files offline, and the command that fetches them with internet."""
    keep = f"{spec.archive}" + (f" (or the {spec.folder} folder it unpacks to)" if spec.folder else "")
    return (f"offline, `repro data import PATH/{spec.archive}` (or put {keep} in a directory of REPRO_OFFLINE_DIRS "
            f"or {data_dir()}); with internet, `repro data fetch {spec.name}`")


def _identify(path: Path) -> Spec | None:
    """Which dataset ``path`` holds: by its published name (or Keras's), else by what is inside."""
    for spec in SPECS.values():
        if path.name in (spec.archive, spec.folder, *spec.keras_aliases, f"{spec.folder}-target"):
            return spec
    if path.is_dir():
        return CIFAR10 if (path / "data_batch_1").is_file() else None
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            return CIFAR10 if f"{CIFAR10.folder}/data_batch_1" in tar.getnames() else None
    try:
        with np.load(path, allow_pickle=False) as f:
            return MNIST if {"x_train", "y_train", "x_test", "y_test"} <= set(f.files) else None
    except (OSError, ValueError):
        return None


def import_path(path: Path) -> tuple[Copy, dict]:
    """Copy a dataset a user has (an archive, or CIFAR-10's unpacked folder) into :func:`data_dir`, atomically,
    and verify the copy. A copy that fails its check is kept (runs on it are judged as not the paper's data)."""
    import shutil

    path = Path(path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"repro data import: {path} does not exist")
    if path.is_dir() and path.name == f"{CIFAR10.folder}-target":
        path = path / str(CIFAR10.folder)  # Keras 3's unpacked folder holds the published one
    spec = _identify(path)
    if spec is None:
        raise ValueError(f"repro data import: {path} is neither {CIFAR10.archive} (or its {CIFAR10.folder} folder) "
                         f"nor {MNIST.archive}")
    folder = path.is_dir()
    name = spec.archive
    if folder and spec.folder:
        name = spec.folder
    target = data_dir() / name
    tmp = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
    if folder:
        shutil.copytree(path, tmp)
    else:
        shutil.copyfile(path, tmp)
    if target.is_dir():
        shutil.rmtree(target)
    os.replace(tmp, target)
    copy = Copy(spec, target, "folder" if folder else "archive", "repro data directory")
    return copy, verify(copy)


def source_url(spec: Spec) -> str:
    """Where ``repro data fetch`` downloads ``spec``: ``$REPRO_DATA_MIRROR/<archive>`` (a site's own mirror;
    ``file://`` works), else the published origin."""
    mirror = os.environ.get("REPRO_DATA_MIRROR", "").strip()
    return f"{mirror.rstrip('/')}/{spec.archive}" if mirror else spec.url


def fetch(spec: Spec, report=None) -> tuple[Copy, dict]:
    """Download ``spec`` into :func:`data_dir` (``report(done_bytes, total_bytes)`` as it goes), check its
    SHA-256, and keep it only if it matches; a mismatch raises and leaves nothing behind."""
    import urllib.request

    url, target = source_url(spec), data_dir() / spec.archive
    tmp = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as out:  # noqa: S310
            total, done = int(response.headers.get("Content-Length") or 0), 0
            for chunk in iter(lambda: response.read(1 << 20), b""):
                out.write(chunk)
                done += len(chunk)
                if report is not None:
                    report(done, total)
        copy = Copy(spec, tmp, "archive", "repro data directory")
        record = verify(copy)
        if not record["verified"]:
            raise ValueError(f"repro data fetch {spec.name}: {url} gave a file that fails its check: "
                             + record["reason"].removeprefix("the data is not the paper's: "))
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    copy = Copy(spec, target, "archive", "repro data directory")
    return copy, {**record, "path": str(target)}
