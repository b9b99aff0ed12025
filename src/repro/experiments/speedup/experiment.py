"""`slampa2017`: the thesis' equations for the speedup of distributed training, checked and measured.

The pieces (each its own module in this folder):

* :mod:`~repro.experiments.speedup.equations`: the equations of thesis chapter 4, ``estimate``,
  Table 6.1 and the predictions grid;
* :mod:`~repro.experiments.speedup.statements`: the thesis' statements (``claims.yaml``, each checked
  as its ``rule`` says), one :class:`~repro.core.claims.Measured` per claim;
* :mod:`~repro.experiments.speedup.measure` / :mod:`~repro.experiments.speedup.programs`: probes
  and real distributed runs on a local cluster, and the extended model;
* :mod:`~repro.experiments.speedup.parameters`: parameter counts of our builds of the networks;
* :mod:`~repro.experiments.speedup.plots`, :mod:`~repro.experiments.speedup.estimate_cli`
  (``repro estimate``, the thesis' estimate.py).

``run(profile, overrides, run_dir)`` writes ``table61``, ``predictions``, ``best_per_configuration``,
``claims``, ``reported_vs_predicted``, ``parameters`` (``count_parameters``) and, with ``measure``,
``probes``, ``runs``, ``measured_vs_predicted``, ``errors``, ``choices``, ``semaphore_effect``; the
ledger is judged from ``predictions`` and ``measured_vs_predicted`` alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from repro import cluster
from repro.book.report import glue
from repro.cluster import slurm
from repro.core import claims, harness, preflight
from repro.core.harness import Result
from repro.experiments.speedup import emulation, parameters, rounding, statements, waits
from repro.experiments.speedup import measure as sm
from repro.experiments.speedup.equations import (
    SERVERS,
    best_per_configuration,
    predict_grid,
    table_6_1,
)
from repro.experiments.speedup.estimate_cli import add_cli
from repro.experiments.speedup.parameters import parameter_table
from repro.experiments.speedup.paramtypes import SpeedupParams
from repro.experiments.speedup.plots import plot_predictions
from repro.experiments.speedup.statements import NAME
from repro.predict import hardware

__all__ = ["NAME", "EXPERIMENT", "run", "add_cli", "plot_predictions", "glue_numbers", "summarise", "emulated_reported"]


def _measure(run, p: SpeedupParams) -> dict[str, pd.DataFrame]:
    """Probes, distributed runs and both models' predictions (:mod:`repro.experiments.speedup.measure`)."""
    cores = os.cpu_count() or 1
    run.note("cores", cores)
    run.note("measurement", f"networks {p.measure.networks} at {p.measure.image_size} px, batch "
             f"{p.measure.batch}, D = {p.measure.batches}, synthetic data; runs on link {p.train_link}")
    run.add_dataset({"name": "synthetic", "source": "tf.random.stateless_uniform, one fixed batch per worker",
                     "stand_in_for": "Caltech256 at 224x224 (the thesis)", "shape": [p.measure.image_size,
                                                                                    p.measure.image_size, 3],
                     "classes": p.measure.classes, "n_train": p.measure.batch, "n_test": 0})
    base = run.dir / "clusters"
    probes = sm.probes(p, p.measure, base)
    measured = sm.runs(p, p.measure, base)
    cmp = sm.compare(measured, probes, p, p.measure, cores)
    return {"probes": probes, "runs": measured, "measured_vs_predicted": cmp, "errors": sm.errors(cmp),
            "choices": sm.choices(cmp), "semaphore_effect": sm.semaphore_effect(cmp, p.measure.batches)}


def _measured_summary(tables: dict) -> dict:
    errs = tables["errors"].set_index(["network", "mode", "server"])
    total = errs.loc[("all", "all", "all")]
    picks = tables["choices"]
    return {"mape_thesis": float(total["mape_thesis"]), "mape_extended": float(total["mape_extended"]),
            "configurations": int(total["configurations"]),
            "picks_right_thesis": int(picks["thesis_right"].sum()),
            "picks_right_extended": int(picks["extended_right"].sum()), "picks_total": int(len(picks))}


def _emulated_summary(tables: dict) -> dict:
    errs = tables["emulated_errors"].set_index(["network", "mode", "server"]).loc[("all", "all", "all")]
    checks = tables["emulation_checks"]
    out = {"mape_thesis": float(errs["mape_thesis"]), "mape_extended": float(errs["mape_extended"]),
           "configurations": int(errs["configurations"]), "checks_within": int(checks["within"].sum()),
           "checks_total": int(len(checks)), "max_check_error": float(checks["error"].abs().max()),
           "dilations": sorted(float(k) for k in tables["emulated_runs"]["dilation"].unique())}
    dc = tables.get("dilation_check")
    if dc is not None and len(dc):
        out["dilation_check_max_difference"] = float(dc["difference"].abs().max())
        out["dilation_check_within"] = int(dc["within"].sum())
        out["dilation_check_total"] = int(len(dc))
    return out


def summarise(grid: pd.DataFrame, p: SpeedupParams) -> dict:
    """Headline numbers: the predicted best configuration per network (the claim counts are
    :meth:`Speedup.verdict_views`')."""
    thesis = grid[grid["server"].isin(SERVERS)]
    out: dict[str, Any] = {"batches": p.batches, "best": {}}
    for net, sub in thesis.groupby("network", sort=False):
        best = sub.loc[sub["speedup"].idxmax()]
        out["best"][net] = {"speedup": float(best["speedup"]), "mode": best["mode"], "server": best["server"],
                            "workers": int(best["workers"])}
    sq = grid[(grid["network"] == "SqueezeNet") & (grid["mode"] == "sync-split") & (grid["server"] == "central")]
    if not sq.empty:
        out["squeezenet_split_central_best_workers"] = int(sq.loc[sq["speedup"].idxmax(), "workers"])
    sem = grid[(grid["network"] == "GoogLeNet") & (grid["mode"] == "sync-join")]
    sem = sem[sem["workers"] == sem["workers"].max()] if not sem.empty else sem
    if (sem["server"] == "central+semaphore").any():
        by = sem.set_index("server")["speedup"]
        out["semaphore_googlenet_join"] = {"workers": int(sem["workers"].iloc[0]), "central": float(by["central"]),
                                           "semaphore": float(by["central+semaphore"]),
                                           "distributed": float(by["distributed"])}
    vgg = thesis[(thesis["network"] == "VGG16E") & (thesis["workers"] >= 2)]
    if not vgg.empty:
        out["vgg16e_max_parallel_speedup"] = float(vgg["speedup"].max())
    return out


@dataclass
class Inputs:
    """What ``prepare`` loaded: thesis Table 6.1, and the emulated grid's hardware profile (None: no emulation)."""

    table: pd.DataFrame
    hardware: hardware.Profile | None


class Speedup(harness.Experiment[SpeedupParams, Inputs]):
    """The experiment, for the harness (:class:`repro.core.harness.Experiment`)."""

    name = NAME

    def preflight(self, p: SpeedupParams) -> preflight.Own:
        """The scheduler where the measurement runs on SLURM (its partition, usable nodes, GPUs per node)."""
        tasks = sm.slurm_tasks(p) if p.measure.enabled else 0
        return preflight.Own([slurm.preflight_item(tasks)] if tasks else [])

    def prepare(self, p: SpeedupParams) -> Inputs:
        """Thesis Table 6.1 and the hardware profile; with ``measure``, one-line errors for the measuring
        configuration before any run."""
        if p.measure.enabled:
            sm.check(p)
        emulation.check(p)
        prof = emulation.profile(p)
        if prof is not None:  # waits longer than the timeout: one line before anything trains
            waits.check(p, prof)
        if p.measure.enabled or p.emulate.hardware is not None:
            cluster.resolve_isolation("auto")  # no private namespace: one-line error before the run opens
        if p.measure.enabled and sm.slurm_tasks(p):  # a drained node, no SLURM: one line before the run opens
            slurm.preflight(sm.slurm_tasks(p))
        return Inputs(table_6_1(p.networks), prof)

    def measure(self, run, p: SpeedupParams, inputs: Inputs) -> harness.Output:
        table = inputs.table
        run.note("inputs", "t_grad and t_comm of thesis Table 6.1 (repro/paperdata/reported.csv); no dataset is used")
        limits = {net: (p.max_workers_vgg16e if net == "VGG16E" else p.max_workers) for net in p.networks}
        grid = predict_grid(table, p.batches, limits, semaphore=p.semaphore, rounding=p.rounding)
        tables = {"table61": table, "predictions": grid, "best_per_configuration": best_per_configuration(grid)}
        if p.count_parameters:
            tables["parameters"] = parameter_table(p.input_size, p.num_classes, p.networks)
        if p.measure.enabled:
            tables.update(_measure(run, p))
        else:
            run.note("measurements", "not run (measure=false): the thesis' predictions only")
        if inputs.hardware is not None:
            sizes = dict(zip(tables["parameters"]["network"], 4 * tables["parameters"]["ours"]))
            tables.update(emulation.measure(run, p, inputs.hardware, sizes))
        if p.measure.enabled and sm.slurm_tasks(p):
            tables["slurm_jobs"] = slurm.record(run, run.dir, sm.SLURM_SCOPE)
        summary = summarise(grid, p)
        if p.measure.enabled:
            summary["measured"] = _measured_summary(tables)
        if p.emulate.hardware is not None:
            summary["emulated"] = _emulated_summary(tables)
        return harness.Output(tables, summary)

    def judge(self, result: Result[SpeedupParams]) -> dict[str, claims.Measured]:
        return statements.measurements(result.tables, result.params)

    def verdict_views(self, result: Result[SpeedupParams], measured: dict, ledger: pd.DataFrame) -> harness.Output:
        """The claims table, the thesis' measurements next to its predictions, and the claim counts:
        the ledger's verdicts (rejudge rewrites them)."""
        verdict = statements.verdicts(ledger)
        rep = statements.reported_vs_predicted(result.tables["predictions"], verdict)
        views = {"claims": statements.claims_table(measured, verdict), "reported_vs_predicted": rep}
        if "parameters" in result.tables:  # our builds against the published counts
            views["parameters"] = parameters.judged(result.tables["parameters"])
        return harness.Output(views, statements.counts(measured))


EXPERIMENT = Speedup()
run = harness.entry(EXPERIMENT)


def glue_numbers(result: Result[SpeedupParams]) -> None:
    """Headline numbers for the chapter's prose."""
    s = result.summary
    glue("sp_batches", s["batches"])
    glue("sp_claims_total", s["claims_total"])
    glue("sp_claims_pass", s["claims_pass"])
    glue("sp_claims_fail", s["claims_fail"])
    glue("sp_claims_measure", s["claims_need_measurement"])
    glue("sp_claims_not_testable", s.get("claims_not_testable", 0))
    for net, best in s["best"].items():
        key = net.lower()
        glue(f"sp_best_{key}", best["speedup"])
        glue(f"sp_best_{key}_config", "one worker, i.e. sequential training" if best["workers"] == 1
             else f"{best['mode']}, {best['server']} server, {best['workers']} workers")
    if "squeezenet_split_central_best_workers" in s:
        glue("sp_sq_split_best_n", s["squeezenet_split_central_best_workers"])
    if "semaphore_googlenet_join" in s:
        sem = s["semaphore_googlenet_join"]
        glue("sp_sem_n", sem["workers"])
        glue("sp_sem_central", sem["central"])
        glue("sp_sem_semaphore", sem["semaphore"])
        glue("sp_sem_distributed", sem["distributed"])
    if "vgg16e_max_parallel_speedup" in s:
        glue("sp_vgg_max", s["vgg16e_max_parallel_speedup"])
    glue("sp_claims_measured_pass", s["claims_measured_pass"])
    glue("sp_claims_measured_fail", s["claims_measured_fail"])
    glue("sp_claims_not_comparable", s["claims_not_comparable"])
    if "measured" in s:
        m, p = s["measured"], result.params
        glue("sp_mape_thesis", m["mape_thesis"])
        glue("sp_mape_extended", m["mape_extended"])
        glue("sp_configs", m["configurations"])
        glue("sp_picks_thesis", m["picks_right_thesis"])
        glue("sp_picks_extended", m["picks_right_extended"])
        glue("sp_picks_total", m["picks_total"])
        glue("sp_train_link", "an emulated " + p.train_link.replace("gbit", " Gb/s").replace("mbit", " Mb/s")
             + " network" if p.train_link != "loopback" else "loopback")
        glue("sp_measure_networks", ", ".join(p.measure.networks))
        glue("sp_measure_shape", f"{p.measure.image_size}x{p.measure.image_size} px, batch {p.measure.batch}, "
             f"D = {p.measure.batches}, N = {', '.join(map(str, p.measure.workers))}")
        sem = result["semaphore_effect"]
        glue("sp_sem_closer", int(sem["closer_to_best"].sum()) if len(sem) else 0)
        glue("sp_sem_total", int(len(sem)))
        glue("sp_sem_ratio_median", float(sem["semaphore_over_plain"].median()) if len(sem) else float("nan"))
    _glue_emulated(result)
    rep = result["reported_vs_predicted"]
    if not rep.empty:
        glue("sp_err_min", float(rep["equations_error"].abs().min()))
        glue("sp_err_max", float(rep["equations_error"].abs().max()))
    if "parameters" in result.tables:
        par = result["parameters"].set_index("network")
        glue("sp_input_size", result.params.input_size)
        glue("sp_num_classes", result.params.num_classes)
        glue("sp_mbps_min", float(par["implied_mbps"].min()))
        glue("sp_mbps_max", float(par["implied_mbps"].max()))
        if "GoogLeNet" in par.index:
            glue("sp_googlenet_side_mbps", float(par.loc["GoogLeNet", "implied_mbps_with_side_classifiers"]))



def emulated_reported(result: Result[SpeedupParams]) -> pd.DataFrame:
    """The thesis' measured speedups next to the emulated replay and both models (the chapter's table)."""
    return emulation.reported_table(result.tables, statements.thesis_claims(), claims.load(NAME))


NOT_EMULATED = "not run in this profile (emulate = none)"


def _glue_emulated(result: Result[SpeedupParams]) -> None:
    """The emulated replay's numbers, as text (a profile without it glues :data:`NOT_EMULATED`)."""
    p, s = result.params, result.summary.get("emulated")
    keys = ("sp_emu_profile", "sp_emu_shape", "sp_emu_dilations", "sp_emu_checks", "sp_emu_check_max",
            "sp_emu_dilation_check", "sp_emu_mape_thesis", "sp_emu_mape_extended", "sp_emu_misses", "sp_emu_left_out",
            "sp_emu_topology", "sp_emu_distributed")
    glue("sp_emu_tol", f"{emulation.CHECK_TOLERANCE:.0%}")
    best = claims.load(NAME)["squeezenet_best_measured"]
    printed = rounding.printed(best.paper, best.reported)
    glue("sp_emu_rtol", f"± {rounding.tolerance(best):g} around the thesis' {printed} ({best.tolerance_source})")
    glue("sp_emu_tol_mape", f"{emulation.MISS_LIMIT:.0%}")
    if s is None:
        for key in keys:
            glue(key, NOT_EMULATED)
        return
    prof = hardware.load(hardware.emulated(p.emulate.hardware))
    glue("sp_emu_profile", f"{prof.name} ({prof.description}; source: {prof.source})")
    glue("sp_emu_shape", f"{', '.join(p.emulate.networks)} at {p.input_size}x{p.input_size} px and "
         f"{p.num_classes} classes, B = {p.emulate.batch}, D = {p.emulate.batches}, "
         f"N = {', '.join(map(str, p.emulate.workers))}")
    glue("sp_emu_topology", prof.topology)
    glue("sp_emu_distributed", emulation.distributed_note(result.tables))
    glue("sp_emu_dilations", ", ".join(f"{k:g}" for k in s["dilations"]))
    glue("sp_emu_checks", f"{s['checks_within']} of {s['checks_total']}")
    glue("sp_emu_check_max", f"{100 * s['max_check_error']:.1f} %")
    glue("sp_emu_dilation_check", f"{s['dilation_check_within']} of {s['dilation_check_total']} configurations "
         f"within 5 % (largest difference {100 * s['dilation_check_max_difference']:.1f} %)"
         if "dilation_check_total" in s else "not run (dilation_check = 0)")
    glue("sp_emu_mape_thesis", f"{s['mape_thesis']:.1f} %")
    glue("sp_emu_mape_extended", f"{s['mape_extended']:.1f} %")
    glue("sp_emu_misses", str(len(emulation.misses(result.tables))))
    left = [n for n in p.networks if n not in p.emulate.networks]
    glue("sp_emu_left_out", ", ".join(left) if left else "none")
