"""On a GPU machine: the spine experiment trains on the GPU and records it (skipped without one)."""

import pytest


@pytest.mark.gpu
def test_mnist_cnn_trains_on_the_gpu(results_root):
    from repro.experiments.mnist_cnn import experiment as mnist_cnn

    got = mnist_cnn.run("smoke", {"epochs": 1})
    assert got.provenance["device"]["device"] == "GPU"
    assert got.provenance["hardware"]["gpus"], "a GPU run must name its GPU in the provenance"
    assert got.summary["final_test_accuracy"] > 0.5
