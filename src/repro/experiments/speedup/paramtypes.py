"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Group, Params


class SpeedupMeasure(Group):
    """speedup: the measured grid on a real local cluster (the parameters measure_*)."""

    enabled: bool
    networks: list[str]
    image_size: int
    classes: int
    batch: int
    batches: int
    workers: list[int]
    servers: list[str]
    modes: list[str]


class SpeedupEmulate(Group):
    """speedup: the grid with emulated compute on emulated links (the parameters emulate_*)."""

    hardware: str | None
    networks: list[str]
    workers: list[int]
    servers: list[str]
    modes: list[str]
    batch: int
    batches: int
    validation: bool


class SpeedupReplay(Group):
    """speedup: the replay of one measured configuration, repeated (the parameters replay_*)."""

    networks: list[str]
    modes: list[str]
    batches: int
    repeats: int


class SpeedupParams(Params):
    """The parameters of speedup (experiments/speedup/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'speedup'

    networks: list[str]
    batches: int
    max_workers: int
    max_workers_vgg16e: int
    semaphore: bool
    rounding: Literal['exact', 'ceil']
    count_parameters: bool
    input_size: int
    num_classes: int
    plot_dpi: int
    measure: SpeedupMeasure
    probe_links: list[str]
    train_link: str
    repeats: int
    threads_per_worker: int
    timeout: float
    seed: int
    launcher: Literal['local', 'slurm']
    emulate: SpeedupEmulate
    dilation: float
    dilation_check: float
    replay: SpeedupReplay
