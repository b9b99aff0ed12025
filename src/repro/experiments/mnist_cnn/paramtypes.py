"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Literal, TypedDict


class MnistCnnParams(TypedDict):
    """The parameters of mnist_cnn (experiments/mnist_cnn/profile.yaml)."""

    dataset: Literal['mnist', 'mnist_subset', 'fashion_mnist']
    train_samples: int
    test_samples: int
    epochs: int
    batch_size: int
    optimizer: Literal['adam', 'adadelta']
    learning_rate: float
    seed: int
    repeats: int
