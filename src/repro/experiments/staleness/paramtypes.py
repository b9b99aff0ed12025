"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Group, Params


class StalenessAvg(Group):
    """staleness: parameter averaging (part 1) (the parameters avg_*)."""

    optimizer: Literal['sgd', 'momentum', 'adam']
    learning_rate: float


class StalenessState(Group):
    """staleness: the optimizer state under averaging (the parameters state_*)."""

    optimizer: Literal['momentum', 'adam']
    learning_rate: float
    workers: int
    periods: list[int]


class StalenessThread(Group):
    """staleness: the threaded asynchronous-SGD check (the parameters thread_*)."""

    workers: list[int]
    seeds: list[int]
    updates: int


class StalenessParams(Params):
    """The parameters of staleness (experiments/staleness/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'staleness'

    dataset: Literal['mnist_subset', 'mnist_subset_rgb32', 'fashion_mnist', 'fashion_mnist_rgb32', 'cifar10']
    train_samples: int
    test_samples: int
    model: Literal['small_cnn', 'polishchuk_cnn', 'mnist_cnn', 'cifar10_cnn']
    epochs: int
    batch_size: int
    seeds: list[int]
    momentum: float
    workers: list[int]
    periods: list[int]
    avg: StalenessAvg
    state: StalenessState
    acceptable_drop: float
    async_learning_rate: float
    taus: list[int]
    tau_dists: list[str]
    mitigations: list[str]
    lr_controls: bool
    mitigation_taus: list[int]
    mitigation_tau_dist: Literal['fixed', 'uniform', 'geometric']
    soft_sync: int
    staleness_bound: int
    thread: StalenessThread
    pipeline_check: bool
