"""Dataset resolution: real offline sources, declared stand-ins, clear errors."""

import gzip

import numpy as np
import pytest

from repro.ml import data
from repro.ml.data import DatasetUnavailable


def _write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def fake_fashion(tmp_path, monkeypatch):
    """Debian-style idx files with known content."""
    rng = np.random.default_rng(3)
    arrays = {
        "x_train": rng.integers(0, 256, (30, 28, 28)), "y_train": np.arange(30) % 10,
        "x_test": rng.integers(0, 256, (10, 28, 28)), "y_test": np.arange(10),
    }
    where = tmp_path / "datasets" / data.FASHION_SUBDIR
    where.mkdir(parents=True)
    for key, fname in data._FASHION_FILES.items():
        _write_idx(where / fname, arrays[key])
    monkeypatch.delenv("REPRO_FASHION_MNIST_DIR", raising=False)
    monkeypatch.setenv("REPRO_OFFLINE_DIRS", f"{tmp_path / 'nothing-here'}:{tmp_path / 'datasets'}")
    return arrays


def test_fashion_mnist_reads_debian_idx_files(fake_fashion):
    ds = data.load("fashion_mnist")
    assert ds.x_train.shape == (30, 28, 28, 1)
    assert np.allclose(ds.x_train[..., 0] * 255, fake_fashion["x_train"], atol=1e-3)
    assert ds.y_test.tolist() == list(range(10))
    assert "Debian" in ds.info["source"] and ds.info["stand_in_for"] is None


def test_fashion_mnist_reads_the_same_files_recompressed_as_xz(fake_fashion, tmp_path):
    """What the GPU campaign carries: the idx files as .xz (smaller than Debian's .gz)."""
    import lzma

    where = tmp_path / "datasets" / data.FASHION_SUBDIR
    for gz in where.glob("*.gz"):
        with gzip.open(gz, "rb") as src, lzma.open(gz.with_suffix(".xz"), "wb") as dst:
            dst.write(src.read())
        gz.unlink()
    assert data.fashion_dir() == where
    ds = data.load("fashion_mnist")
    assert np.allclose(ds.x_train[..., 0] * 255, fake_fashion["x_train"], atol=1e-3)
    assert ds.y_test.tolist() == list(range(10))


def test_cifar10_standin_is_padded_rgb_and_declared(fake_fashion):
    ds = data.load("fashion_mnist_rgb32")
    assert ds.x_train.shape == (30, 32, 32, 3)
    assert np.all(ds.x_train[:, :2] == 0) and np.all(ds.x_train[:, -2:] == 0)  # zero padding
    assert np.array_equal(ds.x_train[..., 0], ds.x_train[..., 2])  # grey repeated to RGB
    assert ds.info["stand_in_for"] == "cifar10"


@pytest.mark.extras
def test_full_fashion_mnist_from_debian(need):
    need("Debian's dataset-fashion-mnist", data.fashion_dir() is not None, data.FASHION_HOW_TO_GET)
    ds = data.load("fashion_mnist", n_train=10, n_test=10)
    assert ds.info["full_train"] == 60000 and ds.info["full_test"] == 10000


def test_missing_dataset_offline_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "repro"))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable) as err:
        data.load("cifar10")
    msg = str(err.value)
    assert "\n" not in msg and "'cifar10'" in msg and "fashion_mnist_rgb32" in msg and str(tmp_path) in msg


def test_failed_download_becomes_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "repro"))
    monkeypatch.setenv("REPRO_DATA_MIRROR", (tmp_path / "no-such-mirror").as_uri())  # no network: the fetch fails
    monkeypatch.delenv("REPRO_OFFLINE", raising=False)
    with pytest.raises(DatasetUnavailable) as err:
        data.load("mnist")
    msg = str(err.value)
    assert "\n" not in msg and "could not be downloaded" in msg and "mnist_subset" in msg
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no chained URL trace


def test_missing_fashion_mnist_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv("REPRO_FASHION_MNIST_DIR", raising=False)
    monkeypatch.setenv("REPRO_OFFLINE_DIRS", "")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable, match="apt-get install dataset-fashion-mnist") as err:
        data.load("fashion_mnist_rgb32")
    assert "\n" not in str(err.value) and "REPRO_OFFLINE_DIRS is empty" in str(err.value)


def test_offline_dirs_hide_and_find_fashion_mnist(fake_fashion, monkeypatch):
    assert data.fashion_dir().name == data.FASHION_SUBDIR and data.fashion_mnist_available()
    monkeypatch.setenv("REPRO_OFFLINE_DIRS", "")
    assert data.offline_dirs() == [] and data.fashion_dir() is None
    monkeypatch.delenv("REPRO_OFFLINE_DIRS")
    assert data.offline_dirs() == [data.Path("/usr/share/datasets")]


def test_unknown_dataset_lists_valid_names():
    with pytest.raises(DatasetUnavailable, match="unknown dataset 'svhn'; choose from: mnist, mnist_subset"):
        data.load("svhn")


def test_status_reports_sources(fake_fashion, tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path / "repro"))
    rows = {r["dataset"]: r for r in data.status()}
    assert rows["mnist_subset"]["offline"] and rows["fashion_mnist"]["offline"]
    assert rows["fashion_mnist"]["source"] == str(data.fashion_dir())
    assert rows["mnist_subset_rgb32"]["offline"]
    assert not rows["cifar10"]["offline"] and "cifar-10-python.tar.gz" in rows["cifar10"]["how_to_get"]


def test_synthetic_has_requested_shape():
    ds = data.synthetic((8, 8, 3), n=5, classes=7)
    assert ds.x_train.shape == (5, 8, 8, 3) and ds.y_train.max() < 7 and ds.info["name"] == "synthetic"
