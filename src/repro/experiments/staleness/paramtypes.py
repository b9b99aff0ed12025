"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Literal, TypedDict


class StalenessParams(TypedDict):
    """The parameters of staleness (experiments/staleness/profile.yaml)."""

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
    avg_optimizer: Literal['sgd', 'momentum', 'adam']
    avg_learning_rate: float
    state_optimizer: Literal['momentum', 'adam']
    state_learning_rate: float
    state_workers: int
    state_periods: list[int]
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
    thread_workers: list[int]
    thread_seeds: list[int]
    thread_updates: int
    pipeline_check: bool
