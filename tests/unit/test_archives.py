"""The papers' dataset files: found in each layout a user or Keras leaves them in, verified against the published
checksums (a copy that fails still loads, recorded unverified with the checksum), imported, fetched."""

from __future__ import annotations

import hashlib

import fake_datasets as F
import pytest

from repro.ml import archives, data

PER_BATCH, N_TEST = 8, 6


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty repro data directory, Keras cache and offline directory; REPRO_OFFLINE set (no download)."""
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "repro"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    monkeypatch.setenv("REPRO_OFFLINE_DIRS", str(tmp_path / "offline"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    monkeypatch.delenv(archives.TRUST_ENV, raising=False)
    return tmp_path


def _archive(path):
    return [F.write_cifar10_archive(path, per_batch=PER_BATCH, n_test=N_TEST)]


def _folder(path):
    return F.write_cifar10_folder(path, per_batch=PER_BATCH, n_test=N_TEST)


LAYOUTS = {  # the four ways a user has CIFAR-10 (issue 56): where, and how it is written
    "archive in REPRO_OFFLINE_DIRS": ("offline/cifar-10-python.tar.gz", _archive, "archive", "REPRO_OFFLINE_DIRS"),
    "folder in the Keras cache (Keras 2, by hand)": ("keras/datasets/cifar-10-batches-py", _folder, "folder",
                                                     "Keras cache"),
    "Keras 3's download (archive + target folder)": ("keras/datasets/cifar-10-batches-py-target_archive", _archive,
                                                     "archive", "Keras 3 cache"),
    "Keras 3's unpacked folder alone": ("keras/datasets/cifar-10-batches-py-target/cifar-10-batches-py", _folder,
                                       "folder", "Keras 3 cache"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_each_layout_loads_and_verifies_only_with_the_published_digest(home, monkeypatch, layout):
    where, write, kind, label = LAYOUTS[layout]
    digests = write(home / where)
    ds = data.load("cifar10")
    assert ds.x_train.shape == (5 * PER_BATCH, 32, 32, 3) and ds.x_test.shape == (N_TEST, 32, 32, 3)
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0 and ds.info["name"] == "cifar10"
    files = ds.info["files"]
    assert (files["layout"], files["where"].split(" (")[0]) == (kind, label)
    assert ds.info["verified"] is False and files["reason"].startswith("the data is not the paper's: checksum")
    assert data.not_the_papers(ds.info) == files["reason"]
    monkeypatch.setenv(archives.TRUST_ENV, ",".join(digests))  # a test setting: these digests count as published
    ds = data.load("cifar10")
    assert ds.info["verified"] is True and "reason" not in ds.info["files"] and data.not_the_papers(ds.info) is None
    assert "test setting" in ds.info["files"]["trusted_by"]


def test_pixels_and_labels_read_as_keras_reads_them(home):
    members = F.cifar10_members(per_batch=PER_BATCH, n_test=N_TEST)
    _folder(home / "offline" / "cifar-10-batches-py")
    ds = data.load("cifar10")
    first = archives._ArraysOnly(__import__("io").BytesIO(members["data_batch_1"]), encoding="bytes").load()
    want = first[b"data"][0].reshape(3, 32, 32).transpose(1, 2, 0) / 255.0
    assert (ds.x_train[0] == want.astype("float32")).all() and ds.y_train[0] == first[b"labels"][0]


def test_a_verified_copy_wins_over_an_earlier_unverified_one(home, monkeypatch):
    _archive(home / "repro" / "cifar-10-python.tar.gz")  # found first, never trusted
    trusted = _folder(home / "keras" / "datasets" / "cifar-10-batches-py")
    monkeypatch.setenv(archives.TRUST_ENV, ",".join(trusted))
    copy, record = archives.locate(archives.CIFAR10)
    assert record["verified"] and copy.where == "Keras cache"


def test_missing_offline_is_one_line_naming_import_and_fetch(home):
    with pytest.raises(data.DatasetUnavailable) as err:
        data.load("cifar10")
    msg = str(err.value)
    assert "\n" not in msg and "repro data import" in msg and "repro data fetch cifar10" in msg
    assert "fashion_mnist_rgb32" in msg


def test_import_copies_verifies_and_is_found(home, tmp_path):
    sha = F.write_mnist_npz(tmp_path / "downloads" / "mnist.npz", n_train=30, n_test=10)
    copy, record = archives.import_path(tmp_path / "downloads" / "mnist.npz")
    assert copy.path == home / "repro" / "mnist.npz" and record["digest"] == {"mnist.npz": sha}
    assert not record["verified"] and not list((home / "repro").glob("*.part"))
    ds = data.load("mnist")
    assert ds.x_train.shape == (30, 28, 28, 1) and ds.info["files"]["where"] == "repro data directory"
    _folder(tmp_path / "elsewhere" / "cifar-10-batches-py-target" / "cifar-10-batches-py")
    copy, _ = archives.import_path(tmp_path / "elsewhere" / "cifar-10-batches-py-target")  # Keras 3's folder
    assert copy.layout == "folder" and (copy.path / "data_batch_5").is_file()
    with pytest.raises(ValueError, match="neither"):
        (tmp_path / "other.bin").write_bytes(b"x")
        archives.import_path(tmp_path / "other.bin")


def test_fetch_keeps_only_a_file_that_verifies(home, tmp_path, monkeypatch):
    sha = F.write_mnist_npz(tmp_path / "mirror" / "mnist.npz", n_train=20, n_test=10)
    monkeypatch.setenv("REPRO_DATA_MIRROR", (tmp_path / "mirror").as_uri())
    seen = []
    with pytest.raises(ValueError, match="fails its check"):
        archives.fetch(archives.MNIST, lambda done, total: seen.append((done, total)))
    assert not (home / "repro" / "mnist.npz").exists() and not list((home / "repro").glob("*"))
    monkeypatch.setenv(archives.TRUST_ENV, sha)
    copy, record = archives.fetch(archives.MNIST, lambda done, total: seen.append((done, total)))
    assert record["verified"] and hashlib.sha256(copy.path.read_bytes()).hexdigest() == sha
    assert seen and seen[-1][0] == copy.path.stat().st_size


def test_status_reads_verifies_and_times(home, monkeypatch):
    _folder(home / "keras" / "datasets" / "cifar-10-batches-py")
    rows = {r["dataset"]: r for r in data.status()}
    assert rows["cifar10"]["state"] == "unverified" and "checksum" in rows["cifar10"]["how_to_get"]
    assert "40 training images" in rows["cifar10"]["source"] and rows["cifar10"]["seconds"] >= 0
    assert rows["mnist"]["state"] == "missing" and "repro data fetch mnist" in rows["mnist"]["how_to_get"]


def test_published_digests_are_the_ones_keras_and_torchvision_check():
    assert archives.CIFAR10.sha256 == "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
    assert archives.MNIST.sha256 == "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"
    assert len(archives.CIFAR10.members) == 7 and all(len(v) == 32 for v in archives.CIFAR10.members.values())


def test_a_pickle_that_runs_code_is_refused(home):
    import pickle

    folder = home / "offline" / "cifar-10-batches-py"
    _folder(folder)
    (folder / "data_batch_1").write_bytes(pickle.dumps({b"data": print}))
    with pytest.raises(pickle.UnpicklingError, match="not a numpy array"):
        data.load("cifar10")


def test_records_made_before_verification_are_not_the_papers():
    assert "not recorded" in data.not_the_papers({"name": "cifar10", "n_train": 50000})
    assert data.not_the_papers({"name": "fashion_mnist_rgb32"}) is None
