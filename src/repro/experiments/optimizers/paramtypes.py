"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.core.params import NULL, Bool, Float, Int, Str, one_of
from repro.core.paramtypes import Params


class OptimizersParams(Params):
    """The parameters of optimizers (experiments/optimizers/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'optimizers'

    dataset: Literal['cifar10', 'fashion_mnist_rgb32', 'mnist_subset_rgb32']
    train_samples: Annotated[Int, Field(ge=0)]
    test_samples: Annotated[Int, Field(ge=0)]
    optimizers: Annotated[list[Str], Field(min_length=1), one_of('sgd', 'momentum', 'nesterov', 'rmsprop', 'adam', 'adagrad', 'nadam', 'adadelta')]
    epochs: Annotated[Int, Field(ge=1, le=1000)]
    batch_size: Annotated[Int, Field(ge=1, le=65536)]
    learning_rate: Annotated[Float, Field(ge=1e-08, le=10.0)]
    momentum: Annotated[Float, Field(ge=0.0, le=0.999)]
    filters: Annotated[list[Annotated[Int, Field(ge=1, le=1024)]], Field(min_length=3, max_length=3)]
    dense_units: Annotated[Int, Field(ge=1, le=8192)]
    dropout: Annotated[Float, Field(ge=0.0, le=0.95)]
    seeds: Annotated[list[Annotated[Int, Field(ge=0)]], Field(min_length=1)]
    tuned: Bool
    lr_grid: Annotated[list[Annotated[Float, Field(ge=1e-08, le=10.0)]], Field(min_length=1)]
    tune_epochs: Annotated[Int, Field(ge=1, le=1000)]
    validation_fraction: Annotated[Float, Field(ge=0.05, le=0.5)]
    target_accuracy: Annotated[Float, Field(ge=0.0, le=1.0)]
    trainer: Literal['fit', 'fused']
    steps_per_execution: Annotated[Int, Field(ge=1, le=10000)]
    mixed_precision: Bool
    matmul_precision: Annotated[Literal['float32', 'tf32'] | None, NULL]
    resume: Bool
