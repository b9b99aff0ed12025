"""Could the distributed experiment's rows on the paper's numbers (Table 1) or on the analytic model flip on their
inputs? (``flip.py``.) Each sampler rebuilds the claim's measurement with the experiment's own judge from inputs
drawn at random: Table 1's printed figures (the audit's counts are exact), the hardware profile's numbers that the
model of the paper's cluster reads."""

from __future__ import annotations

import dataclasses
import sys
from functools import lru_cache
from pathlib import Path

import flip
import pandas as pd
import pytest

from repro.core import claims
from repro.experiments.distributed import modelbasis, verdicts
from repro.predict import hardware, measured, perfmodel

EXPERIMENT = "distributed"
DOMAIN = flip.Domain("Table 1 rows: each printed figure (parameters, GFLOPs) x0.2-x5, log-uniform, independently; the "
                     "model row: each of the hardware profile's numbers that the model of the paper's cluster reads "
                     "(every model's images/s on one K80, the 25 Gb/s link, the PCIe link, both latencies, Horovod's "
                     "cycle and fusion buffer) x0.2-x5, log-uniform, independently")
PUBLISHED = Path(__file__).resolve().parents[2] / "published"
TOPOLOGY = "k80-p2.16xlarge-hosts"  # the model of the paper's cluster as built (model_findings' real=True)
TABLE1 = ("vgg16", "vgg19", "resnet50")  # the Table 1 rows the published runs decide on its figures
PROFILE_INPUTS = ("link", "intra_link", "latency_s", "intra_latency_s", "cycle_s", "fusion_bytes")


def _latest(profile: str) -> Path:
    base = PUBLISHED / profile / EXPERIMENT
    return base / (base / "LATEST").read_text().strip()


@lru_cache(maxsize=None)
def _audit() -> pd.DataFrame:
    return pd.read_csv(_latest("cpu") / "table1.csv").set_index("model")


def _table1(model: str):
    """Our counts against Table 1's figures each divided by a factor: the ratio ours / paper times the factor."""
    def sample(draw: flip.Draw):
        row = _audit().loc[model]
        fp, fg = draw.factors([f"Table 1 {model} parameters", f"Table 1 {model} GFLOPs"])
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


def _profile_inputs() -> tuple[str, ...]:
    """The names of the profile's deciding numbers (stated before the draws): each model's t_grad, then the rest."""
    return tuple(f"t_grad_s {m}" for m in hardware.load(TOPOLOGY).t_grad_s) + PROFILE_INPUTS


def perturbed(draw: flip.Draw) -> hardware.Profile:
    """The profile of the paper's cluster with each of its deciding numbers scaled by its own factor."""
    p = hardware.load(TOPOLOGY)
    f = {n: draw.factor(n) for n in _profile_inputs()}
    return dataclasses.replace(
        p, t_grad_s={m: v * f[f"t_grad_s {m}"] for m, v in p.t_grad_s.items()}, link=_rate(p.link, f["link"]),
        intra_link=_rate(p.intra_link, f["intra_link"]), latency_s=p.latency_s * f["latency_s"],
        intra_latency_s=p.intra_latency_s * f["intra_latency_s"], cycle_s=p.cycle_s * f["cycle_s"],
        fusion_bytes=p.fusion_bytes * f["fusion_bytes"])


def _model(cid: str):
    """The model row as the judge decides it, under the model's own 80 % interval (the one the published row is
    gated on: :func:`repro.experiments.distributed.modelinterval.gate`, read from :func:`repro.predict.loso.interval`
    for the regime of the perturbed profile's predictions): where the interval leaves the outcome open the draw is
    not comparable, neither outcome."""
    def sample(draw: flip.Draw):
        tp, val, external = _emulated()
        pred = modelbasis.paper_scale(tp, 1, real=True, profiles={TOPOLOGY: perturbed(draw)})
        return verdicts.model_finding(cid, pred, val, external)
    return sample


DOMAINS = {f"table1_{m}": DOMAIN.of(f"Table 1 {m} parameters", f"Table 1 {m} GFLOPs") for m in TABLE1}
DOMAINS["model_ring_scaling"] = DOMAIN.of(*_profile_inputs())
_SAID = claims.load(EXPERIMENT)
_ALL = {**{f"table1_{m}": _table1(m) for m in TABLE1}, "model_ring_scaling": _model("model_ring_scaling")}
SAMPLERS = {cid: f for cid, f in _ALL.items() if _SAID[cid].decisive}
UNDECIDED = {cid: f for cid, f in _ALL.items() if not _SAID[cid].decisive}


@pytest.mark.parametrize("cid", sorted(c for c in SAMPLERS if not c.startswith("model_")))
def test_flips(cid):
    """The model rows' samplers run the model at every draw (seconds): tests/smoke/test_flip_model_smoke.py."""
    flip.check(sys.modules[__name__], cid)


@pytest.mark.parametrize("cid", sorted(UNDECIDED))
def test_rows_that_do_not_flip_over_the_domain_are_not_decisive(cid):
    """A Table 1 row is consistent only where both printed figures land within 5 % of our counts: over x0.2-x5 on
    none of 400 draws (claims.yaml says so)."""
    flip.check_undecided(sys.modules[__name__], cid)


def test_the_unperturbed_profile_gives_the_published_model_row():
    """The sampler's path with every factor 1, under the package's interval: the published row (the verdict it reads
    today inside the flag of a rule changed since)."""
    tp, val, external = _emulated()
    pred = modelbasis.paper_scale(tp, 1, real=True, profiles={TOPOLOGY: hardware.load(TOPOLOGY)})
    m = verdicts.model_finding("model_ring_scaling", pred, val, external)
    published = pd.read_csv(_latest("emulated") / "ledger.csv").set_index("id").loc["model_ring_scaling"]
    today = claims.row(claims.load(EXPERIMENT)["model_ring_scaling"], m)["verdict"]
    flagged = "rule changed after the data (today's rule: "  # the judge's code moved since the run (issue 55)
    assert published["verdict"] == today or published["verdict"].startswith(f"{flagged}{today}; the rule it was")
    if m.gate is not None:
        assert m.gate.category.value == "not comparable" and "80 % interval" in m.gate.detail
    else:
        assert m.basis == "model" and m.holds is False and m.ours.startswith("Horovod: inception_v3: gains")
