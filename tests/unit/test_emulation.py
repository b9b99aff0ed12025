"""Emulated clusters: hardware profiles as data, time dilation, the refusals, the in-graph wait, and
how the emulated grid's numbers become verdicts with basis ``emulated``."""

import time

import numpy as np
import pandas as pd
import pytest

from repro.cluster import ClusterError
from repro.core import claims as claims_mod
from repro.core import paramtypes
from repro.core import verdicts as V
from repro.core.ledger import category
from repro.core.params import ParameterError
from repro.experiments.speedup import emulation, statements
from repro.experiments.speedup import experiment as speedup
from repro.experiments.speedup.measure import extended_time
from repro.predict import hardware

MB = 1e6
SIZES = {"SqueezeNet": 3.47 * MB, "GoogLeNet": 24.9 * MB, "Resnet34": 85.7 * MB, "VGG16E": 562.5 * MB}


def test_profiles_are_data_with_sources():
    assert {"gtx970-1gbit", "k80-p2.16xlarge"} <= set(hardware.names())
    gtx = hardware.load("gtx970-1gbit")
    assert gtx.t_grad_s == {"VGG16E": 0.719, "GoogLeNet": 0.763, "SqueezeNet": 0.758, "Resnet34": 0.821}  # Table 6.1
    assert gtx.link == "1gbit" and "Table 6.1" in gtx.source and "worker k's node" in gtx.topology and gtx.ps_on_workers
    assert gtx.t_grad("GoogLeNet", 8, 32) == pytest.approx(0.763 / 4)  # sync-split: t_grad / N
    k80 = hardware.load("k80-p2.16xlarge")
    assert k80.link == "25gbit" and k80.t_grad("resnet50") == pytest.approx(32 / 49)  # 49 images/s at batch 32
    assert k80.t_grad("vgg19") == pytest.approx(32 / 28.5) and "FLOPs" in k80.source  # derived, and says how


def test_unknown_profile_or_model_is_one_line_with_the_valid_names():
    with pytest.raises(ClusterError, match=r"^unknown hardware profile 'p100'; valid: gtx970-1gbit, k80-p2.16xlarge, k80-p2.16xlarge-hosts$"):
        hardware.load("p100")
    with pytest.raises(ClusterError, match=r"^model 'resnet50' is not in hardware profile gtx970-1gbit; valid: VGG16E, "):
        hardware.load("gtx970-1gbit").t_grad("resnet50")


def test_dilation_scales_the_link_and_the_wire_time():
    assert hardware.dilated_rate("1gbit", 4) == "250000kbit"
    assert hardware.rate_bits(hardware.dilated_rate("25gbit", 3)) == pytest.approx(25e9 / 3, rel=1e-6)
    # 1 MB of payload on 1 Gb/s Ethernet (MTU 1500): 8 ms / (1448 / 1514)
    assert hardware.transfer_seconds(1e6, "1gbit") == pytest.approx(0.008 * 1514 / 1448)
    with pytest.raises(ClusterError, match="dilation must be >= 1"):
        hardware.dilated_rate("1gbit", 0.5)


def test_a_dilation_the_cores_cannot_carry_is_refused_with_the_number():
    cps = hardware.machine()["cpu_seconds_per_gb"]
    # 16 directions of 1 Gb/s at k = 1: 16 x 0.125 GB/s x cps CPU-s/GB
    need = 16 * 0.125 * cps
    with pytest.raises(ClusterError) as exc:
        hardware.check_dilation(16, "1gbit", 1.0, 2, "N = 8 on the distributed server")
    msg = str(exc.value)
    assert msg.startswith(f"parameter 'dilation': 1 needs {need:.1f} CPU cores for the transfers of N = 8")
    least = need / (2 * hardware.machine()["headroom"])
    assert msg.endswith(f"use dilation >= {least:.1f}") and "\n" not in msg
    assert hardware.check_dilation(16, "1gbit", least * 1.01, 2, "x") == pytest.approx(need / (least * 1.01))


def test_memory_that_would_not_fit_is_refused_before_any_process():
    with pytest.raises(ClusterError, match=r"needs about 9\.0 GB \(10 copies of 500 MB \+ 10 processes x 400 MB\); "
                                           r"8\.0 GB available: refused before any process starts"):
        hardware.check_memory(500 * MB, 10, 10, 8e9, "the emulated cluster")


def _params(**kw):
    from repro.core import params

    return params.resolve("speedup", "emulated", kw)


def test_plan_gives_each_cluster_the_least_dilation_its_flows_need(monkeypatch):
    monkeypatch.setattr(emulation, "_available_memory", lambda: 20e9)
    p = _params()
    emu = emulation.Emulation(profile=hardware.load("gtx970-1gbit"), cores=2)
    plan = {(c["server"], c["workers"]): c["dilation"] for c in emulation.plan(p, emu, SIZES)}
    room = 2 * hardware.machine()["headroom"]
    per_flow = hardware.cpu_needed(1, "1gbit", 1.0)
    assert plan[("central", 8)] == 1.0  # the central server's one link, both ways
    assert plan[("distributed", 8)] == pytest.approx(16 * per_flow / room, abs=0.01)  # 8 links both ways (async)
    assert plan[("distributed", 1)] == 1.0
    with pytest.raises(ClusterError, match=r"^parameter 'dilation': 1\.5 needs .* N = 4 on the distributed server"):
        emulation.plan(_params(dilation=1.5), emu, SIZES)


def test_vgg16e_stops_at_its_worker_limit_and_memory_is_checked(monkeypatch):
    monkeypatch.setattr(emulation, "_available_memory", lambda: 20e9)
    p = _params(emulate_networks=["VGG16E", "SqueezeNet"], emulate_servers=["central"])
    emu = emulation.Emulation(profile=hardware.load("gtx970-1gbit"), cores=2)
    nets = {c["workers"]: c["networks"] for c in emulation.plan(p, emu, SIZES)}
    assert nets[4] == ["VGG16E", "SqueezeNet"] and nets[8] == ["SqueezeNet"]
    monkeypatch.setattr(emulation, "_available_memory", lambda: 8e9)
    with pytest.raises(ClusterError, match=r"^the emulated cluster N = 4 on the central server \(VGG16E, SqueezeNet\) "
                                           r"needs about"):
        emulation.plan(p, emu, SIZES)


@pytest.mark.parametrize("overrides, message", [
    ({"emulate": "k80-p2.16xlarge-hosts"}, "parameter 'emulate.hardware': hardware profile k80-p2.16xlarge-hosts describes "
                                          "several GPUs per host or overlap, which only the analytic model knows "
                                          "(repro predict); an emulation replays one of gtx970-1gbit, "
                                          "k80-p2.16xlarge; or none"),
    ({"emulate": "p100"}, "parameter 'emulate.hardware': unknown hardware profile 'p100'; valid: gtx970-1gbit, k80-p2.16xlarge, k80-p2.16xlarge-hosts; or none"),
    ({"emulate": "k80-p2.16xlarge"}, "parameter 'emulate.hardware': model 'SqueezeNet' is not in hardware profile k80-p2.16xlarge; "
                                     "valid: vgg16, vgg19, resnet50, resnet152, inception_v3, inception_v4; or none"),
    ({"emulate_batches": 1}, "parameter 'emulate.batches': D = 1 is smaller than 2 workers"),  # the grid it is
])
def test_bad_emulation_is_one_line_before_any_run(overrides, message, results_root):
    with pytest.raises(ParameterError) as exc:
        speedup.run("smoke", overrides)
    assert str(exc.value) == message
    assert not results_root.exists() or not any(results_root.rglob("provenance.json"))


def test_the_wait_runs_in_the_graph_after_the_weights_and_before_the_gradients():
    import tensorflow as tf

    from repro.cluster.compute import wait_then_zeros

    w = [tf.Variable(tf.ones([300, 300])), tf.Variable(tf.ones([7]))]

    @tf.function
    def step():
        done, grads = wait_then_zeros([tf.identity(v) for v in w], 0.5)
        return done, grads

    step()  # trace
    t0 = time.perf_counter()
    done, grads = step()
    elapsed = time.perf_counter() - t0
    # one wait, never two (a SleepDataset read twice would sleep 1 s); a busy machine only adds to it
    assert 0.5 <= elapsed < 2 * 0.5 * 0.9
    assert [g.shape for g in grads] == [(300, 300), (7,)] and float(done) == 0.0
    assert all(float(tf.reduce_sum(tf.abs(g))) == 0.0 for g in grads)


def test_one_traced_step_waits_what_its_tensor_argument_says():
    # warm-up steps wait 0, timed steps the emulated time, without a second trace in the timed window
    import tensorflow as tf

    from repro.cluster.compute import wait_then_zeros

    w = [tf.Variable(tf.ones([50, 50]))]
    traces = []

    @tf.function
    def step(seconds):
        traces.append(1)
        return wait_then_zeros([tf.identity(v) for v in w], seconds)[0]

    step(tf.constant(0.0, tf.float64))  # trace
    t0 = time.perf_counter()
    step(tf.constant(0.0, tf.float64))
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    step(tf.constant(0.5, tf.float64))
    timed = time.perf_counter() - t0
    # one trace; the warm-up step does not wait (well under the 0.5 s), the timed one waits 0.5 s once
    assert len(traces) == 1 and warm < 0.5 / 2 and 0.5 <= timed < 2 * 0.5 * 0.9


def test_extended_model_without_overlap_is_the_thesis_closure():
    # emulated compute waits for every weight: pull + g + push (+ latency) per closure, N = 1
    t = extended_time("async", "distributed", 1, 4, 1.0, 0.2, 0.3, 0.01, 2, 1, overlap=False)
    assert t == pytest.approx(4 * (0.01 + 0.2 + 1.0 + 0.3))
    overlapped = extended_time("async", "distributed", 1, 4, 1.0, 0.2, 0.3, 0.01, 2, 1)
    assert overlapped < t


def test_remote_share_is_the_busiest_link_with_shard_k_on_worker_k():
    from repro.experiments.speedup.measure import remote_share

    assert remote_share([5, 5, 5, 5]) == pytest.approx(3 / 4)  # the thesis' (N - 1) / N
    assert remote_share([100]) == 0.0  # one worker, its own shard: nothing crosses a link
    assert remote_share([6, 1, 1]) == pytest.approx(12 / 8)  # a big shard serves 2 x 6 to the others
    full = extended_time("sync-join", "distributed", 4, 8, 1.0, 0.2, 0.3, 0.01, 4, 1, overlap=False)
    local = extended_time("sync-join", "distributed", 4, 8, 1.0, 0.2, 0.3, 0.01, 4, 1, overlap=False,
                          remote_share=0.75)
    assert full - local == pytest.approx(2 * 0.25 * (0.2 + 0.3))  # 2 iterations, a quarter of each transfer saved


def _tables(s_squeeze8=6.498, s_again=6.502, resnet8=1.2, local=False):
    rows = []
    for net, s8 in (("SqueezeNet", s_squeeze8), ("Resnet34", resnet8)):
        for n, s in ((1, 0.95), (8, s8)):
            for server in ("central", "distributed"):
                rows.append({"network": net, "mode": "sync-join", "server": server, "workers": n,
                             "speedup_measured": s if server == "distributed" else s * 0.5,
                             "error_thesis": 0.05, "error_extended": 0.02, "speedup_thesis": s,
                             "speedup_extended": s})
    cmp = pd.DataFrame(rows)
    dc = pd.DataFrame([{"network": "SqueezeNet", "mode": "sync-join", "server": "distributed", "semaphore": False,
                        "workers": 8, "speedup_a": s_squeeze8, "speedup_b": s_again, "dilation_a": 4.67,
                        "dilation_b": 9.34}])
    runs = cmp[["network", "mode", "server", "workers"]].assign(ps_on_workers=local & (cmp["server"] == "distributed"))
    return {"emulated_vs_predicted": cmp, "dilation_check": dc, "emulated_runs": runs}


def test_emulated_claims_need_two_runs_and_the_stated_tolerance():
    said = claims_mod.load("speedup")
    vals = emulation.claim_values(_tables(), statements.thesis_claims(), said, "gtx970-1gbit")
    ours, ok, runs, gate = vals["squeezenet_best_measured"]
    assert ok and runs == 2 and "S = 6.50" in ours and "gtx970-1gbit" in ours  # 95 % interval 6.47-6.53: within 6.5 ± 0.05
    # ... but the emulated distributed server is not the thesis' (shards on their own nodes): gated
    assert gate == emulation.TOPOLOGY_GATE
    ours, ok, runs, gate = vals["resnet34_best_measured"]
    assert not ok and runs == 1 and "S = 1.20" in ours and gate  # 2.1 reported, one run
    far = emulation.claim_values(_tables(s_squeeze8=5.0, s_again=5.2), statements.thesis_claims(), said, "x")
    assert far["squeezenet_best_measured"][1] is False  # 95 % interval 3.8-6.4: wholly below 6.45-6.55
    wide = emulation.claim_values(_tables(s_squeeze8=6.4, s_again=6.6, local=True), statements.thesis_claims(), said, "x")
    assert wide["squeezenet_best_measured"][3].category is V.Category.NOT_COMPARABLE  # 5.2-7.8 straddles 6.45-6.55
    # a statement the handicap cannot explain away is decided: distributed >= central at N > 1
    assert vals["distributed_never_worse_measured"][3] is None
    # with shard k on worker k's node (the thesis' topology) the distributed server's numbers are decided,
    # but N = 1 (nothing crosses a link: this machine's loopback) stays not comparable
    local = emulation.claim_values(_tables(local=True), statements.thesis_claims(), said, "gtx970-1gbit")
    assert local["squeezenet_best_measured"][3] is None and local["squeezenet_best_measured"][1]
    assert local["one_worker_distributed_measured"][3] == emulation.LOCAL_GATE
    assert local["distributed_predictions_trend"][3] is None


def test_emulated_rows_carry_basis_emulated_and_the_ledger_rules_apply():
    tables = _tables()
    grid = pd.DataFrame([{"network": n, "mode": m, "server": s, "workers": w, "speedup": 1.5}
                         for n in ("VGG16E", "GoogLeNet", "SqueezeNet", "Resnet34")
                         for m in ("sync-join", "sync-split", "async") for s in ("central", "distributed")
                         for w in (1, 2, 4, 8)])
    tables["predictions"] = grid
    p = paramtypes.partial("speedup", {"measure": False, "emulate": "gtx970-1gbit",
                                       "networks": ["VGG16E", "GoogLeNet", "SqueezeNet", "Resnet34"]})
    measured = statements.measurements(tables, p)
    led = claims_mod.ledger("speedup", measured).set_index(pd.Index(list(claims_mod.load("speedup"))))
    assert led.loc["squeezenet_best_measured", "basis"] == "emulated"
    assert led.loc["squeezenet_best_measured", "verdict"].startswith("not comparable (emulated topology")
    assert "S = 6.50" in led.loc["squeezenet_best_measured", "ours"]  # the number is still shown
    # a grid-wide statement has one run behind it: never reproduced
    row = led.loc["distributed_never_worse_measured"]
    assert row["basis"] == "emulated" and category(row["verdict"]) in ("not comparable", "differs")
    assert not led["verdict"].str.startswith("reproduced").any()
    here = dict(_tables(local=True), predictions=grid)
    led = claims_mod.ledger("speedup", statements.measurements(here, p)).set_index(pd.Index(list(claims_mod.load("speedup"))))
    assert led.loc["squeezenet_best_measured", "verdict"] == (  # 2 runs, their interval within 6.5's rounding
        "consistent (the emulated replay of the thesis' hardware (gtx970-1gbit) gives S = 6.50, 95% interval "
        "6.47-6.53 (mean ± 12.71 standard errors), where the thesis measured 6.5: wholly within 6.45-6.55, the "
        "thesis' rounding)")
    # 1.2 against 2.1, but from one run: one run of a stochastic quantity decides nothing, either way
    assert led.loc["resnet34_best_measured", "verdict"].startswith(
        "not comparable (1 run of a stochastic quantity; a verdict needs >= 2 independent runs; the one run: "
        "inconsistent (the emulated replay of the thesis' hardware (gtx970-1gbit) gives S = 1.20")
    assert "mean of 2 runs: the cluster, and again at 2x its dilation" in led.loc["squeezenet_best_measured", "ours"]
    assert led.loc["squeezenet_best_measured", "tolerance"].startswith("ROUNDING (speedup/claims.yaml, header)")
    # a claim the emulated grid does not decide (no GoogLeNet in it) is left to the real runs: none here
    assert led.loc["googlenet_async_measured", "verdict"].startswith("not measured (measure=false")
    assert np.isin(led["basis"], ["equations", "emulated", "none"]).all()


# --- polishchuk2019 B: the distributed experiment's emulated grid ------------------------------


def _dist_params(**kw):
    from repro.core import params

    kw.setdefault("emulate_models", ["resnet50", "vgg16"])  # the two models AUDIT sizes
    return params.resolve("distributed", "emulated", kw)


K80_PROFILE = hardware.load("k80-p2.16xlarge")  # the distributed emulated profile's hardware, as prepare loads it
AUDIT = pd.DataFrame([{"model": "vgg16", "ours_params_m": 138.36}, {"model": "resnet50", "ours_params_m": 25.64}])


def test_distributed_plan_dilates_ring_by_its_links_and_ps_by_the_server_link():
    from repro.experiments.distributed import emulation as de

    q = _dist_params(emulate_methods=["ring", "horovod", "ps_sync", "ps_async"])
    plan = {(c["method"], c["workers"]): c["dilation"] for c in de.plan(q, K80_PROFILE, AUDIT, cores=2, available=20e9)}
    per_flow = hardware.cpu_needed(1, "25gbit", 1.0) / (2 * hardware.machine()["headroom"])
    # one worker all-reduces with itself (no link), at its method's two-worker dilation: the same CPU overheads
    assert plan[("ring", 1)] == plan[("ring", 2)] == pytest.approx(4 * per_flow, abs=0.01)
    assert plan[("horovod", 1)] == plan[("horovod", 2)]
    assert plan[("ring", 4)] == plan[("horovod", 4)] == pytest.approx(8 * per_flow, abs=0.01)  # four links, both ways
    assert plan[("ps_sync", 4)] == plan[("ps_async", 1)] == pytest.approx(2 * per_flow, abs=0.01)  # the PS link
    with pytest.raises(ClusterError, match=r"needs about .* refused before any process starts"):
        de.plan(_dist_params(emulate_workers=[16]), K80_PROFILE, AUDIT, cores=2, available=20e9)  # 16 x 3 copies of VGG16
    with pytest.raises(ClusterError, match=r"^parameter 'dilation': 10 needs .* horovod with 2 workers"):
        de.plan(_dist_params(dilation=10.0), K80_PROFILE, AUDIT, cores=2, available=20e9)


def test_distributed_emulation_refuses_a_profile_without_the_models():
    from repro.experiments.distributed import emulation as de

    with pytest.raises(ParameterError, match=r"^parameter 'emulate.hardware': model 'resnet50' is not in hardware profile "
                                             r"gtx970-1gbit; valid: VGG16E, GoogLeNet, SqueezeNet, Resnet34; or none$"):
        de.check(_dist_params(emulate="gtx970-1gbit"))



# what a stored emulated table holds besides the throughput: the profile, batch and weights of each row
# (the analytic model beside every emulated finding reads them)
K80_PARAMETERS = {"resnet50": 25_557_032, "vgg16": 138_357_544, "vgg19": 143_667_240, "resnet152": 60_192_808,
                  "inception_v3": 23_851_784}


K80 = paramtypes.partial("distributed", {"emulate": "k80-p2.16xlarge", "ps": 1})  # the emulated grid's hardware


def _profiled(tp: pd.DataFrame) -> pd.DataFrame:
    return tp.assign(hardware="k80-p2.16xlarge", batch_size=32, parameters=tp["model"].map(K80_PARAMETERS))


def test_distributed_findings_come_from_the_emulated_grid_with_basis_emulated():
    from repro.experiments.distributed import verdicts
    from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency

    rows = []
    for model, per in (("resnet50", 49.0), ("vgg16", 36.0)):
        for n in (1, 2, 4):
            eff = {"ring": 0.95 if model == "resnet50" else 0.6, "ps_sync": 0.5, "ps_async": 0.55}
            for method, e in eff.items():
                total = per * n * (e if n > 1 else 1.0)
                rows.append({"method": method, "workers": n, "model": model, "total_images_per_sec": total})
    tp = _profiled(pd.DataFrame(rows))
    tables = {"emulated_throughput": tp, "emulated_scaling": scaling_efficiency(tp), "emulated_ratios": ratios(tp)}
    out = verdicts.emulated(tables, K80)
    assert set(out) == {"async_vs_sync", "ring_vs_ps", "ring_scaling", "vgg_worst", "ps_efficiency", "ps_no_speedup",
                        "ring_scales_best", "distribution_improved_most"}
    # PS at 0.5 / 0.55 of linear: 2 x / 2.2 x one worker's images/sec at 4 workers, a significant acceleration
    assert out["ps_no_speedup"].holds is False and "ps_async resnet50: 2.20" in out["ps_no_speedup"].ours
    assert all(m.basis == "emulated" and "[emulated k80-p2.16xlarge, 1 run(s)]" in m.ours for m in out.values())
    assert all(m.runs == 1 for m in out.values())
    assert out["vgg_worst"].holds is True and out["ps_efficiency"].holds is True
    assert out["ring_scaling"].holds is False  # VGG16 gains per added process too: "every model but VGG16" fails
    assert out["ring_vs_ps"].value == pytest.approx(0.6 / 0.5)  # the ratio farthest from the paper's 2x (vgg16)
    assert out["async_vs_sync"].gate.category.value == "not testable here"
    assert out["async_vs_sync"].gate.detail.startswith("emulated compute has no variance")
    assert out["async_vs_sync"].value == pytest.approx(0.55 / 0.5)  # measured and shown, just not judged
    assert verdicts.emulated(tables, paramtypes.partial("distributed", {"emulate": None, "ps": 1})) == {}


def test_with_horovod_in_the_grid_its_ratio_and_scaling_decide_the_paper_findings():
    from repro.experiments.distributed import verdicts
    from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency

    rows = []
    for model, per in (("resnet50", 49.0), ("vgg16", 36.0)):
        for n in (1, 2, 4):
            eff = {"horovod": 0.95 if model == "resnet50" else 0.5, "ps_sync": 0.45, "ps_async": 0.45}
            rows += [{"method": m, "workers": n, "model": model, "total_images_per_sec": per * n * (e if n > 1 else 1.0)}
                     for m, e in eff.items()]
    tp = _profiled(pd.DataFrame(rows))
    tables = {"emulated_throughput": tp, "emulated_scaling": scaling_efficiency(tp), "emulated_ratios": ratios(tp)}
    out = verdicts.emulated(tables, K80)
    assert "ring_vs_ps" not in out  # no MWMS ring in this grid: left to the real runs
    assert out["horovod"].value == pytest.approx(0.5 / 0.45) and out["horovod"].basis == "emulated"
    assert out["ring_scaling"].ours.startswith("Horovod: resnet50: gains, vgg16: no gain") and out["ring_scaling"].holds
    assert out["vgg_worst"].ours.startswith("Horovod efficiency at 4 workers") and out["vgg_worst"].holds is True
    assert "vs Horovod 0.95" in out["ps_efficiency"].ours and out["ps_efficiency"].holds is True


RANGE = "measured up to 4 workers; the paper's ran to 20"  # a scaling verdict says how far it went


@pytest.mark.parametrize("eff, gains_holds, worst_holds, note", [
    # (efficiency at 2 workers, at 4; VGG16 at 2 x 0.5 does not gain): the exception is VGG16 alone;
    # some model near-linear (0.9 of linear or more at 4 workers) and neither VGG (the seed's wording)
    ({"resnet50": (0.97, 0.95), "resnet152": (0.95, 0.9), "vgg19": (0.8, 0.6), "vgg16": (0.5, 0.4)}, True, True, RANGE),
    ({"resnet50": (0.97, 0.95), "resnet152": (0.9, 0.7), "vgg19": (0.95, 0.92), "vgg16": (0.5, 0.4)}, True, False,
     "vgg19 at 0.92 reaches 0.9"),
    # VGG19 at 4 workers (4 x 0.45 = 1.8 batches) below 2 workers (2 x 0.95 = 1.9): it does not gain
    ({"resnet50": (0.97, 0.95), "resnet152": (0.95, 0.9), "vgg19": (0.95, 0.45), "vgg16": (0.5, 0.4)}, False, True, RANGE),
])
def test_vgg19_must_gain_and_both_vggs_scale_worst(eff, gains_holds, worst_holds, note):
    from repro.experiments.distributed import verdicts
    from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency

    per = {"resnet50": 49.0, "resnet152": 20.0, "vgg19": 28.5, "vgg16": 36.0}
    rows = [{"method": m, "workers": n, "model": model,
             "total_images_per_sec": per[model] * (1 if n == 1 else n * (e[n // 4] if m == "horovod" else 0.4))}
            for model, e in eff.items() for n in (1, 2, 4) for m in ("horovod", "ps_sync")]
    tp = _profiled(pd.DataFrame(rows))
    tables = {"emulated_throughput": tp, "emulated_scaling": scaling_efficiency(tp), "emulated_ratios": ratios(tp)}
    out = verdicts.emulated(tables, K80)
    assert out["ring_scaling"].holds is gains_holds
    assert out["vgg_worst"].holds is worst_holds and out["vgg_worst"].note.startswith(note)


def test_two_emulated_runs_are_averaged_and_let_a_finding_be_reproduced():
    from repro.core import claims as core_claims
    from repro.experiments.distributed import emulation as de
    from repro.experiments.distributed import verdicts
    from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency

    rows = []
    for run, jitter in ((1, 1.0), (2, 1.04)):
        for model, per in (("resnet50", 49.0), ("vgg16", 36.0)):
            for n in (1, 2, 4):
                for method, e in {"ring": 0.95 if model == "resnet50" else 0.6, "ps_sync": 0.5, "ps_async": 0.5}.items():
                    rows.append({"method": method, "workers": n, "model": model, "run": run, "dilation": 2.0,
                                 "hardware": "k80-p2.16xlarge",
                                 "total_images_per_sec": per * n * (e if n > 1 else 1.0) * jitter})
    each = pd.DataFrame(rows)
    tp = _profiled(de.mean_of_runs(each))
    assert len(tp) == len(each) / 2 and (tp["runs"] == 2).all()
    assert tp["run_spread"].to_numpy() == pytest.approx(0.04)
    one = tp[(tp["model"] == "resnet50") & (tp["method"] == "ring") & (tp["workers"] == 1)]
    assert one["total_images_per_sec"].iloc[0] == pytest.approx(49.0 * 1.02)  # the mean of 49 and 50.96
    tables = {"emulated_throughput": tp, "emulated_scaling": scaling_efficiency(tp), "emulated_ratios": ratios(tp)}
    out = verdicts.emulated(tables, K80)
    assert all(m.runs == 2 and "2 run(s)" in m.ours for m in out.values())
    said = core_claims.load("distributed")
    # 1.00, as the paper says, yet forced: every emulated worker waits the same t_grad, so no verdict either way
    forced = core_claims.row(said["async_vs_sync"], out["async_vs_sync"])
    assert forced["category"] == "not testable here" and "emulated compute has no variance" in forced["verdict"]
    assert "async/sync images/sec at 4 workers: resnet50: 1.00, vgg16: 1.00" in out["async_vs_sync"].ours
    # an emulation replays the hardware it is given: it can be consistent with the claim, never reproduce it
    worst = core_claims.row(said["vgg_worst"], out["vgg_worst"])
    assert (worst["category"], worst["basis"], worst["runs"]) == ("consistent", "emulated", 2)


def test_limits_say_where_the_emulated_grid_stops_and_why():
    from repro.experiments.distributed import emulation as de
    from repro.experiments.distributed.chapter import limits_text

    lim = de.limits(_dist_params(), K80_PROFILE, AUDIT, workers=(2, 8, 20), cores=2, available=20e9).set_index(
        ["method", "workers", "model"])
    per_flow = hardware.cpu_needed(1, "25gbit", 1.0) / (2 * hardware.machine()["headroom"])
    assert lim.loc[("ring", 20, "resnet50"), "dilation"] == pytest.approx(40 * per_flow, abs=0.1)  # 20 links, both ways
    assert lim.loc[("ps_sync", 20, "resnet50"), "dilation"] == lim.loc[("ps_sync", 2, "resnet50"), "dilation"]
    # 20 ring members hold 3 copies of VGG16 each (553 MB): 33 GB + 20 processes, more than 20 GB
    assert not lim.loc[("ring", 20, "vgg16"), "fits_in_memory"] and lim.loc[("ring", 2, "vgg16"), "fits_in_memory"]
    assert lim.loc[("ring", 20, "vgg16"), "memory_gb"] == pytest.approx((3 * 20 * 553.43e6 + 20 * 400e6) / 1e9, rel=1e-3)
    # a ring step costs the dilated wait plus the dilated transfer of 2 (N - 1) / N of the weights
    k, tg = lim.loc[("ring", 8, "resnet50"), "dilation"], 32 / 49
    wire = hardware.transfer_seconds(2 * 7 / 8 * 4e6 * 25.64, "25gbit")
    assert lim.loc[("ring", 8, "resnet50"), "minutes_warmup_and_step"] == pytest.approx(2 * k * (tg + wire) / 60, rel=0.01)
    text = limits_text(lim.reset_index())
    assert "vgg16 8 (ring or Horovod) / 8 (PS)" in text and "resnet50 20 (ring or Horovod) / 20 (PS)" in text and "a ring of 20" in text


def test_async_vs_sync_is_never_the_emulations_to_decide_but_real_runs_still_decide_it():
    from repro.core import claims as core_claims
    from repro.experiments.distributed import verdicts
    from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency

    def grid(methods, models=("resnet50", "vgg16")):
        tp = pd.DataFrame([{"method": m, "workers": n, "model": model, "total_images_per_sec": 40.0 * n, "runs": 2}
                           for m in methods for n in (1, 2) for model in models])
        tp = _profiled(tp) if "tiny" not in models else tp
        return tp, scaling_efficiency(tp), ratios(tp)

    etp, esc, era = grid(["horovod", "ps_sync"])  # the emulated profile's grid: no async PS
    emulated = {"emulated_throughput": etp, "emulated_scaling": esc, "emulated_ratios": era}
    out = verdicts.emulated(emulated, K80)
    assert out["async_vs_sync"].ours == verdicts.NO
    assert out["async_vs_sync"].gate.category.value == "not testable here"
    assert out["async_vs_sync"].gate.detail.startswith("emulated compute has no variance")
    said = core_claims.load("distributed")
    audit = pd.DataFrame({"model": ["vgg16", "vgg19", "resnet50", "inception_v3", "resnet152"],
                          "ours_params_m": [float("nan")] * 5, "ours_gflops": [float("nan")] * 5})
    for cores, real_says in ((4, "reproduced"), (2, "not testable here")):
        rtp, rsc, rra = grid(["ps_sync", "ps_async"])  # real runs of the paper's models: async/sync 1.00
        tables = dict(emulated, throughput=rtp, scaling=rsc, ratios=rra, table1=audit)
        p = paramtypes.partial("distributed", {"workers": [1, 2], "threads_per_worker": 1, "emulate": "k80-p2.16xlarge",
                                           "ps": 1})
        summary = {"cores": cores, "workers_share_cores": verdicts.workers_share_cores(p, cores)}
        m = verdicts.measurements(tables, summary, p, {})["async_vs_sync"]
        # on 4 cores the real runs decide; on 2 shared cores they cannot, and neither can the emulation
        assert core_claims.row(said["async_vs_sync"], m)["category"] == real_says, cores


def test_a_finding_neither_grid_measured_says_why_for_both():
    from repro.experiments.distributed import verdicts
    from repro.experiments.distributed.arithmetic import ratios, scaling_efficiency

    def grid(methods, models):
        tp = pd.DataFrame([{"method": m, "workers": n, "model": model, "total_images_per_sec": 40.0 * n}
                           for m in methods for n in (1, 2) for model in models])
        tp = _profiled(tp) if "tiny" not in models else tp
        return {"throughput": tp, "scaling": scaling_efficiency(tp), "ratios": ratios(tp)}

    emu = grid(["horovod", "ps_sync"], ["resnet50", "vgg16"])  # the emulated profile: no MWMS ring
    real = grid(["ring", "ps_sync", "ps_async", "horovod"], ["tiny"])  # its real part: the tiny CNN only
    audit = pd.DataFrame({"model": ["vgg16", "vgg19", "resnet50", "inception_v3", "resnet152"],
                          "ours_params_m": [float("nan")] * 5, "ours_gflops": [float("nan")] * 5})
    tables = {**real, **{f"emulated_{k}": v for k, v in emu.items()}, "table1": audit}
    p = paramtypes.partial("distributed", {"workers": [1, 2], "threads_per_worker": 1, "emulate": "k80-p2.16xlarge",
                                           "ps": 1})
    m = verdicts.measurements(tables, {"cores": 2, "workers_share_cores": True}, p, {})
    assert m["ring_vs_ps"].gate == V.not_measured("real runs: only the tiny smoke model; "
                                                  "emulated grid: ring and ps_sync not both in emulate_methods")
    assert m["horovod"].basis == "emulated" and m["horovod"].gate is None  # what the emulated grid measured stays


def test_the_dilation_check_reruns_each_methods_smallest_multiworker_cluster_at_a_second_dilation():
    from repro.experiments.distributed import emulation as de
    from repro.experiments.distributed.chapter import dilation_check_text

    p = _dist_params()
    todo = de.plan(p, K80_PROFILE, AUDIT, cores=2, available=20e9)
    second = de.check_plan(p, K80_PROFILE, todo, cores=2)
    assert [(c["method"], c["workers"]) for c in second] == [("horovod", 2), ("ps_sync", 2)]
    for c in second:
        first = next(d for d in todo if (d["method"], d["workers"]) == (c["method"], 2))
        assert c["against"] == first["dilation"] and c["dilation"] == pytest.approx(2 * first["dilation"], abs=0.01)
    assert de.check_plan(p.model_copy(update={"dilation_check": p.dilation_check.model_copy(update={"factor": 0.0})}), K80_PROFILE, todo) == []
    # a factor below 1 needs more CPU than the cores have: refused with the number, as any dilation
    with pytest.raises(hardware.PredictError, match=r"^parameter 'dilation': .* the dilation check of horovod"):
        de.check_plan(p.model_copy(update={"dilation_check": p.dilation_check.model_copy(update={"factor": 0.1})}), K80_PROFILE, todo, cores=2)
    # the images/sec of the second dilation against the grid's mean at the first, within 5 %
    tp = pd.DataFrame([{"model": "vgg16", "method": m, "workers": 2, "total_images_per_sec": 60.0}
                       for m in ("horovod", "ps_sync")])
    again = pd.DataFrame([{"model": "vgg16", "method": c["method"], "workers": 2, "dilation": c["dilation"],
                           "against": c["against"], "total_images_per_sec": v} for c, v in zip(second, (61.8, 56.4))])
    ck = de.dilation_checks(tp, again)
    assert ck["error"].tolist() == pytest.approx([0.03, -0.06]) and ck["within"].tolist() == [True, False]
    assert ck["check"].iloc[0].startswith(f"two dilations: horovod with 2 workers, images/sec at dilation "
                                          f"{second[0]['dilation']:g} = at {second[0]['against']:g}")
    text = dilation_check_text(ck)
    assert text.startswith("1 of 2 within 5 % (horovod with 2 workers") and text.endswith("for vgg16: -6.0 %)")
    assert dilation_check_text(ck.iloc[:0]) == "not run in this run (dilation_check)"


def test_the_dilation_check_names_a_model_outside_the_grid_in_one_line():
    from repro.experiments.distributed import emulation as de

    with pytest.raises(ParameterError, match=r"^parameter 'dilation_check.models': vgg19 is not in emulate.models "
                                             r"\(resnet50, vgg16\)$"):
        de.check(_dist_params(dilation_check_models=["vgg19"]))
    with pytest.raises(ParameterError, match=r"^parameter 'dilation_check.factor': needs a cluster of two or more workers"):
        de.check(_dist_params(emulate_workers=[1]))
    de.check(_dist_params(emulate_workers=[1], dilation_check=0.0))  # no check: nothing to refuse


@pytest.mark.parametrize("experiment, overrides, param", [
    ("speedup", {"dilation_check": 100.0}, "dilation_check"),
    ("speedup", {"emulate.batches": 4000}, "emulate.batches"),
    ("distributed", {"dilation_check.factor": 100.0}, "dilation_check.factor"),
    ("distributed", {"emulate.steps": 100}, "emulate.steps"),
])
def test_waits_longer_than_the_timeout_are_refused_in_one_line_before_anything_trains(experiment, overrides, param,
                                                                                    results_root):
    """The fuzz's find (``speedup --profile smoke -p dilation_check=100``: the check's cluster waited past the
    600 s timeout after the real grid had trained): refused in prepare, naming the parameter; the same
    parameters with a timeout that holds the waits pass the check (the counterfactual)."""
    from repro.core import params as P
    from repro.experiments.distributed import emulation as de
    from repro.experiments.distributed import experiment as distributed
    from repro.experiments.speedup import waits

    entry = speedup.run if experiment == "speedup" else distributed.run
    with pytest.raises(ClusterError) as exc:
        entry("smoke", overrides)
    assert str(exc.value).startswith(f"parameter '{param}': ") and "more than timeout = " in str(exc.value)
    assert "\n" not in str(exc.value) and (not results_root.exists() or not any(results_root.rglob("*.json")))
    roomy = P.resolve(experiment, "smoke", {**overrides, "timeout": 86400.0})
    check = waits.check if experiment == "speedup" else de.check_waits
    check(roomy, hardware.load(roomy.emulate.hardware))  # nothing refused


def test_the_least_wait_is_d_over_n_batches_of_t_grad_times_the_dilation_per_network_and_mode():
    from repro.core import params as P
    from repro.experiments.speedup import waits

    p = P.resolve("speedup", "smoke", {"emulate.modes": ["sync-join", "async"], "emulate.batches": 8})
    emu = emulation.setup(p, hardware.load(p.emulate.hardware))
    c = {"server": "distributed", "workers": 2, "networks": ["SqueezeNet"], "dilation": 4.0}
    assert waits.least_seconds(c, emu, p.emulate) == pytest.approx(8 / 2 * 0.758 * 4.0 * 2)
