"""The arithmetic of the distributed benchmark: images/sec, scaling, ratios, FLOPs, the bandwidth model.

Pure functions of numbers and tables (Keras only to build the Table 1 models); no cluster, no verdicts.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from repro.cluster import ClusterError
from repro.core import paper
from repro.core.params import ParameterError
from repro.experiments.distributed.common import ALLREDUCE, AUDITED, PAPER, TABLE1
from repro.experiments.distributed.models import PAPER_SIZE, build_model
from repro.experiments.distributed.paramtypes import DistributedParams
from repro.predict import hardware


def images_per_second(batch_size: int, steps: Sequence[int], seconds: Sequence[float]) -> dict:
    """tf_cnn_benchmarks arithmetic: worker ``i`` processed ``steps[i] * batch_size`` images in ``seconds[i]``.

    Returns per-worker images/sec, their mean and standard error (sample standard deviation /
    sqrt(workers); NaN for one worker) and the total over workers (the sum of per-worker rates).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    steps, seconds = list(steps), list(seconds)
    if not steps or len(steps) != len(seconds):
        raise ValueError(f"need one step count and one duration per worker, got {len(steps)} and {len(seconds)}")
    if any(s < 0 for s in steps) or any(not t > 0 for t in seconds):
        raise ValueError("step counts must be >= 0 and durations > 0")
    per = [s * batch_size / t for s, t in zip(steps, seconds)]
    n = len(per)
    mean = sum(per) / n
    stderr = math.sqrt(sum((r - mean) ** 2 for r in per) / (n - 1)) / math.sqrt(n) if n > 1 else float("nan")
    return {"per_worker": per, "mean": mean, "stderr": stderr, "total": sum(per)}


def scaling_efficiency(throughput: pd.DataFrame) -> pd.DataFrame:
    """Total images/sec vs ideal linear scaling from each (method, model)'s smallest worker count.

    ``ideal = total(base) * workers / base``; ``efficiency = total / ideal`` (1 = linear).
    """
    rows = []
    for (method, model), g in throughput.groupby(["method", "model"], sort=False):
        g = g.sort_values("workers")
        base = g.iloc[0]
        for r in g.itertuples():
            ideal = base["total_images_per_sec"] * r.workers / base["workers"]
            rows.append({"method": method, "model": model, "workers": r.workers, "base_workers": int(base["workers"]),
                         "total_images_per_sec": r.total_images_per_sec, "ideal_images_per_sec": ideal,
                         "efficiency": r.total_images_per_sec / ideal if ideal > 0 else float("nan")})
    return pd.DataFrame(rows, columns=["method", "model", "workers", "base_workers", "total_images_per_sec",
                                       "ideal_images_per_sec", "efficiency"])


def ratios(throughput: pd.DataFrame) -> pd.DataFrame:
    """Ring over PS (sync, async) and async over sync PS, at equal worker count, per model."""
    wide = throughput.pivot_table(index=["model", "workers"], columns="method", values="total_images_per_sec")
    out = wide.reset_index()[["model", "workers"]].copy()
    for name, num, den in (("ring_over_ps_sync", "ring", "ps_sync"), ("ring_over_ps_async", "ring", "ps_async"),
                           ("ps_async_over_ps_sync", "ps_async", "ps_sync"),
                           ("horovod_over_ps_sync", "horovod", "ps_sync"),
                           ("horovod_over_ps_async", "horovod", "ps_async"),
                           ("horovod_over_ring", "horovod", "ring")):
        out[name] = (wide[num] / wide[den]).to_numpy() if num in wide and den in wide else float("nan")
    return out


# ----------------------------------------------------------------------------- Table 1 audit


def conv_dense_flops(model) -> int:
    """Forward-pass FLOPs of one image by layer arithmetic: 2 x multiply-accumulates of Conv2D and Dense.

    Conv2D: H_out * W_out * C_out * k_h * k_w * C_in / groups MACs; Dense: inputs * units MACs
    (per position when applied to more than a vector). Batch norm, activations, pooling, adds and
    biases are left out (well under 1 % for these networks). Needs a model built on a fixed input size.
    """
    macs = 0
    for layer in _all_layers(model):
        kind = type(layer).__name__
        if kind == "Conv2D":
            out = layer.output.shape
            cin = layer.input.shape[-1]
            kh, kw = layer.kernel_size
            macs += int(out[1]) * int(out[2]) * int(out[3]) * kh * kw * int(cin) // layer.groups
        elif kind == "Dense":
            shape = layer.input.shape
            positions = int(np.prod([int(d) for d in shape[1:-1]])) if len(shape) > 2 else 1
            macs += positions * int(shape[-1]) * layer.units
    return 2 * macs


def _all_layers(model):
    for layer in model.layers:
        if hasattr(layer, "layers") and layer.layers:
            yield from _all_layers(layer)
        else:
            yield layer


def table1(audit_models: Sequence[str] | None, num_classes: int = 1000) -> pd.DataFrame:
    """The paper's Table 1 next to the Keras models built at the paper's input size (224; InceptionV3 and
    InceptionV4 299). InceptionV4 is the paper's Inception4; InceptionV3, the throughput grids' stand-in,
    is audited beside it (the emulation reads its size from this table).

    No verdict column: the experiment adds the claims' verdicts."""
    rows = []
    models = [m for m in audit_models or () if m != "none"]
    for model in AUDITED:
        ref = TABLE1.get(model)
        row = {"model": model, "paper_model": ref or "–", "input_size": PAPER_SIZE[model],
               "paper_params_m": paper.value(PAPER, f"params_m_{ref}") if ref else float("nan"),
               "ours_params_m": float("nan"),
               "paper_gflops": paper.value(PAPER, f"gflops_{ref}") if ref else float("nan"),
               "ours_gflops": float("nan"),
               "paper_top5": paper.value(PAPER, f"top5_{ref}") if ref else float("nan")}
        if model in models:
            import keras

            keras.backend.clear_session()
            net = build_model(model, PAPER_SIZE[model], num_classes)
            row["ours_params_m"] = net.count_params() / 1e6
            row["ours_gflops"] = conv_dense_flops(net) / 1e9
            del net
            keras.backend.clear_session()
        rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- bandwidth model



def rate_bits(rate: str) -> float:
    """A tc rate (``"100mbit"``, ``"1gbit"``) in bits per second (:func:`repro.predict.hardware.rate_bits`)."""
    try:
        return hardware.rate_bits(rate)
    except ClusterError:
        raise ParameterError(f"parameter 'sweep.bandwidths': {rate!r} is not a tc rate (e.g. 100mbit, 1gbit)") from None


def analytic_bytes(method: str, workers: int, model_bytes: float) -> float:
    """Bytes per step on the busiest link, each direction: ring 2(N-1)/N M per worker; central PS N M."""
    if method in ALLREDUCE:
        return 2 * (workers - 1) / workers * model_bytes
    return workers * model_bytes


def sweep_rows(method: str, bandwidth: str, summary: list[dict], p: DistributedParams,
               compute_bound: dict) -> list[dict]:
    """One sweep cluster's rows: measured vs analytic bytes per step, measured vs predicted images/sec.

    ``compute_bound``: (method, model) -> total images/sec on loopback at the same worker count
    (the main grid), the throughput without a network limit.
    """
    rows = []
    rate = rate_bits(bandwidth)
    for r in summary:
        n, steps = r["workers"], r["steps_total"] / r["workers"]
        wb = r["window_bytes"]
        if method in ALLREDUCE:  # every worker's link: mean over workers
            sent = float(np.mean([v["sent"] for v in wb.values()])) / steps
            received = float(np.mean([v["received"] for v in wb.values()])) / steps
        else:  # the parameter server's link carries everything
            sent, received = wb["ps:0"]["sent"] / steps, wb["ps:0"]["received"] / steps
        model_bytes = 4.0 * r["parameters"]
        volume = analytic_bytes(method, n, model_bytes)
        # a synchronous PS step pulls (server out) then, after the compute, pushes (server in): the two
        # directions follow each other; all-reduce (and async PS across workers) uses both at once
        directions = 2 if method == "ps_sync" else 1
        comm_bound = n * p.batch_size * rate / (8 * volume * directions)
        cb = compute_bound.get((method, r["model"]), float("nan"))
        rows.append({"method": method, "bandwidth": bandwidth, "bandwidth_mbps": rate / 1e6, "model": r["model"],
                     "workers": n, "model_mb": model_bytes / 1e6,
                     "measured_sent_mb_per_step": sent / 1e6, "measured_received_mb_per_step": received / 1e6,
                     "analytic_mb_per_step": volume / 1e6,
                     "measured_over_analytic": max(sent, received) / volume,
                     "total_images_per_sec": r["total_images_per_sec"],
                     "comm_bound_images_per_sec": comm_bound, "loopback_images_per_sec": cb,
                     "predicted_images_per_sec": comm_bound if math.isnan(cb) else min(comm_bound, cb),
                     "critical_mbps": volume * 8 * directions * cb / (n * p.batch_size) / 1e6})  # NaN stays NaN
    return rows
