"""Falsification cases of the distributed experiment: each decisive claim's judge fed the claim true and false."""

from __future__ import annotations

from contextlib import contextmanager

import falsify
import pandas as pd
import pytest

from repro.core import paramtypes
from repro.experiments.distributed import arithmetic, verdicts
from repro.experiments.distributed.common import FAULT_COLUMNS
from repro.predict import loso

EXPERIMENT = "distributed"
P = paramtypes.partial(EXPERIMENT, {"workers": [1, 2], "threads_per_worker": 1, "emulate": None})
SUMMARY = {"cores": 16, "workers_share_cores": False}  # a core per worker: the scaling findings are testable
BASE = {"resnet50": 100.0, "vgg16": 50.0}  # one worker's images/s


def _judge(cid: str, at_two: dict, methods=("ring", "ps_sync", "ps_async", "horovod")) -> verdicts.Measured:
    """The real runs' judge (verdicts.measurements) on a grid of 1 and 2 workers, two runs each: every method
    at one worker runs at BASE, at two workers at ``at_two[(method, model)]`` (default: 1.8 x BASE)."""
    rows = [(m, n, model, BASE[model] if n == 1 else at_two.get((m, model), 1.8 * BASE[model]))
            for m in methods for n in (1, 2) for model in BASE]
    t = pd.DataFrame(rows, columns=["method", "workers", "model", "total_images_per_sec"]).assign(runs=2)
    audit = pd.DataFrame({"model": ["vgg16", "vgg19", "resnet50", "inception_v4", "inception_v3"],
                          "ours_params_m": [float("nan")] * 5, "ours_gflops": [float("nan")] * 5})
    tables = {"throughput": t, "scaling": arithmetic.scaling_efficiency(t), "ratios": arithmetic.ratios(t),
              "table1": audit, "faults": pd.DataFrame(columns=FAULT_COLUMNS)}
    return verdicts.measurements(tables, SUMMARY, P, {})[cid]


def _pair(cid: str, true: dict, false: dict, **kw):
    return lambda: (_judge(cid, true, **kw), _judge(cid, false, **kw))


def _table1(model: str, true: tuple, false: tuple):
    row = lambda pm, gf: {"ours_params_m": pm, "ours_gflops": gf}  # noqa: E731
    return lambda: (verdicts.table1_row(model, row(*true)), verdicts.table1_row(model, row(*false)))


VALIDATED = pd.DataFrame({"error": [0.05, -0.03]})  # the model within 5 % of the emulated grid
# the model's held-out errors on published measurements, per method (percentage points of efficiency)
EXTERNAL = pd.DataFrame({"points": [4, 30], "median_pp": [1.0, 3.0], "worst_pp": [4.0, 9.0]},
                        index=pd.Index(["horovod", "ps_sync"], name="method"))


def _predicted(horovod: dict, ps: dict) -> pd.DataFrame:
    """A model's throughput table at the paper's N: per model, images/s (and the model's own efficiency) at each N."""
    rows = [{"method": m, "workers": n, "model": model, "total_images_per_sec": ips, "efficiency": eff,
             "hardware": "k80-p2.16xlarge"}
            for m, table in (("horovod", horovod), ("ps_sync", ps)) for model, pts in table.items()
            for n, (ips, eff) in pts.items()]
    return pd.DataFrame(rows)


def _linear(base: float, eff: float, ns=(1, 2, 4, 10, 20)) -> dict:
    """``base`` images/s at one process, then ``eff`` of linear scaling from it (the judge's efficiency)."""
    return {n: (base * n * (eff if n > 1 else 1.0), eff if n > 1 else 1.0) for n in ns}


@contextmanager
def narrow_interval():
    """The model's 80 % interval narrowed to +-0.001 of efficiency: these cases and tests are about the judges'
    rules and the model's other gates; the interval gate has its own pairs (test_model_interval_distributed.py),
    and the package's interval (-0.13 to +0.05 of efficiency on 2026-11-27) would leave most of them open.
    A context, not a fixture: test_thresholds.py calls CASES from outside this module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loso, "interval", lambda *_: (-0.001, 0.001))
        yield


@pytest.fixture(autouse=True)
def _narrow():
    with narrow_interval():
        yield


def _model(cid: str, true: tuple, false: tuple):
    def case():
        with narrow_interval():
            return (verdicts.model_finding(cid, _predicted(*true), VALIDATED, EXTERNAL),
                    verdicts.model_finding(cid, _predicted(*false), VALIDATED, EXTERNAL))
    return case


PS = {"resnet50": _linear(100, 0.5, (1, 2, 4, 10)), "vgg16": _linear(50, 0.3, (1, 2, 4, 10))}
HVD = {"resnet50": _linear(100, 0.97), "vgg16": _linear(50, 0.7)}  # near-linear, and not (vgg_worst's 0.9)
# vgg16 loses 10 % of its images/s with each added process (a flat line would sit on the claim's edge: with the
# model's interval around it, whether it gains would be open)
LOSING_VGG = {**HVD, "vgg16": {n: (50 * 0.9 ** i, 0.9 ** i / n) for i, n in enumerate((1, 2, 4, 10, 20))}}
CASES = {
    "async_vs_sync": _pair("async_vs_sync", {}, {("ps_async", "vgg16"): 1.8 * 50 * 1.4}),
    "ring_vs_ps": _pair("ring_vs_ps", {("ps_sync", "resnet50"): 95.0, ("ps_sync", "vgg16"): 47.5}, {}),
    "horovod": _pair("horovod", {("ps_sync", "resnet50"): 95.0, ("ps_sync", "vgg16"): 47.5}, {}),
    "ring_scaling": _pair("ring_scaling", {("horovod", "vgg16"): 45.0},
                          {("horovod", "vgg16"): 45.0, ("horovod", "resnet50"): 90.0}),
    # near-linear (0.95) for resnet50, not for vgg16 (0.6); or vgg16 near-linear too (0.95)
    "vgg_worst": _pair("vgg_worst", {("horovod", "vgg16"): 60.0, ("horovod", "resnet50"): 190.0},
                       {("horovod", "vgg16"): 95.0, ("horovod", "resnet50"): 190.0}),
    # both PS modes at 1.05 x one worker's images/sec (no significant acceleration), or sync PS at 1.8 x
    "ps_no_speedup": _pair("ps_no_speedup", {(m, model): 1.05 * b for m in ("ps_sync", "ps_async")
                                             for model, b in BASE.items()},
                           {("ps_async", "resnet50"): 105.0, ("ps_async", "vgg16"): 52.5}),
    "ps_efficiency": _pair("ps_efficiency", {("ps_sync", "resnet50"): 120.0, ("ps_sync", "vgg16"): 60.0},
                           {("ps_sync", "resnet50"): 195.0, ("ps_sync", "vgg16"): 95.0}),
    # every PS mode below the ring at N = 2 (1.8 x BASE for all but ps at 1.2 x), or sync PS above it (1.95 x)
    "ring_scales_best": _pair("ring_scales_best", {(m, model): 1.2 * b for m in ("ps_sync", "ps_async")
                                                   for model, b in BASE.items()},
                              {("ps_sync", "vgg16"): 1.95 * 50.0}),
    # every method gains at N = 2 (1.8 x), or most lose (0.9 x one worker's)
    "distribution_improved_most": _pair("distribution_improved_most", {},
                                        {(m, model): 0.9 * b for m in ("ring", "ps_sync", "ps_async")
                                         for model, b in BASE.items()}),
    # Horovod / PS at N = 10: 0.9 / 0.5 and 0.7 / 0.3 (1.8, 2.3), or 0.6 / 0.5 and 0.3 / 0.3 (1.2, 1.0)
    "model_horovod": _model("model_horovod", (HVD, PS), ({"resnet50": _linear(100, 0.6), "vgg16": _linear(50, 0.3)}, PS)),
    "model_ring_scaling": _model("model_ring_scaling", (LOSING_VGG, PS), (HVD, PS)),
    "model_vgg_worst": _model("model_vgg_worst", (HVD, PS), ({**HVD, "vgg16": _linear(50, 0.97)}, PS)),
    "model_ps_efficiency": _model("model_ps_efficiency", (HVD, PS), ({**HVD, "vgg16": _linear(50, 0.2)}, PS)),
}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_flips(cid):
    falsify.check(EXPERIMENT, CASES, cid)


# decisive: false (tests/unit/test_flip_distributed.py: no printed figure free to move x0.2-x5 lands in the band on 5 %
# of the draws), still shown with what the audit counted: the judge's outcome flips, the row decides nothing
SHOWN = {
    "table1_vgg16": _table1("vgg16", (138.36, 30.94), (138.36, 15.5)),
    "table1_vgg19": _table1("vgg19", (143.67, 39.3), (120.0, 39.3)),
    "table1_resnet50": _table1("resnet50", (25.6, 10.1), (25.6, 7.7)),
    # InceptionV4 as printed (65 M, 20 GFLOPs) against as built here (42.7 M, 24.5 GFLOPs)
    "table1_inception4": _table1("inception_v4", (65.3, 19.8), (42.74, 24.51)),
}


@pytest.mark.parametrize("cid", sorted(SHOWN))
def test_rows_shown_but_not_decisive_flip_before_their_gate(cid):
    falsify.check_shown(EXPERIMENT, SHOWN, cid)


def test_a_model_verdict_needs_the_model_validated():
    """Without an emulated grid the model rows are not measured; farther than the threshold, not comparable."""
    pred = _predicted(HVD, PS)
    assert verdicts.model_finding("model_vgg_worst", pred, None).gate.category.value == "not measured"
    off = verdicts.model_finding("model_vgg_worst", pred, pd.DataFrame({"error": [0.02, 0.11]}), EXTERNAL)
    assert off.gate.category.value == "not comparable" and "11.0 %" in off.gate.detail


def test_a_model_verdict_needs_the_model_validated_on_published_measurements_of_its_methods():
    """The same prediction decides while the model's held-out errors on published measurements of the methods
    it judges are within 5 pp (median) and 10 pp (worst); a PS worst of 11.5 pp leaves the Horovod-only claim
    decided and the Horovod-vs-PS claim not comparable; no published points for a method: not comparable."""
    pred = _predicted(HVD, PS)
    assert verdicts.model_finding("model_vgg_worst", pred, VALIDATED, EXTERNAL).gate is None
    assert verdicts.model_finding("model_horovod", pred, VALIDATED, EXTERNAL).gate is None
    worse = EXTERNAL.assign(worst_pp=[4.0, 11.5])
    assert verdicts.model_finding("model_vgg_worst", pred, VALIDATED, worse).gate is None
    off = verdicts.model_finding("model_horovod", pred, VALIDATED, worse).gate
    assert off.category.value == "not comparable" and "ps_sync" in off.detail and "11.5 pp at worst" in off.detail
    wide = EXTERNAL.assign(median_pp=[5.5, 3.0])
    assert verdicts.model_finding("model_ring_scaling", pred, VALIDATED, wide).gate.category.value == "not comparable"
    only_ps = EXTERNAL.drop(index="horovod")
    assert "no published horovod" in verdicts.model_finding("model_vgg_worst", pred, VALIDATED, only_ps).gate.detail


def test_a_model_row_shows_what_gated_it_and_what_the_emulated_profiles_model_said():
    """The row names the old prediction only where its verdict differs; a row gated on published measurements
    still shows the prediction in its note; the judge's own gate stands where the model is validated; the
    evidence link goes to the model table once the chapter shows one."""
    pred, old = _predicted(HVD, PS), _predicted({**HVD, "vgg16": _linear(50, 0.95)}, PS)
    m = verdicts.model_finding("model_vgg_worst", pred, VALIDATED, EXTERNAL, old=old)
    assert (m.basis, m.runs, m.evidence, m.gate) == ("model", 0, "distributed-model-paper-scale", None)
    assert m.ours.endswith("[model of k80-p2.16xlarge]")
    assert m.note.endswith("the emulated profile's model said otherwise: Horovod efficiency at 20 workers: resnet50: 0.97, "
                           "vgg16: 0.95")
    assert "on published horovod measurements 1.0 pp median, 4.0 pp worst" in m.note
    assert "said otherwise" not in verdicts.model_finding("model_vgg_worst", pred, VALIDATED, EXTERNAL, old=pred).note
    gated = verdicts.model_finding("model_horovod", pred, VALIDATED, EXTERNAL.assign(worst_pp=[4.0, 11.5]))
    assert gated.ours == verdicts.NO and gated.note.startswith("Horovod / sync PS at 10 workers: resnet50: 1.94")
    one = _predicted({"resnet50": _linear(100, 0.9)}, PS)  # one model: the judge itself cannot tell which is worst
    alone = verdicts.model_finding("model_vgg_worst", one, VALIDATED, EXTERNAL)
    assert alone.gate.category.value == "not testable here" and alone.note == ""
    assert verdicts.model_finding("model_vgg_worst", None, None).evidence == "distributed-findings"
    assert verdicts.model_finding("model_vgg_worst", pred, pd.DataFrame({"error": [0.2]}), EXTERNAL).evidence is None


def test_a_model_verdict_on_efficiencies_closer_than_the_models_error_is_not_comparable():
    """VGG16 at 0.88, 2 pp below near_linear (0.9), ResNet50 at 0.97: within the model's 4 pp worst error on
    published Horovod points: not comparable; VGG16 at 0.70 is decided; the same 2 pp decide with a 1 pp error."""
    close = _predicted({"resnet50": _linear(100, 0.97), "vgg16": _linear(50, 0.88)}, PS)
    gate = verdicts.model_finding("model_vgg_worst", close, VALIDATED, EXTERNAL).gate
    assert gate.category.value == "not comparable" and "2.0 pp of efficiency apart" in gate.detail
    assert verdicts.model_finding("model_vgg_worst", _predicted(HVD, PS), VALIDATED, EXTERNAL).gate is None
    sharp = EXTERNAL.assign(worst_pp=[1.0, 9.0])
    assert verdicts.model_finding("model_vgg_worst", close, VALIDATED, sharp).gate is None
    # PS against Horovod: resnet50 0.5 vs 0.97, vgg16 0.3 vs 0.7 at N = 10: 40 pp apart, decided (error 9 pp)
    assert verdicts.model_finding("model_ps_efficiency", _predicted(HVD, PS), VALIDATED, EXTERNAL).gate is None
    near = {"resnet50": _linear(100, 0.92, (1, 2, 4, 10)), "vgg16": _linear(50, 0.3, (1, 2, 4, 10))}  # 5 pp
    assert verdicts.model_finding("model_ps_efficiency", _predicted(HVD, near), VALIDATED,
                                  EXTERNAL).gate.category.value == "not comparable"
