"""The analytic model's new terms on hand-computed cases, and the model against published real measurements
(repro.predict.overlap, repro.predict.measured, `repro predict --validate measurements`)."""

import dataclasses

import pytest

from repro import cli
from repro.cluster.spec import ClusterError
from repro.predict import hardware, measured, overlap, perfmodel

TWO_LAYERS = {"toy": [(100, 1), (300, 3)]}  # (weights, forward FLOPs) in forward order


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(overlap, "_table", lambda: TWO_LAYERS)


def test_gradients_are_ready_layer_by_layer_in_reverse_during_the_last_two_thirds(toy):
    """Compute 3 s: forward 1 s, backward 2 s shared by FLOPs (3/4 then 1/4), the last layer first."""
    assert overlap.ready("toy", 3.0) == [(pytest.approx(2.5), 1200.0), (pytest.approx(3.0), 400.0)]


def test_fusion_packs_what_is_ready_at_a_cycle_tick_and_without_it_each_tensor_goes_alone():
    events = [(0.001, 10.0), (0.002, 10.0), (0.012, 10.0)]
    wire = lambda b: b / 1000  # noqa: E731
    # tick 5 ms: both first tensors in one 20-byte message (ends 25 ms); the third waits for the channel: 35 ms
    assert overlap.finish(events, 100.0, 0.005, wire) == pytest.approx(0.035)
    # a 15-byte buffer: the second tensor does not fit beside the first; 5+10 ms, then 15+10, then 25+10
    assert overlap.finish(events, 15.0, 0.005, wire) == pytest.approx(0.035)
    assert overlap.finish(events, 0.0, 0.0, wire) == pytest.approx(0.031)  # 1+10, 11+10, 21+10 ms


def test_ddp_cuts_its_buckets_once_and_a_bucket_waits_for_its_last_layer(monkeypatch):
    """PyTorch DDP's buckets (overlap.buckets): a 1 MiB first bucket, then buckets of the cap in the order the backward
    pass makes gradients ready, each sent when its last gradient is ready. ResNet-50 over 10 Gb/s: its last bucket
    waits for the first layers' gradients, at the very end of the backward pass, and then crosses the link whole (a few
    ms exposed); packed as Horovod packs (what is ready when the channel is free, the term removed) nearly everything
    has gone by then and almost nothing is exposed. On the published set (fast links) the term moves no DDP point by
    more than half a percentage point."""
    mib = 2**20
    events = [(1.0, 0.5 * mib), (2.0, 0.75 * mib), (3.0, 20 * mib), (4.0, 10 * mib)]
    assert overlap.buckets(events, 25 * mib) == [(1.0, 0.5 * mib), (3.0, 20.75 * mib), (4.0, 10 * mib)]
    raw = {"link": "10gbit", "gpus_per_host": 1, "images_per_s": {"resnet50": 200}, "batch": 64, "overlap": True,
           "fusion_bytes": 25 * mib, "cycle_s": 0.0}
    prof = hardware.profile("ddp-10g", raw)
    bucketed = perfmodel.step(prof, "resnet50", "ddp", 8, 64, 25_636_712)["comm_s"]
    monkeypatch.setattr(perfmodel, "BUCKETS", False)
    packed = perfmodel.step(prof, "resnet50", "ddp", 8, 64, 25_636_712)["comm_s"]
    assert bucketed > 0.002 and packed < bucketed / 10
    moved = []
    for p in (p for p in measured.load_all() if p.method == "ddp" and p.workers > 1):
        monkeypatch.setattr(perfmodel, "BUCKETS", True)
        with_term = measured.predict(p)["efficiency"]
        monkeypatch.setattr(perfmodel, "BUCKETS", False)
        moved.append(abs(with_term - measured.predict(p)["efficiency"]))
    assert max(moved) < 0.005


def test_the_forward_pass_waits_for_each_layers_weights(toy):
    """Weights of 400 bytes at 400 B/s in forward order (0.25 s, then 0.75 s more); forward 0.25 + 0.75 s."""
    assert overlap.forward_end("toy", 3.0, 400.0, lambda b: b / 400) == pytest.approx(1.75)
    assert overlap.forward_end("toy", 3.0, 400.0, lambda b: 0.0) == pytest.approx(1.0)


def _hosts(**kw) -> hardware.Profile:
    base = {"images_per_s": {"vgg16": 100.0}, "batch": 32, "link": "25gbit", "latency_s": 1e-4, "gpus_per_host": 4,
            "intra_link": "96gbit", "intra_latency_s": 1e-5}
    return hardware.profile("hosts", {**base, **kw})


def test_a_ring_over_two_hosts_is_bound_by_the_slower_of_the_network_and_the_hosts_link():
    prof, size = _hosts(), 4.0 * 1e8
    share = 2 * 7 / 8 * size
    inter = share * 8 / (25e9 * hardware.GOODPUT) + 14 * 1e-4
    assert perfmodel.allreduce_seconds(prof, 8, size) == pytest.approx(inter)
    # N = 4 on one host: 2 (N - 1) / N over the host's link, 6 hops of its latency
    assert perfmodel.allreduce_seconds(prof, 4, size) == pytest.approx(2 * 3 / 4 * size * 8 / 96e9 + 6 * 1e-5)
    assert perfmodel.allreduce_seconds(prof, 1, size) == 0


def test_a_parameter_server_phase_counts_the_busiest_link():
    size = 1e8
    wire = lambda b, rate=25e9 * hardware.GOODPUT: b * 8 / rate  # noqa: E731
    # shards on 2 hosts of 4 GPUs that sum their GPUs first: a host sends and receives half the weights;
    # inside a host, 2 GPUs behind one switch move 2 S to the host
    agg = _hosts(ps_on_workers=True, host_aggregation=True, gpus_per_switch=2)
    got = perfmodel.ps_phase_seconds(agg, 8, 2, size)
    assert got == pytest.approx(max(wire(0.5 * size), wire(2 * size, 96e9)) + 1e-4)
    # without the host's sum: its 4 GPUs' copies cross the network (2 S each way)
    assert perfmodel.ps_phase_seconds(dataclasses.replace(agg, host_aggregation=False), 8, 2, size) == \
        pytest.approx(max(wire(4 * 0.5 * size), wire(2 * size, 96e9)) + 1e-4)
    # one server on a node of its own: its link carries every host's copies (2 hosts x 4 GPUs x S)
    sep = _hosts(gpus_per_switch=2)
    assert perfmodel.ps_phase_seconds(sep, 8, 1, size) == pytest.approx(wire(8 * size) + 1e-4)


def test_overlap_hides_communication_behind_the_backward_pass_and_the_overhead_is_a_share_of_compute():
    flat = _hosts(gpus_per_host=1, intra_link=None, latency_s=0.0, link="10gbit")
    no = perfmodel.step(flat, "vgg16", "horovod", 8, 32, perfmodel.PARAMETERS["vgg16"])
    yes = perfmodel.step(dataclasses.replace(flat, overlap=True, fusion_bytes=overlap.HOROVOD_FUSION_BYTES,
                                             cycle_s=overlap.HOROVOD_CYCLE_S), "vgg16", "horovod", 8, 32,
                         perfmodel.PARAMETERS["vgg16"])
    # 0.81 s of all-reduce; the backward pass (2/3 of 0.32 s) hides up to 0.21 s of it
    assert no["comm_s"] - 0.22 < yes["comm_s"] < no["comm_s"] - 0.15 and yes["efficiency"] > no["efficiency"] + 0.05
    more = perfmodel.step(flat, "vgg16", "horovod", 8, 32, perfmodel.PARAMETERS["vgg16"], overhead=0.1)
    assert 1 / more["efficiency"] == pytest.approx(1 / no["efficiency"] + 0.1)
    assert perfmodel.step(flat, "vgg16", "horovod", 1, 32, 1000, overhead=0.1)["efficiency"] == 1  # N = 1: none


def test_the_validation_set_has_four_sources_and_thirty_points_and_a_declared_split():
    points = measured.load()
    sources = {p.source for p in points}
    assert sources == {"tf_benchmarks", "bugliarello2017", "horovod2018", "slampa2017"}
    scored = [p for p in points if p.workers > 1]
    assert len(scored) >= 30 and {p.split for p in scored} == {"train", "test"}
    multi_host = {p.source for p in scored if p.workers > p.gpus_per_host}
    assert {"tf_benchmarks", "bugliarello2017", "horovod2018"} <= multi_host
    assert all(p.reading in ("table", "text") for p in points)


def test_the_model_meets_the_median_goal_on_the_held_out_half_and_misses_the_worst_where_the_book_says():
    """Held-out half: median 2.6 pp (goal 5); worst 15.7 pp (goal 10), the thesis' asynchronous GoogLeNet (its own
    equations miss it too); TF's NCCL ring on a DGX-1, modelled without overlap since issue 48, within 14.1 pp;
    Horovod within 4.7 pp."""
    overheads, table = measured.package_validation()
    o = measured.overall(table)
    assert o["points"] >= 40 and o["median_pp"] <= measured.GOAL_MEDIAN_PP
    worst = table[(table["split"] == "test") & (table["workers"] > 1)].set_index("id")["error_pp"].abs()
    assert worst.idxmax() == "slampa2017-002" and o["worst_pp"] == pytest.approx(15.7, abs=0.1)
    per = measured.method_errors(table)
    assert per.loc["horovod", "worst_pp"] < 5 and per.loc["horovod", "median_pp"] < 1.5
    assert per.loc["ring", "worst_pp"] == pytest.approx(14.1, abs=0.1)
    assert set(overheads) == {"horovod/horovod", "tensorflow/ps_sync", "tensorflow/ring", "thesis/ps_async",
                              "thesis/ps_sync"}


def test_the_validation_fails_without_overlap_or_without_the_hosts(monkeypatch):
    """Counterfactuals: the same set, the overhead fitted again, fails the goal when a term is taken out:
    without overlap Horovod's median error passes 5 pp; with every GPU on its own host (no shared PCIe, no
    host sum) the TensorFlow PS points miss by over 30 pp."""
    points = measured.load()
    monkeypatch.setattr(measured, "TERMS", {k: (False,) + v[1:] for k, v in measured.TERMS.items()})
    assert measured.method_errors(measured.validate(points)).loc["horovod", "median_pp"] > measured.GOAL_MEDIAN_PP
    monkeypatch.undo()
    flat = [p.model_copy(update={"gpus_per_host": 1, "gpus_per_switch": None, "intra_link": "none",
                                 "inter_link": p.inter_link if p.inter_link != "none" else
                                 ("nvlink-p100" if p.intra_link == "nvlink-p100" else "pcie3")}) for p in points]
    assert measured.method_errors(measured.validate(flat)).loc["ps_sync", "worst_pp"] > 30


def test_a_malformed_measurements_file_is_one_line(tmp_path):
    good = measured.default_file().read_text().splitlines()
    cases = {"workers": ("0", "workers"), "inter_link": ("7gbe", "links.yaml"), "method": ("allgather", "method")}
    header = good[0].split(",")
    for field, (value, word) in cases.items():
        row = next(iter(__import__("csv").DictReader(good)))
        row[field] = value
        f = tmp_path / f"{field}.csv"
        f.write_text(good[0] + "\n" + ",".join(f'"{row[h]}"' for h in header) + "\n")
        with pytest.raises(ClusterError) as err:
            measured.load(f)
        assert "\n" not in str(err.value) and str(f) in str(err.value) and word in str(err.value)
    with pytest.raises(ClusterError, match="no rows"):
        (tmp_path / "empty.csv").write_text(good[0] + "\n")
        measured.load(tmp_path / "empty.csv")


def test_repro_predict_validates_against_measurements_and_a_users_file(tmp_path, capsys):
    assert cli.main(["predict", "--validate", "measurements"]) == 0
    out = capsys.readouterr().out
    assert "held-out half: 46 points" in out and "horovod2018" in out and "per-step overhead fitted" in out
    mine = tmp_path / "mine.csv"
    mine.write_text("\n".join(measured.default_file().read_text().splitlines()[:9]) + "\n")
    assert cli.main(["predict", "--validate", str(mine)]) == 0
    assert "8 published measurements" in capsys.readouterr().out
    assert cli.main(["predict", "--validate", str(tmp_path / "nope.csv")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_repro_predict_takes_a_multi_gpu_host_and_says_what_it_cannot_model(tmp_path, capsys):
    f = tmp_path / "dgx.yaml"
    f.write_text("images_per_s: {resnet50: 219, mymodel: 50}\nbatch: 64\nlink: 100gbit\ngpus_per_host: 8\n"
                 "gpus_per_switch: 2\nintra_link: 96gbit\noverlap: true\n")
    assert cli.main(["predict", "--hardware", str(f), "--model", "resnet50", "--method", "horovod",
                     "--workers", "1,8,16"]) == 0
    out = capsys.readouterr().out
    assert "not modelled:" in out and "input pipeline" in out
    assert cli.main(["predict", "--hardware", str(f), "--model", "mymodel", "--method", "horovod",
                     "--workers", "8", "--parameters", "1000000"]) == 0
    assert "mymodel has no layer table" in capsys.readouterr().out
    (tmp_path / "bad.yaml").write_text("images_per_s: {resnet50: 219}\nbatch: 64\nlink: 10gbit\ngpus_per_host: 8\n")
    assert cli.main(["predict", "--hardware", str(tmp_path / "bad.yaml"), "--model", "resnet50", "--method",
                     "horovod"]) == 2
    assert "gpus_per_host > 1 needs intra_link" in capsys.readouterr().err
