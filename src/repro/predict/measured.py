"""The analytic model (:mod:`repro.predict.perfmodel`) against real measurements that no one here made.

``measurements.csv`` (beside this module) holds published scaling measurements of data-parallel
training: every point with its source (document, table), hardware (GPU, GPUs per host, the links of
``links.yaml``), framework and method, batch per worker, the source's one-GPU images/s and the
measured images/s (or the scaling efficiency the source states) at ``workers`` GPUs. A user's own
cluster's measurements in the same columns go through :func:`load` too.

For each point the model is given a hardware profile built from the point's own description and
predicts the scaling efficiency; nothing is fitted per point. One constant per framework and method,
the per-step overhead, is fitted on the points whose ``split`` is ``train`` (:func:`fit`) and the
errors are reported on the ``test`` half (:func:`summary`).
"""

from __future__ import annotations

import csv
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from repro.core.params import one_line

from . import hardware, overlap, perfmodel
from .errors import PredictError

# How each framework and method moves gradients (repro.predict.overlap for the terms):
# overlap, fusion buffer (bytes), cycle (s), host aggregation
TERMS = {
    ("horovod", "horovod"): (True, overlap.HOROVOD_FUSION_BYTES, overlap.HOROVOD_CYCLE_S, False),
    # tf_cnn_benchmarks 'replicated' with NCCL: per variable, modelled without overlap. Our reading of the set's
    # residuals, not a published account: overlapped, every TF ring host inside a host was predicted at 1 - overhead
    # whatever its links and model (leave one source out: rank correlation 0.62 overlapped, 0.70 not)
    ("tensorflow", "ring"): (False, 0.0, 0.0, False),
    ("tensorflow", "ps_sync"): (True, 0.0, 0.0, True),  # pushes per variable as ready; a worker sums its GPUs first
    ("thesis", "ps_sync"): (False, 0.0, 0.0, False),  # the thesis' dist.py: compute, then move all the weights
    ("thesis", "ps_async"): (False, 0.0, 0.0, False),
    # PyTorch DistributedDataParallel: gradients bucketed (bucket_cap_mb 25 by default), each bucket all-reduced
    # once full, overlapped with the backward pass (Li et al., VLDB 2020, section 3.2)
    ("pytorch", "ddp"): (True, 25 * 2**20, 0.0, False),
    # MXNet kvstore 'device' on one host: each tensor reduced on the GPUs as the backward pass makes it ready
    ("mxnet", "ring"): (True, 0.0, 0.0, False),
    # MXNet kvstore 'dist_device_sync': a server on every worker host; a host sums its GPUs' gradients first
    ("mxnet", "ps_sync"): (True, 0.0, 0.0, True),
}
# bytes per gradient value on the wire in mixed precision: tf_cnn_benchmarks' --use_fp16 sends float16
# gradients (compact_gradient_transfer, on by default); PyTorch AMP and Horovod all-reduce float32 gradients
MIXED_VALUE_BYTES = {"tensorflow": 2.0}
# all-reduces that are NCCL's (tf_cnn_benchmarks' replicated with NCCL, PyTorch DDP's nccl backend, Horovod over NCCL):
# their time per ring step from nccl-tests' sweeps (repro.predict.collective); MXNet's kvstore 'device' is its own
NCCL = {("tensorflow", "ring"), ("pytorch", "ddp"), ("horovod", "horovod")}
SPLITS = ("train", "test")


class Point(BaseModel):
    """One published measurement (a row of ``measurements.csv``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    locator: str = Field(min_length=1)
    url: str = ""
    framework: Literal["tensorflow", "horovod", "thesis", "pytorch", "mxnet"]
    method: Literal["ps_sync", "ps_async", "ring", "horovod", "ddp"]
    ps: int | None = Field(default=None, ge=1)
    ps_placement: Literal["host", "workers", "separate", "none"]
    gpu: str = Field(min_length=1)
    gpus_per_host: int = Field(ge=1)
    gpus_per_switch: int | None = Field(default=None, ge=1)
    intra_link: str
    inter_link: str
    pull: Literal["with-forward", "after-update"] = "with-forward"  # when a PS worker reads the new weights
    model: str = Field(min_length=1)
    parameters: int | None = Field(default=None, ge=1)
    batch: int = Field(ge=1)
    data: str = ""
    workers: int = Field(ge=1)
    images_per_s: float | None = Field(default=None, gt=0)
    efficiency: float | None = Field(default=None, gt=0, le=1.5)
    single_images_per_s: float = Field(gt=0)
    reading: Literal["table", "text", "figure-approx", "derived"]
    split: Literal["train", "test"]
    precision: Literal["fp32", "mixed"] = "fp32"
    # False: GeForce RTX 30/40 GPUs over PCIe, whose driver gives no peer-to-peer access (tinygrad/open-gpu-kernel-
    # modules#17: 8 RTX 4090, P2P disabled by the driver); an all-reduce is staged through host memory
    peer_to_peer: bool = True
    # images/s one host's input pipeline delivers (real data), where a source states it (perfmodel's input bound)
    input_images_per_s: float | None = Field(default=None, gt=0)
    framework_version: str = ""  # as the source states it (the gathered rows'; blank where it states none)
    note: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "Point":
        if self.images_per_s is None and self.efficiency is None:
            raise ValueError("needs images_per_s or efficiency")
        if self.method.startswith("ps") and self.ps is None:
            raise ValueError("a parameter-server point needs ps (the number of servers)")
        for name in {self.intra_link, self.inter_link} - {"none"}:
            if name not in links():
                raise ValueError(f"link {name!r} is not in links.yaml (valid: {', '.join(links())}, none)")
        if self.gpus_per_host > 1 and self.intra_link == "none":
            raise ValueError("gpus_per_host > 1 needs intra_link")
        if self.workers > self.gpus_per_host and self.inter_link == "none":
            raise ValueError("more workers than a host's GPUs needs inter_link")
        if (self.framework, self.method) not in TERMS:
            raise ValueError(f"framework {self.framework} with method {self.method} is not modelled "
                             f"(valid: {', '.join('/'.join(k) for k in TERMS)})")
        return self

    @property
    def measured(self) -> float:
        """The measured scaling efficiency: images/s over N times the one-GPU rate, else as stated."""
        if self.images_per_s is not None:
            return self.images_per_s / (self.workers * self.single_images_per_s)
        assert self.efficiency is not None  # the model validator: images_per_s or efficiency
        return float(self.efficiency)


@lru_cache(maxsize=1)
def links() -> dict:
    """``links.yaml``: name -> {rate, goodput, latency_s, source}."""
    return yaml.safe_load(resources.files(__package__).joinpath("links.yaml").read_text(encoding="utf-8"))["links"]


def default_file() -> Path:
    return Path(str(resources.files(__package__).joinpath("measurements.csv")))


def extra_file() -> Path:
    """``measurements_extra.csv``: published measurements gathered for the leave-one-source-out check (issue 48;
    hosts over PCIe, NVLink and NVSwitch, PyTorch DDP also between hosts over 200 Gb/s InfiniBand, MXNet's kvstore
    over 20 Gb/s, TensorFlow's replicated and CPU parameter server on 8 P100), in the same schema
    (with ``precision``). The fitted overheads the experiments use come from ``measurements.csv`` alone."""
    return Path(str(resources.files(__package__).joinpath("measurements_extra.csv")))


def load_all() -> list[Point]:
    """Both sets: every published measurement the package has (:mod:`repro.predict.loso` reads them all)."""
    return load(default_file()) + load(extra_file())


def load(path: str | Path | None = None) -> list[Point]:
    """The points of ``path`` (default: the package's set); a malformed row is one line naming the file,
    the row's id (or line) and the field."""
    path = Path(path) if path else default_file()
    try:
        rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))
    except OSError as exc:
        raise PredictError(f"measurements file {path}: {exc.strerror or exc}") from None
    if not rows:
        raise PredictError(f"measurements file {path}: no rows")
    points = []
    for line, row in enumerate(rows, start=2):
        clean = {k: v for k, v in row.items() if k is not None and v not in ("", None)}
        try:
            points.append(Point.model_validate(clean))
        except ValidationError as err:
            where = f"measurements file {path}, line {line} ({row.get('id') or '?'})"
            raise PredictError(one_line(err, where)) from None
    return points


def parameters(p: Point) -> int:
    """The point's weights: given, else the Keras model's (:data:`perfmodel.PARAMETERS`, the layer table)."""
    if p.parameters:
        return p.parameters
    if p.model in perfmodel.PARAMETERS:
        return perfmodel.PARAMETERS[p.model]
    if p.model in overlap.models():
        return sum(n for n, _ in overlap.layers(p.model))
    raise PredictError(f"measurement {p.id}: model {p.model!r} has no known parameter count; give 'parameters'")


def profile(p: Point, overhead: float = 0.0, latency: float = 0.0) -> hardware.Profile:
    """The hardware profile the point describes, with its framework's terms, ``overhead`` (a share of
    the step's compute) and ``latency`` (seconds) per step."""
    ov, fusion, cycle, agg = TERMS[(p.framework, p.method)]
    inter = links().get(p.inter_link, {"rate": "1gbit", "goodput": 1.0, "latency_s": 0.0})
    intra = links().get(p.intra_link)
    raw = {"images_per_s": {p.model: p.single_images_per_s}, "batch": p.batch, "link": inter["rate"],
           "goodput": inter["goodput"], "collective_goodput": inter.get("collective_goodput"),
           "latency_s": inter["latency_s"], "gpus_per_host": p.gpus_per_host,
           "gpus_per_switch": p.gpus_per_switch, "intra_link": intra["rate"] if intra else None,
           "intra_latency_s": intra["latency_s"] if intra else 0.0, "ps_on_workers": p.ps_placement != "separate",
           "overlap": ov, "pull_with_forward": p.pull == "with-forward", "fusion_bytes": fusion, "cycle_s": cycle,
           "host_aggregation": agg, "peer_to_peer": p.peer_to_peer, "step_overhead": overhead,
           "step_latency_s": latency, "input_images_per_s": p.input_images_per_s, "description": p.gpu,
           "measured_collective": (p.framework, p.method) in NCCL,
           "source": p.source}
    return hardware.profile(p.id, raw)


def value_bytes(p: Point) -> float:
    """Bytes per gradient value the point's framework sends (:data:`MIXED_VALUE_BYTES` in mixed precision)."""
    return MIXED_VALUE_BYTES.get(p.framework, 4.0) if p.precision == "mixed" else 4.0


def predict(p: Point, overhead: float = 0.0, latency: float = 0.0) -> dict:
    """The model's step for the point (:func:`perfmodel.step`)."""
    return perfmodel.step(profile(p, overhead, latency), p.model, p.method, p.workers, p.batch, parameters(p),
                          p.ps or 1, value_bytes=value_bytes(p))


def group(p: Point) -> str:
    return f"{p.framework}/{p.method}"


def fit(points: list[Point], grid=None, splits: tuple[str, ...] = ("train",)) -> dict[str, float]:
    """Per framework/method, the per-step overhead (a share of compute) that minimises the median
    absolute efficiency error over its points of ``splits`` with N > 1 (a grid of 0-20 % by 0.25 %); 0 where
    it has none. A step of ``compute + exposed communication`` (efficiency ``e0`` without overhead) takes
    ``c x compute`` more with it: efficiency ``1 / (1 / e0 + c)`` (async PS: predicted again, its bound)."""
    grid = grid if grid is not None else [i * 0.0025 for i in range(81)]
    out = {}
    for key in sorted({group(p) for p in points}):
        train = [p for p in points if group(p) == key and p.split in splits and p.workers > 1]
        if not train:
            out[key] = 0.0
            continue
        base = [predict(p)["efficiency"] for p in train]

        def cost(c, train=train, base=base):
            errs = [abs((predict(p, c)["efficiency"] if p.method == "ps_async" else 1 / (1 / e0 + c)) - p.measured)
                    for p, e0 in zip(train, base)]
            return float(pd.Series(errs).median())
        out[key] = min(grid, key=lambda c: (round(cost(c), 9), c))
    return out


# The per-step latency's grid (seconds): 0-20 ms by 0.25 ms. Its order: a CUDA kernel launch costs 5-10 us and a
# step of a CNN launches hundreds (NVIDIA CUDA C++ Best Practices Guide, "kernel launch overhead"); Horovod's
# coordinator negotiates each cycle (HOROVOD_CYCLE_TIME, 5 ms by default: Sergeev & Del Balso, arXiv:1802.05799);
# PyTorch DDP's autograd hooks and one allreduce call per 25 MiB bucket (Li et al., VLDB 2020, section 3.2)
LATENCY_GRID = tuple(i * 0.00025 for i in range(81))


def efficiency_with(e0, compute, share, latency):
    """The efficiency of a step whose efficiency without per-step work is ``e0`` (compute over the step), given
    ``share`` of compute and ``latency`` seconds more per step: ``1 / (1 / e0 + share + latency / compute)``
    (arrays or numbers)."""
    return 1 / (1 / e0 + share + latency / compute)


def fit_terms(points: list[Point], splits: tuple[str, ...] = ("train",), grid=None,
              latencies=LATENCY_GRID) -> dict[str, tuple[float, float]]:
    """Per framework/method the per-step overhead share, and per framework one latency (seconds), that minimise
    the median absolute efficiency error over the framework's points of ``splits`` with N > 1 (grids :func:`fit`'s
    and :data:`LATENCY_GRID`; for each latency every method's share is its own best; ties: the smaller). Returns
    framework/method -> (share, latency); (0, 0) where it has no points. ``latencies=(0.0,)``: the share alone
    (:func:`fit`). An asynchronous PS keeps :func:`fit`'s share alone (its bound is predicted again)."""
    import numpy as np

    shares = np.array(grid if grid is not None else [i * 0.0025 for i in range(81)])
    out: dict[str, tuple[float, float]] = {}
    for fw in sorted({p.framework for p in points}):
        data = {}
        for key in sorted({group(p) for p in points if p.framework == fw}):
            train = [p for p in points if group(p) == key and p.split in splits and p.workers > 1]
            if not train or train[0].method == "ps_async":
                out[key] = (fit(train, list(shares), splits).get(key, 0.0) if train else 0.0, 0.0)
                continue
            data[key] = (np.array([predict(p)["efficiency"] for p in train]),
                         np.array([p.batch / p.single_images_per_s for p in train]),
                         np.array([p.measured for p in train]))
        best = None
        for lat in latencies:
            chosen, errs = {}, []
            for key, (e0, compute, got) in data.items():
                err = np.abs(efficiency_with(e0, compute, shares[:, None], lat) - got)
                i = int(np.argmin(np.round(np.median(err, axis=1), 9)))
                chosen[key] = float(shares[i])
                errs.append(err[i])
            cost = round(float(np.median(np.concatenate(errs))), 9) if errs else 0.0
            if best is None or cost < best[0]:
                best = (cost, float(lat), chosen)
        assert best is not None
        out.update({key: (c, best[1]) for key, c in best[2].items()})
    return out


def validate(points: list[Point], overheads: dict[str, float] | None = None) -> pd.DataFrame:
    """Per point: measured and predicted efficiency and the error in percentage points (predicted -
    measured); ``overheads`` per framework/method (default: :func:`fit` on the points' train half)."""
    overheads = fit(points) if overheads is None else overheads
    rows = []
    for p in points:
        got = predict(p, overheads.get(group(p), 0.0))
        rows.append({"id": p.id, "source": p.source, "method": p.method, "framework": p.framework, "model": p.model,
                     "gpu": p.gpu, "gpus_per_host": p.gpus_per_host, "inter_link": p.inter_link, "workers": p.workers,
                     "split": p.split, "measured": p.measured, "predicted": got["efficiency"],
                     "error_pp": 100 * (got["efficiency"] - p.measured), "note": got["note"]})
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame, split: str | None = "test") -> pd.DataFrame:
    """Median and worst absolute error (percentage points) per source and method over the points with
    N > 1 (of ``split``; None: all)."""
    t = table[table["workers"] > 1]
    if split:
        t = t[t["split"] == split]
    g = t.assign(abs_pp=t["error_pp"].abs()).groupby(["source", "method"])["abs_pp"]
    out = g.agg(points="count", median_pp="median", worst_pp="max").reset_index()
    return out


def overall(table: pd.DataFrame, split: str = "test") -> dict:
    """Median and worst absolute error (pp) over every point of ``split`` with N > 1."""
    t = table[(table["workers"] > 1) & (table["split"] == split)]["error_pp"].abs()
    return {"points": int(t.size), "median_pp": float(t.median()) if t.size else math.nan,
            "worst_pp": float(t.max()) if t.size else math.nan}


# The goal a model verdict needs on the held-out half, per method (issue 38: median 5, worst 10 percentage
# points of scaling efficiency; for reference, Habitat predicts iteration times within 11.8 %)
GOAL_MEDIAN_PP, GOAL_WORST_PP = 5.0, 10.0


def method_errors(table: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """Per method, over every source: the points of ``split`` with N > 1, their median and worst absolute
    error (percentage points)."""
    t = table[(table["workers"] > 1) & (table["split"] == split)]
    g = t.assign(abs_pp=t["error_pp"].abs()).groupby("method")["abs_pp"]
    return g.agg(points="count", median_pp="median", worst_pp="max")


@lru_cache(maxsize=1)
def package_validation() -> tuple[dict, pd.DataFrame]:
    """The fitted overheads and the validation table of the package's own set (computed once a process)."""
    points = load()
    overheads = fit(points)
    return overheads, validate(points, overheads)


def overhead_for(method: str) -> float:
    """The fitted overhead the paper-scale predictions use for ``method`` (Horovod's for the all-reduce methods:
    horovod, ring, ddp; TensorFlow's parameter server's for the PS methods)."""
    overheads = package_validation()[0]
    key = "horovod/horovod" if method in perfmodel.ALLREDUCE else "tensorflow/ps_sync"
    return overheads.get(key, 0.0)


def report(path: str | Path | None = None) -> str:
    """What ``repro predict --validate measurements|FILE`` prints: per point predicted vs measured, per
    source and method the median and worst error on the held-out half (and on all points), the fitted
    overheads. A user's file is judged with the overheads fitted on its own train rows."""
    points = load(path)
    overheads = fit(points)
    table = validate(points, overheads)
    cols = ["id", "method", "model", "gpu", "gpus_per_host", "inter_link", "workers", "split", "measured", "predicted",
            "error_pp"]
    shown = table[table["workers"] > 1]
    fmt = lambda v: f"{v:.3f}"  # noqa: E731
    parts = [f"the analytic model (repro.predict.perfmodel) against {len(points)} published measurements "
             f"({path or 'the package set: repro/predict/measurements.csv'}); efficiency = images/s / (N x one GPU's)",
             shown[cols].to_string(index=False, float_format=fmt),
             "per source and method, held-out half (test), percentage points of efficiency:",
             summary(table, "test").to_string(index=False, float_format=lambda v: f"{v:.1f}"),
             "per source and method, every point with N > 1:",
             summary(table, None).to_string(index=False, float_format=lambda v: f"{v:.1f}"),
             "per-step overhead fitted on the train half (share of compute): "
             + ", ".join(f"{k} {v:.4f}" for k, v in overheads.items())]
    o, b = overall(table), constant_baseline(table)
    parts.append(f"held-out half: {o['points']} points, median {o['median_pp']:.1f} pp, worst {o['worst_pp']:.1f} pp "
                 f"(goal: {GOAL_MEDIAN_PP:g} / {GOAL_WORST_PP:g}); a constant {b['constant']:.3f} (the train half's "
                 f"median) would miss by {b['median_pp']:.1f} / {b['worst_pp']:.1f} pp")
    notes = sorted({n for n in table["note"] if n})
    if notes:
        parts.append("not modelled: " + "; ".join(notes))
    return "\n".join(parts)


def constant_baseline(table: pd.DataFrame) -> dict:
    """The yardstick a model must beat: every held-out point predicted as the train half's median
    efficiency (N > 1); its median and worst error in percentage points."""
    t = table[table["workers"] > 1]
    c = float(t[t["split"] == "train"]["measured"].median())
    e = (t[t["split"] == "test"]["measured"] - c).abs() * 100
    return {"constant": c, "median_pp": float(e.median()), "worst_pp": float(e.max())}
