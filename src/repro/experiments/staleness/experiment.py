"""Parameter-averaging period and asynchronous-SGD staleness (`savchenko2019`, digest §5).

The paper makes claims without experiments; this experiment turns each into a measurement, in
one Python process with custom training loops (:mod:`repro.ml.steps`, any Keras backend):

1. **Synchronous parameter averaging** (:mod:`repro.experiments.staleness.averaging`): N workers, each on its own
   data shard, take k local minibatch steps, then weights (optionally optimizer state) are
   averaged. Grid over k and N; weights-only vs weights+state with a stateful optimizer;
   a numerical check that k = 1 with plain SGD equals single-machine SGD on the global batch.
2. **Asynchronous SGD emulation** (:mod:`repro.experiments.staleness.async_sgd`, :func:`train_async`): a
   reproducible *emulation* of stale gradients (a delay queue of parameter snapshots), not a
   distributed run; delays fixed or random with mean ``tau``.
3. **Mitigations**, options of the emulation: staleness-dependent step scaling, soft
   synchronisation, bounded staleness, scaling + soft sync.
4. **Staleness logs** (:mod:`repro.experiments.staleness.logs`): the format (:data:`LOG_COLUMNS`) and
   analysis (:func:`staleness_summary`, :func:`staleness_distribution`, ``repro staleness-log``) that a
   real asynchronous run feeds, and a small real asynchronous run with Python threads sharing one
   parameter set (:func:`threaded_async_run`).

``run(profile, overrides, run_dir)`` runs everything through :func:`repro.core.harness.run` (tables
as CSV, ``summary.json``, ``equivalence.json``, the ledger from ``claims.yaml``); the chapter is
``notebooks/05_staleness.ipynb``. Modules: :mod:`.study` (the runs), :mod:`.summaries` (tables and
summary), :mod:`.verdicts` (a measurement per claim), :mod:`.plots` and :mod:`.chapter` (the notebook).
"""

from __future__ import annotations

import os
import time

import pandas as pd

from repro.core import claims, harness, preflight
from repro.experiments.staleness import study, verdicts
from repro.experiments.staleness import summaries as sm
from repro.experiments.staleness.async_sgd import (  # noqa: F401 - the experiment's public names
    GEOMETRIC_CAP,
    MITIGATIONS,
    TAU_DISTS,
    AsyncResult,
    check_async_options,
    draw_staleness,
    max_delay,
    mitigation_options,
    staleness_scale,
    train_async,
    wait_charge,
)
from repro.experiments.staleness.averaging import EngineError, Trainer  # noqa: F401
from repro.experiments.staleness.chapter import glue_numbers, guide_markdown  # noqa: F401
from repro.experiments.staleness.logs import (  # noqa: F401
    LOG_COLUMNS,
    StalenessLogError,
    add_cli,
    read_staleness_log,
    staleness_distribution,
    staleness_summary,
)
from repro.experiments.staleness.paramtypes import StalenessParams
from repro.experiments.staleness.plots import (  # noqa: F401
    period_table,
    plot_accuracy_vs_period,
    plot_accuracy_vs_tau,
    plot_averaging_curves,
    plot_mitigations,
    plot_staleness_distribution,
    plot_state_comparison,
)
from repro.experiments.staleness.study import (  # noqa: F401
    EQUIVALENCE_STEPS,
    EQUIVALENCE_TOLERANCE,
    check_params,
)
from repro.experiments.staleness.summaries import paper_period  # noqa: F401
from repro.experiments.staleness.threads import threaded_async_run  # noqa: F401
from repro.ml import data as _data
from repro.ml import training

NAME = "staleness"


class Staleness(harness.Experiment[StalenessParams, _data.Dataset]):
    """The experiment, for the harness (:class:`repro.core.harness.Experiment`)."""

    name = NAME

    def preflight(self, p: StalenessParams) -> preflight.Own:
        """The dataset (the paper's CIFAR-10 verified?)."""
        return preflight.Own([_data.preflight_item(p.dataset)])

    def prepare(self, p: StalenessParams) -> _data.Dataset:
        ds = _data.load(p.dataset, p.train_samples or None, p.test_samples or None, seed=0)
        check_params(p, ds.info["n_train"])
        return ds

    def measure(self, run, p: StalenessParams, ds: _data.Dataset) -> harness.Output:
        run.add_dataset(ds.info)
        run.note("device", training.device_summary())
        t_start = time.perf_counter()
        models = study.Models(p, ds)
        equivalence = study.equivalence_check(models)
        run.write_json("equivalence", equivalence)
        avg_hist, avg_final = study.averaging_runs(models)
        async_hist, async_final, emulation_staleness = study.async_runs(models)
        load_before = os.getloadavg()[0]
        thread_log, thread_summary, thread_dist = study.thread_runs(models)
        run.note("thread_load_average", {  # other processes share the cores the threads run on
            "before": round(load_before, 2), "after": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count(),
            "what": "the machine's 1-minute load average just before and after the thread runs"})
        tables = {
            "averaging_history": avg_hist, "averaging_final": avg_final,
            "period_summary": sm.period_summary(avg_final, p), "state_summary": sm.state_summary(avg_final),
            "async_history": async_hist, "async_final": async_final, "tau_summary": sm.tau_summary(async_final),
            "mitigation_summary": sm.mitigation_summary(async_final), "emulation_staleness": emulation_staleness,
            "thread_staleness_log": thread_log, "thread_staleness": thread_summary,
            "thread_staleness_distribution": thread_dist,
        }
        summary = sm.run_summary(tables, equivalence, models.sizes())
        summary["compute_s"] = time.perf_counter() - t_start
        run.note("emulation", "asynchronous SGD is emulated in one process (delay queue of parameter snapshots); "
                              "thread_staleness* come from a real multi-threaded run on this machine")
        return harness.Output(tables, summary)

    def judge(self, result: harness.Result[StalenessParams]) -> dict[str, claims.Measured]:
        return verdicts.measurements(result.tables, result.summary, result.params, result.provenance)

    def verdict_views(self, result: harness.Result[StalenessParams], measured: dict,
                      ledger: pd.DataFrame) -> harness.Output:
        """The chapter's claims table: the ledger's own rows, so the two cannot disagree (rejudge rewrites it)."""
        return harness.Output({"claims": verdicts.claims_table(ledger)})


EXPERIMENT = Staleness()
run = harness.entry(EXPERIMENT)
