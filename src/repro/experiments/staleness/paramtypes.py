"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.core.params import Bool, Float, Int, Str, one_of
from repro.core.paramtypes import Group, Params


class StalenessAvg(Group):
    """staleness: parameter averaging (part 1) (the parameters avg.*)."""

    optimizer: Literal['sgd', 'momentum', 'adam']
    learning_rate: Annotated[Float, Field(ge=1e-07, le=10.0)]


class StalenessState(Group):
    """staleness: the optimizer state under averaging (the parameters state.*)."""

    optimizer: Literal['momentum', 'adam']
    learning_rate: Annotated[Float, Field(ge=1e-07, le=10.0)]
    workers: Annotated[Int, Field(ge=2, le=64)]
    periods: Annotated[list[Annotated[Int, Field(ge=1, le=100000)]], Field(min_length=1)]


class StalenessThread(Group):
    """staleness: the threaded asynchronous-SGD check (the parameters thread.*)."""

    workers: Annotated[list[Annotated[Int, Field(ge=1, le=32)]], Field(min_length=1)]
    seeds: Annotated[list[Annotated[Int, Field(ge=0)]], Field(min_length=1)]
    updates: Annotated[Int, Field(ge=0, le=100000)]


class StalenessParams(Params):
    """The parameters of staleness (experiments/staleness/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'staleness'

    dataset: Literal['mnist_subset', 'mnist_subset_rgb32', 'fashion_mnist', 'fashion_mnist_rgb32', 'cifar10']
    train_samples: Annotated[Int, Field(ge=0)]
    test_samples: Annotated[Int, Field(ge=0)]
    model: Literal['small_cnn', 'polishchuk_cnn', 'mnist_cnn', 'cifar10_cnn']
    epochs: Annotated[Int, Field(ge=1, le=1000)]
    batch_size: Annotated[Int, Field(ge=1, le=65536)]
    seeds: Annotated[list[Annotated[Int, Field(ge=0)]], Field(min_length=1)]
    momentum: Annotated[Float, Field(ge=0.0, le=0.999)]
    workers: Annotated[list[Annotated[Int, Field(ge=1, le=64)]], Field(min_length=1)]
    periods: Annotated[list[Annotated[Int, Field(ge=1, le=100000)]], Field(min_length=1)]
    avg: StalenessAvg
    state: StalenessState
    acceptable_drop: Annotated[Float, Field(ge=0.0, le=1.0)]
    async_learning_rate: Annotated[Float, Field(ge=1e-07, le=10.0)]
    taus: Annotated[list[Annotated[Int, Field(ge=0, le=4096)]], Field(min_length=1)]
    tau_dists: Annotated[list[Str], Field(min_length=1), one_of('fixed', 'uniform', 'geometric')]
    mitigations: Annotated[list[Str], Field(min_length=1), one_of('none', 'scaling', 'soft_sync', 'bounded', 'scaling+soft_sync')]
    lr_controls: Bool
    mitigation_taus: Annotated[list[Annotated[Int, Field(ge=0, le=4096)]], Field(min_length=1)]
    mitigation_tau_dist: Literal['fixed', 'uniform', 'geometric']
    soft_sync: Annotated[Int, Field(ge=1, le=1024)]
    staleness_bound: Annotated[Int, Field(ge=0, le=4096)]
    thread: StalenessThread
    pipeline_check: Bool
