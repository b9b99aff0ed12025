"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Params


class CostStudyParams(Params):
    """The parameters of cost_study (experiments/cost_study/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'cost_study'

    networks: list[str]
    mnist_dataset: Literal['mnist', 'mnist_subset']
    mnist_train_samples: int
    mnist_test_samples: int
    mnist_epochs: int
    mnist_batch_size: int
    mnist_target_accuracy: float
    cifar_dataset: Literal['cifar10', 'fashion_mnist_rgb32', 'mnist_subset_rgb32']
    cifar_train_samples: int
    cifar_test_samples: int
    cifar_epochs: int
    cifar_batch_size: int
    cifar_target_accuracy: float
    learning_rate: float
    cores: list[int]
    gpu_sweep: bool
    repetitions: int
    sample_interval_s: float
    child_timeout_s: float
    extrapolate_cores: list[int]
    billing_steps_s: list[float]
    reference_provider: str
    price_table: str | None
    seed: int
    resume: bool
