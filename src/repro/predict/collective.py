"""An all-reduce's time by message size and level, from measured nccl-tests sweeps (issue 58).

NCCL's ``all_reduce_perf`` prints, for each message size, the bus bandwidth (``busbw`` = bytes x 2 (N - 1) / N /
time: the rate each link of a ring sees). A small message reaches a fraction of a link's peak: a fixed time per
message (kernel launch, the protocol's handshakes, one latency per ring step) weighs on it. ``busbw.csv`` beside this
module holds the sweeps gathered from published runs (``tools/measurements/curate_busbw.py`` from
``gathered_nccl_busbw.csv``), one per level: inside a host (``intra``: nccl-tests#44, two GPUs over an NVLink bridge)
and between hosts (``inter``: nccl-tests#232, two hosts over RoCE). Each level's sweep is fitted to
``time = alpha + bus bytes / peak`` (least squares of the relative error over its sizes; nothing fitted to a scaling
measurement); ``alpha`` is the level's time per message (kernel launch, the protocol's handshakes and a ring of
two's steps). :func:`repro.predict.perfmodel.allreduce_seconds` charges each message the larger of it and the link's
latency per ring step times ``2 (N - 1)``, so that a message's bus bandwidth follows :func:`busbw`: at a link's peak
for large messages, a fraction of it for small ones. Why not ``alpha`` per ring step: the sweeps have two ranks, so
they cannot tell a fixed cost from one per step, and charging it per step would make a 128-GPU ring's message cost
8 ms (254 steps), more than a faster transport's smaller messages save: Horovod over RoCE would be predicted slower
than over TCP on one cluster, which it was not (horovod2018). The peak itself stays the link's (``links.yaml``: the
busbw published runs reach on it, or its rate times the collective's goodput).
"""

from __future__ import annotations

import csv
from functools import lru_cache
from importlib import resources

from .errors import PredictError

LEVELS = ("intra", "inter")


@lru_cache(maxsize=1)
def rows() -> list[dict]:
    """``busbw.csv``: source, url, locator, level, link, gpus, hosts, bytes_per_rank, busbw_gbyte_s."""
    text = resources.files(__package__).joinpath("busbw.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


@lru_cache(maxsize=None)
def fit(level: str) -> tuple[float, float, int]:
    """``(alpha seconds per message, peak busbw in bytes/s, ranks)`` of the level's sweep: ``time = alpha + bus bytes
    / peak`` by least squares of the relative error of each size's time (``bytes x 2 (N - 1) / N / busbw``)."""
    import numpy as np

    if level not in LEVELS:
        raise PredictError(f"level {level!r}: valid: {', '.join(LEVELS)}")
    sweep = [r for r in rows() if r["level"] == level]
    n = int(sweep[0]["gpus"])
    bus = np.array([float(r["bytes_per_rank"]) * 2 * (n - 1) / n for r in sweep])
    t = bus / np.array([float(r["busbw_gbyte_s"]) * 1e9 for r in sweep])
    (alpha, inverse), *_ = np.linalg.lstsq(np.c_[np.ones_like(bus), bus] / t[:, None], np.ones_like(t), rcond=None)
    return float(alpha), float(1 / inverse), n


def busbw(level: str, nbytes: float, n: int, peak: float, hop_latency: float = 0.0) -> float:
    """The bus bandwidth (bytes/s) one all-reduce of ``nbytes`` per rank over ``n`` ranks reaches at ``level`` on a
    link whose peak is ``peak`` bytes/s and latency per ring step ``hop_latency``: ``bus bytes / (bus bytes / peak +
    max(alpha, 2 (n - 1) hop_latency))``."""
    bus = nbytes * 2 * (n - 1) / n
    return bus / (bus / peak + max(fit(level)[0], 2 * (n - 1) * hop_latency))
