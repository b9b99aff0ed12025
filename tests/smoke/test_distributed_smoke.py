"""The distributed benchmark (polishchuk2019 part B): arithmetic, verdict logic, and the methods on real clusters."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from repro import cluster
from repro.core import claims
from repro.core import verdicts as V
from repro.experiments.distributed import arithmetic, runs, verdicts
from repro.experiments.distributed import experiment as distributed
from repro.experiments.distributed import models as distributed_models
from repro.experiments.distributed.common import FINDINGS, MODEL_FINDINGS
from repro.experiments.distributed.programs import horovod_available
from repro.predict import perfmodel

# one test at a time (the marker in pyproject.toml): it times emulated images/sec against the wait's bound
pytestmark = pytest.mark.alone

NETNS = cluster.netns_available()
ISO = {"isolation": "auto", "allow_exposed": not NETNS}
PROGRAMS = "repro.experiments.distributed.programs"


@pytest.mark.slow
def test_sync_ps_applies_one_averaged_update_per_step(tmp_path):
    """Two gradients summed on the PS, barrier, ONE update with their average (not two updates)."""
    # linear model y = x.w, loss (x.w - y)^2, w0 = (1, 2), learning rate 0.1
    # closure A: x=(1,0), y=0 -> prediction 1, gradient 2*1*(1,0) = (2, 0)
    # closure B: x=(0,1), y=0 -> prediction 2, gradient 2*2*(0,1) = (0, 4)
    # sync: w1 = w0 - 0.1 * mean = (1, 2) - 0.1 * (1, 2) = (0.9, 1.8)
    # (two updates one after the other, or the sum, would give (0.8, 1.6))
    res = cluster.run_cluster(f"{PROGRAMS}:sync_probe", workers=2, ps=1, timeout=120, ready_timeout=120,
                              kwargs={"batches": [[[[1.0, 0.0]], [0.0]], [[[0.0, 1.0]], [0.0]]],
                                      "initial_weights": [1.0, 2.0], "learning_rate": 0.1},
                              run_dir=tmp_path / "run", **ISO)
    out = res.results["chief:0"]
    assert out["before"] == [1.0, 2.0]
    assert out["after"] == pytest.approx([0.9, 1.8], abs=1e-6)
    assert out["updates"] == 1 and out["scheduled"] == 2 and sum(out["counts"]) == 2
    assert cluster.leftover_processes(res.run_dir) == []


@pytest.mark.slow
@pytest.mark.parametrize("program", ["ring", pytest.param("horovod", marks=pytest.mark.extras)])
def test_all_reduce_keeps_replicas_identical(program, tmp_path, request):
    """Two workers on different data (MWMS ring; Horovod over Gloo): identical start and identical end."""
    if program == "horovod":
        request.getfixturevalue("need")("Horovod", horovod_available(), "tools/install_horovod.sh; needs cmake and g++")
    res = cluster.run_cluster(f"{PROGRAMS}:{program}", workers=2, ps=0, chief=False, program_roles=("worker",),
                              kwargs={"models": [{"name": "tiny", "image_size": 16}], "batch_size": 4,
                                      "warmup_steps": 1, "steps": 2, "learning_rate": 0.1, "num_classes": 4,
                                      "seed": 0},
                              env={"TF_NUM_INTRAOP_THREADS": "1"},
                              timeout=120, ready_timeout=120, run_dir=tmp_path / "run", **ISO)
    w0, w1 = (res.results[f"worker:{i}"]["models"][0] for i in range(2))
    assert res.results["worker:0"]["workers"] == 2
    assert w0["steps"] == w1["steps"] == 2 and w0["warmup_steps"] == 1
    assert w0["last_loss"] != w1["last_loss"]  # each worker its own batch
    assert w0["weights_sha256"] == w1["weights_sha256"]
    assert w0["initial_weights_sha256"] == w1["initial_weights_sha256"] != w0["weights_sha256"]
    assert res.isolation == ("netns" if NETNS else "none")
    assert cluster.leftover_processes(res.run_dir) == []


@pytest.mark.slow
@pytest.mark.extras
def test_horovod_runs_emulated_on_its_own_nodes(tmp_path, need):
    """Horovod on the emulated network (each worker its own node, address and host name): it waits
    t_grad, averages zeros of the real shapes over Gloo through the shaped links, replicas stay identical."""
    need("Horovod", horovod_available(), "tools/install_horovod.sh; needs cmake and g++")
    if not NETNS:
        pytest.skip("no private network namespace here")
    from repro.core import params
    from repro.experiments.distributed import runs

    p = params.resolve("distributed", "smoke", {"batch_size": 8, "warmup_steps": 1, "steps": 30})
    t_grad = 0.1
    summary, _ = runs.cluster_run("horovod", 2, p, tmp_path / "hvd", network=cluster.Network(bandwidth="100mbit"),
                                  emulate={"t_grad": {"tiny": t_grad}, "dilation": 1.0})
    (row,) = summary
    assert row["replicas_identical"] and row["steps_total"] == 60
    assert 0.5 * 2 * 8 / t_grad <= row["total_images_per_sec"] <= 2 * 8 / t_grad * 1.02  # never above the wait's bound
    # a two-member ring sends each worker's 2 (N - 1) / N = 1 copy of the gradients per step, over its own link
    grads = 30 * row["parameters"] * 4  # bytes of 30 steps' gradients
    # plus headers, and the link samples (every 0.2 s, later on a busy machine) around the window: 30 steps of
    # at least 0.1 s keep that widening small (10 steps had read 1.8 copies per step on a busy machine)
    for link in row["window_bytes"].values():
        assert 1.0 <= link["sent"] / grads <= 1.8, row["window_bytes"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["ps_sync", "ps_async"])
def test_emulated_ps_worker_waits_t_grad_in_every_timed_step(method, tmp_path):
    """An emulated PS worker waits t_grad x dilation in every timed step (the wait is a tensor argument of
    the traced step; that warm-up passes 0 is tested in test_emulation): images/sec stays under
    workers x batch / t_grad, and not far under it."""
    from repro.core import params
    from repro.experiments.distributed import runs

    p = params.resolve("distributed", "smoke", {"batch_size": 8, "warmup_steps": 2, "steps": 4})
    t_grad = 0.5
    summary, _ = runs.cluster_run(method, 2, p, tmp_path / "ps", network=cluster.Network(bandwidth="100mbit"),
                                  emulate={"t_grad": {"tiny": t_grad}, "dilation": 2.0})
    (row,) = summary
    bound = 2 * 8 / t_grad  # two workers, each one batch per t_grad (times are divided by the dilation)
    assert 0.6 * bound <= row["total_images_per_sec"] <= bound * 1.02


@pytest.mark.slow
def test_smoke_notebook_results(smoke_runs):
    run_dir = smoke_runs["distributed"]
    t = pd.read_csv(run_dir / "throughput.csv")
    # Horovod rows where the run had Horovod (CI reuses its bare stage-1 run; Horovod's all-reduce is
    # tested on its own above, where a missing Horovod fails under REPRO_REQUIRE_EXTRAS)
    had = not str(json.loads((run_dir / "provenance.json").read_text()).get("horovod", "")).startswith("Horovod not")
    methods = {"ring", "ps_async", "ps_sync"} | ({"horovod"} if had else set())
    assert set(t["method"]) == methods and set(t["workers"]) == {1, 2}
    assert len(t) == 2 * len(methods) and (t["model"] == "tiny").all()
    # exact step counts: every worker did `steps` timed steps (ring, sync PS: one per worker per step)
    steps = 30
    assert (t["steps_total"] == t["workers"] * steps).all()
    sync = t[t["method"] == "ps_sync"]
    assert (sync["updates"] == steps).all()  # one aggregated update per step
    assert (t.loc[t["method"] == "ps_async", "updates"] == t.loc[t["method"] == "ps_async", "steps_total"]).all()
    assert t.loc[t["method"].isin(["ring", "horovod"]), "replicas_identical"].astype(str).eq("True").all()
    assert t["total_images_per_sec"].between(1, 1e6).all()
    w = pd.read_csv(run_dir / "per_worker.csv")
    assert len(w) == 3 * len(methods)  # (1 + 2) workers per method
    led = pd.read_csv(run_dir / "ledger.csv")
    # the tiny smoke model is not a paper model: every throughput finding is "not measured" on smoke
    led = led.assign(id=list(claims.load(distributed.NAME))).set_index("id")
    findings = led.loc[list(FINDINGS)]
    assert len(findings) == 7
    decided = ["fault_tolerance", "ring_scaling", "async_vs_sync"]
    assert set(findings.drop(index=decided)["category"]) == {"not measured"}
    # with an emulated grid, async vs sync is never decided: emulated compute has no stragglers
    assert (led.loc["async_vs_sync", "category"], led.loc["async_vs_sync", "basis"]) == ("not testable here", "none")
    assert led.loc["async_vs_sync", "verdict"] == str(verdicts.FORCED_BY_EMULATION["async_vs_sync"])
    # ring scaling is checked on the emulated K80 cluster (ResNet50 gains from 1 to 2 workers), with the model of
    # the same profile beside it; one run of an emulated timing decides nothing, so it says what that run gave
    scaling = led.loc["ring_scaling"]
    assert (scaling["category"], scaling["basis"], scaling["runs"]) == ("not comparable", "emulated", 1)
    # (on cores that other work oversubscribed while it measured, the load gate says so first: repro.core.load)
    assert scaling["verdict"].startswith("not comparable (1 run of a stochastic quantity; a verdict needs >= 2 "
                                         "independent runs; the one run: consistent (") or \
        scaling["verdict"].startswith("not comparable (measured on oversubscribed cores"), scaling["verdict"]
    assert scaling["ours"] == "ring: resnet50: gains [emulated k80-p2.16xlarge, 1 run(s)]"
    assert "the analytic model of k80-p2.16xlarge: ring: resnet50: gains" in scaling["verdict"]
    # the model rows at the paper's N: decided only where the model is within 10 % of every emulated cluster and
    # meets its goal on published measurements of the methods judged (Horovod does; parameter servers do not)
    val = perfmodel.validate(run_dir)
    model = led.loc[list(MODEL_FINDINGS), "category"].to_dict()
    if val["error"].abs().max() <= 0.10:
        # ResNet50 gains with each added process in the model: consistent where that holds across the model's 80 %
        # interval, else not comparable, naming the interval (the package's interval, -0.13 to +0.05 of efficiency
        # on 2026-11-27, leaves the step from 10 to 12 processes open)
        ring = led.loc["model_ring_scaling"]
        assert ring["category"] == "consistent" or (ring["category"] == "not comparable"
                                                    and "80 % interval" in ring["verdict"]), ring["verdict"]
        assert {k: v for k, v in model.items() if k != "model_ring_scaling"} == {
            "model_horovod": "not comparable", "model_vgg_worst": "not testable here",
            "model_ps_efficiency": "not comparable"}
    else:
        assert set(model.values()) == {"not comparable"}
    _check_emulation(run_dir)
    # a worker killed mid-run: async PS finishes every scheduled step, ring all-reduce stops; no orphans.
    # The ring half is true by construction (the supervisor stops the job): not comparable, whatever the trials
    fault = led.loc["fault_tolerance"]
    assert (fault["category"], fault["runs"]) == ("not comparable", 1)
    assert fault["verdict"] == str(verdicts.fault_tolerance(pd.read_csv(run_dir / "faults.csv")).gate)
    assert fault["ours"] == ("async PS: finished with the remaining worker, 60 of 60 steps completed; ring (MWMS): "
                             "stopped with an error; sync PS (control): finished with the remaining worker too: the "
                             "coordinator re-queues a dead worker's closures, so the tolerance is the PS design's, not "
                             "asynchrony's; orphan processes: 0")  # 60: 2 x steps scheduled
    faults = pd.read_csv(run_dir / "faults.csv").set_index("method")
    assert faults.loc["ps_async", "outcome"] == "finished with the remaining worker"
    assert faults.loc["ps_async", "completed"] == faults.loc["ps_async", "scheduled"] == 2 * steps
    # the control: sync PS killed the same way also finishes, every step aggregated into one update
    assert faults.loc["ps_sync", "outcome"] == "finished with the remaining worker"
    assert faults.loc["ps_sync", "completed"] == faults.loc["ps_sync", "scheduled"] == 2 * steps
    assert faults.loc["ps_sync", "updates"] == steps
    assert faults.loc["ring", "outcome"] == "stopped with an error"
    assert faults.loc["ring", "error"] == "worker:1 was killed by SIGKILL while running the program"
    assert (faults["orphans"] == 0).all()
    # Table 1 audit at the paper's input sizes: Keras parameter counts, FLOPs by layer arithmetic
    t1 = pd.read_csv(run_dir / "table1.csv").set_index("model")
    t1["verdict"] = t1["verdict"].map(lambda v: str(V.today_of(v)))  # today's rule where the rule moved since
    assert t1.loc["vgg16", "ours_params_m"] == pytest.approx(138.357544)
    assert t1.loc["resnet50", "ours_params_m"] == pytest.approx(25.636712)
    assert t1.loc["vgg16", "ours_gflops"] == pytest.approx(30.94, abs=0.01)  # 15.47 G multiply-accumulates
    # counted from the architecture, shown but not decisive (issue 55: a printed figure free to move x0.2-x5 lands in
    # the 5 % band on none of 400 draws; claims.yaml): whether each agrees is said, with what was compared
    for model in ("vgg16", "vgg19"):
        assert t1.loc[model, "verdict"].startswith("not testable here (over each printed figure of its Table 1 row")
        assert "; here it holds; ours/paper: parameters 1.00" in t1.loc[model, "verdict"]
    assert t1.loc["resnet50", "verdict"].startswith("not testable here (over each printed figure of its Table 1 row")
    assert "; here it does not hold; ours/paper: parameters 1.025" in t1.loc["resnet50", "verdict"]
    assert t1.loc["inception_v3", "verdict"].startswith("not comparable")
    if "inception_v4" in t1.index:  # built, not the stand-in: 42.7 M against the paper's 65 M
        assert t1.loc["inception_v4", "ours_params_m"] == pytest.approx(42.742984)
        assert t1.loc["inception_v4", "verdict"].startswith("not testable here (like the other Table 1 rows")
        assert "; here it does not hold; ours/paper: parameters 0.658" in t1.loc["inception_v4", "verdict"]
    assert (run_dir / "scaling.csv").is_file() and (run_dir / "ratios.csv").is_file()
    # bandwidth sweep on the emulated network: bytes per step measured on the links vs analytic
    bw = pd.read_csv(run_dir / "bandwidth.csv")
    assert sorted(zip(bw["method"], bw["bandwidth"])) == [("ps_sync", "100mbit"), ("ps_sync", "10mbit"),
                                                          ("ring", "100mbit"), ("ring", "10mbit")]
    assert bw["analytic_mb_per_step"].tolist() == pytest.approx(
        [4 * 16618 / 1e6 * (1 if m == "ring" else 2) for m in bw["method"]])  # tiny: 16,618 parameters
    # what the links carried is the analytic volume plus protocol overhead (gRPC, TCP/IP headers)
    assert bw["measured_over_analytic"].between(1.0, 2.0).all()  # +-0.2 s sampling may add a warm-up step
    slow = bw.set_index(["method", "bandwidth"])
    assert (slow.loc[("ring", "10mbit"), "total_images_per_sec"] < slow.loc[("ring", "100mbit"), "total_images_per_sec"])


def _check_emulation(run_dir):
    """The smoke profile's emulated grid: ResNet50 at 224 px on the K80 profile, ring, 1 and 2 workers."""
    tp = pd.read_csv(run_dir / "emulated_throughput.csv")
    assert sorted(zip(tp["method"], tp["workers"])) == [("ring", 1), ("ring", 2)] and (tp["model"] == "resnet50").all()
    assert tp["replicas_identical"].astype(str).eq("True").all() and (tp["image_size"] == 224).all()
    dil = tp.set_index("workers")["dilation"]
    assert dil[1] == dil[2] > 10  # two need a large dilation at 25 Gb/s; one (no link) runs at theirs
    checks = pd.read_csv(run_dir / "emulation_checks.csv")
    one = checks[checks["check"].str.startswith("one ring worker")]
    assert len(one) == 1 and one["expected"].iloc[0] == pytest.approx(49.0)  # 16 / (16 / 49 s)
    # one ring worker waits t_grad and then really applies its 25.6 M zero gradients (~18 ms here), which
    # the dilation of its baseline divides, as in the clusters it is compared with
    assert abs(one["error"].iloc[0]) < 0.05, checks.to_string()
    # the two-worker ring again at twice its dilation: the same images/sec in emulated time. The check's own
    # bound is 5 % (its `within`); a smoke step of 16 images is mostly transfer, so on this busy 2-core VM
    # the first dilation runs a little CPU-bound (+3.8 % at twice it, measured 2026-11-25): 10 % here
    again = checks[checks["check"].str.startswith("two dilations: ring with 2 workers")]
    assert len(again) == 1 and len(checks) == 2 and abs(again["error"].iloc[0]) < 0.10, checks.to_string()
    assert again["dilation"].iloc[0] == pytest.approx(2 * dil[2], abs=0.01)
    # two workers: each waits the K80's t_grad, then all-reduces 100 MB at 25 Gb/s: at most 2 x 49 images/s
    two = tp.set_index("workers").loc[2, "total_images_per_sec"]
    assert 0.8 * 2 * 49 <= two <= 2 * 49 * 1.02


def test_horovod_missing_is_one_line_and_the_run_goes_on(monkeypatch, results_root, capsys):
    import repro.experiments.distributed.programs as dp

    monkeypatch.setattr(dp, "horovod_available", lambda: False)
    monkeypatch.setattr(runs, "cluster_run", lambda method, n, p, d, **kw: (
        [{"method": method, "workers": n, "model": "tiny", "total_images_per_sec": 100.0 * n,
          "images_per_sec_per_worker": 100.0, "sem": 0.0}], []))
    res = distributed.run("smoke", {"sweep_bandwidths": ["none"], "fault_tolerance": False, "emulate": "none"})
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["repro: Horovod not installed: tools/install_horovod.sh; the Horovod rows say so"]
    assert "horovod" not in set(res["throughput"]["method"])
    f = res["findings"].set_index("finding")
    assert f.loc["horovod", "verdict"] == "not measured (Horovod not installed: tools/install_horovod.sh)"
    assert res.provenance["horovod"] == "Horovod not installed: tools/install_horovod.sh"
    ledger = pd.read_csv(res.run_dir / "ledger.csv")
    assert ledger["verdict"].str.contains("Horovod not installed").sum() == 1


def test_inception_v4_as_built_has_the_published_size():
    """InceptionV4 (Szegedy et al. 2016) as :mod:`.inception_v4` builds it, 1000 classes at 299 px: exactly the
    trainable parameters of the timm / Cadene ``inception_v4`` (42,679,816, the widely published 42.7 M), and
    2 x 12.3 G multiply-accumulates (timm's model card: 12.3 GMACs) within 1 %."""
    import numpy as np

    from repro.experiments.distributed.inception_v4 import REFERENCE_TRAINABLE_1000

    net = distributed_models.build_model("inception_v4", 299, 1000)
    trainable = sum(int(np.prod(w.shape)) for w in net.trainable_weights)
    assert trainable == REFERENCE_TRAINABLE_1000 == 42_679_816
    assert net.count_params() - trainable == sum(2 * int(layer.moving_mean.shape[0]) for layer in net.layers
                                                 if type(layer).__name__ == "BatchNormalization")
    assert net.output.shape[1:] == (1000,) and net.count_params() / 1e6 == pytest.approx(42.74, abs=0.01)
    assert arithmetic.conv_dense_flops(net) / 2e9 == pytest.approx(12.3, rel=0.01)
