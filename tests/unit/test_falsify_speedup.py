"""Falsification cases of `speedup` (slampa2017): every decisive claim, its judge
(:func:`repro.experiments.speedup.statements.measurements`) fed counterfactual tables where the
statement holds and where it does not.

* prediction statements (basis equations): the thesis' Table 6.1 with one network's ``t_comm``
  changed, through the thesis' equations (:func:`~repro.experiments.speedup.equations.predict_grid`);
* statements about the thesis' measurements (basis emulated): an emulated grid whose speedups are
  the thesis' predictions, with the cells the statement speaks of changed.
"""

import functools
from pathlib import Path

import falsify
import numpy as np
import pandas as pd
import pytest

from repro.core import claims, paramtypes
from repro.experiments.speedup import equations as eq
from repro.experiments.speedup import rounding, statements

EXPERIMENT = "speedup"
D = 128
LIMITS = {"VGG16E": 4, "GoogLeNet": 8, "SqueezeNet": 8, "Resnet34": 8}
PROFILE = "gtx970-1gbit"
PUBLISHED = Path(__file__).resolve().parents[2] / "published" / "cpu" / EXPERIMENT


@functools.lru_cache(maxsize=None)
def _grid(t_comm: tuple = ()) -> pd.DataFrame:
    """The thesis' predictions on Table 6.1, with ``t_comm`` of the networks in ``t_comm`` replaced."""
    table = eq.table_6_1()
    for net, value in t_comm:
        table.loc[table["network"] == net, "t_comm"] = value
    return eq.predict_grid(table, D, LIMITS, semaphore=True)


def _predicted(cid: str, t_comm: dict):
    grid = _grid(tuple(sorted(t_comm.items())))
    params = paramtypes.partial(EXPERIMENT, {"measure": False, "networks": list(eq.NETWORKS), "emulate": None})
    return statements.measurements({"predictions": grid}, params, ids=(cid,))[cid]  # that claim alone


def _equations(cid: str, net: str, holds: float | None, fails: float | None):
    """A prediction statement: the thesis' own t_comm where it holds (None) or fails (None), else ``net``'s
    t_comm set to the number given."""
    def case():
        return tuple(_predicted(cid, {} if tc is None else {net: tc}) for tc in (holds, fails))
    return case


CASES = {
    "vgg16e_below_one": _equations("vgg16e_below_one", "VGG16E", None, 0.01),
    "squeezenet_above_one": _equations("squeezenet_above_one", "SqueezeNet", None, 5.0),
    "squeezenet_split_central_best_4": _equations("squeezenet_split_central_best_4", "SqueezeNet", None, 1e-4),
    "googlenet_split_distributed_predicted_up": _equations("googlenet_split_distributed_predicted_up", "GoogLeNet",
                                                           None, 5.0),
    "googlenet_join_central_above_one": _equations("googlenet_join_central_above_one", "GoogLeNet", None, 5.0),
    "googlenet_split_central_below_one": _equations("googlenet_split_central_below_one", "GoogLeNet", None, 1e-4),
    "resnet34_best_config": _equations("resnet34_best_config", "Resnet34", None, 5.0),
    "resnet34_split_below_one": _equations("resnet34_split_below_one", "Resnet34", None, 1e-4),
    "resnet34_async_central_below_one": _equations("resnet34_async_central_below_one", "Resnet34", None, 1e-4),
    "resnet34_async_distributed_above_one": _equations("resnet34_async_distributed_above_one", "Resnet34", None, 5.0),
    # the thesis' own Table 6.1 makes this one false (t_comm ~ t_grad); a Resnet34 with a 10x faster link makes it true
    "resnet34_join_central_above_one": _equations("resnet34_join_central_above_one", "Resnet34", 0.08, None),
    # the thesis' own Table 6.1 makes this one false (5.2 vs 7.4 at sync-join, N = 8); a SqueezeNet whose weights
    # move in next to no time makes both servers give S ~ N: true
    "squeezenet_servers_equal": _equations("squeezenet_servers_equal", "SqueezeNet", 1e-4, None),
    # §8 on the thesis' own Table 6.1: the equations pick GoogLeNet sync-split on the distributed server, N = 8, where
    # §6.4 measured a slow-down (false); a GoogLeNet whose t_comm > t_grad / 2 makes sync-split sequential (true)
    "estimates_found_ideal": _equations("estimates_found_ideal", "GoogLeNet", 1.0, None),
}


# --- statements about the thesis' measurements, on an emulated grid -------------------------


def _emulated_grid() -> pd.DataFrame:
    """emulated_vs_predicted as the emulation writes it, every speedup the thesis' prediction (error 0)."""
    grid = _grid()
    grid = grid[grid["workers"].isin([1, 2, 4, 8])]
    t_grad = eq.table_6_1().set_index("network")["t_grad"]
    out = grid[["network", "mode", "server", "workers"]].copy()
    out["t_grad"] = out["network"].map(t_grad)
    out["thesis_s"] = grid["t_train"].to_numpy()
    out["speedup_thesis"] = grid["speedup"].to_numpy()
    out = out.reset_index(drop=True)
    return _with(out, out["network"].notna(), out["speedup_thesis"].to_numpy())


def _with(cmp: pd.DataFrame, where, speedup) -> pd.DataFrame:
    """``cmp`` with the emulated speedup of the rows ``where`` set (time and the thesis model's error follow)."""
    cmp = cmp.copy()
    cmp.loc[where, "speedup_measured"] = speedup if np.isscalar(speedup) else np.asarray(speedup)[where.to_numpy()]
    cmp["measured_s"] = D * cmp["t_grad"] / cmp["speedup_measured"]
    cmp["error_thesis"] = cmp["thesis_s"] / cmp["measured_s"] - 1
    return cmp


def _at(cmp, net=None, mode=None, server=None, workers=None):
    sel = pd.Series(True, index=cmp.index)
    for col, v in (("network", net), ("mode", mode), ("server", server)):
        if v is not None:
            sel &= cmp[col] == v
    if workers is not None:
        sel &= cmp["workers"].isin(workers if isinstance(workers, list) else [workers])
    return sel


def _emulated(cid: str, cmp: pd.DataFrame, replay: pd.DataFrame | None = None):
    runs = pd.DataFrame({"server": ["distributed"], "ps_on_workers": [True], "mode": ["sync-join"],
                         "workers": [1], "closures": [8]})
    # every configuration run twice (the second run as the dilation check writes it), with the same speedup
    again = cmp.assign(semaphore=cmp["server"].str.endswith("+semaphore"), server=cmp["server"].str.replace(
        "+semaphore", ""), speedup_a=cmp["speedup_measured"], speedup_b=cmp["speedup_measured"], dilation_a=4.0,
        dilation_b=8.0)
    tables = {"predictions": _grid(), "emulated_vs_predicted": cmp, "emulated_runs": runs, "dilation_check": again}
    if replay is not None:
        tables["emulated_replay"] = replay
    params = paramtypes.partial(EXPERIMENT, {"measure": False, "networks": list(eq.NETWORKS), "emulate": PROFILE})
    return statements.measurements(tables, params, ids=(cid,))[cid]  # that claim alone


def _replay(cid: str, holds, fails):
    """A statement about the thesis' runs: ``holds`` / ``fails`` turn the emulated grid into one where it does."""
    def case():
        return _emulated(cid, holds(_emulated_grid())), _emulated(cid, fails(_emulated_grid()))
    return case


def _replayed(cid: str, net: str, mode: str, holds: list[float], fails: list[float]):
    """A reported speedup decided by the replay (distributed server, N = 8, the thesis' D): five runs with the
    spread ``holds`` (interval wholly within the thesis' rounding) and ``fails`` (wholly outside)."""
    def runs(speedups):
        return pd.DataFrame({"network": net, "mode": mode, "server": "distributed", "workers": 8, "semaphore": False,
                             "repeat": range(1, len(speedups) + 1), "batches": D, "speedup": speedups})

    def case():
        return tuple(_emulated(cid, _emulated_grid(), runs(s)) for s in (holds, fails))
    return case


def _same(cmp):
    return cmp


def _speedup(net, mode, server, workers, value):
    return lambda cmp: _with(cmp, _at(cmp, net, mode, server, workers), value)


def _semaphore_slower(cmp):
    sem = _at(cmp, "GoogLeNet", "async", "central+semaphore", 4)
    plain = cmp.loc[_at(cmp, "GoogLeNet", "async", "central", 4), "speedup_measured"].iloc[0]
    return _with(cmp, sem, plain / 1.3)  # 1.3 x the time without the semaphore


def _central_off(cmp):
    cmp = cmp.copy()
    central = cmp["server"] == "central"
    cmp.loc[central, "thesis_s"] = 1.5 * cmp.loc[central, "measured_s"]  # the thesis model 50 % off
    cmp["error_thesis"] = cmp["thesis_s"] / cmp["measured_s"] - 1
    return cmp


def _split_off(cmp):
    cmp = cmp.copy()
    split = _at(cmp, "SqueezeNet", "sync-split", "central")
    cmp.loc[split, "thesis_s"] = 1.5 * cmp.loc[split, "measured_s"]  # the thesis model 50 % off on one server
    cmp["error_thesis"] = cmp["thesis_s"] / cmp["measured_s"] - 1
    return cmp


def _trend_reversed(cmp):
    return _with(cmp, _at(cmp, "SqueezeNet", "sync-join", "distributed", [1, 2, 4, 8]),
                 np.where(cmp["workers"] == 1, 4.0, 8.0 / cmp["workers"]))


CASES.update({
    "vgg16e_below_one_measured": _replay("vgg16e_below_one_measured", _same,
                                         _speedup("VGG16E", "sync-join", "distributed", 4, 1.5)),
    # the thesis' 6.5 is 6.45-6.55 (its rounding): the replay's interval wholly inside, or wholly above it
    "squeezenet_best_measured": _replayed("squeezenet_best_measured", "SqueezeNet", "sync-join",
                                          [6.49, 6.50, 6.51, 6.50, 6.50], [7.02, 7.10, 7.05, 7.08, 7.00]),
    "squeezenet_split_central_best_4_measured": _replay("squeezenet_split_central_best_4_measured", _same,
                                                        _speedup("SqueezeNet", "sync-split", "central", 8, 10.0)),
    "googlenet_async_measured": _replay("googlenet_async_measured",
                                        _speedup("GoogLeNet", "async", "distributed", 8, 3.92),
                                        _speedup("GoogLeNet", "async", "distributed", 8, 3.8)),
    "googlenet_split_measured": _replay("googlenet_split_measured",
                                        _speedup("GoogLeNet", "sync-split", "distributed", 8, 4.03),
                                        _speedup("GoogLeNet", "sync-split", "distributed", 8, 1.25)),
    "googlenet_split_distributed_measured_down": _replay(
        "googlenet_split_distributed_measured_down", _speedup("GoogLeNet", "sync-split", "distributed", [2, 4, 8], 0.8),
        _same),
    "resnet34_best_measured": _replay("resnet34_best_measured",
                                      _speedup("Resnet34", "sync-join", "distributed", 8, 2.12),
                                      _speedup("Resnet34", "sync-join", "distributed", 8, 2.2)),
    "distributed_never_worse_measured": _replay("distributed_never_worse_measured", _same,
                                                _speedup("GoogLeNet", "async", "distributed", 4, 0.5)),
    "central_predictions_accurate": _replay("central_predictions_accurate", _same, _central_off),
    "distributed_predictions_trend": _replay("distributed_predictions_trend", _same, _trend_reversed),
    "semaphore_never_worse": _replay("semaphore_never_worse", _same, _semaphore_slower),
    "squeezenet_split_accurate": _replay("squeezenet_split_accurate", _same, _split_off),
})


def _ratio(net: str, stated: float):
    """§7.1's t_comm ratio: Table 6.1 with ``net``'s t_comm just inside the stated multiple's rounding (0.9 x half
    its last digit above it: true) and as the thesis' table has it (false)."""
    def case():
        claim = claims.load(EXPERIMENT)[f"t_comm_ratio_{net.lower()}"]
        table = eq.table_6_1()
        squeeze = float(table.loc[table["network"] == "SqueezeNet", "t_comm"].iloc[0])
        edge = stated + 0.9 * rounding.tolerance(claim)
        true = table.assign(t_comm=np.where(table["network"] == net, edge * squeeze, table["t_comm"]))
        return statements.t_comm_ratio(true, net, claim), statements.t_comm_ratio(table, net, claim)
    return case


CASES.update({"t_comm_ratio_googlenet": _ratio("GoogLeNet", 7)})
# decisive: false (tests/unit/test_flip_speedup.py: over x0.2-x5 they hold on fewer than 5 % of the draws), still
# shown with what Table 6.1 gives: the judge's outcome flips, the row decides nothing
SHOWN = {"t_comm_ratio_resnet34": _ratio("Resnet34", 27), "t_comm_ratio_vgg16e": _ratio("VGG16E", 170)}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_flips(cid):
    falsify.check(EXPERIMENT, CASES, cid)


# --- §7.1's statements about Table 6.1's own spread (decisive: false since 2026-11-28, issue 55) -----------


def _t_grad_similar():
    claim, table = claims.load(EXPERIMENT)["t_grad_similar"], eq.table_6_1()
    apart = table.assign(t_grad=np.where(table["network"] == "VGG16E", 0.5, table["t_grad"]))  # 0.821 / 0.5 = 1.64
    return statements.t_grad_similar(table, claim), statements.t_grad_similar(apart, claim)


def _follows_parameters():
    claim = claims.load(EXPERIMENT)["t_comm_follows_parameters"]
    run = PUBLISHED / (PUBLISHED / "LATEST").read_text().strip()
    par = pd.read_csv(run / "parameters.csv")  # our builds' counts at 224 px and 256 classes, as the run stored them
    slow = par.assign(t_comm=np.where(par["network"] == "VGG16E", 2 * par["t_comm"], par["t_comm"]))  # rate / 2
    return statements.follows_parameters(par, claim), statements.follows_parameters(slow, claim)


SHOWN.update({"t_grad_similar": _t_grad_similar, "t_comm_follows_parameters": _follows_parameters})


@pytest.mark.parametrize("cid", sorted(SHOWN))
def test_rows_shown_but_not_decisive_flip_before_their_gate(cid):
    falsify.check_shown(EXPERIMENT, SHOWN, cid)
