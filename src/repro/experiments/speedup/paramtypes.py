"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from repro.core.params import NULL, Bool, Float, Int, Str, one_of
from repro.core.paramtypes import Group, Params


class SpeedupGrid(Group):
    """speedup: the fields measure, emulate share (shape Grid)."""

    networks: Annotated[list[Str], Field(min_length=1), one_of('VGG16E', 'GoogLeNet', 'SqueezeNet', 'Resnet34')]
    batch: Annotated[Int, Field(ge=1, le=4096)]
    batches: Annotated[Int, Field(ge=1, le=100000)]
    workers: Annotated[list[Annotated[Int, Field(ge=1, le=64)]], Field(min_length=1)]
    servers: Annotated[list[Str], Field(min_length=1), one_of('central', 'distributed')]
    modes: Annotated[list[Str], Field(min_length=1), one_of('sync-join', 'sync-split', 'async')]


class SpeedupMeasure(SpeedupGrid):
    """speedup: the measured grid on a real local cluster (the parameters measure.*)."""

    enabled: Bool
    image_size: Annotated[Int, Field(ge=32, le=1024)]
    classes: Annotated[Int, Field(ge=2, le=100000)]


class SpeedupEmulate(SpeedupGrid):
    """speedup: the grid with emulated compute on emulated links (the parameters emulate.*)."""

    hardware: Annotated[Str | None, NULL]
    validation: Bool


class SpeedupReplay(Group):
    """speedup: the replay of one measured configuration, repeated (the parameters replay.*)."""

    networks: Annotated[list[Str], Field(min_length=1), one_of('VGG16E', 'GoogLeNet', 'SqueezeNet', 'Resnet34')]
    modes: Annotated[list[Str], Field(min_length=1), one_of('sync-join', 'sync-split', 'async')]
    batches: Annotated[Int, Field(ge=1, le=100000)]
    repeats: Annotated[Int, Field(ge=0, le=1000)]


class SpeedupParams(Params):
    """The parameters of speedup (experiments/speedup/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'speedup'

    networks: Annotated[list[Str], Field(min_length=1), one_of('VGG16E', 'GoogLeNet', 'SqueezeNet', 'Resnet34')]
    batches: Annotated[Int, Field(ge=1, le=1000000)]
    max_workers: Annotated[Int, Field(ge=1, le=1024)]
    max_workers_vgg16e: Annotated[Int, Field(ge=1, le=1024)]
    semaphore: Bool
    rounding: Literal['exact', 'ceil']
    count_parameters: Bool
    input_size: Annotated[Int, Field(ge=32, le=1024)]
    num_classes: Annotated[Int, Field(ge=2, le=100000)]
    plot_dpi: Annotated[Int, Field(ge=50, le=600)]
    measure: SpeedupMeasure
    probe_links: Annotated[list[Str], Field(min_length=1)]
    train_link: Str
    repeats: Annotated[Int, Field(ge=2, le=10000)]
    threads_per_worker: Annotated[Int, Field(ge=0, le=256)]
    timeout: Annotated[Float, Field(ge=10.0, le=86400.0)]
    seed: Annotated[Int, Field(ge=0)]
    launcher: Literal['local', 'slurm']
    emulate: SpeedupEmulate
    dilation: Annotated[Float, Field(ge=0.0, le=1000.0)]
    dilation_check: Annotated[Float, Field(ge=0.0, le=100.0)]
    replay: SpeedupReplay
