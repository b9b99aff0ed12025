"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Params


class OptimizersParams(Params):
    """The parameters of optimizers (experiments/optimizers/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'optimizers'

    dataset: Literal['cifar10', 'fashion_mnist_rgb32', 'mnist_subset_rgb32']
    train_samples: int
    test_samples: int
    optimizers: list[str]
    epochs: int
    batch_size: int
    learning_rate: float
    momentum: float
    filters: list[int]
    dense_units: int
    dropout: float
    seeds: list[int]
    tuned: bool
    lr_grid: list[float]
    tune_epochs: int
    validation_fraction: float
    target_accuracy: float
    trainer: Literal['fit', 'fused']
    steps_per_execution: int
    mixed_precision: bool
    matmul_precision: Literal['float32', 'tf32'] | None
    resume: bool
