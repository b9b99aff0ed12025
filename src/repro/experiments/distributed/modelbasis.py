"""The analytic model of the emulated hardware profile (:mod:`repro.predict.perfmodel`) as the
distributed experiment's tables: its images/s at the emulated grid's own points and at the paper's
process counts, and its validation against the emulated grid, the gate of every verdict on basis
``model`` (:func:`validation_gate`). Everything here is computed from a run's ``emulated_throughput``
table (hardware profile, weights, batch of each row), so a stored run can be re-judged."""

from __future__ import annotations

import pandas as pd

from repro.core import verdicts as V
from repro.experiments.distributed.common import PAPER_PROCESSES
from repro.experiments.distributed.paramtypes import DistributedParams

# compute_s, comm_s and exposed_s (a step's seconds: its compute, the rest, and the communication not hidden behind
# the backward pass): each prediction's own 80 % interval width (repro.predict.loso.with_interval, issue 58)
COLUMNS = ["method", "workers", "model", "total_images_per_sec", "efficiency", "hardware", "compute_s", "comm_s",
           "exposed_s"]


def _rows(tp: pd.DataFrame, points, ps: int, real: bool = False, profiles: dict | None = None) -> pd.DataFrame:
    """The model's rows for ``points`` ((method, workers, model) triples) on the profile, weights and batch
    of ``tp``'s rows of that model, in the columns of a throughput table. ``real``: on the profile of the
    cluster's real topology (the emulated profile's ``topology_profile``: several GPUs per host, overlap),
    with the per-step overhead fitted on published measurements (:func:`repro.predict.measured.overhead_for`).
    ``profiles``: hardware profiles by name that replace the stored ones (a test's perturbed inputs)."""
    from repro.predict import hardware, measured, perfmodel

    def load(name: str):
        return (profiles or {}).get(name) or hardware.load(name)

    first = tp.groupby("model").first()
    rows = []
    for method, n, model in points:
        r = first.loc[model]
        prof, extra = load(r["hardware"]), None
        if real:
            if prof.topology_profile is None:
                raise hardware.PredictError(f"hardware profile {prof.name}: no topology_profile to predict on")
            prof, extra = load(prof.topology_profile), measured.overhead_for(method)
        got = perfmodel.step(prof, model, method, int(n), int(r["batch_size"]), int(r["parameters"]), ps, extra)
        rows.append({"method": method, "workers": int(n), "model": model, "total_images_per_sec": got["images_per_s"],
                     "efficiency": got["efficiency"], "hardware": prof.name,
                     **{k: got[k] for k in ("compute_s", "comm_s", "exposed_s")}})
    return pd.DataFrame(rows, columns=COLUMNS)


def same_points(tp: pd.DataFrame, ps: int = 1) -> pd.DataFrame:
    """The model at every (method, workers, model) the emulated grid ran."""
    points = tp[["method", "workers", "model"]].drop_duplicates().itertuples(index=False)
    return _rows(tp, list(points), ps)


def paper_scale(tp: pd.DataFrame, ps: int = 1, real: bool = False, profiles: dict | None = None) -> pd.DataFrame:
    """The model at the paper's process counts (:data:`PAPER_PROCESSES`) for the emulated grid's models: on
    the emulated profile, or (``real``) on its real topology's (:func:`_rows`)."""
    models = list(dict.fromkeys(tp["model"]))
    return _rows(tp, [(method, n, m) for m in models for method, ns in PAPER_PROCESSES.items() for n in ns], ps, real,
                 profiles)


def validation(tables: dict, p: DistributedParams) -> pd.DataFrame | None:
    """The model against the run's emulated grid (:func:`repro.predict.perfmodel.validate_table`); None
    where the run has no emulated grid."""
    from repro.predict import perfmodel

    if p.emulate.hardware in (None, "none") or "emulated_throughput" not in tables:
        return None
    return perfmodel.validate_table(tables["emulated_throughput"], p.ps)


def worst(val: pd.DataFrame) -> float:
    """The model's largest relative error against the emulated grid."""
    return float(val["error"].abs().max())


def validation_text(val: pd.DataFrame) -> str:
    return f"the model within {100 * worst(val):.1f} % of the emulated grid at worst over {len(val)} clusters"


def external_gate(methods, max_median_pp: float, max_worst_pp: float, errors: pd.DataFrame | None = None):
    """None where the model's held-out errors on published measurements (:mod:`repro.predict.measured`) of
    every one of ``methods`` are within ``max_median_pp`` (median) and ``max_worst_pp`` (worst), else the
    gate: not comparable, naming the method and its errors. ``errors``: per method (default: the package's set)."""
    if errors is None:
        from repro.predict import measured

        errors = measured.method_errors(measured.package_validation()[1])
    for method in methods:
        if method not in errors.index:
            return V.not_comparable(f"no published {method} measurements to validate the model against")
        e = errors.loc[method]
        if e["median_pp"] > max_median_pp or e["worst_pp"] > max_worst_pp:
            return V.not_comparable(
                f"the model misses published {method} measurements (held-out half, {int(e['points'])} points) by "
                f"{e['median_pp']:.1f} pp in the median and {e['worst_pp']:.1f} pp at worst, above the "
                f"{max_median_pp:g} / {max_worst_pp:g} pp a model verdict needs")
    return None


def external_text(methods, errors: pd.DataFrame | None = None) -> str:
    if errors is None:
        from repro.predict import measured

        errors = measured.method_errors(measured.package_validation()[1])
    return "; ".join(f"on published {m} measurements {errors.loc[m, 'median_pp']:.1f} pp median, "
                     f"{errors.loc[m, 'worst_pp']:.1f} pp worst (held-out half)" for m in methods if m in errors.index)


def validation_gate(val: pd.DataFrame | None, limit: float) -> V.Verdict | None:
    """None where the model is validated (within ``limit`` of every emulated cluster), else the gate:
    not measured without an emulated grid, not comparable when the model is farther off."""
    if val is None or val.empty:
        return V.not_measured("no emulated grid in this run to validate the analytic model against: "
                              "the profile's emulate is none")
    if worst(val) > limit:
        return V.not_comparable(f"{validation_text(val)}, above the {100 * limit:.0f} % a model verdict needs")
    return None
