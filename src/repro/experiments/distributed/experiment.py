"""`polishchuk2019` part B: parameter server (sync, async) vs ring all-reduce, measured on a real local cluster.

``run(profile, overrides, run_dir)`` starts, for every method and worker count, a cluster of real
processes with :func:`repro.cluster.run_cluster` (private network namespace, torn down whatever
happens) and runs the programs of :mod:`repro.experiments.distributed.programs` on it:

* ``ring``: ``MultiWorkerMirroredStrategy`` with RING collectives, every worker runs the program;
* ``ps_async``: ``ParameterServerStrategy`` + ``ClusterCoordinator``, each worker's update applied
  to the PS variables as it arrives;
* ``ps_sync``: the same cluster, gradients of all workers summed into PS-hosted accumulators, a
  barrier (``coordinator.join()``), then ONE update with their average per step;
* ``horovod``: the paper's ring all-reduce, Horovod 0.28.1 (Gloo, no MPI) with
  ``hvd.DistributedGradientTape``; an optional backend, installed by ``tools/install_horovod.sh``
  (a source build against the installed TensorFlow). Where Horovod is not importable the run says
  so in one line, measures the other methods, and the Horovod rows read "not measured (Horovod
  not installed: tools/install_horovod.sh)". Loopback only: on the
  emulated network Gloo advertises a loopback address and its peers cannot connect.

Measurement as tf_cnn_benchmarks (:mod:`.arithmetic`): synthetic ImageNet-shaped data, warm-up
steps excluded, then timed steps; per-worker images/sec (mean +- standard error over workers) and
the total over workers. Tables (the harness writes each as CSV): ``throughput`` (one row per
method, workers, model), ``per_worker``, ``scaling`` (efficiency vs ideal linear scaling),
``ratios`` (ring vs PS, async vs sync at equal process count), ``table1`` (the paper's Table 1 next
to parameters and FLOPs of the Keras models), ``faults`` (one of two workers killed mid-run: async
PS finishes, ring all-reduce stops; orphan processes counted), ``findings`` (the ledger's rows for
the findings of digest §2), and ``bandwidth``: the bandwidth sweep, every sweep method at
``sweep.workers`` workers on an emulated network per link rate (:class:`repro.cluster.Network`),
with the bytes each link carried in the timed window (the supervisor's 0.2 s samples) next to the
analytic volumes (ring 2(N-1)/N M per worker, central PS N M per step) and images/sec next to
min(loopback throughput, link bound). Each cluster run's logs stay under ``clusters/<method>-<N>/``.
The claims are in ``claims.yaml``; :mod:`.verdicts` measures each from the written tables.

"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from importlib.metadata import version

import pandas as pd

from repro import cluster
from repro.cluster import slurm
from repro.core import claims, harness, preflight
from repro.core.progress import Progress
from repro.experiments.distributed import emulation, programs, runs, verdicts
from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency, table1
from repro.experiments.distributed.chapter import (
    glue_measured,
    glue_numbers,
    measured_tables,
    model_tables,
    plot_bandwidth,
    plot_efficiency,
    plot_measured,
    plot_throughput,
    throughput_table,
)
from repro.experiments.distributed.common import (
    FAULT_COLUMNS,
    HOROVOD_NOT_INSTALLED,
    LABELS,
    METHODS,
    NAME,
    PAPER,
)
from repro.experiments.distributed.paramtypes import DistributedParams
from repro.ml import data as _data
from repro.predict.hardware import Profile

log = logging.getLogger(__name__)

__all__ = ["NAME", "PAPER", "METHODS", "LABELS", "HOROVOD_NOT_INSTALLED", "EXPERIMENT", "run",
           "glue_measured", "glue_numbers", "measured_tables", "model_tables", "plot_measured", "plot_bandwidth",
           "plot_efficiency", "plot_throughput", "throughput_table"]


@dataclass
class Inputs:
    """What ``prepare`` checked: the models with their input sizes, whether Horovod is missing, and the emulated
    grid's hardware profile (None: no emulation)."""

    models: list[dict]
    horovod_missing: bool
    hardware: Profile | None


def _dataset_info(p: DistributedParams, models: list[dict]) -> dict:
    shape = (models[0]["image_size"],) * 2 + (3,)
    info = _data.synthetic(shape, 0, p.num_classes, p.seed).info
    info.update(source=("tf.random.stateless_uniform on each worker (one fixed batch per worker, "
                        "tf_cnn_benchmarks style)"),
                stand_in_for="ImageNet (synthetic, as in the paper)", n_train=p.batch_size,
                shape=[[m["image_size"], m["image_size"], 3] for m in models])
    return info


def _grid(run, p: DistributedParams, horovod_missing: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (method, workers) of the profile on a fresh cluster: throughput and per-worker rows."""
    summary, per_worker = [], []
    todo = [(method, n) for method in p.methods if not (horovod_missing and method == "horovod")
            for n in p.workers]
    with Progress(log, "distributed clusters", len(todo), weights=[n for _, n in todo]) as progress:
        for method, n in todo:
            s, w = runs.cluster_run(method, n, p, run.dir / "clusters" / f"{method}-{n}")
            summary += s
            per_worker += w
            rates = ", ".join(f"{r['model']} {r['total_images_per_sec']:.1f} images/s" for r in s)
            progress.done(f"{method}, {n} worker(s)", rates)
    return pd.DataFrame(summary), pd.DataFrame(per_worker)


class Distributed(harness.Experiment[DistributedParams, Inputs]):
    """The experiment, for the harness (:class:`repro.core.harness.Experiment`)."""

    name = NAME
    # what the model rows' verdicts read beside the run (repro.core.judgecode): the analytic model, the hardware it is
    # given, and the published measurements its 80 % interval comes from
    judge_data = ("predict/measurements.csv", "predict/measurements_extra.csv", "predict/hardware.yaml",
                  "predict/links.yaml", "predict/perfmodel.py", "predict/loso.py")

    def preflight(self, p: DistributedParams) -> preflight.Own:
        """The scheduler where the launcher is SLURM (its partition, usable nodes, GPUs per node)."""
        return preflight.Own([slurm.preflight_item(runs.slurm_tasks(p))] if p.launcher == "slurm" else [])

    def prepare(self, p: DistributedParams) -> Inputs:
        models = runs.model_specs(p)  # bad sizes fail before anything is written
        cluster.resolve_isolation("auto")  # no private namespace: one line (ClusterUnavailable) before the run opens
        runs.check_sweep(p)
        if p.launcher == "slurm":  # a drained node, no SLURM: one line before the run opens
            slurm.preflight(runs.slurm_tasks(p))
        emulation.check(p)
        prof = emulation.profile(p)
        if prof is not None:  # waits longer than the timeout: one line before anything trains
            emulation.check_waits(p, prof)
        missing = "horovod" in p.methods and not programs.horovod_available()
        if missing:  # an optional backend: say so in one line and measure the other methods
            print(f"repro: {HOROVOD_NOT_INSTALLED}; the Horovod rows say so", file=sys.stderr, flush=True)
        return Inputs(models, missing, prof)

    def measure(self, run, p: DistributedParams, inputs: Inputs) -> harness.Output:
        run.add_dataset(_dataset_info(p, inputs.models))
        cores = os.cpu_count() or 1
        run.note("cores", cores)
        if inputs.horovod_missing:
            run.note("horovod", HOROVOD_NOT_INSTALLED)
        elif "horovod" in p.methods:
            run.note("horovod",
                     f"horovod {version('horovod')} (Gloo controller, CPU operations; tools/install_horovod.sh)")
        throughput, per_worker = _grid(run, p, inputs.horovod_missing)
        tables = {"throughput": throughput, "per_worker": per_worker, "scaling": scaling_efficiency(throughput),
                  "ratios": ratios(throughput), "table1": table1(p.audit_models, 1000)}
        tables["bandwidth"] = runs.bandwidth_sweep(p, run.dir / "clusters", throughput)
        tables["faults"] = runs.fault_runs(p, run.dir / "clusters") if p.fault_tolerance \
            else pd.DataFrame(columns=FAULT_COLUMNS)
        if inputs.hardware is not None:  # the paper's cluster replayed (repro.experiments.distributed.emulation)
            tables.update(emulation.measure(run, p, inputs.hardware, tables["table1"]))
        if p.launcher == "slurm":
            tables["slurm_jobs"] = slurm.record(run, run.dir / "clusters", runs.SLURM_SCOPE)
        summary = {"cores": cores, "max_workers": max(p.workers),
                   "workers_share_cores": verdicts.workers_share_cores(p, cores)}
        return harness.Output(tables, summary)

    def judge(self, result: harness.Result[DistributedParams]) -> dict[str, claims.Measured]:
        return verdicts.measurements(result.tables, result.summary, result.params, result.provenance)

    def verdict_views(self, result: harness.Result[DistributedParams], measured: dict,
                      ledger: pd.DataFrame) -> harness.Output:
        """The chapter's findings and Table 1's verdict column: the ledger's rows (rejudge rewrites them)."""
        table1 = result.tables["table1"].assign(verdict=lambda t: verdicts.table1_verdicts(t, ledger))
        return harness.Output({"table1": table1, "findings": verdicts.findings_table(ledger)})


EXPERIMENT = Distributed()
run = harness.entry(EXPERIMENT)
