"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.core.params import NULL, Bool, Float, Int, Str, one_of
from repro.core.paramtypes import Group, Params


class CostStudyMnist(Group):
    """cost_study: the MNIST CNN's training (cloudcost2017: 12 epochs of 60,000 images) (the parameters mnist.*)."""

    dataset: Literal['mnist', 'mnist_subset']
    train_samples: Annotated[Int, Field(ge=0)]
    test_samples: Annotated[Int, Field(ge=0)]
    epochs: Annotated[Int, Field(ge=1, le=1000)]
    batch_size: Annotated[Int, Field(ge=1, le=65536)]
    target_accuracy: Annotated[Float, Field(ge=0.0, le=1.0)]


class CostStudyCifar(Group):
    """cost_study: the CIFAR-10 CNN's training (the parameters cifar.*)."""

    dataset: Literal['cifar10', 'fashion_mnist_rgb32', 'mnist_subset_rgb32']
    train_samples: Annotated[Int, Field(ge=0)]
    test_samples: Annotated[Int, Field(ge=0)]
    epochs: Annotated[Int, Field(ge=1, le=1000)]
    batch_size: Annotated[Int, Field(ge=1, le=65536)]
    target_accuracy: Annotated[Float, Field(ge=0.0, le=1.0)]


class CostStudyParams(Params):
    """The parameters of cost_study (experiments/cost_study/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'cost_study'

    networks: Annotated[list[Str], Field(min_length=1), one_of('mnist_cnn', 'cifar10_cnn')]
    mnist: CostStudyMnist
    cifar: CostStudyCifar
    learning_rate: Annotated[Float, Field(ge=1e-07, le=10.0)]
    cores: Annotated[list[Annotated[Int, Field(ge=0)]], Field(min_length=1)]
    gpu_sweep: Bool
    repetitions: Annotated[Int, Field(ge=1, le=1000)]
    sample_interval_s: Annotated[Float, Field(ge=0.05, le=60.0)]
    child_timeout_s: Annotated[Float, Field(ge=10.0)]
    extrapolate_cores: Annotated[list[Annotated[Int, Field(ge=1, le=1024)]], Field(min_length=1)]
    billing_steps_s: Annotated[list[Annotated[Float, Field(ge=1.0)]], Field(min_length=1)]
    reference_provider: Str
    price_table: Annotated[Str | None, NULL]
    seed: Annotated[Int, Field(ge=0)]
    resume: Bool
