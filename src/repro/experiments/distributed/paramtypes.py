"""Generated from profile.yaml by ``python -m repro.core.paramtypes``: do not edit by hand."""

from __future__ import annotations

from typing import Literal, TypedDict


class DistributedParams(TypedDict):
    """The parameters of distributed (experiments/distributed/profile.yaml)."""

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
    sweep_bandwidths: list[str] | None
    sweep_methods: list[str]
    sweep_models: list[str]
    sweep_workers: int
    sweep_steps: int
    emulate: str | None
    emulate_models: list[str]
    emulate_methods: list[str]
    emulate_workers: list[int]
    emulate_steps: int
    emulate_warmup_steps: int
    emulate_repeats: int
    dilation_check: float
    dilation_check_models: list[str]
    dilation: float
