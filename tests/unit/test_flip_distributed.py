"""Could the distributed experiment's rows on the paper's numbers (Table 1) or on the analytic model flip on their
inputs? (``flip.py``.) Each sampler rebuilds the claim's measurement with the experiment's own judge from inputs
drawn at random: Table 1's printed figures (the audit's counts are exact), the hardware profile's numbers that the
model of the paper's cluster reads."""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path

import flip
import pandas as pd
import pytest

from repro.core import claims
from repro.experiments.distributed import modelbasis, verdicts
from repro.predict import hardware, loso, measured, perfmodel

EXPERIMENT = "distributed"
DOMAIN = ("Table 1 rows: each printed figure (parameters, GFLOPs) x0.8-x1.25, log-uniform, independently (a misprint, "
          "rounding or another counting convention within a quarter; over x0.2-x5 both ratios land in the +-5 % band "
          "about once in a thousand draws, see test_table1_rows_are_sharp_over_the_wide_domain); the model row: each "
          "of the hardware profile's numbers (every model's images/s on one K80, the 25 Gb/s link, the PCIe link, "
          "both latencies, Horovod's cycle and fusion buffer) x0.2-x5, log-uniform, independently")
PUBLISHED = Path(__file__).resolve().parents[2] / "published"
TOPOLOGY = "k80-p2.16xlarge-hosts"  # the model of the paper's cluster as built (model_findings' real=True)


def _latest(profile: str) -> Path:
    base = PUBLISHED / profile / EXPERIMENT
    return base / (base / "LATEST").read_text().strip()


@lru_cache(maxsize=None)
def _audit() -> pd.DataFrame:
    return pd.read_csv(_latest("cpu") / "table1.csv").set_index("model")


def _table1(model: str):
    """Our counts against Table 1's figures each divided by a factor: the ratio ours / paper times the factor."""
    def sample(rng):
        row = _audit().loc[model]
        fp, fg = flip.scale(rng, 0.8, 1.25, size=2)
        return verdicts.table1_row(model, {"ours_params_m": row["ours_params_m"] * fp,
                                           "ours_gflops": row["ours_gflops"] * fg})
    return sample


@lru_cache(maxsize=None)
def _emulated() -> tuple:
    """The published emulated run's grid, the model's validation against it and its published-measurement errors
    (the gates the published row passed; the sampler moves only the model's hardware inputs)."""
    tp = pd.read_csv(_latest("emulated") / "emulated_throughput.csv")
    return tp, perfmodel.validate_table(tp, 1), measured.method_errors(measured.package_validation()[1])


def _rate(rate: str, f: float) -> str:
    return f"{max(1, round(hardware.rate_bits(rate) * f))}bit"


def perturbed(rng) -> hardware.Profile:
    """The profile of the paper's cluster with each of its deciding numbers scaled by its own factor."""
    p = hardware.load(TOPOLOGY)
    f = iter(flip.scale(rng, size=len(p.t_grad_s) + 6))
    return dataclasses.replace(
        p, t_grad_s={m: v * next(f) for m, v in p.t_grad_s.items()}, link=_rate(p.link, next(f)),
        intra_link=_rate(p.intra_link, next(f)), latency_s=p.latency_s * next(f),
        intra_latency_s=p.intra_latency_s * next(f), cycle_s=p.cycle_s * next(f), fusion_bytes=p.fusion_bytes * next(f))


# The model's 80 % interval narrowed to +-0.001 of efficiency while sampling. The sampler asks whether the claim's
# rule, fed the model of the paper's cluster, can come out either way on plausible inputs of that model; the
# interval gate (test_model_interval_distributed.py) then decides whether a given prediction is sharp enough to be
# read at all. Under the package's interval (-0.13 to +0.05 of efficiency on 2026-11-27) "gains with each added
# process" cannot hold at every step from 1 to 20 processes: from 10 to 12 the images/s rise 20 % at most, less than
# the interval's width (60 draws gave 46 not comparable, 14 inconsistent, none consistent), so the row can be
# decided only one way until the model is sharper.
NARROW = (-0.001, 0.001)


def _model(cid: str):
    def sample(rng):
        tp, val, external = _emulated()
        pred = modelbasis.paper_scale(tp, 1, real=True, profiles={TOPOLOGY: perturbed(rng)})
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(loso, "interval", lambda *_: NARROW)
            return verdicts.model_finding(cid, pred, val, external)
    return sample


DRAWS = {"model_ring_scaling": 60}  # the model of the whole cluster per draw: ~0.3 s (about 1 in 7 draws holds)
SAMPLERS = {"table1_vgg16": _table1("vgg16"), "table1_vgg19": _table1("vgg19"),
            "table1_resnet50": _table1("resnet50"), "model_ring_scaling": _model("model_ring_scaling")}


@pytest.mark.parametrize("cid", sorted(SAMPLERS))
def test_flips(cid):
    flip.check(EXPERIMENT, SAMPLERS, cid, DOMAIN, DRAWS.get(cid, flip.DRAWS))


def test_table1_rows_are_sharp_over_the_wide_domain():
    """Over x0.2-x5 a Table 1 row is consistent only where both printed figures land within 5 % of our counts:
    rarely (a sharp check, not one that cannot flip); resnet50's GFLOPs (0.77 of the printed 10) need the factor."""
    def wide(model):
        def sample(rng):
            row = _audit().loc[model]
            fp, fg = flip.scale(rng, size=2)
            return verdicts.table1_row(model, {"ours_params_m": row["ours_params_m"] * fp,
                                               "ours_gflops": row["ours_gflops"] * fg})
        return sample
    seen = flip.outcomes(EXPERIMENT, "table1_vgg16", wide("vgg16"), draws=4000)
    assert seen.get("inconsistent", 0) > 3900 and 0 < seen.get("consistent", 0) < 40, seen


def test_the_unperturbed_profile_gives_the_published_model_row(monkeypatch):
    """The sampler's path with every factor 1: every model gains, vgg16 too (inconsistent, the interval narrowed as
    the sampler narrows it); under the package's interval it is the published row (not comparable where the
    interval leaves a step open)."""
    tp, val, external = _emulated()
    pred = modelbasis.paper_scale(tp, 1, real=True, profiles={TOPOLOGY: hardware.load(TOPOLOGY)})
    m = verdicts.model_finding("model_ring_scaling", pred, val, external)
    published = pd.read_csv(_latest("emulated") / "ledger.csv").set_index("id").loc["model_ring_scaling"]
    today = claims.row(claims.load(EXPERIMENT)["model_ring_scaling"], m)["verdict"]
    flagged = "rule changed after the data (today's rule: "  # the judge's code moved since the run (issue 55)
    assert published["verdict"] == today or published["verdict"].startswith(f"{flagged}{today}; the rule it was")
    if m.gate is not None:
        assert m.gate.category.value == "not comparable" and "80 % interval" in m.gate.detail
    monkeypatch.setattr(loso, "interval", lambda *_: NARROW)
    m = verdicts.model_finding("model_ring_scaling", pred, val, external)
    assert m.basis == "model" and m.holds is False and m.ours.startswith("Horovod: inception_v3: gains")
