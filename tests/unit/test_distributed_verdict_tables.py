"""The distributed judges on tables built here (none is read from a stored run). The ring-scaling judge on a
throughput table with several methods, models and worker counts in no order: it must read Horovod's rows (not the
PS's or the MWMS ring's), sorted by workers, per model. Every gated branch keeps what was measured and its runs;
the ties of the strict comparisons, the grids of one and of three worker counts, the emulated grid's notes, the
model rows at the paper's N with the package's errors, and the fault, sweep and Table 1 rows. Kills mutants that
the falsification cases' small tables leave alive (docs/developing.md, mutation testing)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from repro.core import claims, paramtypes
from repro.core import verdicts as V
from repro.experiments.distributed import arithmetic, modelbasis
from repro.experiments.distributed import verdicts as v
from repro.experiments.distributed.common import FAULT_COLUMNS, HOROVOD_NOT_INSTALLED, NAME, PS_BYTES
from repro.predict import loso

ROWS = [("ps_sync", "vgg16", 1, 10), ("ps_sync", "vgg16", 2, 5),
        ("horovod", "resnet50", 4, 40), ("horovod", "vgg16", 1, 10), ("horovod", "resnet50", 1, 15),
        ("horovod", "vgg16", 4, 9), ("horovod", "resnet50", 2, 30), ("horovod", "vgg16", 2, 12),
        ("ring", "vgg16", 1, 10), ("ring", "vgg16", 2, 20)]


def _bare_grid(rows, shared=False, basis="measured"):
    """The throughput table alone (no scaling or ratio tables), read between 1 and 4 workers."""
    t = pd.DataFrame(rows, columns=["method", "model", "workers", "total_images_per_sec"])
    return v._Grid(t, pd.DataFrame(), pd.DataFrame(), 4, 1, shared, "4 workers share 2 cores", 2, basis)


def test_ring_scaling_reads_horovod_sorted_by_workers_per_model():
    m = v.ring_scaling(_bare_grid(ROWS))
    assert m.ours == "Horovod: resnet50: gains, vgg16: no gain"
    assert (m.holds, m.gate, m.runs, m.note) == (True, None, 2, "measured up to 4 workers; the paper's ran to 20")


def test_ring_scaling_counterfactuals():
    # vgg16 gains at every step too: the exception does not show; on a measurement that is partly
    gains = [r if r[:2] != ("horovod", "vgg16") or r[2] != 4 else (*r[:3], 13) for r in ROWS]
    m = v.ring_scaling(_bare_grid(gains))
    assert m.ours == "Horovod: resnet50: gains, vgg16: gains" and m.holds is False
    assert m.gate.category.value == "partly" and m.gate.detail.startswith("every other model gains")
    # ... and on an emulation it fails the check as a whole (no partial verdict)
    e = v.ring_scaling(_bare_grid(gains, basis="emulated"))
    assert e.gate is None and e.holds is False and e.note.startswith("every other model gains")
    # resnet50 loses at 4 workers: the rule itself fails
    loses = [r if r[:3] != ("horovod", "resnet50", 4) else (*r[:3], 20) for r in ROWS]
    assert v.ring_scaling(_bare_grid(loses)).holds is False
    # without VGG16 the rule alone decides, and the note says so
    no_vgg = [r for r in ROWS if r[1] != "vgg16"]
    m = v.ring_scaling(_bare_grid(no_vgg))
    assert (m.holds, m.note) == (True, "no VGG16 in this profile")
    # Horovod at one worker count: the MWMS ring is read instead
    ring = [r for r in ROWS if not (r[0] == "horovod" and r[2] > 1)]
    assert v.ring_scaling(_bare_grid(ring)).ours == "ring: vgg16: gains"
    # shared cores or a single worker count: gated
    shared = v.ring_scaling(_bare_grid(ROWS, shared=True))
    assert shared.gate.category.value == "not testable here" and shared.gate.detail.startswith("4 workers share")
    one = v.ring_scaling(_bare_grid([r for r in ROWS if r[2] == 1]))
    assert one.gate.category.value == "not measured"


SHARE = "4 workers x 1 thread(s) plus the PS/chief processes share 2 cores"
NM, NT, NC = V.Category.NOT_MEASURED, V.Category.NOT_TESTABLE, V.Category.NOT_COMPARABLE


def _rows(method: str, model: str, base: float, eff: float, ns=(1, 2, 4)) -> list[tuple]:
    """``base`` images/s at the smallest N, then ``eff`` of linear scaling from one process."""
    return [(method, model, n, base * n * (eff if n > 1 else 1.0)) for n in ns]


def _grid(rows, nmax=None, nmin=None, shared=False, basis="measured", runs=2) -> v._Grid:
    t = pd.DataFrame(rows, columns=["method", "model", "workers", "total_images_per_sec"])
    ns = sorted(t["workers"].unique())
    nmax, nmin = nmax or int(ns[-1]), nmin or int(ns[0])
    r = arithmetic.ratios(t)
    return v._Grid(t, arithmetic.scaling_efficiency(t), r[r["workers"] == nmax], nmax, nmin, shared, SHARE, runs,
                   basis)


def _gate(m: claims.Measured) -> tuple:
    return (m.gate.category, m.gate.detail) if m.gate is not None else None


HVD = _rows("horovod", "resnet50", 100, 0.9) + _rows("horovod", "vgg16", 50, 0.6)
PS = _rows("ps_sync", "resnet50", 100, 0.5) + _rows("ps_sync", "vgg16", 50, 0.3)


# ---------------------------------------------------------------- the real runs' judges, branch by branch


def test_ring_scaling_gated_keeps_what_was_measured_and_its_runs():
    one = v.ring_scaling(_grid([("ring", "resnet50", 2, 180.0)], nmax=2, nmin=2))
    assert (one.ours, one.runs, _gate(one)) == ("ring: resnet50: gains", 2,
                                                (NM, "ring measured at fewer than two worker counts"))
    none = v.ring_scaling(_grid(PS))  # no ring of either kind: nothing of ours
    assert (none.ours, none.gate.category) == (v.NO, NM)
    shared = v.ring_scaling(_grid(HVD, shared=True))
    assert (shared.ours, shared.runs, _gate(shared)) == (
        "Horovod: resnet50: gains, vgg16: gains", 2, (NT, f"{SHARE}: an added process adds no processor"))


def test_ring_scaling_partial_and_replayed_keep_what_was_measured_and_its_runs():
    part = v.ring_scaling(_grid(HVD))
    assert (part.ours, part.holds, part.runs, part.gate.category) == (
        "Horovod: resnet50: gains, vgg16: gains", False, 2, V.Category.PARTLY)
    replay = v.ring_scaling(_grid(HVD, basis="emulated"))
    assert (replay.ours, replay.holds, replay.runs, replay.gate) == ("Horovod: resnet50: gains, vgg16: gains", False,
                                                                     2, None)


def test_ring_scaling_with_vgg16_alone_fails_where_it_gains_and_holds_where_it_does_not():
    gains = v.ring_scaling(_grid(_rows("horovod", "vgg16", 50, 0.6)))
    assert (gains.ours, gains.holds, gains.gate) == ("Horovod: vgg16: gains", False, None)
    flat = v.ring_scaling(_grid([("horovod", "vgg16", n, 50.0) for n in (1, 2, 4)]))
    assert (flat.holds, flat.note) == (True, "measured up to 4 workers; the paper's ran to 20")


def test_vgg_worst_gated_keeps_what_was_measured_and_its_runs():
    one = v.vgg_worst(_grid([("ring", *r[1:]) for r in HVD if r[2] == 2]))  # one worker count: every efficiency 1
    assert (one.ours, one.runs, _gate(one)) == ("ring efficiency at 2 workers: resnet50: 1.00, vgg16: 1.00", 2,
                                                (NM, "ring measured at fewer than two worker counts"))
    no_ring = v.vgg_worst(_grid(PS))  # two worker counts, no ring of either kind
    assert (no_ring.ours, _gate(no_ring)) == (v.NO, (NM, "ring measured at fewer than two worker counts"))
    alone = v.vgg_worst(_grid(_rows("horovod", "vgg16", 50, 0.6)))
    assert (alone.ours, alone.runs, _gate(alone)) == ("Horovod efficiency at 4 workers: vgg16: 0.60", 2,
                                                      (NT, "needs VGG and another model in the profile"))
    shared = v.vgg_worst(_grid(HVD, shared=True))
    assert (shared.ours, shared.runs, _gate(shared)) == (
        "Horovod efficiency at 4 workers: resnet50: 0.90, vgg16: 0.60", 2, (NT, SHARE))


def test_vgg_worst_reads_the_seeds_near_linear_for_some_but_not_vgg():
    """The seed's rule (near_linear 0.9): some model at 0.9 or more and no VGG there; a VGG that reaches it, or no
    model that does, fails with the reason (the older, stronger 'VGG worst' held for 0.75 against 0.5)."""
    vgg_high = v.vgg_worst(_grid(_rows("horovod", "resnet50", 100, 0.95) + _rows("horovod", "vgg16", 50, 0.95)))
    assert (vgg_high.holds, vgg_high.note) == (False, "vgg16 at 0.95 reaches 0.9")
    none = v.vgg_worst(_grid(_rows("horovod", "resnet50", 100, 0.75) + _rows("horovod", "vgg16", 50, 0.5)))
    assert (none.holds, none.note) == (False, "no other model reaches 0.9 (best: resnet50 at 0.75)")
    assert v.vgg_worst(_grid(_rows("horovod", "resnet50", 100, 0.95) + _rows("horovod", "vgg16", 50, 0.85))).holds
    assert v.vgg_worst(_grid(HVD)).holds is True


def test_vgg_worst_on_vggs_alone_is_not_testable_and_does_not_crash():
    """A profile of VGGs only (emulate_models: [vgg16, vgg19]) has no other model to be worse than: not testable
    (it raised 'argmin of an empty sequence' before); with one other model it is decided."""
    only = v.vgg_worst(_grid(_rows("horovod", "vgg16", 50, 0.6) + _rows("horovod", "vgg19", 40, 0.5)))
    assert _gate(only) == (NT, "needs VGG and another model in the profile")
    assert v.vgg_worst(_grid(_rows("horovod", "vgg16", 50, 0.6) + _rows("horovod", "resnet50", 100, 0.9))).holds is True


def test_ps_efficiency_gated_keeps_what_was_measured_and_its_runs():
    nothing = v.ps_efficiency(_grid(HVD))  # no PS
    assert (nothing.ours, _gate(nothing)) == (v.NO, (NM, "needs ring and ps_sync at two or more worker counts"))
    shared = v.ps_efficiency(_grid(HVD + PS, shared=True))
    assert (shared.ours, shared.runs, _gate(shared)) == (
        "resnet50: PS 0.50 vs Horovod 0.90, vgg16: PS 0.30 vs Horovod 0.60", 2, (NT, SHARE))


def test_ps_efficiency_on_a_tie_does_not_hold_and_says_so():
    low = v.ps_efficiency(_grid(HVD + PS))
    assert (low.holds, low.note) == (True, "measured up to 4 workers; the paper's ran to 10")
    tie = v.ps_efficiency(_grid(HVD + _rows("ps_sync", "resnet50", 100, 0.9) + _rows("ps_sync", "vgg16", 50, 0.3)))
    assert (tie.holds, tie.note) == (False, "PS efficiency not below ring for every model")


def test_a_scaling_range_on_the_model_says_predicted():
    assert v._range(_grid(HVD, basis="model"), "horovod") == "predicted up to 4 workers; the paper's ran to 20"
    assert v._range(_grid(HVD, basis="emulated"), "ps_sync") == "measured up to 4 workers; the paper's ran to 10"


def test_a_ratio_not_measured_has_nothing_of_ours():
    g = _grid(HVD + PS)  # no ps_async, no MWMS ring
    assert (v.async_vs_sync(g).ours, v.async_vs_sync(g).gate.category) == (v.NO, NM)
    assert (v.ring_vs_ps(g).ours, v.ring_vs_ps(g).gate.category) == (v.NO, NM)


# ---------------------------------------------------------------- the emulated grid's shape


def test_an_emulated_grid_of_one_worker_count_decides_no_scaling():
    g = v._emulated_grid(pd.DataFrame([r for r in HVD + PS if r[2] == 4],
                                      columns=["method", "model", "workers", "total_images_per_sec"]), "emulated")
    assert v.vgg_worst(g).gate.category is NM and v.ps_efficiency(g).gate.category is NM


def test_an_emulated_grid_of_two_worker_counts_decides_scaling():
    t = pd.DataFrame([r for r in HVD + PS if r[2] < 4], columns=["method", "model", "workers", "total_images_per_sec"])
    g = v._emulated_grid(t, "emulated")
    assert (g.nmin, g.nmax) == (1, 2)
    assert v.vgg_worst(g).holds is True and v.ps_efficiency(g).holds is True


def test_an_emulated_ratio_is_read_at_the_largest_worker_count():
    rows = HVD + [("ps_sync", "resnet50", 1, 100.0), ("ps_sync", "resnet50", 2, 180.0), ("ps_sync", "resnet50", 4, 200.0),
                  ("ps_sync", "vgg16", 1, 50.0), ("ps_sync", "vgg16", 2, 60.0), ("ps_sync", "vgg16", 4, 60.0)]
    g = v._emulated_grid(pd.DataFrame(rows, columns=["method", "model", "workers", "total_images_per_sec"]), "emulated")
    m = v.horovod(g)  # at 4 workers: 360 / 200 and 120 / 60 (at 2: 1.0 and 1.2)
    assert m.ours == "Horovod / sync PS at 4 workers: resnet50: 1.80, vgg16: 2.00"


# ---------------------------------------------------------------- the real runs' ledger (measurements)


P = paramtypes.partial(NAME, {"workers": [1, 2, 4], "threads_per_worker": 1, "emulate": None})
SUMMARY = {"cores": 16, "workers_share_cores": False}
K80 = {"resnet50": 25_557_032, "vgg16": 138_357_544}
EMULATED = paramtypes.partial(NAME, {"emulate": "k80-p2.16xlarge", "ps": 1})  # the old default ps 1


def _tables(rows, **extra) -> dict:
    t = pd.DataFrame(rows, columns=["method", "model", "workers", "total_images_per_sec"]).assign(runs=2)
    audit = pd.DataFrame({"model": ["vgg16"], "ours_params_m": [float("nan")], "ours_gflops": [float("nan")]})
    return {"throughput": t, "scaling": arithmetic.scaling_efficiency(t), "ratios": arithmetic.ratios(t),
            "table1": audit, "faults": pd.DataFrame(columns=FAULT_COLUMNS), **extra}


def _emulated_tp(ps: int = 1, methods=("horovod", "ps_sync")) -> pd.DataFrame:
    """An emulated grid exactly as the analytic model of k80-p2.16xlarge gives it (validated: 0 % off)."""
    points = pd.DataFrame([{"method": m, "workers": n, "model": model, "total_images_per_sec": 1.0}
                           for m in methods for n in (1, 2, 4) for model in K80])
    points = points.assign(hardware="k80-p2.16xlarge", batch_size=32, parameters=points["model"].map(K80))
    tp = modelbasis.same_points(points, ps)[["method", "workers", "model", "total_images_per_sec"]]
    return tp.assign(hardware="k80-p2.16xlarge", batch_size=32, parameters=tp["model"].map(K80))


def test_one_worker_count_in_the_profile_decides_no_scaling():
    rows = [("ring", *r[1:]) for r in HVD if r[2] == 2] + [r for r in PS if r[2] == 2]  # one count: the MWMS ring
    out = v.measurements(_tables(rows), SUMMARY, P.model_copy(update={"workers": [2]}), {})
    assert out["vgg_worst"].gate.category is NM and out["ps_efficiency"].gate.category is NM


def test_a_profile_without_real_runs_or_horovod_has_nothing_of_ours():
    empty = _tables([])
    empty["throughput"] = pd.DataFrame()  # no real method ran: not even a model column
    out = v.measurements(empty, SUMMARY, P, {})
    assert out["vgg_worst"].ours == v.NO and out["vgg_worst"].gate.category is NM
    tiny = v.measurements(_tables(_rows("horovod", "tiny", 10, 0.9)), SUMMARY, P, {})
    assert (tiny["ring_scaling"].ours, tiny["ring_scaling"].gate.category) == (v.NO, NM)
    no_hvd = v.measurements(_tables(HVD + PS), SUMMARY, P, {"horovod": HOROVOD_NOT_INSTALLED})
    assert (no_hvd["horovod"].ours, _gate(no_hvd["horovod"])) == (v.NO, (NM, HOROVOD_NOT_INSTALLED))


def test_the_emulated_grid_decides_what_it_measured_and_the_real_runs_keep_the_rest():
    p = paramtypes.partial(NAME, {"workers": [1, 2, 4], "threads_per_worker": 1, "emulate": "k80-p2.16xlarge", "ps": 1})
    out = v.measurements(_tables(HVD + PS, emulated_throughput=_emulated_tp()), SUMMARY, p, {})
    assert out["vgg_worst"].basis == "emulated" and out["vgg_worst"].evidence == "distributed-emulated-throughput"
    # neither grid ran the MWMS ring: the real runs' reason stands, not the tiny-model one
    assert _gate(out["ring_vs_ps"]) == (NM, "ring and ps_sync not both in this profile")


def test_the_bandwidth_sweep_reaches_the_ledger():
    sweep = pd.DataFrame([{"method": m, "bandwidth": "1gbit", "model": "resnet50", "workers": 2,
                           "measured_sent_mb_per_step": mb, "measured_received_mb_per_step": mb}
                          for m, mb in (("ring", 100.0), ("ps_sync", 200.0))])
    out = v.measurements(_tables(HVD + PS, bandwidth=sweep), SUMMARY, P, {})
    assert out[PS_BYTES].gate.category is NC and out[PS_BYTES].ours.startswith("bytes per step, 1 sweep point(s)")


# ---------------------------------------------------------------- the emulated findings' notes


@pytest.mark.parametrize("ps", [None, 2])
def test_each_emulated_finding_has_the_model_beside_it_at_its_own_ps(ps):
    from repro.predict import hardware

    p = paramtypes.partial(NAME, {"emulate": "k80-p2.16xlarge", "ps": ps or 1})
    tp = _emulated_tp(ps or 1)
    tables = {"emulated_throughput": tp}
    out = v.emulated(tables, p)
    model = v._emulated_grid(modelbasis.same_points(tp, ps or 1), "emulated")
    val = modelbasis.validation_text(modelbasis.validation(tables, p))
    words = hardware.load("k80-p2.16xlarge").in_words
    worst = out["vgg_worst"]
    assert worst.evidence == "distributed-emulated-throughput" and worst.holds is True
    assert worst.note == (f"measured up to 4 workers; the paper's ran to 20; the analytic model of k80-p2.16xlarge: "
                          f"{v.vgg_worst(model).ours}; {val}; follows from the paper's hardware: {words}")
    pred = arithmetic.ratios(modelbasis.paper_scale(tp, ps or 1))
    n = int(pred.dropna(subset=["horovod_over_ps_sync"])["workers"].max())
    at = pred[pred["workers"] == n]["horovod_over_ps_sync"]
    assert out["horovod"].note == (f"the analytic model of k80-p2.16xlarge: {v.horovod(model).ours}; {val}; follows "
                                   f"from the paper's hardware: {words}; N = 4 is not the paper's N (the model gives "
                                   f"{at.min():.1f}-{at.max():.1f} at N = 10)")
    assert "the paper's N" not in out["ps_efficiency"].note


def test_an_emulated_verdict_the_model_does_not_give_says_so():
    tp = _emulated_tp()
    at4 = (tp["method"] == "horovod") & (tp["model"] == "vgg16") & (tp["workers"] == 4)
    tp.loc[at4, "total_images_per_sec"] = tp.loc[at4, "total_images_per_sec"] * 1.4  # VGG16 now scales best
    m = v.emulated({"emulated_throughput": tp}, EMULATED)["vgg_worst"]
    assert m.holds is False and m.note.endswith("; the model alone does not give this verdict")


# ---------------------------------------------------------------- the model rows at the paper's N


VALIDATED = pd.DataFrame({"error": [0.05, -0.03]})
EXTERNAL = pd.DataFrame({"points": [4, 30], "median_pp": [1.0, 3.0], "worst_pp": [4.0, 9.0]},
                        index=pd.Index(["horovod", "ps_sync"], name="method"))
NARROW = (-0.001, 0.001)


@pytest.fixture
def narrow(monkeypatch):
    """The model's 80 % interval narrowed to +-0.001 of efficiency: the tests that use it are about the model rows'
    other rules (gates, notes, the emulated profile's model beside), which the package's interval (-0.13 to +0.05
    on 2026-11-27) would hide behind its own gate; that gate's tests: test_model_interval_distributed.py."""
    monkeypatch.setattr(loso, "interval", lambda *_: NARROW)


def _predicted(horovod: dict, ps: dict) -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "workers": n, "model": model, "total_images_per_sec": ips, "efficiency": eff,
                          "hardware": "k80-p2.16xlarge"}
                         for m, table in (("horovod", horovod), ("ps_sync", ps)) for model, pts in table.items()
                         for n, (ips, eff) in pts.items()])


def _linear(base: float, eff: float, ns=(1, 2, 4, 10, 20)) -> dict:
    return {n: (base * n * (eff if n > 1 else 1.0), eff if n > 1 else 1.0) for n in ns}


def _model_fields(m: claims.Measured) -> tuple:
    return m.ours, m.holds, m.value, m.basis, m.runs, m.note, str(m.gate), m.evidence


def _expected(tables: dict, p, ps: int) -> dict:
    tp, val = tables["emulated_throughput"], modelbasis.validation(tables, p)
    pred, old = modelbasis.paper_scale(tp, ps, real=True), modelbasis.paper_scale(tp, ps)
    return {cid: _model_fields(v.model_finding(cid, pred, val, old=old)) for cid in v.MODEL_FINDINGS}


@pytest.mark.usefixtures("narrow")
def test_model_rows_judge_the_real_topology_validated_on_the_emulated_grid():
    tables, p = {"emulated_throughput": _emulated_tp()}, EMULATED
    got = {cid: _model_fields(m) for cid, m in v.model_findings(tables, p).items()}
    assert got == _expected(tables, p, 1)
    assert got["model_ring_scaling"][0].endswith("[model of k80-p2.16xlarge-hosts]")
    assert "predicted up to 20 workers" in got["model_ring_scaling"][5]


@pytest.mark.parametrize("ps", [None, 2])
@pytest.mark.usefixtures("narrow")
def test_model_rows_show_the_emulated_profiles_model_at_the_runs_ps(ps, monkeypatch):
    """With the model's errors on measurements under the thresholds (a stand-in for the package's), the PS rows
    decide too, and the emulated profile's model (at the run's ps) is named where it said otherwise."""
    from repro.predict import measured

    monkeypatch.setattr(measured, "method_errors", lambda *_: EXTERNAL.assign(worst_pp=[4.0, 4.0]))
    p = paramtypes.partial(NAME, {"emulate": "k80-p2.16xlarge", "ps": ps or 1})
    tables = {"emulated_throughput": _emulated_tp(ps or 1)}
    got = {cid: _model_fields(m) for cid, m in v.model_findings(tables, p).items()}
    assert got == _expected(tables, p, ps or 1)
    assert "the emulated profile's model said otherwise" in got["model_horovod"][5]


def test_a_model_row_on_the_package_errors_reads_them_itself():
    from repro.predict import measured

    pred = modelbasis.paper_scale(_emulated_tp(), real=True)
    package = measured.method_errors(measured.package_validation()[1])
    own = v.model_finding("model_vgg_worst", pred, VALIDATED)
    assert _model_fields(own) == _model_fields(v.model_finding("model_vgg_worst", pred, VALIDATED, package))
    assert own.gate.category is NC and "cannot tell them apart" in own.gate.detail


def test_a_model_row_gated_twice_shows_no_prediction():
    one = _predicted({"resnet50": _linear(100, 0.9)}, {"resnet50": _linear(100, 0.5, (1, 2, 4, 10))})
    m = v.model_finding("model_vgg_worst", one, VALIDATED, EXTERNAL.assign(median_pp=[6.0, 3.0]))
    assert (m.ours, m.gate.category, m.note) == (v.NO, NC, "")


@pytest.mark.usefixtures("narrow")
def test_a_decided_model_row_has_its_notes_in_order():
    hvd = {"resnet50": _linear(100, 0.97), "vgg16": _linear(50, 0.7)}
    ps = {"resnet50": _linear(100, 0.5, (1, 2, 4, 10)), "vgg16": _linear(50, 0.3, (1, 2, 4, 10))}
    pred = _predicted(hvd, ps)
    m = v.model_finding("model_vgg_worst", pred, VALIDATED, EXTERNAL, old=pred)
    assert m.note == ("predicted up to 20 workers; the paper's ran to 20; the model within 5.0 % of the emulated grid "
                      "at worst over 2 clusters; on published horovod measurements 1.0 pp median, 4.0 pp worst "
                      "(held-out half); the outcome holds across the model's 80 % interval (-0.00 to +0.00 for "
                      "horovod ('float32, all-reduce or servers on one host') of scaling efficiency around each prediction: the 10th and 90th percentiles of its "
                      "leave-one-source-out residuals on published measurements)")


def _close(gap: float, worst_pp: float, cid: str = "model_vgg_worst"):
    if cid == "model_vgg_worst":  # the best VGG ``gap`` below near_linear (0.9), the other model far above it
        pred = _predicted({"resnet50": _linear(100, 0.98), "vgg16": _linear(50, 0.9 - gap)}, {})
    else:
        pred = _predicted({"resnet50": _linear(100, 0.9), "vgg16": _linear(50, 0.9)},
                          {"resnet50": _linear(100, 0.9 - gap, (1, 2, 4, 10)), "vgg16": _linear(50, 0.3, (1, 2, 4, 10))})
    return v.model_finding(cid, pred, VALIDATED, EXTERNAL.assign(worst_pp=[worst_pp, worst_pp]))


@pytest.mark.usefixtures("narrow")
def test_a_model_gap_at_or_just_inside_the_error_is_not_comparable():
    assert _close(0.0625, 6.26).gate.category is NC  # 6.25 pp within 6.26
    assert _close(0.0398, 4.0).gate.category is NC  # 3.98 pp within 4 pp
    assert _close(0.0410, 4.0).gate is None


def test_a_model_gap_within_error_says_how_far_apart_in_pp():
    gate = _close(0.08, 9.0, "model_ps_efficiency").gate
    assert gate.category is NC and gate.detail == (
        "the model puts PS and Horovod for the closest model 8.0 pp of efficiency apart, within its worst error on "
        "published measurements (9.0 pp): it cannot tell them apart")


def test_a_ps_gap_is_read_at_the_largest_n_both_methods_reach_only():
    """PS 2 pp below Horovod at N = 10, 40 pp below it at 2 and 4: not comparable (only N = 10 counts)."""
    hvd = {"resnet50": _linear(100, 0.9), "vgg16": _linear(50, 0.9)}
    ps = {"resnet50": {1: (100.0, 1.0), 2: (100.0, 0.5), 4: (200.0, 0.5), 10: (880.0, 0.88)},
          "vgg16": {1: (50.0, 1.0), 2: (50.0, 0.5), 4: (100.0, 0.5), 10: (440.0, 0.88)}}
    gate = v.model_finding("model_ps_efficiency", _predicted(hvd, ps), VALIDATED, EXTERNAL).gate
    assert gate.category is NC and "2.0 pp of efficiency apart" in gate.detail


# ---------------------------------------------------------------- fault tolerance, the sweep, Table 1


def test_fault_tolerance_says_what_each_method_did_in_one_trial():
    faults = pd.DataFrame([
        {"method": "ps_async", "outcome": "finished with the remaining worker", "scheduled": 20, "completed": 18,
         "orphans": 1},
        {"method": "ps_sync", "outcome": "stopped with an error", "scheduled": 20, "completed": None, "orphans": 0},
        {"method": "ring", "outcome": "stopped with an error", "scheduled": None, "completed": None, "orphans": 0}])
    m = v.fault_tolerance(faults)
    assert (m.runs, m.gate.category) == (1, NC)
    assert m.ours == ("async PS: finished with the remaining worker, 18 of 20 steps completed; ring (MWMS): stopped "
                      "with an error; sync PS (control): stopped with an error; orphan processes: 1")


def test_fault_tolerance_without_a_count_of_steps_or_a_control():
    faults = pd.DataFrame([
        {"method": "ps_async", "outcome": "stopped with an error", "scheduled": None, "completed": None, "orphans": 0},
        {"method": "ring", "outcome": "stopped with an error", "scheduled": None, "completed": None, "orphans": 0}])
    m = v.fault_tolerance(faults)
    assert m.ours == "async PS: stopped with an error; ring (MWMS): stopped with an error; orphan processes: 0"


def test_ps_extra_data_counts_async_ps_and_names_every_point():
    sweep = pd.DataFrame([{"method": m, "bandwidth": "1gbit", "model": mod, "workers": 2,
                           "measured_sent_mb_per_step": mb, "measured_received_mb_per_step": mb}
                          for mod in ("resnet50", "vgg16") for m, mb in (("ring", 100.0), ("ps_async", 200.0))])
    m = v.ps_extra_data(sweep)
    assert (m.gate.category, m.runs, m.evidence) == (NC, 1, "distributed-bandwidth")
    assert m.ours == ("bytes per step, 2 sweep point(s): resnet50 (N = 2), ps_async: PS link 200.0-200.0 MB vs ring "
                      "worker 100.0-100.0 MB; vgg16 (N = 2), ps_async: PS link 200.0-200.0 MB vs ring worker "
                      "100.0-100.0 MB; least ratio 2.00 (resnet50, ps_async, 1gbit)")
    apart = sweep.assign(bandwidth=["1gbit", "100mbit"] * 2)  # ring and PS never at the same point
    assert (v.ps_extra_data(apart).ours, v.ps_extra_data(apart).gate.category) == (v.NO, NM)


def test_table1_value_is_the_ratio_farthest_from_one():
    m = v.table1_row("vgg16", {"ours_params_m": 138.0, "ours_gflops": 30.9 * 1.5})
    assert m.value == pytest.approx(1.5)
    assert claims.row(claims.load(NAME)["table1_vgg16"], m)["category"] == "not testable here"  # decisive: false
    assert m.gate.detail.endswith("; here it does not hold")
    assert not math.isnan(m.value)


@pytest.mark.parametrize("params, gflops", [(131.1, 32.445), (144.9, 29.354999999999997)])
def test_table1_on_the_bands_edges_agrees_and_explains_nothing(params, gflops):
    """131.1 / 138 and 32.445 / 30.9 are 0.95 and 1.05 exactly (as are the others): inside the band, no
    disagreement to explain."""
    m = v.table1_row("vgg16", {"ours_params_m": params, "ours_gflops": gflops})
    assert sorted([params / 138.0, gflops / 30.9]) == [0.95, 1.05]
    assert m.note == "ours/paper: parameters " + ("0.950, GFLOPs 1.050" if params < 138 else "1.050, GFLOPs 0.950")
    assert m.gate.detail.endswith("; here it holds")  # decisive: false: shown, not decided
    assert claims.row(claims.load(NAME)["table1_vgg16"], m)["category"] == "not testable here"
