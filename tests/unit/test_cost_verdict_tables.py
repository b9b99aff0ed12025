"""The cost study's judges on tables with several rows per key: the row each one must pick (the MNIST
network, the reference provider, the CPU runs, the first row of a network) is not the first row of the
table, so a judge that picks the wrong one gives another "ours" or another verdict. Kills mutants that
the falsification cases' one-row tables leave alive (docs/developing.md, mutation testing)."""

from __future__ import annotations

import pandas as pd

from repro.core import claims, paramtypes
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
