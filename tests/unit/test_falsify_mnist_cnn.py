"""Falsification case of the mnist_cnn claim: the judge (experiment.accuracy) on the summary of two seeds
on the Keras example's protocol (full MNIST, 12 epochs, Adadelta), at the example's accuracy and far below."""

import falsify
import pytest

from repro.core import paramtypes
from repro.experiments.mnist_cnn import experiment as mnist_cnn

EXPERIMENT = "mnist_cnn"

PROTOCOL = (paramtypes.partial(EXPERIMENT, {"epochs": 12}), {"name": "mnist", "n_train": 60000, "verified": True}, "Adadelta")


def _judge(acc: float):
    params, dataset, optimizer = PROTOCOL
    return mnist_cnn.accuracy({"final_test_accuracy": acc}, params, dataset, optimizer, runs=2)


CASES = {"accuracy_12ep": lambda: (_judge(0.9921), _judge(0.9700))}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_flips(cid):
    falsify.check(EXPERIMENT, CASES, cid)


def test_a_deviating_protocol_is_gated_whatever_the_accuracy():
    for acc in (0.9921, 0.9700):
        m = mnist_cnn.accuracy({"final_test_accuracy": acc}, paramtypes.partial(EXPERIMENT, {"epochs": 12}),
                               {"name": "mnist", "n_train": 60000, "verified": True})
        assert m.gate.category.value == "not comparable" and "optimizer Adam" in m.gate.detail


def test_tf32_products_on_a_gpu_are_a_deviation_and_float32_is_the_protocol():
    """The device record decides: the same protocol and accuracy are judged on float32, gated on TF32 (set, or a
    GPU run under JAX that set nothing and so got JAX's TF32 default); a CPU run computes float32."""
    params, dataset, optimizer = PROTOCOL
    judge = lambda device: mnist_cnn.accuracy({"final_test_accuracy": 0.9921}, params, dataset,  # noqa: E731
                                              optimizer, runs=2, device=device)
    gpu = {"device": "GPU", "backend": "jax"}
    assert judge({**gpu, "matmul_precision": {"effective": "float32"}}).gate is None
    assert judge({"device": "CPU", "backend": "jax"}).gate is None
    tf32 = judge({**gpu, "matmul_precision": {"effective": "TF32 products (10-bit mantissas), float32 sums"}})
    assert tf32.gate.category.value == "not comparable" and tf32.gate.detail == "TF32 products, not float32"
    assert judge(gpu).gate.detail.startswith("matmul precision not recorded (JAX's default")
