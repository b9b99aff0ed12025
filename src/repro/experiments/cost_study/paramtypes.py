"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Group, Params


class CostStudyMnist(Group):
    """cost_study: the MNIST CNN's training (cloudcost2017: 12 epochs of 60,000 images) (the parameters mnist_*)."""

    dataset: Literal['mnist', 'mnist_subset']
    train_samples: int
    test_samples: int
    epochs: int
    batch_size: int
    target_accuracy: float


class CostStudyCifar(Group):
    """cost_study: the CIFAR-10 CNN's training (the parameters cifar_*)."""

    dataset: Literal['cifar10', 'fashion_mnist_rgb32', 'mnist_subset_rgb32']
    train_samples: int
    test_samples: int
    epochs: int
    batch_size: int
    target_accuracy: float


class CostStudyParams(Params):
    """The parameters of cost_study (experiments/cost_study/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'cost_study'

    networks: list[str]
    mnist: CostStudyMnist
    cifar: CostStudyCifar
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
