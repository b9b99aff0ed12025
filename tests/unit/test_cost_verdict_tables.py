"""The cost study's judges on tables with several rows per key: the row each one must pick (the MNIST
network, the reference provider, the CPU runs, the first row of a network) is not the first row of the
table, so a judge that picks the wrong one gives another "ours" or another verdict. Then the boundaries of
every band and threshold, the tables with several providers, GPUs and networks, and the runs without a GPU
(or without a CPU run): the verdict, number and ledger row each gives. Kills mutants that the falsification
cases' one-row tables leave alive (docs/developing.md, mutation testing)."""

from __future__ import annotations

import pandas as pd
import pytest

from repro.core import claims, paper, paramtypes
from repro.core import verdicts as V
from repro.core.verdicts import Category
from repro.experiments.cost_study import verdicts

P = paramtypes.partial("cost_study", {"reference_provider": "google_cloud_2017", "extrapolate_cores": [32, 24],
                                     "repetitions": 2})


def _runs(max_cores: int) -> pd.DataFrame:
    paper = {"cifar10_cnn": ("cifar10", 50_000, 200), "mnist_cnn": ("mnist", 60_000, 12)}  # the paper's protocol
    cpu = [{"device": "cpu", "cores": k, "network": n, "backend": "jax"}
           for n in ("cifar10_cnn", "mnist_cnn") for k in (1, 2, 4, 8, 16) if k <= max_cores]
    runs = pd.DataFrame(cpu + [{"device": "gpu", "cores": 32, "network": "mnist_cnn", "backend": "jax"}])
    for i, col in enumerate(("dataset", "n_train", "epochs")):
        runs[col] = runs["network"].map(lambda n: paper[n][i])
    runs["data_check"] = ""  # the files verified
    return runs


def _optimal() -> pd.DataFrame:
    rows = [  # the rows the judge must skip come first
        ("cifar10_cnn", "google_cloud_2017", "measured", 2, "measured"),
        ("mnist_cnn", "aws_2017", "measured", 4, "measured"),
        ("mnist_cnn", "aws_2017", "measured + extrapolated", 24, "extrapolated"),
        ("mnist_cnn", "google_cloud_2017", "measured", 8, "measured"),
        ("mnist_cnn", "google_cloud_2017", "measured", 16, "measured"),  # not the cheapest: second
        ("mnist_cnn", "google_cloud_2017", "measured + extrapolated", 32, "extrapolated"),
        ("mnist_cnn", "google_cloud_2017", "measured + extrapolated", 8, "measured"),
    ]
    return pd.DataFrame(rows, columns=["network", "provider", "among", "cores", "kind"])


def test_the_cheapest_mnist_core_count_is_read_from_the_reference_providers_rows():
    m = verdicts.optimal_cores_mnist({"runs": _runs(16), "optimal": _optimal()}, P)
    assert m.ours == ("cheapest measured: 8 core(s); cheapest including Amdahl extrapolations to 24, 32 cores: "
                      "32 core(s) (an extrapolation) [google_cloud_2017 prices]")
    assert (m.value, m.runs, m.gate, m.basis, m.note) == (8.0, 2, None, "measured", "google_cloud_2017 prices")
    lo, hi = claims.load("cost_study")["optimal_cores_mnist"].band
    assert lo <= m.value <= hi
    # the counterfactual: the reference provider's cheapest is 16 cores: another value, outside the band
    opt = _optimal().drop(index=3).reset_index(drop=True)
    assert verdicts.optimal_cores_mnist({"runs": _runs(16), "optimal": opt}, P).value == 16.0


def test_an_extrapolated_optimum_that_is_a_measured_configuration_says_so():
    opt = _optimal().drop(index=5).reset_index(drop=True)
    m = verdicts.optimal_cores_mnist({"runs": _runs(16), "optimal": opt}, P)
    assert m.ours.endswith("to 24, 32 cores: 8 core(s) (a measured configuration) [google_cloud_2017 prices]")


def test_too_few_cores_or_no_mnist_run_gates_the_optimum():
    few = verdicts.optimal_cores_mnist({"runs": _runs(8), "optimal": _optimal()}, P)
    hi = int(claims.load("cost_study")["optimal_cores_mnist"].band[1])
    assert few.value is None and few.runs == 2 and few.gate.category.value == "not testable here"
    assert few.gate.detail.startswith(f"only 1..8 cores on this machine; 8-{hi} is beyond")
    # the GPU row's 32 "cores" are not CPU cores: with CPU runs up to 16 the optimum is decided
    assert verdicts.optimal_cores_mnist({"runs": _runs(16), "optimal": _optimal()}, P).gate is None
    none = verdicts.optimal_cores_mnist({"runs": _runs(16), "optimal": _optimal().iloc[:1]}, P)
    assert none.ours == "MNIST not run [google_cloud_2017 prices]" and none.basis == "none"
    assert none.gate.category.value == "not testable here" and "MNIST network was not in this run" in none.gate.detail


def _memory() -> pd.DataFrame:
    return pd.DataFrame([
        ("gpu", "mnist_cnn", 3500.0, 0.5),  # a GPU row, first: never the CPU figure
        ("cpu", "mnist_cnn", 1232.0, 256.4),
        ("cpu", "mnist_cnn", 1431.0, 298.0),  # a second CPU row of the network: not shown
        ("cpu", "cifar10_cnn", 1231.0, 246.1),
    ], columns=["device", "network", "peak_rss_mb_mean", "rss_over_weights"])


def test_memory_over_weights_shows_each_networks_first_cpu_row():
    m = verdicts.memory_over_weights({"memory": _memory(), "runs": _runs(16)}, P)
    assert m.ours == ("mnist_cnn 1232 MB peak RSS = 256x its weights; "
                      "cifar10_cnn 1231 MB peak RSS = 246x its weights")
    assert m.holds is True and m.runs == 2 and m.basis == "measured"
    assert m.gate.category.value == "not comparable"
    assert m.gate.detail == "other networks; process RSS includes JAX itself"
    # the counterfactual: one network's first CPU row under its weights: the statement no longer holds
    small = _memory()
    small.loc[3, "rss_over_weights"] = 0.9
    assert verdicts.memory_over_weights({"memory": small, "runs": _runs(16)}, P).holds is False
    gpu_only = _memory().iloc[:1]
    empty = verdicts.memory_over_weights({"memory": gpu_only, "runs": _runs(16)}, P)
    assert (empty.ours, empty.basis, empty.holds) == ("-", "none", None)
    both = _runs(16).assign(backend=["tensorflow"] * 10 + ["jax"])
    assert verdicts.memory_over_weights({"memory": _memory(), "runs": both}, P).gate.detail.endswith(
        "includes JAX and TensorFlow itself")


def test_a_cheaper_gpu_instance_does_not_stand_for_the_cpu_core_optimum():
    """On a GPU host (16 cores + an H100) the cheapest MNIST configuration may be the GPU instance: the optimal
    table then also lists the cheapest CPU-only one, and the claim (a CPU core count) is judged on that."""
    from repro.experiments.cost_study import analysis

    base = {"network": "mnist_cnn", "provider": "google_cloud_2017", "kind": "measured", "billing_step_s": 60.0,
            "minimum_s": 600.0, "instance": "x", "price_source": "test"}
    costs = pd.DataFrame([{**base, "cores": 16, "gpus": 1, "cost_mean": 0.05, "t_sum_mean_s": 40.0},
                          {**base, "cores": 8, "gpus": 0, "cost_mean": 0.08, "t_sum_mean_s": 300.0},
                          {**base, "cores": 16, "gpus": 0, "cost_mean": 0.09, "t_sum_mean_s": 200.0}])
    opt = analysis.optimal_table(costs)
    measured = opt[opt["among"] == "measured"]
    assert list(zip(measured["cores"], measured["gpus"])) == [(16, 1), (8, 0)]  # the overall best, then the CPU one
    m = verdicts.optimal_cores_mnist({"runs": _runs(16), "optimal": opt}, P)
    assert m.value == 8.0 and "cheapest measured: 8 core(s)" in m.ours
    cpu_only = analysis.optimal_table(costs[costs["gpus"] == 0])  # without the GPU: one row, the same optimum
    assert list(cpu_only[cpu_only["among"] == "measured"]["cores"]) == [8]


# --- several providers, GPUs and networks; runs without a GPU or without CPU runs ------------------------

# three repetitions, extrapolated to 16 cores
P3 = paramtypes.partial("cost_study", {"reference_provider": "google_cloud_2017", "extrapolate_cores": [16],
                                      "repetitions": 3})
K80 = {"gpu": {"gpus": 1, "model": "Tesla K80", "reason": "1 GPU(s) visible"},
       "docker": {"inside_docker": False, "docker_engine": False, "reason": "no docker client"}}
H100 = {**K80, "gpu": {**K80["gpu"], "model": "NVIDIA H100 80GB HBM3"}}
NO_GPU = {"gpu": {"gpus": 0, "model": "", "reason": "no GPU visible"}, "docker": K80["docker"]}
GOOGLE, AWS = "google_cloud_2017", "aws_2017"


PAPER_PROTOCOL = {"mnist_cnn": {"dataset": "mnist", "n_train": 60_000, "epochs": 12, "data_check": ""},
                  "cifar10_cnn": {"dataset": "cifar10", "n_train": 50_000, "epochs": 200, "data_check": ""}}


def _tables(configs) -> dict:
    """Tables of a run from ``configs``: (network, device, cores, gpus, measured time in s, {provider: cost})."""
    runs, timing, costs = [], [], []
    for net, dev, k, g, t, prices in configs:
        runs.append({"network": net, "device": dev, "cores": k, "gpus": g, **PAPER_PROTOCOL[net]})
        timing.append({"network": net, "device": dev, "cores": k, "gpus": g, "t_measured_mean_s": t})
        costs += [{"network": net, "device": dev, "cores": k, "gpus": g, "kind": "measured", "provider": prov,
                   "cost_mean": c} for prov, c in prices.items()]
    optimal = pd.DataFrame([{"network": "mnist_cnn", "provider": GOOGLE, "among": among, "cores": 12,
                             "kind": "measured"} for among in ("measured", "measured + extrapolated")])
    return {"runs": pd.DataFrame(runs), "timing": pd.DataFrame(timing), "costs": pd.DataFrame(costs),
            "optimal": optimal, "memory": pd.DataFrame()}


def _cpu(net: str, gpu_speedup: float | None = None, gpu_cost: float | None = None, cpu12_time: float = 120.0):
    """The CPU runs on 1 and 12 cores of ``net`` (12 cores cost 1.0 at Google), and one GPU run with
    ``gpu_speedup`` over 12 cores costing ``gpu_cost`` at Google (no GPU run without a speed-up)."""
    rows = [(net, "cpu", 1, 0, 1000.0, {GOOGLE: 5.0}), (net, "cpu", 12, 0, cpu12_time, {GOOGLE: 1.0})]
    if gpu_speedup is not None:
        rows.append((net, "gpu", 12, 1, cpu12_time / gpu_speedup, {GOOGLE: gpu_cost} if gpu_cost else {}))
    return rows


def test_gpu_vs_cpu_takes_its_networks_cpu_the_reference_core_count_one_gpu_and_the_reference_provider():
    tables = _tables([
        ("cifar10_cnn", "cpu", 12, 0, 600.0, {GOOGLE: 9.0}),  # another network's CPU: another time
        ("mnist_cnn", "cpu", 1, 0, 1000.0, {AWS: 7.0, GOOGLE: 5.0}),  # fewer cores, another price
        ("mnist_cnn", "cpu", 12, 0, 120.0, {AWS: 1.0, GOOGLE: 2.0}),
        ("mnist_cnn", "gpu", 12, 2, 20.0, {AWS: 8.0, GOOGLE: 10.0}),  # two GPUs: not the comparison
        ("mnist_cnn", "gpu", 12, 1, 40.0, {AWS: 1.0, GOOGLE: 6.0}),
    ])
    speed, ratio, cores = verdicts.gpu_vs_cpu(tables, "mnist_cnn", GOOGLE)
    assert (speed, ratio, cores) == (3.0, (3.0, GOOGLE), 12)
    # the reference provider is not the first in the alphabet: the other one's ratio would be 1.0
    assert verdicts.gpu_vs_cpu(tables, "mnist_cnn", AWS)[1] == (1.0, AWS)
    m = verdicts.gpu_mnist_faster_dearer(tables, P3, K80)
    assert m.ours == "3.00x faster than 12 cores; cost ratio 3.00 (google_cloud_2017)"
    assert m.holds is True


def test_a_reference_provider_without_a_gpu_price_falls_back_to_the_one_that_has_both():
    tables = _tables([
        ("cifar10_cnn", "cpu", 12, 0, 120.0, {AWS: 2.0, GOOGLE: 1.0}),
        ("cifar10_cnn", "gpu", 12, 1, 24.0, {AWS: 1.4}),
    ])
    assert verdicts.gpu_vs_cpu(tables, "cifar10_cnn", GOOGLE) == (5.0, (0.7, AWS), 12)
    m = verdicts.gpu_cifar_cost_saving(tables, P3, K80)
    assert (m.value, m.ours) == (0.7, "GPU costs 0.70x the 12-core CPU run (aws_2017)")


def test_the_reference_providers_ratio_decides_the_cifar_saving():
    tables = _tables([
        ("cifar10_cnn", "cpu", 12, 0, 120.0, {AWS: 1.0, GOOGLE: 2.0}),
        ("cifar10_cnn", "gpu", 12, 1, 24.0, {AWS: 3.0, GOOGLE: 1.4}),
    ])
    m = verdicts.gpu_cifar_cost_saving(tables, P3, K80)
    assert m.value == pytest.approx(0.7) and m.ours.endswith("(google_cloud_2017)")
    assert claims.row(claims.load("cost_study")["gpu_cifar_cost_saving"], m)["category"] == "reproduced"


def test_a_gpu_run_with_no_priced_instance_is_judged_on_its_speed_alone():
    tables = _tables(_cpu("mnist_cnn", 3.0) + _cpu("cifar10_cnn", 5.0))
    assert verdicts.gpu_vs_cpu(tables, "cifar10_cnn", GOOGLE) == (5.0, None, 12)
    mnist = verdicts.gpu_mnist_faster_dearer(tables, P3, K80)
    assert (mnist.ours, mnist.holds, mnist.gate) == ("3.00x faster than 12 cores", True, None)
    cifar = verdicts.gpu_cifar_cost_saving(tables, P3, K80)
    assert (cifar.ours, cifar.basis, cifar.value) == ("-", "none", None)
    assert cifar.gate == V.not_testable("no priced GPU instance")
    row = claims.row(claims.load("cost_study")["gpu_cifar_cost_saving"], cifar)
    assert (row["category"], row["basis"], row["runs"], row["ours"]) == ("not testable here", "none", 0, "-")


def test_a_network_without_a_gpu_run_leaves_the_other_networks_speed_up():
    tables = _tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn"))
    assert verdicts.gpu_vs_cpu(tables, "cifar10_cnn", GOOGLE) is None
    m = verdicts.vendor_gpu_speedup_overstated(tables, P3, K80)
    assert (m.ours, m.holds, m.note) == ("3.00x", True, "")


def test_the_vendor_claim_lists_both_speed_ups_and_its_lowest_claim_is_not_below_them():
    holds = verdicts.vendor_gpu_speedup_overstated(_tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn", 5.0, 0.7)),
                                               P3, K80)
    assert (holds.ours, holds.holds, holds.note, holds.runs) == ("3.00x, 5.00x", True, "", 3)
    assert claims.row(claims.load("cost_study")["vendor_gpu_speedup_overstated"], holds)["verdict"] == "reproduced"
    at_claim = verdicts.vendor_gpu_speedup_overstated(
        _tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn", 8.0, 0.7)), P3, K80)
    assert (at_claim.ours, at_claim.holds, at_claim.note) == ("3.00x, 8.00x", False, "measured up to 8.0x")
    mnist_fast = verdicts.vendor_gpu_speedup_overstated(
        _tables(_cpu("mnist_cnn", 9.0, 3.0) + _cpu("cifar10_cnn", 5.0, 0.7)), P3, K80)
    assert (mnist_fast.ours, mnist_fast.holds) == ("9.00x, 5.00x", False)


@pytest.mark.parametrize("speed, ratio", [(2.0, 3.0), (4.0, 3.0), (3.0, 2.0), (3.0, 4.0)])
def test_the_ends_of_the_papers_speed_up_and_cost_ratio_ranges_hold(speed, ratio):
    m = verdicts.gpu_mnist_faster_dearer(_tables(_cpu("mnist_cnn", speed, ratio)), P3, K80)
    assert m.holds is True and m.gate is None and m.runs == 3


def test_gated_gpu_findings_keep_their_runs():
    tables = _tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn", 5.0, 0.7))
    mnist = verdicts.gpu_mnist_faster_dearer(tables, P3, H100)
    assert mnist.gate.category is Category.NOT_COMPARABLE and mnist.runs == 3
    ram = verdicts.cpu_vs_gpu_ram(tables, P3, K80)
    assert (ram.ours, ram.runs, ram.gate) == ("see the memory table", 3, V.not_comparable("no number in the paper"))
    row = claims.row(claims.load("cost_study")["gpu_mnist_faster_dearer"], mnist)
    assert (row["category"], row["basis"], row["runs"]) == ("not comparable", "measured", 3)


def test_a_run_without_a_gpu_gates_every_gpu_finding_with_the_reason():
    tables = _tables(_cpu("mnist_cnn") + _cpu("cifar10_cnn"))
    measured = verdicts.measure_claims(tables, P3, NO_GPU)
    expect = {"gpu_mnist_faster_dearer": "-", "gpu_cifar_cost_saving": "-", "vendor_gpu_speedup_overstated": "-",
              "cpu_vs_gpu_ram": "CPU peak RSS only"}
    said = claims.load("cost_study")
    for cid, ours in expect.items():
        m = measured[cid]
        assert (m.ours, m.basis, m.gate) == (ours, "none", V.not_testable("no GPU visible")), cid
        row = claims.row(said[cid], m)
        assert (row["ours"], row["category"], row["basis"], row["runs"]) == (ours, "not testable here", "none", 0)
        assert row["verdict"] == "not testable here (no GPU visible)", cid


def test_a_run_without_cpu_runs_cannot_decide_the_cheapest_core_count():
    tables = _tables([("mnist_cnn", "gpu", 12, 1, 40.0, {GOOGLE: 3.0})])
    m = verdicts.optimal_cores_mnist(tables, P3)
    assert m.gate.category is Category.NOT_TESTABLE and m.value is None and m.runs == 3


@pytest.mark.parametrize("docker, ours, why", [
    ({"inside_docker": True, "docker_engine": False, "reason": "no docker client"}, "inside a container",
     "this run is itself inside a container, with no bare-metal run to compare with, and no docker client"),
    ({"inside_docker": True, "docker_engine": True, "reason": "docker 24"}, "inside a container",
     "this run is inside a container; compare it with a bare-metal run of the same profile"),
    ({"inside_docker": False, "docker_engine": False, "reason": "no docker client"}, "bare metal only",
     "no docker client; the Dockerfile runs the same sweep where an engine exists"),
])
def test_docker_finding_says_where_the_run_was_and_stays_without_basis(docker, ours, why):
    m = verdicts.docker_no_worse({**K80, "docker": docker})
    assert (m.ours, m.basis, m.gate) == (ours, "none", V.not_testable(why))
    row = claims.row(claims.load("cost_study")["docker_no_worse"], m)
    assert (row["category"], row["basis"], row["runs"]) == ("not testable here", "none", 0)


def _rss_over_weights(*ratios: float) -> pd.DataFrame:
    return pd.DataFrame([("cpu", f"net{i}", 1000.0, r) for i, r in enumerate(ratios)],
                        columns=["device", "network", "peak_rss_mb_mean", "rss_over_weights"])


def test_memory_over_weights_names_the_framework_and_holds_only_above_the_weights():
    runs = pd.DataFrame([{"device": "cpu", "cores": 1, "network": "net0", "backend": "mxnet"}])
    m = verdicts.memory_over_weights({"memory": _rss_over_weights(1.5), "runs": runs}, P3)
    assert m.holds is True
    assert m.gate == V.not_comparable("other networks; process RSS includes mxnet itself")
    bare = verdicts.memory_over_weights({"memory": _rss_over_weights(1.5), "runs": runs.drop(columns="backend")}, P3)
    assert bare.gate.detail == "other networks; process RSS includes TensorFlow itself"
    assert verdicts.memory_over_weights({"memory": _rss_over_weights(1.5, 1.0), "runs": runs}, P3).holds is False
    empty = verdicts.memory_over_weights({"memory": pd.DataFrame(), "runs": runs}, P3)
    assert (empty.ours, empty.basis, empty.gate) == ("-", "none", m.gate)
    row = claims.row(claims.load("cost_study")["memory_over_weights"], empty)
    assert (row["category"], row["basis"], row["runs"]) == ("not comparable", "none", 0)


def _reported_with_mnist_cost_ratio(low: float | None) -> pd.DataFrame:
    reported = paper.reported().copy()
    at = (reported["paper"] == "cloudcost2017") & (reported["id"] == "gpu_cost_ratio_mnist_min")
    if low is None:
        return reported[~at]
    reported.loc[at, "value"] = str(low)
    return reported


def test_gpu_dearer_so_cpu_optimal_states_the_papers_numbers_and_why():
    m = verdicts.gpu_dearer_so_cpu_optimal(paper.reported())
    assert m.ours == "GPU cost 2-4x the 12-core run on MNIST; reported optimum 8-12 cores, no GPU"
    assert (m.holds, m.basis, m.runs) == (True, "equations", 1)
    assert m.note == "the lowest cost ratio, 2, is above 1: every GPU run is dearer than the 12-core one"
    row = claims.row(claims.load("cost_study")["gpu_dearer_so_cpu_optimal"], m)  # decisive false: it restates finding 2
    assert (row["category"], row["runs"], row["basis"]) == ("not comparable", 1, "equations")
    assert row["verdict"] == f"not comparable ({m.gate.detail}; {m.note})"
    # a cost ratio of exactly 1 is the GPU costing what the CPU run costs: not dearer
    same = verdicts.gpu_dearer_so_cpu_optimal(_reported_with_mnist_cost_ratio(1.0))
    assert same.holds is False
    assert same.note == "at a cost ratio of 1 (not above 1) the GPU run would be the cheaper one"
    with pytest.raises(KeyError, match="no reported value cloudcost2017/gpu_cost_ratio_mnist_min"):
        verdicts.gpu_dearer_so_cpu_optimal(_reported_with_mnist_cost_ratio(None))
