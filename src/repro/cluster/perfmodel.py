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
(:func:`repro.cluster.hardware.transfer_seconds`). Efficiency is images/s over ``N`` times one
worker's images/s without communication. The model knows nothing the hardware profile does not say:
what it predicts follows from the profile's numbers, which is what an emulation of that profile replays
too; :func:`validate` measures how far a published emulated run lies from it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import hardware
from .spec import ClusterError

METHODS = ("horovod", "ring", "ps_sync", "ps_async")
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
    raise ClusterError(f"unknown hardware profile {name_or_path!r}; valid: {', '.join(hardware.names())}, "
                       "or a .yaml file")


def step(prof: hardware.Profile, model: str, method: str, workers: int, batch: int, parameters: int,
         ps: int = 1) -> dict:
    """One step's seconds (``compute``, ``comm``) and the cluster's ``images_per_s`` and ``efficiency``."""
    if method not in METHODS:
        raise ClusterError(f"method {method!r}: valid: {', '.join(METHODS)}")
    if workers < 1 or ps < 1 or batch < 1 or parameters < 1:
        raise ClusterError("workers, ps, batch and parameters must be >= 1")
    compute = prof.t_grad(model, batch, prof.batch) if prof.batch else prof.t_grad(model)
    size, n, lat = 4.0 * parameters, workers, prof.latency_s
    wire = lambda nbytes: hardware.transfer_seconds(nbytes, prof.link)  # noqa: E731
    if method in ("ring", "horovod"):
        comm = 0.0 if n == 1 else wire(2 * (n - 1) / n * size) + 2 * (n - 1) * lat
        per_s = 1 / (compute + comm)
    elif method == "ps_sync":  # the busiest link: a server's (N S / P each way) or a worker's own (S)
        through = 2 * (n - 1) / n * size if prof.ps_on_workers else 2 * max(n / ps, 1) * size
        comm = wire(through) + 2 * lat
        per_s = 1 / (compute + comm)
    else:  # ps_async: each worker alone (its own link: S each way), the servers' links shared
        comm = wire(2 * size) + 2 * lat
        per_s = min(1 / (compute + comm), ps / wire(size) / n)
    images = n * batch * per_s
    return {"hardware": prof.name, "model": model, "method": method, "workers": n, "batch_size": batch, "ps": ps,
            "parameters": parameters, "compute_s": compute, "comm_s": comm, "images_per_s": images,
            "efficiency": images / (n * batch / compute)}


def predict(prof: hardware.Profile, model: str, method: str, workers, batch: int, parameters: int | None = None,
            ps: int = 1) -> pd.DataFrame:
    """One row of :func:`step` per worker count."""
    if parameters is None:
        if model not in PARAMETERS:
            raise ClusterError(f"model {model!r}: its parameter count is not known; give it (valid without: "
                               f"{', '.join(PARAMETERS)})")
        parameters = PARAMETERS[model]
    return pd.DataFrame([step(prof, model, method, int(n), batch, parameters, ps) for n in workers])


def validate(run_dir: Path) -> pd.DataFrame:
    """The model against a published emulated ``distributed`` run (:func:`validate_table` of its
    ``emulated_throughput.csv``, with its number of parameter servers)."""
    import json

    table, prov = Path(run_dir) / "emulated_throughput.csv", Path(run_dir) / "provenance.json"
    if not table.is_file():
        raise ClusterError(f"{run_dir}: no emulated_throughput.csv (not an emulated distributed run)")
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
