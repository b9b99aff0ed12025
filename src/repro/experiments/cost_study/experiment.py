"""`cloudcost2017`: CPU (and GPU) training time, memory and cloud cost of two Keras CNNs.

``run(profile, overrides, run_dir)`` trains the paper's MNIST and CIFAR-10 networks once per
configuration (network, k CPU cores or g GPUs, repetition), each in its own process pinned
to k cores before Keras's backend (TensorFlow, JAX: ``KERAS_BACKEND``) starts
(:mod:`repro.experiments.cost_study.sweep`, the child's work in :mod:`~repro.experiments.cost_study.child`),
samples the process's resources every second, and prices
every configuration with the billing model of :mod:`repro.predict.billing`
(analysis: :mod:`~repro.experiments.cost_study.analysis`; claims: ``claims.yaml`` and
:mod:`~repro.experiments.cost_study.verdicts`; figures: :mod:`~repro.experiments.cost_study.figures`).

Files written to the run directory:

``runs.csv``          one row per child process: cores asked for, cores seen from inside, phase times
                      of formula (1), peak memory, final accuracy
``epochs.csv``        per-epoch history of every run (cost-to-accuracy is computed from it)
``samples/*.csv``     the resource sampler's rows, one file per run (dstat -cmdr analogue)
``timing.csv``        per configuration: mean, spread (sd, min, max) of the measured times
``scaling.csv``       speedup and parallel efficiency vs cores, measured and Amdahl-extrapolated
``amdahl.json``       fitted serial fraction and single-core time with standard errors
``costs.csv``         every configuration x provider: billed time and cost (kind: measured/extrapolation)
``optimal.csv``       the cost-optimal configuration per network and provider
``step_sensitivity.csv``  the cost-optimal core count as the billing step varies
``cost_to_accuracy.csv``  time and cost to reach a target test accuracy
``memory.csv``        peak RSS (CPU) / peak device memory (GPU) per configuration
``phases.csv``        formula (1) term by term: measured means and the assumed cloud-only phases
``paper_vs_ours.csv`` the paper's findings with verdicts (the ledger's rows)
``ledger.csv``        the claims of ``claims.yaml`` with verdicts (written by the harness)
``summary.json``      headline numbers

Reading of the paper where it is silent: both networks are trained with Adam (the digest:
"Adam, categorical cross-entropy"), with the Keras examples' batch sizes (128 for MNIST, 32
for CIFAR-10) and without the CIFAR-10 example's data augmentation. Each run's test accuracy
is measured after every epoch (that is where cost-to-accuracy comes from); those test passes
are the run's ``verify`` phase.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from repro.core import claims, harness, preflight
from repro.core.harness import Result
from repro.core.params import ParameterError
from repro.core.progress import Progress
from repro.experiments.cost_study import analysis, resume, sweep, verdicts
from repro.experiments.cost_study.child import TRAIN_ENTRY
from repro.experiments.cost_study.cost import add_cli
from repro.experiments.cost_study.figures import (
    load_samples,
    plot_cost_vs_step,
    plot_resources,
    plot_scaling,
    plot_time_vs_cores,
    plot_time_vs_cost,
)
from repro.experiments.cost_study.paramtypes import CostStudyParams
from repro.experiments.cost_study.planning import (
    core_counts,
    docker_status,
    gpu_status,
    net_params,
    plan,
)
from repro.ml import data as _data
from repro.ml import training
from repro.predict import billing

log = logging.getLogger(__name__)

NAME = verdicts.NAME
NETWORKS = ("mnist_cnn", "cifar10_cnn")

# Names used on this module from outside: the notebook (run, glue_numbers, figures) and the CLI
# (`repro cost`: cli.py calls add_cli of every experiment module that has one).
__all__ = ["NAME", "EXPERIMENT", "run", "add_cli", "glue_numbers", "load_samples", "plot_time_vs_cores",
           "plot_scaling", "plot_resources", "plot_time_vs_cost", "plot_cost_vs_step"]


def _child_row(child: dict, np_: dict, k_cores: list[int], res: dict) -> dict:
    """One row of ``runs.csv``: the plan's entry, what the child reported, and formula (1)'s sums."""
    row = {**child, "dataset": np_["dataset"], "epochs": np_["epochs"], "batch_size": np_["batch_size"],
           "cores_requested": " ".join(map(str, k_cores)),
           "affinity_inside": " ".join(map(str, res.pop("affinity_inside"))),
           "cpus_seen": " ".join(map(str, res.pop("cpus_seen", []))), **res}
    row["n_affinity_inside"] = len(row["affinity_inside"].split())
    row["t_start_s"] = row["interpreter_start_s"] + row["t_framework_s"] + row["t_build_s"]
    row["t_measured_s"] = sum(row[f"t_{ph}_s"] for ph in analysis.MEASURED_PHASES)
    row["images_per_second"] = row["n_train"] * row["epochs"] / row["t_epochs_train_s"]
    return row


def _child_env(child: dict, gpu_ids: list[str]) -> dict:
    """A child's devices: its GPUs, or none: then JAX is kept off every GPU (``JAX_PLATFORMS=cpu``, not only
    ``CUDA_VISIBLE_DEVICES=""``) and compiles into a cache of its own beside a shared one (a CPU program
    never hits a GPU's cache, and the GPU children's compilations stay out of the CPU children's times)."""
    env = {"CUDA_VISIBLE_DEVICES": ",".join(gpu_ids[: child["gpus"]])}  # "" = CPU only
    if not child["gpus"]:
        env["JAX_PLATFORMS"] = "cpu"
        if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
            env["JAX_COMPILATION_CACHE_DIR"] = str(Path(os.environ["JAX_COMPILATION_CACHE_DIR"]) / "cpu-children")
    return env


def sweep_children(run, p: CostStudyParams, children: list[dict], n_gpus: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every planned child, each pinned to its cores; its sampler rows and log go to the run directory.
    A child finished by an earlier cut run with the same parameters is taken from its checkpoint
    (:mod:`.resume`); a child whose expected time would pass the deadline is not started."""
    (run.dir / "samples").mkdir(exist_ok=True)
    (run.dir / "logs").mkdir(exist_ok=True)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    gpu_ids = [v for v in visible.split(",") if v.strip()] if visible else [str(i) for i in range(n_gpus)]
    root = resume.checkpoint_root(run.dir, p)
    if not p.resume:
        shutil.rmtree(root, ignore_errors=True)
    kept, rows, epochs, last = resume.finished(root), [], [], 0.0
    run.note("checkpoints", str(root))
    with Progress(log, "cost_study children", len(children)) as progress:
        for i, child in enumerate(children, 1):
            if child["label"] in kept:
                rows.append(kept[child["label"]]["row"])
                epochs += kept[child["label"]]["epochs"]
                resume.restore(root, child["label"], run.dir)
                progress.done(child["label"], "kept from an earlier run cut short")
                continue
            if why := training.stop_reason(last):
                raise training.DeadlineReached(f"cost_study stopped before child {i} of {len(children)} ({why}); "
                                               f"{len(rows)} finished children kept in {root}")
            row, child_epochs = _one_child(run, p, child, gpu_ids)
            resume.keep(root, row, child_epochs, run.dir)
            rows.append(row)
            epochs += child_epochs
            last = float(row["wall_s"])
            progress.done(child["label"], f"learn {row['t_learn_s']:.1f} s, total {row['wall_s']:.1f} s, peak RSS "
                          f"{row['peak_rss_mb']:.0f} MB, test acc {row['final_test_accuracy']:.3f}")
    return pd.DataFrame(rows), pd.DataFrame(epochs)


def _one_child(run, p: CostStudyParams, child: dict, gpu_ids: list[str]) -> tuple[dict, list[dict]]:
    """Train one child on its cores (:func:`sweep.run_child`): its row and its epochs."""
    net = child["network"]
    np_ = net_params(p, net)
    task = {"kind": "call", "entry": TRAIN_ENTRY, "label": child["label"], "network": net,
            "gpus": child["gpus"], "seed": p.seed, "learning_rate": p.learning_rate, **np_}
    k_cores = sweep.cores_for(child["cores"])
    log.info("cost_study child %s on CPUs %s", child["label"], k_cores)
    res = sweep.run_child(task, k_cores, timeout=p.child_timeout_s, sample_interval=p.sample_interval_s,
                          samples_path=run.dir / "samples" / f"{child['label']}.csv",
                          log_path=run.dir / "logs" / f"{child['label']}.log", env=_child_env(child, gpu_ids))
    epochs = [{"label": child["label"], "network": net, "device": child["device"], "cores": child["cores"],
               "gpus": child["gpus"], "rep": child["rep"], **h} for h in res.pop("history")]
    return _child_row(child, np_, k_cores, res), epochs


def device_record(cores: list[int], gpu: dict) -> dict:
    """The backend (name, version; read without starting it here: the children do), the devices swept,
    and the thread limits each child gets (environment set before its backend starts)."""
    n = int(gpu.get("gpus", 0))
    return {**training.backend_info(), "device": f"CPU and {n} GPU(s)" if n else "CPU", "gpus_visible": n,
            "thread_limits": {"pinning": "sched_setaffinity to the first k cores, before the backend starts",
                              "environment": {str(k): training.thread_env(k) for k in cores}}}


class CostStudy(harness.Experiment[CostStudyParams, dict]):
    """The experiment, for the harness (:class:`repro.core.harness.Experiment`)."""

    name = NAME

    def prepare(self, p: CostStudyParams) -> dict:
        """Core counts, price table, datasets, GPUs and Docker checked, the children planned."""
        cores = core_counts(p.cores, len(sweep.available_cores()))
        try:
            prices = billing.load_prices(p.price_table)
            prices.provider(p.reference_provider)
        except billing.PriceTableError as exc:
            raise ParameterError(f"price table: {exc}") from None
        datasets = []
        for net in p.networks:  # fail early, in one line, if a dataset is missing
            np_ = net_params(p, net)
            datasets.append(_data.load(np_["dataset"], np_["n_train"] or None, np_["n_test"] or None,
                                       seed=p.seed).info)
        off = {"gpus": 0, "reason": "GPU sweep switched off: gpu_sweep is false"}
        gpu: dict[str, Any] = gpu_status() if p.gpu_sweep else off
        return {"cores": cores, "prices": prices, "datasets": datasets, "gpu": gpu, "docker": docker_status(),
                "children": plan(p, cores, gpu["gpus"])}

    def preflight(self, p: CostStudyParams) -> preflight.Own:
        """Each network's dataset (verified?) and what a finished sweep decides: the CPU core optimum where both
        networks run the paper's protocol on its data (its GPU statements also need the paper's K80)."""
        from repro.core import paper

        items, why = [], []
        for net in p.networks:
            np_ = net_params(p, net)
            name, n_id, e_id = verdicts.PROTOCOL[net]
            items.append(_data.preflight_item(np_["dataset"]))
            n = np_["n_train"] or _data.FULL_TRAIN.get(np_["dataset"], 0)
            off = ([f"{np_['dataset']} data, not {name}"] if np_["dataset"] != name else [])
            off += [f"{n:,} training images, not {int(paper.value('cloudcost2017', n_id)):,}"] \
                if n != int(paper.value("cloudcost2017", n_id)) else []
            off += [f"{np_['epochs']} epochs, not {int(paper.value('cloudcost2017', e_id))}"] \
                if np_["epochs"] != int(paper.value("cloudcost2017", e_id)) else []
            off += [bad] if (bad := _data.not_the_papers(_data.expected_info(np_["dataset"], n))) else []
            why += [f"{net}: {'; '.join(off)}"] if off else []
        items.append(preflight.forecast(NAME, not why, " / ".join(why), p.repetitions, only={"optimal_cores_mnist"}))
        return preflight.Own(items)

    def measure(self, run, p: CostStudyParams, inputs: dict) -> harness.Output:
        prices, gpu, docker = inputs["prices"], inputs["gpu"], inputs["docker"]
        for info in inputs["datasets"]:
            run.add_dataset(info)
        run.note("gpu", gpu)
        run.note("device", device_record(inputs["cores"], gpu))
        run.note("docker", docker)
        run.note("cores_swept", inputs["cores"])
        run.note("price_table", {"path": prices.path, "currency": prices.currency})
        runs, epochs = sweep_children(run, p, inputs["children"], gpu["gpus"])
        checks = {net: _data.not_the_papers(info) or "" for net, info in zip(p.networks, inputs["datasets"])}
        runs["data_check"] = runs["network"].map(checks).fillna("")  # why a paper's dataset is not its files
        run.note("device", {**run.record["device"], "children_backends": sorted(set(runs["backend"].dropna()))})
        tables, fits = analysis.analyse(runs, epochs, p, prices, gpu.get("model", ""))
        run.write_json("amdahl", analysis.nan_to_none(fits))
        summary = analysis.make_summary(runs, tables["scaling"], p, gpu, docker, prices)
        tables = {"runs": runs, "epochs": epochs, **tables}
        # whole: rows kept, not checkpoints, once the judge has run
        return harness.Output(tables, summary, discard=[resume.checkpoint_root(run.dir, p)])

    def judge(self, result: Result[CostStudyParams]) -> dict[str, claims.Measured]:
        return verdicts.measure_claims(result.tables, result.params, result.summary)

    def verdict_views(self, result: Result[CostStudyParams], measured: dict, ledger: pd.DataFrame) -> harness.Output:
        """``paper_vs_ours``: the ledger's rows under the chapter's headers (rejudge rewrites it)."""
        return harness.Output({"paper_vs_ours": verdicts.paper_vs_ours(ledger)})


EXPERIMENT = CostStudy()
run = harness.entry(EXPERIMENT)


def glue_numbers(result: Result[CostStudyParams]) -> None:
    """Headline numbers for the chapter's prose."""
    from repro.book.report import glue

    s, p = result.summary, result.params
    glue("cost_children", s["children"])
    glue("cost_reps", p.repetitions)
    glue("cost_cores", ", ".join(map(str, result.provenance.get("cores_swept", []))))
    glue("cost_gpu_reason", s["gpu"]["reason"])
    glue("cost_docker_reason", s["docker"]["reason"])
    glue("cost_assumed_s", s["assumed_cloud_seconds"])
    glue("cost_ref_provider", p.reference_provider)
    glue("cost_affinity_ok", "yes" if all(n.get("affinity_matches") for n in s["networks"].values()) else "NO")
    fits = json.loads(Path(result.run_dir, "amdahl.json").read_text())
    opt = result["optimal"]
    for net, short in (("mnist_cnn", "mnist"), ("cifar10_cnn", "cifar")):
        n = s["networks"].get(net, {})
        glue(f"cost_{short}_dataset", net_params(p, net)["dataset"])
        glue(f"cost_{short}_epochs", net_params(p, net)["epochs"])
        glue(f"cost_{short}_t1", n["t_learn_mean_s"][0] if n else float("nan"))
        glue(f"cost_{short}_tmax", n["t_learn_mean_s"][-1] if n else float("nan"))
        glue(f"cost_{short}_speedup", n.get("speedup_max_cores", float("nan")))
        glue(f"cost_{short}_eff", n.get("efficiency_max_cores", float("nan")))
        glue(f"cost_{short}_rss", n.get("peak_rss_mb_max", float("nan")))
        glue(f"cost_{short}_acc", n.get("final_test_accuracy_mean", float("nan")))
        fit = fits.get(net, {})
        serial, se = fit.get("serial_fraction"), fit.get("serial_fraction_se")
        glue(f"cost_{short}_serial", float("nan") if serial is None else serial)
        glue(f"cost_{short}_serial_se",
             f"± {se:.2f}" if se is not None else "(exact fit: no spare runs for an uncertainty)")
        o = opt[(opt["network"] == net) & (opt["provider"] == p.reference_provider) & (opt["among"] == "measured")]
        glue(f"cost_{short}_opt_cores", int(o["cores"].iloc[0]) if len(o) else "-")
    glue("cost_max_cores", int(result["runs"]["cores"].max()))
