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


def test_images_per_second_arithmetic():
    hist = pd.DataFrame({"epoch_time_s": [2.0, 3.0]})
    assert training.images_per_second(hist, 1000) == pytest.approx(2 * 1000 / 5.0)


@pytest.mark.parametrize("n, batch, steps, shapes", [
    (250, 32, 3, [(3, 32), (3, 32), (1, 32), (1, 26)]),  # two chunks, a lone full batch, the partial one
    (256, 32, 4, [(4, 32), (4, 32)]),
    (50_000, 32, 8, [(8, 32)] * 195 + [(1, 32)] * 2 + [(1, 16)]),  # CIFAR-10's size: 1,562 full batches + 16
])
def test_fused_chunks_are_the_epochs_batches_in_order(n, batch, steps, shapes):
    """Each stacked model's own permutation, cut as model.fit cuts it; the dispatch count without scan is
    the number of chunks."""
    from repro.ml import fused

    rng = np.random.default_rng(0)
    order = np.stack([rng.permutation(n) for _ in range(2)])  # two models, two data orders
    chunks = fused._chunks(order, batch, steps)
    assert [c.shape for c in chunks] == [(2, *s) for s in shapes]
    for k in range(2):  # every example once, in that model's order
        assert np.array_equal(np.concatenate([c[k].ravel() for c in chunks]), order[k])
    assert len({c.shape for c in chunks}) <= 3  # at most three compilations per group
    assert fused.dispatches_per_epoch(n, batch, steps, scan=False) == len(chunks)


def test_fused_scan_makes_an_epochs_full_chunks_one_dispatch():
    from repro.ml import fused

    # 50,000 at batch 32: 195 chunks of 8, 2 lone batches, one of 16 -> 198 calls, or 1 + 2 + 1 scanned
    assert fused.dispatches_per_epoch(50_000, 32, 8, scan=False) == 198
    assert fused.dispatches_per_epoch(50_000, 32, 8, scan=True) == 4
    assert fused.dispatches_per_epoch(8_192, 32, 8, scan=True) == 1
