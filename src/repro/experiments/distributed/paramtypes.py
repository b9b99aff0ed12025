"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import ClassVar, Literal

from repro.core.paramtypes import Group, Params


class DistributedSweep(Group):
    """distributed: the bandwidth sweep on shaped links (the parameters sweep_*)."""

    bandwidths: list[str] | None
    methods: list[str]
    models: list[str]
    workers: int
    steps: int


class DistributedEmulate(Group):
    """distributed: the grid with emulated compute on emulated links (the parameters emulate_*)."""

    hardware: str | None
    models: list[str]
    methods: list[str]
    workers: list[int]
    steps: int
    warmup_steps: int
    repeats: int


class DistributedDilationCheck(Group):
    """distributed: the re-run at a larger time dilation (the parameters dilation_check_*)."""

    factor: float
    models: list[str]


class DistributedParams(Params):
    """The parameters of distributed (experiments/distributed/profile.yaml)."""

    EXPERIMENT: ClassVar[str] = 'distributed'

    models: list[str]
    image_size: int
    methods: list[str]
    workers: list[int]
    ps: int
    batch_size: int
    warmup_steps: int
    steps: int
    learning_rate: float
    num_classes: int
    threads_per_worker: int
    audit_models: list[str] | None
    timeout: float
    fault_tolerance: bool
    fault_trials: int
    seed: int
    launcher: Literal['local', 'slurm']
    sweep: DistributedSweep
    emulate: DistributedEmulate
    dilation_check: DistributedDilationCheck
    dilation: float
