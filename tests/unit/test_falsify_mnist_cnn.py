"""Falsification case of the mnist_cnn claim: the judge (experiment.accuracy) on the summary of two seeds
on the Keras example's protocol (full MNIST, 12 epochs, Adadelta), at the example's accuracy and far below."""

import falsify
import pytest

from repro.experiments.mnist_cnn import experiment as mnist_cnn

EXPERIMENT = "mnist_cnn"

PROTOCOL = ({"epochs": 12}, {"name": "mnist", "n_train": 60000}, "Adadelta")


def _judge(acc: float):
    params, dataset, optimizer = PROTOCOL
    return mnist_cnn.accuracy({"final_test_accuracy": acc}, params, dataset, optimizer, runs=2)


CASES = {"accuracy_12ep": lambda: (_judge(0.9921), _judge(0.9700))}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_flips(cid):
    falsify.check(EXPERIMENT, CASES, cid)


def test_a_deviating_protocol_is_gated_whatever_the_accuracy():
    for acc in (0.9921, 0.9700):
        m = mnist_cnn.accuracy({"final_test_accuracy": acc}, {"epochs": 12}, {"name": "mnist", "n_train": 60000})
        assert m.gate.category.value == "not comparable" and "optimizer Adam" in m.gate.detail
