"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Literal, TypedDict


class SpeedupParams(TypedDict):
    """The parameters of speedup (experiments/speedup/profile.yaml)."""

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
    measure: bool
    measure_networks: list[str]
    measure_image_size: int
    measure_classes: int
    measure_batch: int
    measure_batches: int
    measure_workers: list[int]
    measure_servers: list[str]
    measure_modes: list[str]
    probe_links: list[str]
    train_link: str
    repeats: int
    threads_per_worker: int
    timeout: float
    seed: int
    launcher: Literal['local', 'slurm']
    emulate: str | None
    emulate_networks: list[str]
    emulate_workers: list[int]
    emulate_servers: list[str]
    emulate_modes: list[str]
    emulate_batch: int
    emulate_batches: int
    dilation: float
    dilation_check: float
    emulate_validation: bool
    replay_networks: list[str]
    replay_modes: list[str]
    replay_batches: int
    replay_repeats: int
