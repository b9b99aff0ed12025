"""The training helper without training: images per second, fused chunks. Fits on real data are in
``tests/smoke/test_training_smoke.py``."""

import numpy as np
import pandas as pd
import pytest

from repro.ml import training


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
