"""A run on oversubscribed cores decides no claim about time (issue 55, item 4)."""

import time

from repro.core import claims, load

TIMING = dict(id="rate", paper="p", text="A processes twice as many images/sec as B", paper_value="2x", source="s",
              evidence="t", check="within", reference=2.0, tolerance=0.5, tolerance_source="our judgement",
              stochastic=False, timing=True, counterfactual="a ratio of 1.0 (tests/unit/test_load_and_reruns.py)")


def _row(provenance: dict, timing: bool = True, basis: str = "measured") -> dict:
    claim = claims.Claim.model_validate({**TIMING, "timing": timing})
    m = claims.Measured(ours="2.1", value=2.1, basis=basis, runs=3)
    gated = load.gate({"rate"} if claim.timing else set(), {"rate": m}, provenance)
    return claims.row(claim, gated["rate"])


def test_a_run_on_oversubscribed_cores_does_not_decide_a_timing_claim():
    quiet = {load.RECORD: {"max": 1.7, "mean": 1.2, "samples": 12, "cores": 2}}
    busy = {load.RECORD: {"max": 9.3, "mean": 8.1, "samples": 12, "cores": 2}}
    assert _row(quiet)["category"] == "reproduced"  # the same data on quiet cores decides
    row = _row(busy)
    assert row["category"] == "not comparable" and "oversubscribed" in row["verdict"] and "9.30 on 2 cores" in row["verdict"]
    assert _row(busy, basis="emulated")["category"] == "not comparable"  # an emulation's times too
    assert _row(busy, timing=False)["category"] == "reproduced"  # an accuracy is no time
    unknown = _row({})  # a run that recorded no load decides no time either
    assert unknown["category"] == "not comparable" and "no load average" in unknown["verdict"]
    # the staleness experiment's own record (before and after its threads) is read where it is the only one
    legacy = {"thread_load_average": {"before": 8.16, "after": 10.09, "cpu_count": 2}}
    assert "10.09 on 2 cores" in _row(legacy)["verdict"]
    assert load.of_run({"thread_load_average": {"before": 1.0, "after": 1.5, "cpu_count": 16}}) == (1.5, 16)


def test_the_harness_samples_the_load_while_measuring():
    with load.Sampler(every=0.05) as s:
        time.sleep(0.2)
    rec = s.record()
    assert rec["samples"] >= 3 and rec["max"] >= rec["mean"] >= 0 and rec["cores"] >= 1


def test_the_published_thread_runs_ran_on_oversubscribed_cores():
    """The published 2-core threads runs (load 8-10 on 2 cores, their own record) are gated; the 16-core runs of the
    H200 host that recorded the load while measuring are not (the same gate, the other outcome)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "published"
    assert "staleness_equals_n_threads" in claims.timing("staleness")
    assert {"horovod", "ring_scaling"} <= claims.timing("distributed") and not claims.timing("optimizers")
    two_core = [json.loads(p.read_text()) for p in sorted((root / "threads" / "staleness").glob("2*/provenance.json"))]
    assert len(two_core) == 2 and all("oversubscribed" in (load.reason(r) or "") for r in two_core)
    recorded = [json.loads(p.read_text()) for p in sorted((root / "gpu-h200" / "staleness").glob("2*/provenance.json"))
                if load.RECORD in json.loads(p.read_text())]
    assert len(recorded) >= 2 and all(load.reason(r) is None for r in recorded)
