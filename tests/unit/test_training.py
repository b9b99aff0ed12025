"""The training helper: per-epoch records, exact resume after an interruption."""

import numpy as np
import pandas as pd
import pytest

from repro.experiments.mnist_cnn import experiment as mnist_cnn
from repro.ml import data, training

METRICS = ["loss", "accuracy", "test_loss", "test_accuracy"]


@pytest.fixture(scope="module")
def tiny():
    return data.load("mnist_subset", n_train=256, n_test=128, seed=0)


def _model(ds, seed=1):
    import keras

    keras.utils.set_random_seed(seed)
    return mnist_cnn.build_model(ds.input_shape, ds.num_classes, 1e-3)


def test_history_has_one_row_per_epoch_and_learns(tiny):
    hist = training.fit(_model(tiny), tiny, epochs=3, batch_size=32, seed=1, verbose=0)
    assert list(hist.columns) == training.HISTORY_COLUMNS
    assert hist["epoch"].tolist() == [1, 2, 3]
    assert hist["loss"].iloc[-1] < hist["loss"].iloc[0]
    assert (hist["epoch_time_s"] > 0).all()
    assert np.allclose(hist["train_time_s"], hist["epoch_time_s"].cumsum())


def test_resume_after_interruption_reproduces_the_uninterrupted_run(tiny, tmp_path):
    full = training.fit(_model(tiny), tiny, epochs=3, batch_size=32, seed=1, verbose=0)
    ckpt = tmp_path / "ckpt"
    training.fit(_model(tiny), tiny, epochs=2, batch_size=32, seed=1, verbose=0, checkpoint_dir=ckpt)  # "killed" after 2
    assert len(pd.read_csv(ckpt / "history.csv")) == 2
    resumed = training.fit(_model(tiny, seed=99), tiny, epochs=3, batch_size=32, seed=1, verbose=0, checkpoint_dir=ckpt)
    assert resumed["epoch"].tolist() == [1, 2, 3]
    np.testing.assert_array_equal(resumed[METRICS].to_numpy(), full[METRICS].to_numpy())


def test_shuffle_order_depends_on_seed_and_epoch(tiny):
    def first_labels(seed):
        ds = training.to_tf_dataset(tiny.x_train, tiny.y_train, 10, 16, shuffle_seed=seed)
        return np.argmax(next(iter(ds))[1].numpy(), axis=1).tolist()

    assert first_labels(5) == first_labels(5)
    assert first_labels(5) != first_labels(6)


def test_images_per_second_arithmetic():
    hist = pd.DataFrame({"epoch_time_s": [2.0, 3.0]})
    assert training.images_per_second(hist, 1000) == pytest.approx(2 * 1000 / 5.0)


@pytest.mark.parametrize("n, batch, steps, shapes", [
    (250, 32, 3, [(3, 32), (3, 32), (1, 32), (1, 26)]),  # two chunks, a lone full batch, the partial one
    (256, 32, 4, [(4, 32), (4, 32)]),
    (50_000, 32, 8, [(8, 32)] * 195 + [(1, 32)] * 2 + [(1, 16)]),  # CIFAR-10's size: 1,562 full batches + 16
])
def test_fused_chunks_are_the_epochs_batches_in_order(n, batch, steps, shapes):
    from repro.ml import fused

    order = np.random.default_rng(0).permutation(n)
    chunks = fused._chunks(order, batch, steps)
    assert [c.shape for c in chunks] == shapes
    assert np.array_equal(np.concatenate([c.ravel() for c in chunks]), order)  # every example once, fit's order
    assert len({c.shape for c in chunks}) <= 3  # at most three compilations per group
