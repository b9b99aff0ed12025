"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.core.params import Float, Int
from repro.core.paramtypes import Params


class MnistCnnParams(Params):
    """The parameters of mnist_cnn (experiments/mnist_cnn/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'mnist_cnn'

    dataset: Literal['mnist', 'mnist_subset', 'fashion_mnist']
    train_samples: Annotated[Int, Field(ge=0)]
    test_samples: Annotated[Int, Field(ge=0)]
    epochs: Annotated[Int, Field(ge=1, le=1000)]
    batch_size: Annotated[Int, Field(ge=1, le=65536)]
    optimizer: Literal['adam', 'adadelta']
    learning_rate: Annotated[Float, Field(ge=1e-07, le=10.0)]
    seed: Annotated[Int, Field(ge=0)]
    repeats: Annotated[Int, Field(ge=1, le=20)]
