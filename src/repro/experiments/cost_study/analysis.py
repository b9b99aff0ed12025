"""The sweep's analysis: pure pandas on the runs table (the tests call these directly).

Timing spread, Amdahl fits and extrapolations, billed cost per configuration and provider, the
cost-optimal configuration, billing-step sensitivity, cost-to-accuracy, memory and formula (1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from repro.experiments.cost_study import cost as _cost
from repro.experiments.cost_study.paramtypes import CostStudyParams
from repro.predict import billing

MEASURED_PHASES = ("start", "data_load", "learn", "verify", "save_data")


def timing_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and spread over repetitions of the measured times, per configuration."""
    keys = ["network", "device", "cores", "gpus"]
    out = []
    for key, g in runs.groupby(keys, sort=True):
        row = dict(zip(keys, key))
        row["repetitions"] = len(g)
        for col in ("t_learn_s", "t_measured_s", "wall_s"):
            v = g[col].astype(float)
            row[f"{col[:-2]}_mean_s"] = v.mean()
            row[f"{col[:-2]}_sd_s"] = v.std(ddof=1) if len(v) > 1 else float("nan")
            row[f"{col[:-2]}_min_s"] = v.min()
            row[f"{col[:-2]}_max_s"] = v.max()
        row["images_per_second_mean"] = g["images_per_second"].mean()
        row["final_test_accuracy_mean"] = g["final_test_accuracy"].mean()
        out.append(row)
    return pd.DataFrame(out)


def amdahl_time(k, t1, serial):
    """Amdahl's law: the time on k cores of a job that takes ``t1`` on one, with serial fraction ``serial``."""
    k = np.asarray(k, dtype=float)
    return t1 * (serial + (1.0 - serial) / k)


def fit_amdahl(cores, times) -> dict:
    """Least-squares fit of :func:`amdahl_time` to every run (not to means), with standard errors.

    Needs at least two distinct core counts; the standard errors need more runs than
    parameters (else they are NaN). The serial fraction is bounded to [0, 1].
    """
    k = np.asarray(cores, dtype=float)
    t = np.asarray(times, dtype=float)
    out: dict[str, Any] = {"n_runs": int(len(t)), "core_counts": sorted({int(c) for c in k}), "t1_s": float("nan"),
           "t1_se_s": float("nan"), "serial_fraction": float("nan"), "serial_fraction_se": float("nan"),
           "cov": [[float("nan")] * 2] * 2, "note": ""}
    if len(out["core_counts"]) < 2:
        out["note"] = "needs at least two distinct core counts"
        return out
    try:
        from scipy.optimize import curve_fit
    except ImportError:  # numpy fallback: t = a + b/k is linear in (a, b); t1 = a + b, serial = a / (a + b)
        curve_fit = None
    if curve_fit is not None:
        import warnings

        p0 = [float(t[k == k.min()].mean() * k.min()), 0.1]
        with warnings.catch_warnings():  # an exact fit (no spare runs) has no covariance: handled below
            warnings.simplefilter("ignore")
            popt, pcov = curve_fit(amdahl_time, k, t, p0=p0, bounds=([0.0, 0.0], [np.inf, 1.0]))
    else:
        X = np.column_stack([np.ones_like(k), 1.0 / k])
        coef, *_ = np.linalg.lstsq(X, t, rcond=None)
        resid = t - X @ coef
        dof0 = max(1, len(t) - 2)
        cov_ab = np.linalg.inv(X.T @ X) * float(resid @ resid) / dof0
        a, b = coef
        J = np.array([[1.0, 1.0], [b / (a + b) ** 2, -a / (a + b) ** 2]])  # d(t1, s)/d(a, b)
        popt, pcov = np.array([a + b, a / (a + b)]), J @ cov_ab @ J.T
    dof = len(t) - 2
    if dof <= 0 or not np.all(np.isfinite(pcov)):
        pcov = np.full((2, 2), np.nan)
        out["note"] = "exact fit (no spare runs): no uncertainty"
    out.update({"t1_s": float(popt[0]), "serial_fraction": float(popt[1]),
                "t1_se_s": float(np.sqrt(pcov[0, 0])), "serial_fraction_se": float(np.sqrt(pcov[1, 1])),
                "cov": pcov.tolist()})
    return out


def amdahl_predict(fit: dict, k: float) -> tuple[float, float]:
    """Predicted time at ``k`` cores and its standard error (delta method on the fit's covariance)."""
    t1, s = fit["t1_s"], fit["serial_fraction"]
    grad = np.array([s + (1 - s) / k, t1 * (1 - 1 / k)])
    cov = np.asarray(fit["cov"], dtype=float)
    se = float(np.sqrt(grad @ cov @ grad)) if np.all(np.isfinite(cov)) else float("nan")
    return float(amdahl_time(k, t1, s)), se


def scaling_table(runs: pd.DataFrame, fits: dict, extrapolate_to: list[int]) -> pd.DataFrame:
    """Speedup and efficiency vs cores (training time), measured and extrapolated (marked so)."""
    rows = []
    cpu = runs[runs["device"] == "cpu"]
    for net, g in cpu.groupby("network", sort=True):
        means = g.groupby("cores")["t_learn_s"].agg(["mean", "std"])
        base_k = int(means.index.min())  # speedup is relative to the fewest cores measured (normally 1)
        t_base = float(means.loc[base_k, "mean"])
        for k, r in means.iterrows():
            per_run = t_base / g.loc[g["cores"] == k, "t_learn_s"]
            sp = t_base / r["mean"]
            rows.append({"network": net, "cores": int(k), "kind": "measured", "t_learn_s": r["mean"],
                         "t_learn_sd_s": r["std"], "speedup": sp,
                         "speedup_sd": per_run.std(ddof=1) if len(per_run) > 1 else float("nan"),
                         "efficiency": sp / (k / base_k), "baseline_cores": base_k})
        fit = fits.get(net)
        if fit and math.isfinite(fit["t1_s"]):
            measured = set(int(k) for k in means.index)
            for k in sorted(set(extrapolate_to) - measured):
                t, se = amdahl_predict(fit, k)
                sp = fit["t1_s"] / t
                rows.append({"network": net, "cores": int(k), "kind": "extrapolation (Amdahl)", "t_learn_s": t,
                             "t_learn_sd_s": se, "speedup": sp, "speedup_sd": float("nan"), "efficiency": sp / k,
                             "baseline_cores": 1})
    return pd.DataFrame(rows)


def _overhead(runs: pd.DataFrame) -> pd.Series:
    """Per network: the mean measured time outside training (start, data, verify, save)."""
    cpu = runs[runs["device"] == "cpu"]
    return (cpu["t_measured_s"] - cpu["t_learn_s"]).groupby(cpu["network"]).mean()


def cost_table(runs: pd.DataFrame, scaling: pd.DataFrame, prices: billing.PriceTable,
               gpu_model: str = "") -> pd.DataFrame:
    """Every configuration x provider: t_sum of formula (1), billed seconds, cost (mean and sd over runs).

    The instance for k cores and g GPUs is the provider's cheapest with at least k cores and
    exactly g GPUs of the run's model ``gpu_model`` (:meth:`PriceTable.cheapest`). Extrapolated configurations
    use the Amdahl time plus the measured mean
    overhead of the network; they are marked ``kind = extrapolation (Amdahl)``.
    """
    assumed = prices.assumed_seconds()
    overhead = _overhead(runs)
    points = []
    for _, r in runs.iterrows():
        points.append({"network": r["network"], "device": r["device"], "cores": int(r["cores"]), "gpus": int(r["gpus"]),
                       "kind": "measured", "t_measured_s": float(r["t_measured_s"])})
    for _, r in scaling[scaling["kind"] != "measured"].iterrows():
        points.append({"network": r["network"], "device": "cpu", "cores": int(r["cores"]), "gpus": 0,
                       "kind": r["kind"], "t_measured_s": float(r["t_learn_s"] + overhead.get(r["network"], 0.0))})
    rows = []
    for prov in prices.providers.itertuples():
        for pt in points:
            inst = prices.cheapest(prov.provider, pt["cores"], pt["gpus"], gpu_model)
            if inst is None:
                continue
            t_sum = pt["t_measured_s"] + assumed
            billed = billing.billed_seconds(t_sum, prov.billing_step_s, prov.minimum_s)
            rows.append({**pt, "provider": prov.provider, "instance": inst["instance"],
                         "instance_cores": inst["cpu_cores"], "price_per_hour": inst["price_per_hour"],
                         "price_source": "illustrative" if inst["source"] == "illustrative" else "sourced",
                         "billing_step_s": prov.billing_step_s, "minimum_s": prov.minimum_s,
                         "t_sum_s": t_sum, "billed_s": billed, "cost": billed * inst["price_per_hour"] / 3600.0})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    keys = ["network", "device", "cores", "gpus", "kind", "provider", "instance", "instance_cores", "price_per_hour",
            "price_source", "billing_step_s", "minimum_s"]
    agg = df.groupby(keys, sort=True).agg(n=("cost", "size"), t_sum_mean_s=("t_sum_s", "mean"),
                                         t_sum_sd_s=("t_sum_s", "std"), billed_mean_s=("billed_s", "mean"),
                                         cost_mean=("cost", "mean"), cost_sd=("cost", "std"),
                                         cost_min=("cost", "min"), cost_max=("cost", "max")).reset_index()
    return agg


def optimal_table(costs: pd.DataFrame) -> pd.DataFrame:
    """Per network and provider: the cheapest configuration (ties: the faster), among measured
    configurations and among measured plus extrapolated ones; where that is a GPU instance, the cheapest
    CPU-only one follows it (the paper's optimum is a CPU core count)."""
    rows = []
    for among, df in (("measured", costs[costs["kind"] == "measured"]), ("measured + extrapolated", costs)):
        for (net, prov), g in df.groupby(["network", "provider"], sort=True):
            ranked = g.sort_values(["cost_mean", "t_sum_mean_s"])
            picks = [ranked.iloc[0]]
            if int(picks[0]["gpus"]) > 0 and (ranked["gpus"] == 0).any():
                picks.append(ranked[ranked["gpus"] == 0].iloc[0])
            rows += [{"network": net, "provider": prov, "among": among, "billing_step_s": b["billing_step_s"],
                      "minimum_s": b["minimum_s"], "cores": int(b["cores"]), "gpus": int(b["gpus"]),
                      "instance": b["instance"], "kind": b["kind"], "t_sum_mean_s": b["t_sum_mean_s"],
                      "cost_mean": b["cost_mean"], "price_source": b["price_source"]} for b in picks]
    return pd.DataFrame(rows)


def step_sensitivity(costs: pd.DataFrame, provider: str, steps: list[float]) -> pd.DataFrame:
    """The reference provider's instances billed with other steps (no minimum): cost per core
    count and which core count is cheapest, per step."""
    base = costs[(costs["provider"] == provider) & (costs["device"] == "cpu")]
    rows = []
    for step in steps:
        for _, r in base.iterrows():
            billed = billing.billed_seconds(r["t_sum_mean_s"], step, 0.0)
            rows.append({"network": r["network"], "billing_step_s": float(step), "cores": int(r["cores"]),
                         "kind": r["kind"], "instance": r["instance"], "t_sum_mean_s": r["t_sum_mean_s"],
                         "billed_s": billed, "cost": billed * r["price_per_hour"] / 3600.0})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    best = df.sort_values(["cost", "t_sum_mean_s"]).groupby(["network", "billing_step_s"]).head(1)
    df["optimal"] = False
    df.loc[best.index, "optimal"] = True
    return df.sort_values(["network", "billing_step_s", "cores"]).reset_index(drop=True)


def cost_to_accuracy(runs: pd.DataFrame, epochs: pd.DataFrame, prices: billing.PriceTable,
                     targets: dict[str, float], gpu_model: str = "") -> pd.DataFrame:
    """Time and cost until the test accuracy first reaches the network's target.

    Per run: the fixed phases (start, data load, save) + training and test passes up to and
    including the first epoch at or above the target + the assumed cloud-only phases; billed
    with every provider's cheapest matching instance. Runs that never reach it count as
    ``not reached``.
    """
    assumed = prices.assumed_seconds()
    per_run = []
    for _, r in runs.iterrows():
        h = epochs[epochs["label"] == r["label"]].sort_values("epoch")
        target = targets[r["network"]]
        hit = h[h["test_accuracy"] >= target]
        fixed = r["t_start_s"] + r["t_data_load_s"] + r["t_save_data_s"]
        if hit.empty:
            t = float("nan")
            epoch = float("nan")
        else:
            epoch = int(hit["epoch"].iloc[0])
            upto = h[h["epoch"] <= epoch]
            # epoch_time_s is the training part; eval_time_s the test pass; the rest of fit's time is
            # spread evenly over epochs
            fit_other = (r["t_learn_s"] - r["t_epochs_train_s"]) / max(1, len(h))
            t = fixed + float(upto["epoch_time_s"].sum() + upto["eval_time_s"].sum()) + fit_other * epoch + assumed
        per_run.append({"network": r["network"], "device": r["device"], "cores": int(r["cores"]),
                        "gpus": int(r["gpus"]), "target_accuracy": target, "epoch_reached": epoch, "t_sum_s": t})
    pr = pd.DataFrame(per_run)
    rows = []
    for (net, dev, k, g, target), grp in pr.groupby(["network", "device", "cores", "gpus", "target_accuracy"],
                                                    sort=True):
        reached = grp.dropna(subset=["t_sum_s"])
        for prov in prices.providers.itertuples():
            inst = prices.cheapest(prov.provider, k, g, gpu_model)
            if inst is None:
                continue
            costs = [billing.cost(t, inst["price_per_hour"], prov.billing_step_s, prov.minimum_s)
                     for t in reached["t_sum_s"]]
            rows.append({"network": net, "device": dev, "cores": k, "gpus": g, "target_accuracy": target,
                         "runs": len(grp), "runs_reaching": len(reached),
                         "epochs_to_target_mean": reached["epoch_reached"].mean() if len(reached) else float("nan"),
                         "t_sum_mean_s": reached["t_sum_s"].mean() if len(reached) else float("nan"),
                         "provider": prov.provider, "instance": inst["instance"],
                         "cost_mean": float(np.mean(costs)) if costs else float("nan"),
                         "status": "reached" if len(reached) == len(grp) else
                                   ("not reached" if not len(reached) else "reached in some runs")})
    return pd.DataFrame(rows)


def memory_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Peak memory per configuration, and how it compares with the size of the weights."""
    rows = []
    for (net, dev, k, g), grp in runs.groupby(["network", "device", "cores", "gpus"], sort=True):
        weights_mb = grp["parameters"].iloc[0] * 4 / 2**20
        rows.append({"network": net, "device": dev, "cores": k, "gpus": g, "repetitions": len(grp),
                     "peak_rss_mb_mean": grp["peak_rss_mb"].mean(), "peak_rss_mb_max": grp["peak_rss_mb"].max(),
                     "peak_rss_sampled_mb_max": grp["peak_rss_sampled_mb"].max(),
                     "peak_gpu_mem_mb_max": grp["peak_gpu_mem_mb"].max(),
                     "weights_mb": weights_mb, "rss_over_weights": grp["peak_rss_mb"].mean() / weights_mb})
    return pd.DataFrame(rows)


def phases_table(runs: pd.DataFrame, prices: billing.PriceTable) -> pd.DataFrame:
    """Formula (1) per configuration: measured mean seconds per phase, then the assumed ones."""
    rows = []
    for (net, dev, k, g), grp in runs.groupby(["network", "device", "cores", "gpus"], sort=True):
        measured = {ph: float(grp[f"t_{ph}_s"].mean()) for ph in MEASURED_PHASES}
        ft = _cost.formula_table(prices, measured)
        ft.insert(0, "gpus", g)
        ft.insert(0, "cores", k)
        ft.insert(0, "device", dev)
        ft.insert(0, "network", net)
        rows.append(ft)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def nan_to_none(obj):
    """NaN is not JSON: write null instead."""
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_to_none(v) for v in obj]
    return None if isinstance(obj, float) and math.isnan(obj) else obj


def analyse(runs: pd.DataFrame, epochs: pd.DataFrame, p: CostStudyParams, prices: billing.PriceTable,
            gpu_model: str = "") -> tuple[dict, dict]:
    """Every analysis table of a sweep (by its CSV name) and the Amdahl fits per network; GPU runs are
    priced as instances of ``gpu_model`` only (nvidia-smi's name)."""
    timing = timing_table(runs)
    cpu = runs[runs["device"] == "cpu"]
    fits = {net: fit_amdahl(g["cores"], g["t_learn_s"]) for net, g in cpu.groupby("network", sort=True)}
    scaling = scaling_table(runs, fits, p.extrapolate_cores)
    costs = cost_table(runs, scaling, prices, gpu_model)
    targets = {"mnist_cnn": p.mnist.target_accuracy, "cifar10_cnn": p.cifar.target_accuracy}
    tables = {"timing": timing, "scaling": scaling, "costs": costs, "optimal": optimal_table(costs),
              "step_sensitivity": step_sensitivity(costs, p.reference_provider, p.billing_steps_s),
              "cost_to_accuracy": cost_to_accuracy(runs, epochs, prices, targets, gpu_model),
              "memory": memory_table(runs), "phases": phases_table(runs, prices),
              "assumed_phases": prices.assumed_phases, "prices": prices.instances, "providers": prices.providers}
    return tables, {net: {**f, "network": net} for net, f in fits.items()}


def make_summary(runs: pd.DataFrame, scaling: pd.DataFrame, p: CostStudyParams, gpu: dict, docker: dict,
                 prices: billing.PriceTable) -> dict:
    """Headline numbers (``summary.json``); ``gpu`` and ``docker`` are what the verdicts read."""
    s: dict[str, Any] = {"children": int(len(runs)), "gpu": gpu, "docker": docker, "currency": prices.currency,
         "assumed_cloud_seconds": prices.assumed_seconds(), "networks": {}}
    for net in p.networks:
        g = runs[(runs["network"] == net) & (runs["device"] == "cpu")]
        if g.empty:
            continue
        m = g.groupby("cores")["t_learn_s"].mean()
        ent = {"cores": [int(k) for k in m.index], "t_learn_mean_s": [float(v) for v in m.values],
               "peak_rss_mb_max": float(g["peak_rss_mb"].max()),
               "final_test_accuracy_mean": float(g["final_test_accuracy"].mean()),
               "affinity_matches": bool((g["n_affinity_inside"] == g["cores"]).all())}
        meas = scaling[(scaling["network"] == net) & (scaling["kind"] == "measured")]
        if len(meas) > 1:
            top = meas.sort_values("cores").iloc[-1]
            ent["speedup_max_cores"] = float(top["speedup"])
            ent["efficiency_max_cores"] = float(top["efficiency"])
        s["networks"][net] = ent
    return s
