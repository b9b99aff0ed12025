"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Params


class MnistCnnParams(Params):
    """The parameters of mnist_cnn (experiments/mnist_cnn/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'mnist_cnn'

    dataset: Literal['mnist', 'mnist_subset', 'fashion_mnist']
    train_samples: int
    test_samples: int
    epochs: int
    batch_size: int
    optimizer: Literal['adam', 'adadelta']
    learning_rate: float
    seed: int
    repeats: int
