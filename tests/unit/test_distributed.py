"""The distributed benchmark (polishchuk2019 part B): arithmetic, verdict logic, and the methods on real clusters."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from repro import cluster
from repro.core import claims, harness, ledger, paramtypes
from repro.core import verdicts as V
from repro.core.params import ParameterError
from repro.experiments.distributed import arithmetic, verdicts
from repro.experiments.distributed import experiment as distributed
from repro.experiments.distributed.common import FAULT_COLUMNS, FINDINGS, MODEL_FINDINGS, PS_BYTES, SEED_FINDINGS

# ------------------------------------------------------------------ arithmetic


def test_images_per_second_is_tf_cnn_benchmarks_arithmetic():
    # worker 0: 10 steps x 32 images in 2 s = 160 img/s; worker 1: 20 x 32 in 2 s = 320 img/s
    r = arithmetic.images_per_second(32, [10, 20], [2.0, 2.0])
    assert r["per_worker"] == [160.0, 320.0]
    assert r["total"] == 480.0
    assert r["mean"] == 240.0
    assert r["stderr"] == pytest.approx(80.0)  # sd 113.137 (n-1) / sqrt(2)
    one = arithmetic.images_per_second(16, [5], [0.5])
    assert one["total"] == one["mean"] == 160.0 and math.isnan(one["stderr"])


@pytest.mark.parametrize("args, message", [
    ((0, [1], [1.0]), "batch_size must be an integer >= 1"),
    ((8, [1, 2], [1.0]), "one step count and one duration per worker"),
    ((8, [], []), "one step count and one duration per worker"),
    ((8, [1], [0.0]), "durations > 0"),
    ((8, [-1], [1.0]), "step counts must be >= 0"),
])
def test_images_per_second_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        arithmetic.images_per_second(*args)


def _throughput(rows):
    return pd.DataFrame(rows, columns=["method", "workers", "model", "total_images_per_sec"])


def test_scaling_efficiency_and_ratios():
    t = _throughput([("ring", 1, "m", 100.0), ("ring", 2, "m", 180.0), ("ring", 4, "m", 200.0),
                     ("ps_sync", 1, "m", 100.0), ("ps_sync", 2, "m", 90.0),
                     ("ps_async", 1, "m", 100.0), ("ps_async", 2, "m", 99.0)])
    eff = arithmetic.scaling_efficiency(t).set_index(["method", "workers"])
    assert eff.loc[("ring", 2), "ideal_images_per_sec"] == 200.0
    assert eff.loc[("ring", 2), "efficiency"] == pytest.approx(0.9)
    assert eff.loc[("ring", 4), "efficiency"] == pytest.approx(0.5)
    assert eff.loc[("ps_sync", 2), "efficiency"] == pytest.approx(0.45)
    r = arithmetic.ratios(t).set_index("workers")
    assert r.loc[2, "ring_over_ps_sync"] == pytest.approx(2.0)
    assert r.loc[2, "ps_async_over_ps_sync"] == pytest.approx(1.1)
    assert math.isnan(r.loc[4, "ring_over_ps_sync"])


def _tables(t, faults=None, audited=False):
    """Hand-made tables as a run writes them (Table 1: vgg16 and resnet50 audited, or none)."""
    audit = pd.DataFrame({"model": ["vgg16", "vgg19", "resnet50", "inception_v4", "inception_v3", "resnet152"],
                          "ours_params_m": [138.36, float("nan"), 25.64, 42.74, 23.85, 60.42] if audited else [float("nan")] * 6,
                          "ours_gflops": [30.94, float("nan"), 7.72, 24.51, 11.43, 22.56] if audited else [float("nan")] * 6})
    return {"throughput": t, "scaling": arithmetic.scaling_efficiency(t), "ratios": arithmetic.ratios(t),
            "table1": audit, "faults": faults if faults is not None else pd.DataFrame(columns=FAULT_COLUMNS)}


def _verdicts(t, p, cores, provenance=None, **kw):
    """Each claim's verdict before the ledger's basis rules (claims.compare), by claim id."""
    summary = {"cores": cores, "workers_share_cores": verdicts.workers_share_cores(p, cores)}
    m = verdicts.measurements(_tables(t, **kw), summary, p, provenance or {})
    return {cid: str(claims.compare(claim, m[cid])) for cid, claim in claims.load(distributed.NAME).items()}, m, summary


T = _throughput([("ring", 1, "resnet50", 100.0), ("ring", 2, "resnet50", 190.0),
                 ("ring", 1, "vgg16", 50.0), ("ring", 2, "vgg16", 45.0),
                 ("ps_sync", 1, "resnet50", 100.0), ("ps_sync", 2, "resnet50", 100.0),
                 ("ps_sync", 1, "vgg16", 50.0), ("ps_sync", 2, "vgg16", 25.0),
                 ("ps_async", 1, "resnet50", 100.0), ("ps_async", 2, "resnet50", 105.0),
                 ("ps_async", 1, "vgg16", 50.0), ("ps_async", 2, "vgg16", 26.0)])
P = paramtypes.partial("distributed", {"workers": [1, 2], "threads_per_worker": 1, "emulate": None})


def test_findings_verdicts():
    t, p = T, P
    f, _, _ = _verdicts(t, p, cores=4)
    assert f["async_vs_sync"] == "reproduced"  # 1.05 and 1.04: within 1 +- 0.1 (claims.yaml)
    assert f["ring_vs_ps"] == "reproduced (MWMS ring, not Horovod)"  # 1.9 and 1.8: within 2 +- 0.5
    assert f["horovod"].startswith("not measured (horovod and ps_sync")  # no horovod rows
    # Horovod rows: 2 workers, resnet50 190/100 = 1.9 (within 1.5-2.5), vgg16 30/25 = 1.2 (outside)
    th = pd.concat([t, _throughput([("horovod", 2, "resnet50", 190.0), ("horovod", 2, "vgg16", 30.0)])])
    fh, mh, _ = _verdicts(th, p, cores=4)
    assert mh["horovod"].value == pytest.approx(1.2)  # the model farthest from the paper's 2x
    assert fh["horovod"] == "differs (-0.8 vs paper, tolerance 0.5)"
    assert mh["horovod"].ours == "Horovod / sync PS at 2 workers: resnet50: 1.90, vgg16: 1.20"
    th2 = pd.concat([t, _throughput([("horovod", 2, "resnet50", 190.0), ("horovod", 2, "vgg16", 45.0)])])
    assert _verdicts(th2, p, cores=4)[0]["horovod"] == "reproduced"  # 1.9 and 1.8
    # on shared cores the processors bound both rates: a ratio within the paper's 2x is not evidence either
    fh3 = _verdicts(th2, p, cores=2)[0]
    assert fh3["horovod"].startswith("not testable here (2 workers x 1 thread(s) plus the PS/chief processes share "
                                     "2 cores: both rates are bound by the shared processors)")
    assert fh3["ring_vs_ps"].startswith("not testable here (2 workers x 1 thread(s)")
    # Horovod missing: one line, whatever the grid measured
    assert _verdicts(th2, p, 4, {"horovod": distributed.HOROVOD_NOT_INSTALLED})[0]["horovod"] == \
        "not measured (Horovod not installed: tools/install_horovod.sh)"
    # resnet50 gains, vgg16 does not; every scaling verdict says how far the workers went against the paper
    assert f["ring_scaling"] == "reproduced (measured up to 2 workers; the paper's ran to 20)"
    assert f["vgg_worst"] == "reproduced (measured up to 2 workers; the paper's ran to 20)"  # vgg16 0.45 < resnet50 0.95
    assert f["ps_efficiency"] == "reproduced (measured up to 2 workers; the paper's ran to 10)"
    # async/sync outside the tolerance: the model farthest from 1 decides
    slow = t.assign(total_images_per_sec=[v * 1.3 if (m, n) == ("ps_async", 2) else v
                                          for m, n, v in zip(t["method"], t["workers"], t["total_images_per_sec"])])
    assert _verdicts(slow, p, cores=4)[0]["async_vs_sync"].startswith("differs (+0.365 vs paper, tolerance 0.1)")
    # no spare core per added worker (2 workers x 1 thread on 2 cores, as here): scaling claims are not testable
    f2 = _verdicts(t, p, cores=2)[0]
    assert f2["ring_scaling"].startswith("not testable here (2 workers x 1 thread(s) plus the PS/chief")
    # async/sync on shared cores: the processors bound both rates, so a ratio of 1 is forced, not found
    assert f2["async_vs_sync"].startswith("not testable here (2 workers x 1 thread(s)")
    f4 = _verdicts(t, p.model_copy(update={"threads_per_worker": 2}), cores=4)[0]
    assert f4["vgg_worst"].startswith("not testable here (2 workers x 2 thread(s)")
    # only the smoke profile's tiny CNN: no throughput finding is measured
    tiny = _verdicts(_throughput([("ring", 1, "tiny", 10.0), ("ps_sync", 1, "tiny", 5.0)]), p, cores=4)[0]
    assert all(tiny[k].startswith("not measured (only the tiny smoke model") for k in FINDINGS[:-1])
    assert tiny["fault_tolerance"] == "not measured (fault_tolerance off in this profile)"
    # no emulated grid: the model rows have nothing to be validated against
    assert all(tiny[k].startswith("not measured (no emulated grid in this run") for k in MODEL_FINDINGS)


def test_ledger_has_one_row_per_claim_with_basis_and_the_ledger_rule():
    _, m, _ = _verdicts(T, P, cores=4)
    assert set(m) == set(claims.load(distributed.NAME))  # claims.ledger refuses a missing or unknown id
    led = claims.ledger(distributed.NAME, m)
    assert list(led.columns) == ledger.STORED and len(led) == len(claims.load(distributed.NAME))
    led = led.assign(id=list(claims.load(distributed.NAME))).set_index("id")
    # one timed run per configuration: a stochastic ratio is never 'reproduced' on one run
    assert (led.loc["async_vs_sync", "basis"], led.loc["async_vs_sync", "runs"]) == ("measured", 1)
    assert led.loc["async_vs_sync", "verdict"].startswith("not comparable (1 run of a stochastic quantity; a verdict needs >= 2")
    assert led.loc["horovod", ledger.TOLERANCE].startswith("±0.5: our reading of 'almost twice'")
    assert led.loc["horovod", "basis"] == "none"  # nothing of ours behind it
    assert led.loc["table1_vgg16", "basis"] == "none"  # not audited in these tables
    # the findings table is the ledger's rows for the findings
    findings = verdicts.findings_table(claims.ledger(distributed.NAME, m))
    assert list(findings["finding"]) == list(FINDINGS) + [PS_BYTES] + list(MODEL_FINDINGS) + list(SEED_FINDINGS)
    assert findings.set_index("finding").loc["async_vs_sync", "verdict"] == led.loc["async_vs_sync", "verdict"]


def test_judge_on_a_hand_made_result(tmp_path):
    faults = pd.DataFrame([
        {"method": "ps_async", "outcome": "finished with the remaining worker", "scheduled": 20, "completed": 20,
         "orphans": 0},
        {"method": "ps_sync", "outcome": "finished with the remaining worker", "scheduled": 20, "completed": 20,
         "orphans": 0},
        {"method": "ring", "outcome": "stopped with an error", "scheduled": None, "completed": None, "orphans": 0}])
    tables = _tables(T, faults=faults, audited=True)
    result = harness.Result(tmp_path, P, {"experiment": "distributed"}, tables,
                            {"cores": 4, "workers_share_cores": False})
    m = distributed.EXPERIMENT.judge(result)
    led = claims.ledger(distributed.NAME, m).assign(id=list(claims.load(distributed.NAME))).set_index("id")
    assert "sync PS (control): finished with the remaining worker too" in m["fault_tolerance"].ours
    # the ring half is true by construction and the paper has no experiment: not comparable, one trial or two
    why = "not comparable (the ring half is true by construction: the supervisor fails the whole job"
    assert led.loc["fault_tolerance", "verdict"].startswith(why)
    two = pd.concat([faults.assign(trial=1), faults.assign(trial=2)], ignore_index=True)
    m2 = verdicts.fault_tolerance(two)
    assert m2.runs == 2 and m2.ours.startswith("async PS: finished with the remaining worker (2 of 2 trials), "
                                               "20 of 20 steps completed at least; ring (MWMS): stopped with an error "
                                               "(2 of 2 trials)")
    assert claims.row(claims.load(distributed.NAME)["fault_tolerance"], m2)["verdict"].startswith(why)
    two.loc[(two["trial"] == 2) & (two["method"] == "ring"), "outcome"] = "finished"
    m3 = verdicts.fault_tolerance(two)
    assert "ring (MWMS): stopped with an error (1 of 2 trials), finished (1 of 2 trials)" in m3.ours
    assert m3.gate.category is V.Category.NOT_COMPARABLE
    # Table 1: counted from the architecture (exact, one build), shown on basis equations but not decisive (a printed
    # figure free to move x0.2-x5 lands in the band on none of 400 draws: claims.yaml, test_flip_distributed.py)
    assert led.loc["table1_vgg16", "verdict"].startswith("not testable here (over each printed figure of its Table 1")
    assert "; here it holds; ours/paper: parameters 1.003" in led.loc["table1_vgg16", "verdict"]
    assert (led.loc["table1_vgg16", "basis"], led.loc["table1_vgg16", "runs"]) == ("equations", 0)
    # a band that fails: the row says so, and under which GFLOPs convention
    assert led.loc["table1_resnet50", "category"] == "not testable here"
    assert "; here it does not hold; ours/paper: parameters" in led.loc["table1_resnet50", "verdict"]
    assert led.loc["table1_resnet50", "verdict"].endswith(
        "Table 1 resnet50 GFLOPs (10) under the convention that gives VGG16's 30.9 (2 x multiply-accumulates) is 7.7)")
    # InceptionV4 as built (42.7 M, 24.5 GFLOPs) against the printed 65 M, 20 GFLOPs: both figures named
    # (shown, not decided: decisive: false like the other Table 1 rows, issue 55)
    assert (led.loc["table1_inception4", "category"], led.loc["table1_inception4", "basis"]) == ("not testable here", "equations")
    assert "; here it does not hold; ours/paper: parameters 0.658, GFLOPs 1.226; Table 1 inception4 parameters (65 M) " \
        "against 42.7 M counted by Keras for inception_v4 at 299 px" in led.loc["table1_inception4", "verdict"]
    assert led.loc["table1_vgg19", "verdict"].startswith("not measured (vgg19 not audited") and led.loc["table1_vgg19", "basis"] == "none"
    t1 = verdicts.table1_verdicts(tables["table1"], claims.ledger(distributed.NAME, m))
    assert list(t1)[0] == led.loc["table1_vgg16", "verdict"]
    assert list(t1)[4].startswith("not comparable (the throughput grids' stand-in for Inception4")  # inception_v3
    assert list(t1)[-1] == "not comparable (not in the paper's Table 1)"  # resnet152


def test_judge_rederives_the_published_ledger():
    """The published cpu run's ledger, re-derived from its tables: same verdict categories row by row."""
    root = Path(__file__).resolve().parents[2] / "published" / "cpu" / "distributed"
    if not (root / "LATEST").is_file():
        pytest.skip("no published cpu run of distributed in this checkout")
    result = harness.load_result(root / (root / "LATEST").read_text().strip())  # read only
    new = claims.ledger(distributed.NAME, distributed.EXPERIMENT.judge(result))
    old = result.tables["ledger"]
    # Table 1's Inception4 is the built InceptionV4, which a run's audit has only where audit_models lists it
    inception = {"Table 1: Inception4 (ours: InceptionV3 stand-in) parameters and GFLOPs":
                 "Table 1: Inception4 parameters and GFLOPs"}
    # Table 1's rows now name the reading of the column printed 'GFLOPS' that they judge (per-image FLOPs)
    said = claims.load(distributed.NAME)
    reading = {f"Table 1: {said[k].text.split()[2]} parameters and GFLOPs": said[k].text
               for k in said if k.startswith("table1_")}
    named = [inception.get(c, c) for c in old["claim"]]
    assert list(new["claim"])[:len(old)] == [reading.get(c, c) for c in named]  # newer rows come after
    audited = "inception_v4" in set(result.tables["table1"]["model"])
    # a row flagged in the published ledger (rule changed after the data) is compared by today's rule's verdict
    old_cats = [V.category_of(V.parse(v).detail.removeprefix("today's rule: "))
                if V.category_of(v) is V.Category.RULE_CHANGED else V.category_of(v) for v in old["verdict"]]
    # fault tolerance: not comparable since the ring half is known to be true by construction (was partly);
    # the PS's extra data: not comparable since one PS carries N^2 / (2 (N - 1)) x a ring worker's bytes by
    # construction (was reproduced)
    by_construction = {"async PS is more fault tolerant than all-reduce (a worker killed mid-run)",
                       claims.load(distributed.NAME)[PS_BYTES].text}
    want = [V.Category.NOT_COMPARABLE if c in by_construction
            else V.Category.INCONSISTENT if cat is V.Category.DIFFERS and b == "equations" else cat
            for c, cat, b in zip(old["claim"], old_cats, old["basis"])]
    want = [(V.Category.INCONSISTENT if audited else V.Category.NOT_MEASURED) if c in inception else w
            for c, w in zip(old["claim"], want)]
    # Table 1's vgg16, vgg19 and resnet50 rows: decisive: false since their flip samplers (issue 55): not testable
    not_decisive = {said[k].text for k in ("table1_vgg16", "table1_vgg19", "table1_resnet50")}
    want = [V.Category.NOT_TESTABLE if reading.get(c, c) in not_decisive else w for c, w in zip(named, want)]
    assert [V.category_of(v) for v in new["verdict"]][:len(old)] == want
    same = [c not in inception for c in old["claim"]]
    assert list(new["ours"][:len(old)][same]) == list(old["ours"][same])


def test_flops_by_layer_arithmetic_of_a_small_cnn():
    from repro.ml.models import small_cnn

    model = small_cnn((28, 28, 1), 10)
    # conv 3x3x1->16 on 26x26, conv 3x3x16->32 on 11x11, dense 800->10 (multiply-accumulates x 2)
    macs = 26 * 26 * 16 * 9 * 1 + 11 * 11 * 32 * 9 * 16 + 5 * 5 * 32 * 10
    assert arithmetic.conv_dense_flops(model) == 2 * macs == 1_325_824


def test_bandwidth_sweep_arithmetic():
    assert arithmetic.rate_bits("100mbit") == 1e8 and arithmetic.rate_bits("2.5gbit") == 2.5e9
    # ring: 2 (N-1)/N M per worker per step; central PS: N M through the server
    assert arithmetic.analytic_bytes("ring", 4, 100.0) == 150.0
    assert arithmetic.analytic_bytes("horovod", 2, 100.0) == 100.0
    assert arithmetic.analytic_bytes("ps_sync", 4, 100.0) == 400.0
    p = paramtypes.partial("distributed", {"batch_size": 10})
    summary = [{"workers": 2, "steps_total": 20, "parameters": 250_000, "model": "m", "total_images_per_sec": 50.0,
                "window_bytes": {"worker:0": {"sent": 11_000_000, "received": 10_000_000},
                                 "worker:1": {"sent": 9_000_000, "received": 10_000_000}}}]
    row = arithmetic.sweep_rows("ring", "8mbit", summary, p, {("ring", "m"): 40.0})[0]
    # M = 1 MB; ring volume 2 * 1/2 * 1 MB = 1 MB; measured 10 MB over 10 steps per worker = 1 MB
    assert row["analytic_mb_per_step"] == 1.0 and row["measured_sent_mb_per_step"] == 1.0
    assert row["measured_over_analytic"] == 1.0
    # link bound: 2 workers x 10 images per (8e6 bits / 8e6 bit/s = 1 s) = 20 images/s, below loopback's 40
    assert row["comm_bound_images_per_sec"] == pytest.approx(20.0)
    assert row["predicted_images_per_sec"] == pytest.approx(20.0)
    assert row["critical_mbps"] == pytest.approx(16.0)  # 40 images/s needs 2 MB/s = 16 Mb/s
    ps = [{**summary[0], "window_bytes": {"ps:0": {"sent": 20_000_000, "received": 22_000_000}}}]
    row = arithmetic.sweep_rows("ps_sync", "8mbit", ps, p, {})[0]
    assert row["analytic_mb_per_step"] == 2.0 and row["measured_over_analytic"] == pytest.approx(1.1)
    # sync PS: 2 MB out, then 2 MB in (16 Mbit each way at 8 Mb/s): 4 s per step, 20 images -> 5 images/s
    assert row["predicted_images_per_sec"] == pytest.approx(5.0)  # no loopback number: the link bound
    with pytest.raises(ParameterError, match="parameter 'sweep.bandwidths': 'fast' is not a tc rate"):
        arithmetic.rate_bits("fast")


def test_bytes_between_uses_the_samples_around_the_window(tmp_path):
    import json

    samples = [(10.0, 0), (10.2, 100), (10.4, 300), (10.6, 600)]
    (tmp_path / "link_samples.jsonl").write_text("".join(
        json.dumps({"time": t, "links": {"ps:0": {"sent": b, "received": 2 * b}}}) + "\n" for t, b in samples))
    res = cluster.ClusterResult(run_dir=tmp_path, isolation="netns", cluster={}, tasks=[])
    # window 10.25-10.45: last sample at or before 10.25 is 10.2, first at or after 10.45 is 10.6. Widening, not
    # interpolating: traffic often comes in bursts inside a short window between sparse samples (a sweep's few
    # steps), where interpolation spreads it over the idle time around and undercounts (read 0.27 of the volume)
    assert res.bytes_between(10.25, 10.45) == {"ps:0": {"sent": 500, "received": 1000}}
    assert res.bytes_between(10.2, 10.6) == {"ps:0": {"sent": 500, "received": 1000}}  # on samples: exact
    assert res.bytes_between(9.0, 11.0) == {"ps:0": {"sent": 600, "received": 1200}}  # outside: all samples
    # a published run keeps them gzipped (repro.book.build.compress_traces): the same answers
    from repro.book import build

    assert [p.name for p in build.compress_traces(tmp_path)] == ["link_samples.jsonl.gz"]
    assert not (tmp_path / "link_samples.jsonl").exists()
    assert res.bytes_between(10.25, 10.45) == {"ps:0": {"sent": 500, "received": 1000}}


@pytest.mark.parametrize("overrides, message", [
    ({"models": ["alexnet"]}, "parameter 'models': expected"),
    ({"sweep_bandwidths": ["fast"]}, "parameter 'sweep.bandwidths': 'fast' is not a tc rate"),
    ({"sweep_models": ["resnet50"]}, "parameter 'sweep.models': resnet50 is not among models ['tiny']"),
    ({"methods": ["mpi"]}, "parameter 'methods': expected"),
    ({"workers": [0]}, "parameter 'workers': expected a non-empty list of integers (>= 1"),
    ({"models": ["inception_v3"], "image_size": 32}, "model inception_v3 needs images of at least 75 px, got 32"),
])
def test_bad_input_is_a_one_line_error_before_any_run(overrides, message, results_root):
    with pytest.raises(ParameterError) as err:
        distributed.run("smoke", overrides)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not results_root.exists() or not any(results_root.rglob("*"))


def test_repro_cli_exposes_the_cluster_tools(tmp_path, capsys):
    from repro import cli

    f = tmp_path / "nodes.txt"
    f.write_text("ps node1:2222\nworker node2:2222\n")
    assert cli.main(["cluster", "check", str(f)]) == 0
    assert capsys.readouterr().out.split() == ["0", "ps:0", "node1:2222", "1", "worker:0", "node2:2222"]
    assert cli.main(["cluster", "check", str(tmp_path / "missing.txt")]) == 2
    assert capsys.readouterr().err.startswith("repro: error: cannot read cluster file")


def test_scaling_figures_wrap_five_models_into_rows_of_three(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from repro.experiments.distributed import chapter

    models = ["vgg16", "vgg19", "resnet50", "resnet152", "inception_v3"]
    rows = [{"method": m, "workers": n, "model": mod, "total_images_per_sec": 30.0 * n, "efficiency": 1.0}
            for m in ("horovod", "ps_sync") for n in (1, 2) for mod in models]
    result = harness.Result(tmp_path, paramtypes.partial("distributed", {}), {}, tables={"t": pd.DataFrame(rows)})
    assert chapter.plot_efficiency(result, "t").fig.axes[0].get_subplotspec().get_gridspec().get_geometry() == (2, 3)
    two = harness.Result(tmp_path, paramtypes.partial("distributed", {}), {}, tables={"t": pd.DataFrame([r for r in rows if r["model"] in models[:2]])})
    assert len(chapter.plot_throughput(two, "t").axes.flat) == 2  # up to three models: one row


def test_weights_digest_hashes_every_trainable_byte_in_order_and_sums_in_float64():
    """The digest behind replicas_identical (emulated Horovod starts without a broadcast and relies on it):
    SHA-256 of the trainable weights' bytes in order and their float64 sum; one changed weight changes it."""
    import hashlib

    import numpy as np

    from repro.experiments.distributed.models import build_model, weights_digest

    net = build_model("tiny", 16, 4)
    arrays = [np.asarray(v.numpy()) for v in net.trainable_weights]
    want = hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()
    d = weights_digest(net)
    assert d["weights_sha256"] == want
    assert d["weights_sum"] == pytest.approx(sum(float(a.astype("float64").sum()) for a in arrays), rel=1e-12)
    v = net.trainable_weights[-1]
    v.assign(v.numpy() + 1.0)
    assert weights_digest(net)["weights_sha256"] != want


def test_the_published_emulated_run_is_judged_as_checks_with_the_model_beside():
    """Basis emulated and model give consistent / inconsistent only; each emulated row says what the model of
    the same profile predicts and whether it alone implies the verdict; the model rows are at the paper's N."""
    root = Path(__file__).resolve().parents[2] / "published" / "emulated" / "distributed"
    if not (root / "LATEST").is_file():
        pytest.skip("no published emulated run of distributed in this checkout")
    result = harness.load_result(root / (root / "LATEST").read_text().strip())  # read only
    led = claims.ledger(distributed.NAME, distributed.EXPERIMENT.judge(result))
    led = led.assign(id=list(claims.load(distributed.NAME))).set_index("id")
    cat = led["category"].to_dict()
    assert {k: cat[k] for k in ("horovod", "ring_scaling", "vgg_worst", "ps_efficiency")} == {
        "horovod": "inconsistent", "ring_scaling": "inconsistent", "vgg_worst": "consistent", "ps_efficiency": "consistent"}
    assert set(led.loc[["horovod", "ring_scaling", "vgg_worst", "ps_efficiency"], "basis"]) == {"emulated"}
    assert led.loc["horovod", "verdict"].endswith("N = 4 is not the paper's N (the model gives 1.5-3.8 at N = 10))")
    assert led.loc["vgg_worst", "verdict"].endswith("follows from the paper's hardware: K80 t_grad and 25 Gb/s)")
    assert "the model within 8.9 % of the emulated grid at worst over 30 clusters" in led.loc["ps_efficiency", "verdict"]
    # the model rows: on the real topology's model (16 GPUs per instance, overlap), gated on published measurements;
    # the PS comparisons are not comparable (the model misses published PS points by 11.5 pp at worst)
    model = led.loc[list(MODEL_FINDINGS)]
    # on the instance as built every model reaches about the same efficiency: closer than the model's error, so
    # "VGG scales worst" is not comparable rather than decided on the third decimal; "every model but vgg16 gains
    # with each added process" (the model: every model gains, vgg16 too) is inconsistent: across the interval of the
    # regime its Horovod predictions fall in (12 sources, 10 origins each held out whole: -0.09 to +0.05) every step
    # gains, the tightest (vgg16, 10 to 12 processes) by 1.9 % of throughput; with 10 sources each held out alone the
    # interval (-0.12 to +0.04) left that step open and the row was not comparable: it sits on a knife's edge
    assert model["category"].to_dict() == {"model_horovod": "not comparable", "model_ring_scaling": "inconsistent",
                                           "model_vgg_worst": "not comparable", "model_ps_efficiency": "not comparable"}
    assert model["basis"].to_dict() == {"model_horovod": "none", "model_ring_scaling": "model",
                                        "model_vgg_worst": "none", "model_ps_efficiency": "none"}
    assert "80 % interval" in led.loc["model_ring_scaling", "verdict"]
    assert "vgg16 gains too" in led.loc["model_ring_scaling", "verdict"]
    assert "published ps_sync measurements" in led.loc["model_horovod", "verdict"]
    assert "the best VGG (0.91) or the best other model (0.92) and 0.9" in led.loc["model_vgg_worst", "verdict"]
    assert "cannot tell them apart" in led.loc["model_vgg_worst", "verdict"]


def test_ps_extra_data_reads_the_sweep_and_is_not_comparable_whatever_it_shows():
    """The PS link against a ring worker's, at every sweep point where both ran: shown, never decided (one PS
    carries N^2 / (2 (N - 1)) times a ring worker's bytes by construction); no sweep: not measured."""
    sweep = pd.DataFrame([{"method": m, "bandwidth": "1gbit", "model": mod, "workers": 2,
                           "measured_sent_mb_per_step": mb, "measured_received_mb_per_step": mb - 1}
                          for mod, ring, ps in (("resnet50", 103.0, 206.0), ("tiny", 25.0, 50.0))
                          for m, mb in (("ring", ring), ("ps_sync", ps))])
    m = verdicts.ps_extra_data(sweep)
    assert m.ours.startswith("bytes per step, 2 sweep point(s): resnet50 (N = 2), ps_sync: PS link 206.0-206.0 MB")
    low = sweep.copy()
    low.loc[(low["method"] == "ps_sync") & (low["model"] == "tiny"), "measured_sent_mb_per_step"] = 26.0
    low.loc[(low["method"] == "ps_sync") & (low["model"] == "tiny"), "measured_received_mb_per_step"] = 20.0
    low = verdicts.ps_extra_data(low)
    assert low.ours.endswith("least ratio 1.04 (tiny, ps_sync, 1gbit)")
    claim = claims.load(distributed.NAME)[PS_BYTES]
    assert not claim.decisive and "sharded PS" in claim.why_not_decisive
    for measured in (m, low):
        row = claims.row(claim, measured)
        assert (row["category"], row["basis"]) == ("not comparable", "measured"), row["verdict"]
        assert "true by construction with one PS" in row["verdict"] and "2.00 at N = 2" in row["verdict"]
    assert verdicts.analytic_ps_ratio(2) == 2.0 and verdicts.analytic_ps_ratio(10) == pytest.approx(100 / 18)
    assert verdicts.ps_extra_data(pd.DataFrame()).gate.category is V.Category.NOT_MEASURED
    assert verdicts.ps_extra_data(sweep[sweep["method"] == "ring"]).gate.category is V.Category.NOT_MEASURED
