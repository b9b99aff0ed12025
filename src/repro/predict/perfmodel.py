"""An analytic model of data-parallel training on a hardware profile: images/s and scaling efficiency.

One step of ``N`` workers, each with a batch of ``B`` images, computation and communication not
overlapped (the emulated clusters do not overlap them either):

* compute: the profile's ``t_grad`` of the model, scaled linearly to ``B`` images when the profile
  says at which batch it was measured;
* ring all-reduce (``ring``, ``horovod``): every worker sends and receives ``2 (N - 1) / N`` of the
  weights over its own full-duplex link, in ``2 (N - 1)`` messages; one worker communicates nothing;
* synchronous parameter servers (``ps_sync``), ``P`` of them on nodes of their own: all ``N`` workers
  push their gradients through the servers' incoming links (``N S / P`` bytes each), then pull the
  new weights through the outgoing ones: ``2 max(N / P, 1) S / bw`` (a worker's own link carries
  ``S`` each way), two messages. With the servers on the workers' nodes (the thesis' distributed
  server, ``P = N``), a worker's share for its own node crosses no link: ``2 (N - 1) / N S / bw``;
* asynchronous parameter servers (``ps_async``): a worker's own step is compute plus its push and
  pull (``2 S / bw``), and the servers' links bound the cluster: at most ``P bw / S`` steps per
  second in each direction.

``S`` is the weights' bytes (float32) and ``bw`` the link's TCP goodput
(:func:`repro.predict.hardware.transfer_seconds`). Efficiency is images/s over ``N`` times one
worker's images/s without communication. The model knows nothing the hardware profile does not say:
what it predicts follows from the profile's numbers, which is what an emulation of that profile replays
too; :func:`validate` measures how far a published emulated run lies from it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import collective, hardware, overlap
from .errors import PredictError

METHODS = ("horovod", "ring", "ddp", "ps_sync", "ps_async")
# DDP's gradients in fixed buckets, each sent once its last layer is ready (overlap.buckets; False: packed as
# Horovod packs them, whatever is ready when the channel is free)
BUCKETS = True
ALLREDUCE = ("ring", "horovod", "ddp")  # gradients all-reduced (ddp: PyTorch DistributedDataParallel's buckets)
# Weights of the distributed experiment's models (keras.applications, 1000 classes, include_top), as its
# Table 1 audit counts them by building each model (published/*/distributed/*/table1.csv, ours_params_m)
PARAMETERS = {"vgg16": 138_357_544, "vgg19": 143_667_240, "resnet50": 25_636_712, "resnet152": 60_419_944,
              "inception_v3": 23_851_784}


def hardware_profile(name_or_path: str) -> hardware.Profile:
    """A profile of ``hardware.yaml`` by name, or a YAML file a user wrote (:func:`hardware.load_file`)."""
    if name_or_path in hardware.names():
        return hardware.load(name_or_path)
    if Path(name_or_path).suffix in (".yaml", ".yml") or Path(name_or_path).is_file():
        return hardware.load_file(name_or_path)
    raise PredictError(f"unknown hardware profile {name_or_path!r}; valid: {', '.join(hardware.names())}, "
                       "or a .yaml file")


def _hosts(prof: hardware.Profile, n: int) -> tuple[int, int]:
    """GPUs on a full host and the number of hosts for ``n`` workers (hosts filled in turn)."""
    g = min(prof.gpus_per_host, n)
    return g, -(-n // g)


def _wire(prof: hardware.Profile, nbytes: float, inter: bool = True, collective: bool = False) -> float:
    """Seconds of ``nbytes`` on the network between hosts (its goodput; an all-reduce's ``collective`` share where
    the profile gives one) or on a host's internal link."""
    if inter:
        share = prof.collective_goodput if collective and prof.collective_goodput else prof.goodput
        return nbytes * 8 / (hardware.rate_bits(prof.link) * share)
    if prof.intra_link is None:  # ProfileSpec requires it with gpus_per_host > 1; a Profile made in code may lack it
        raise PredictError(f"hardware profile {prof.name}: gpus_per_host > 1 needs intra_link")
    return nbytes * 8 / hardware.rate_bits(prof.intra_link)


def allreduce_seconds(prof: hardware.Profile, n: int, nbytes: float) -> float:
    """One ring all-reduce of ``nbytes`` over ``n`` workers: ``2 (N - 1) / N`` of it through every link of
    the ring, in ``2 (N - 1)`` steps of one message each; the ring crosses the network once it spans two
    hosts, a host's internal link always where a host has several GPUs: the slower of the two decides."""
    if n == 1:
        return 0.0
    g, hosts = _hosts(prof, n)
    share, t = 2 * (n - 1) / n * nbytes, 0.0
    if hosts > 1:
        t = _wire(prof, share, collective=True) + ring_latency(prof, "inter", n)
    if g > 1:
        t = max(t, _wire(prof, share * _host_path(prof, g), inter=False) + ring_latency(prof, "intra", n))
    return t


def ring_latency(prof: hardware.Profile, level: str, n: int) -> float:
    """Seconds of one all-reduce message's fixed cost between hosts (``inter``) or inside one (``intra``): the link's
    latency once per ring step (``2 (N - 1)``); with ``measured_collective``, at least NCCL's time per message that
    nccl-tests' sweep of that level measured (:func:`repro.predict.collective.fit`: kernel launch and protocol, which
    a ring of two already pays)."""
    own = 2 * (n - 1) * (prof.latency_s if level == "inter" else prof.intra_latency_s)
    return max(own, collective.fit(level)[0]) if prof.measured_collective else own


def _host_path(prof: hardware.Profile, g: int) -> float:
    """How many times a byte of a ring inside a host loads the host's internal link: once where the GPUs read each
    other's memory; ``2 g`` without peer-to-peer (GeForce RTX 30/40 over PCIe), where every byte is staged through
    host memory (it crosses the host's PCIe root twice: from one GPU into a host buffer, from there to the next) and
    the host's ``g`` GPUs share that root (NCCL's shared-memory transport)."""
    return 1.0 if prof.peer_to_peer else 2.0 * g


def ps_phase_seconds(prof: hardware.Profile, n: int, ps: int, nbytes: float) -> float:
    """One direction (every worker pushes, or every worker pulls) of ``nbytes`` of weights through ``ps``
    parameter servers, on the busiest link, plus one message's latency. A host sends ``u`` copies: one
    where it sums its GPUs' gradients first (``host_aggregation``), else one per GPU (``g``). Servers on
    nodes of their own: a server's link carries ``H u S / P``, a host's ``u S``. Shards spread over the
    worker hosts (``ps_on_workers``, at most ``ceil(P / H)`` on one): the busiest host receives the other
    hosts' copies of its shards and sends its own copies of the shards elsewhere. Inside a host with
    several GPUs, each link to the host carries its GPUs' ``S`` (``gpus_per_switch`` of them share one)."""
    g, hosts = _hosts(prof, n)
    unit = 1 if prof.host_aggregation else g
    if prof.ps_on_workers:
        share = -(-ps // hosts) / ps  # the busiest host's part of the weights
        busiest = max((hosts - 1) * unit * nbytes * share, unit * nbytes * (1 - share))
        t = _wire(prof, busiest) if hosts > 1 else 0.0
    else:
        t = _wire(prof, max(hosts * unit * nbytes / ps, unit * nbytes))
    if g > 1:
        t = max(t, _wire(prof, min(g, prof.gpus_per_switch or g) * nbytes, inter=False))
    return t + prof.latency_s


def _exposed(prof: hardware.Profile, model: str, compute: float, size: float, send, fused: bool = False,
             pull=None, per_tensor: bool = False) -> tuple[float, str]:
    """Seconds from the step's start until the gradients are through, and a note where the model's
    layers are unknown. Without overlap: ``pull(size)`` (the weights, where a server holds them), the
    compute, then ``send(size)``. With overlap (:mod:`repro.predict.overlap`): the forward pass waits
    for each layer's weights as they arrive, and the gradients go out as the backward pass makes them
    ready (``send(bytes)``/``pull(bytes)``: one message's time). Without peer-to-peer nothing overlaps: the
    staging through host memory runs after the backward pass (our reading of the GeForce hosts' measurements, not
    a published figure: ``docs/emulation.md``). ``per_tensor``: without overlap, each layer's gradients are one
    message of their own, sent one after another (TensorFlow's replicated all-reduce, per variable), where the layers
    are known."""
    pull = pull or (lambda _: 0.0)
    if not prof.overlap or not prof.peer_to_peer or model.lower() not in overlap.models():
        note = "" if not prof.overlap else f"no layer table for {model}: modelled without overlap"
        return pull(size) + compute + _sent(model, size, send, per_tensor), note
    key = model.lower()
    start = overlap.forward_end(key, compute, size, pull) - (1 - overlap.BACKWARD_SHARE) * compute
    events = overlap.ready(key, compute)
    scale = size / sum(b for _, b in events)  # the layer table's trainable weights -> the weights given
    fusion, cycle = (prof.fusion_bytes, prof.cycle_s) if fused else (0.0, 0.0)
    timed = [(start + t, b * scale) for t, b in events]
    if fusion and not cycle and BUCKETS:  # a fusion buffer without a cycle: DDP's fixed buckets
        timed, fusion = overlap.buckets(timed, fusion), 0.0
    end = overlap.finish(timed, fusion, cycle, send)
    return max(start + compute, end), ""


def _sent(model: str, size: float, send, per_tensor: bool) -> float:
    """Seconds to send ``size`` bytes of gradients: one message, or (``per_tensor``, a known model) one message per
    layer, its share of ``size`` its share of the layer table's weights."""
    if not per_tensor or model.lower() not in overlap.models():
        return send(size)
    weights = overlap.layers(model.lower())
    total = sum(n for n, _ in weights)
    return sum(send(size * n / total) for n, _ in weights)


def step(prof: hardware.Profile, model: str, method: str, workers: int, batch: int, parameters: int,
         ps: int = 1, overhead: float | None = None, value_bytes: float = 4.0, latency: float | None = None) -> dict:
    """One step's seconds (``compute``, ``comm``: the part of the step not hidden behind compute) and the
    cluster's ``images_per_s`` and ``efficiency``; ``note`` says what the model could not account for.
    ``overhead``: the framework's per-step work as a share of compute where N > 1 (default: the profile's);
    ``latency``: its fixed seconds per step where N > 1 (default: the profile's ``step_latency_s``);
    ``value_bytes``: bytes per gradient value on the wire (4: float32; 2: float16 gradients, e.g.
    tf_cnn_benchmarks' ``--use_fp16`` with its default ``compact_gradient_transfer``)."""
    if method not in METHODS:
        raise PredictError(f"method {method!r}: valid: {', '.join(METHODS)}")
    if workers < 1 or ps < 1 or batch < 1 or parameters < 1:
        raise PredictError("workers, ps, batch and parameters must be >= 1")
    compute = prof.t_grad(model, batch, prof.batch) if prof.batch else prof.t_grad(model)
    size, n, note = value_bytes * parameters, workers, ""
    share = (prof.step_overhead if overhead is None else overhead) * compute if n > 1 else 0.0
    fixed = (prof.step_latency_s if latency is None else latency) if n > 1 else 0.0
    extra = share + fixed
    if method in ALLREDUCE and n == 1:  # one worker: nothing to all-reduce, the framework's base
        per_s = 1 / compute
    elif method in ALLREDUCE:
        fused = method in ("horovod", "ddp")  # Horovod's fusion buffer and cycle, DDP's buckets; TF sends each tensor
        end, note = _exposed(prof, model, compute, size, lambda b: allreduce_seconds(prof, n, b), fused,
                             per_tensor=prof.measured_collective and not fused)
        per_s = 1 / (end + extra)
    elif method == "ps_sync":  # every worker pulls the weights, computes, pushes its gradients
        phase = lambda b: ps_phase_seconds(prof, n, ps, b)  # noqa: E731
        if prof.pull_with_forward:
            end, note = _exposed(prof, model, compute, size, phase, pull=phase)
        else:  # the weights copied back once the servers are updated (tf_cnn_benchmarks' distributed_replicated)
            end, note = _exposed(prof, model, compute, size, phase)
            end += phase(size)
        per_s = 1 / (end + extra)
    else:  # ps_async: each worker alone (its host's link shared by its g workers), the servers' links shared
        g, _ = _hosts(prof, n)
        own = 2 * max(_wire(prof, g * size), _wire(prof, g * size, inter=False) if g > 1 else 0.0)
        end = compute + own + 2 * prof.latency_s
        per_s = min(1 / (end + extra), ps / _wire(prof, size) / n)
    images = n * batch * per_s
    if prof.input_images_per_s:  # each host's input pipeline delivers at most this many images/s to its GPUs
        images = min(images, _hosts(prof, n)[1] * prof.input_images_per_s)
    parts = {"exposed_s": 1 / per_s - compute - share - fixed, "overhead_s": share, "latency_s": fixed,
             "input_s": n * batch / images - 1 / per_s}
    return {"hardware": prof.name, "model": model, "method": method, "workers": n, "batch_size": batch, "ps": ps,
            "parameters": parameters, "compute_s": compute, "comm_s": 1 / per_s - compute, "images_per_s": images,
            "efficiency": images / (n * batch / compute), **parts, "limit": limit(parts, compute), "note": note}


LIMITS = {"exposed_s": "exposed communication", "overhead_s": "per-step overhead (share of compute)",
          "latency_s": "per-step latency", "input_s": "input pipeline"}


def limit(parts: dict, compute: float) -> str:
    """The term that limits scaling: the largest of a step's seconds beyond compute (:data:`LIMITS`), or ``compute``
    where together they are under 1 % of the step."""
    if sum(parts.values()) < 0.01 * (compute + sum(parts.values())):
        return "compute"
    return LIMITS[max(parts, key=lambda k: parts[k])]


# what the model leaves out, whatever the profile (printed by `repro predict`)
NOT_MODELLED = ("the input pipeline where the profile states no input_images_per_s (reading and decoding real data)",
                "a parameter server's own CPU and gRPC limits (it is as fast as its link)",
                "contention between communication and compute for GPU memory or PCIe",
                "stragglers and run-to-run variation (one step stands for all)")


def limits(prof: hardware.Profile, model: str) -> list[str]:
    """What the model cannot say for ``model`` on ``prof``, beyond :data:`NOT_MODELLED`."""
    out = []
    if prof.overlap and model.lower() not in overlap.models():
        out.append(f"{model} has no layer table (known: {', '.join(overlap.models())}): no overlap modelled")
    if not prof.overlap:
        out.append("the profile sets no overlap: communication follows the whole backward pass")
    if prof.gpus_per_host > 1 and not prof.gpus_per_switch:
        out.append("gpus_per_switch not given: all of a host's GPUs share one link to it")
    if prof.collective_goodput is None:
        out.append(f"collective_goodput not given: an all-reduce between hosts reaches the link's goodput "
                   f"({prof.goodput:g}); NCCL over TCP reaches about 0.6 of the line (predict/links.yaml)")
    return out


def predict(prof: hardware.Profile, model: str, method: str, workers, batch: int, parameters: int | None = None,
            ps: int = 1, overhead: float | None = None) -> pd.DataFrame:
    """One row of :func:`step` per worker count."""
    if parameters is None:
        if model not in PARAMETERS:
            raise PredictError(f"model {model!r}: its parameter count is not known; give it (valid without: "
                               f"{', '.join(PARAMETERS)})")
        parameters = PARAMETERS[model]
    return pd.DataFrame([step(prof, model, method, int(n), batch, parameters, ps, overhead) for n in workers])


def validate(run_dir: Path) -> pd.DataFrame:
    """The model against a published emulated ``distributed`` run (:func:`validate_table` of its
    ``emulated_throughput.csv``, with its number of parameter servers)."""
    import json

    table, prov = Path(run_dir) / "emulated_throughput.csv", Path(run_dir) / "provenance.json"
    if not table.is_file():
        raise PredictError(f"{run_dir}: no emulated_throughput.csv (not an emulated distributed run)")
    ps = json.loads(prov.read_text()).get("parameters", {}).get("ps", 1) if prov.is_file() else 1
    return validate_table(pd.read_csv(table), int(ps))


def validate_table(tp: pd.DataFrame, ps: int = 1) -> pd.DataFrame:
    """Per method, workers and model of an emulated grid: the emulated images/s (mean of its runs), the
    model's from the same hardware profile, weights and ``ps``, and the relative error (model / emulated - 1)."""
    rows = []
    for r in tp.itertuples():
        prof = hardware.load(r.hardware)
        got = step(prof, r.model, r.method, int(r.workers), int(r.batch_size), int(r.parameters), ps)
        rows.append({"method": r.method, "workers": int(r.workers), "model": r.model,
                     "emulated_images_per_s": float(r.total_images_per_sec), "model_images_per_s": got["images_per_s"],
                     "error": got["images_per_s"] / float(r.total_images_per_sec) - 1})
    return pd.DataFrame(rows)
