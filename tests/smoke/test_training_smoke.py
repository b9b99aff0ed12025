"""The training helper on a small MNIST subset: per-epoch records, exact resume after an interruption,
deadlines between epochs, the shuffle order. Its arithmetic is in ``tests/unit/test_training.py``."""

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


def test_a_checkpointed_fit_stops_before_an_epoch_past_the_deadline(tiny, tmp_path, monkeypatch):
    """REPRO_STOP_AFTER_EPOCHS / REPRO_DEADLINE stop checkpointed training between epochs with its checkpoint
    written (DeadlineReached); unset, the rerun resumes. Without a checkpoint dir nothing stops."""
    ckpt = tmp_path / "ckpt"
    monkeypatch.setenv(training.STOP_AFTER_ENV, str(training._EPOCHS_DONE[0] + 1))
    with pytest.raises(training.DeadlineReached, match="stopped after epoch 1 of 2"):
        training.fit(_model(tiny), tiny, epochs=2, batch_size=32, seed=1, verbose=0, checkpoint_dir=ckpt)
    assert len(pd.read_csv(ckpt / "history.csv")) == 1
    assert len(training.fit(_model(tiny), tiny, epochs=2, batch_size=32, seed=1, verbose=0)) == 2  # no checkpoints
    monkeypatch.delenv(training.STOP_AFTER_ENV)
    monkeypatch.setenv(training.DEADLINE_ENV, "0")  # long past
    with pytest.raises(training.DeadlineReached, match="would end after REPRO_DEADLINE"):
        training.fit(_model(tiny), tiny, epochs=2, batch_size=32, seed=1, verbose=0, checkpoint_dir=ckpt)
    monkeypatch.setenv(training.DEADLINE_ENV, "1e12")
    resumed = training.fit(_model(tiny), tiny, epochs=2, batch_size=32, seed=1, verbose=0, checkpoint_dir=ckpt)
    assert resumed["epoch"].tolist() == [1, 2]


def test_shuffle_order_depends_on_seed_and_epoch(tiny):
    def first_labels(seed):
        ds = training.to_tf_dataset(tiny.x_train, tiny.y_train, 10, 16, shuffle_seed=seed)
        return np.argmax(next(iter(ds))[1].numpy(), axis=1).tolist()

    assert first_labels(5) == first_labels(5)
    assert first_labels(5) != first_labels(6)
