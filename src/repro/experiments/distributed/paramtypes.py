"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.core.params import NULL, Bool, Float, Int, Str, one_of
from repro.core.paramtypes import Group, Params


class DistributedSweep(Group):
    """distributed: the bandwidth sweep on shaped links (the parameters sweep.*)."""

    bandwidths: Annotated[Annotated[list[Str], Field(min_length=1)] | None, NULL]
    methods: Annotated[list[Str], Field(min_length=1), one_of('ring', 'ps_async', 'ps_sync')]
    models: Annotated[list[Str], Field(min_length=1)]
    workers: Annotated[Int, Field(ge=2, le=64)]
    steps: Annotated[Int, Field(ge=1, le=100000)]


class DistributedEmulate(Group):
    """distributed: the grid with emulated compute on emulated links (the parameters emulate.*)."""

    hardware: Annotated[Str | None, NULL]
    models: Annotated[list[Str], Field(min_length=1), one_of('vgg16', 'vgg19', 'resnet50', 'resnet152', 'inception_v3')]
    methods: Annotated[list[Str], Field(min_length=1), one_of('ring', 'ps_async', 'ps_sync', 'horovod')]
    workers: Annotated[list[Annotated[Int, Field(ge=1, le=64)]], Field(min_length=1)]
    steps: Annotated[Int, Field(ge=1, le=100000)]
    warmup_steps: Annotated[Int, Field(ge=0, le=100000)]
    repeats: Annotated[Int, Field(ge=1, le=100)]


class DistributedDilationCheck(Group):
    """distributed: the re-run at a larger time dilation (the parameters dilation_check.*)."""

    factor: Annotated[Float, Field(ge=0.0, le=100.0)]
    models: Annotated[list[Str], Field(min_length=1), one_of('vgg16', 'vgg19', 'resnet50', 'resnet152', 'inception_v3')]


class DistributedParams(Params):
    """The parameters of distributed (experiments/distributed/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'distributed'

    models: Annotated[list[Str], Field(min_length=1), one_of('tiny', 'vgg16', 'vgg19', 'resnet50', 'resnet152', 'inception_v3')]
    image_size: Annotated[Int, Field(ge=0, le=1024)]
    methods: Annotated[list[Str], Field(min_length=1), one_of('ring', 'ps_async', 'ps_sync', 'horovod')]
    workers: Annotated[list[Annotated[Int, Field(ge=1, le=64)]], Field(min_length=1)]
    ps: Annotated[Int, Field(ge=1, le=16)]
    batch_size: Annotated[Int, Field(ge=1, le=4096)]
    warmup_steps: Annotated[Int, Field(ge=0, le=100000)]
    steps: Annotated[Int, Field(ge=1, le=100000)]
    learning_rate: Annotated[Float, Field(ge=1e-07, le=10.0)]
    num_classes: Annotated[Int, Field(ge=2, le=100000)]
    threads_per_worker: Annotated[Int, Field(ge=0, le=256)]
    audit_models: Annotated[Annotated[list[Str], Field(min_length=1), one_of('vgg16', 'vgg19', 'resnet50', 'resnet152', 'inception_v3', 'inception_v4')] | None, NULL]
    timeout: Annotated[Float, Field(ge=10.0, le=86400.0)]
    fault_tolerance: Bool
    fault_trials: Annotated[Int, Field(ge=1, le=10)]
    seed: Annotated[Int, Field(ge=0)]
    launcher: Literal['local', 'slurm']
    sweep: DistributedSweep
    emulate: DistributedEmulate
    dilation_check: DistributedDilationCheck
    dilation: Annotated[Float, Field(ge=0.0, le=10000.0)]
