"""Falsification cases of the cost_study claims: the judges of verdicts.py on the tables of a run on a
12-core K80 host with 3 repetitions (the claim holding, and not); the 2-GPU speed-up on a whole K80 (2 GPUs).
The rows on the paper's own numbers (gpu_dearer_so_cpu_optimal, price_outweighs_speed) are not decisive: they
cannot come out otherwise (claims.yaml), so they have no case here (test_flip_cost_study.py shows why)."""

import falsify
import pandas as pd
import pytest

from repro.core import paramtypes
from repro.experiments.cost_study import verdicts

EXPERIMENT = "cost_study"

PARAMS = paramtypes.partial("cost_study", {"reference_provider": "google_cloud_2017", "extrapolate_cores": [16],
                                           "repetitions": 3})
K80 = {"gpu": {"gpus": 1, "model": "Tesla K80", "reason": "1 GPU(s) visible"},
       "docker": {"inside_docker": False, "docker_engine": False, "reason": "no docker client"}}


def _tables(opt_cores: int = 10, mnist=(3.0, 3.0), cifar=(5.0, 0.7), two_gpus: float | None = None) -> dict:
    """Tables of a run with 1 and 12 CPU cores and one GPU; ``mnist``/``cifar``: (GPU speed-up over
    12 cores, GPU/CPU cost ratio); ``opt_cores``: the cheapest measured core count for MNIST; ``two_gpus``:
    where given, a 2-GPU run of each network that many times as fast as its 1-GPU run (a whole K80)."""
    runs, timing, costs = [], [], []
    protocol = {"mnist_cnn": ("mnist", 60_000, 12), "cifar10_cnn": ("cifar10", 50_000, 200)}  # the paper's
    for net, (speed, ratio) in (("mnist_cnn", mnist), ("cifar10_cnn", cifar)):
        dataset, n_train, epochs = protocol[net]
        two = [("gpu", 12, 2, 120.0 / speed / two_gpus, ratio)] if two_gpus else []
        for dev, k, g, t, c in (("cpu", 1, 0, 1000.0, 1.0), ("cpu", 12, 0, 120.0, 1.0),
                                ("gpu", 12, 1, 120.0 / speed, ratio), *two):
            runs.append({"network": net, "device": dev, "cores": k, "gpus": g, "dataset": dataset,
                         "n_train": n_train, "epochs": epochs, "data_check": ""})
            timing.append({"network": net, "device": dev, "cores": k, "gpus": g, "t_measured_mean_s": t})
            costs.append({"network": net, "device": dev, "cores": k, "gpus": g, "kind": "measured",
                          "provider": "google_cloud_2017", "cost_mean": c})
    optimal = pd.DataFrame([{"network": "mnist_cnn", "provider": "google_cloud_2017", "among": among,
                             "cores": opt_cores, "kind": "measured"} for among in ("measured", "measured + extrapolated")])
    return {"runs": pd.DataFrame(runs), "timing": pd.DataFrame(timing), "costs": pd.DataFrame(costs),
            "optimal": optimal, "memory": pd.DataFrame()}


def _judge(cid: str, summary: dict = K80, **tables):
    return verdicts.measure_claims(_tables(**tables), PARAMS, summary)[cid]


WHOLE_K80 = {**K80, "gpu": {**K80["gpu"], "gpus": 2, "reason": "2 GPU(s) visible"}}


CASES = {
    "optimal_cores_mnist": lambda: (_judge("optimal_cores_mnist", opt_cores=10),
                                    _judge("optimal_cores_mnist", opt_cores=2)),
    "gpu_mnist_faster_dearer": lambda: (_judge("gpu_mnist_faster_dearer", mnist=(3.0, 3.0)),
                                        _judge("gpu_mnist_faster_dearer", mnist=(3.0, 0.8))),
    "gpu_cifar_cost_saving": lambda: (_judge("gpu_cifar_cost_saving", cifar=(5.0, 0.7)),
                                      _judge("gpu_cifar_cost_saving", cifar=(5.0, 1.4))),
    "vendor_gpu_speedup_overstated": lambda: (_judge("vendor_gpu_speedup_overstated", cifar=(5.0, 0.7)),
                                              _judge("vendor_gpu_speedup_overstated", cifar=(9.0, 0.7))),
    "two_gpu_speedup": lambda: (_judge("two_gpu_speedup", WHOLE_K80, two_gpus=1.6),
                                _judge("two_gpu_speedup", WHOLE_K80, two_gpus=0.9)),
    "cpu_efficiency_understated": lambda: (_judge("cpu_efficiency_understated", mnist=(3.0, 3.0), cifar=(5.0, 0.7)),
                                           _judge("cpu_efficiency_understated", mnist=(3.0, 0.6), cifar=(5.0, 0.7))),
}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_flips(cid):
    falsify.check(EXPERIMENT, CASES, cid)


def test_the_gpu_claims_on_another_gpu_are_gated_whatever_the_numbers():
    h100 = {**K80, "gpu": {**K80["gpu"], "model": "NVIDIA H100 80GB HBM3"}}
    for mnist, cifar in (((3.0, 3.0), (5.0, 0.7)), ((3.0, 0.8), (9.0, 1.4))):
        measured = verdicts.measure_claims(_tables(mnist=mnist, cifar=cifar), PARAMS, h100)
        for cid in ("gpu_mnist_faster_dearer", "gpu_cifar_cost_saving", "vendor_gpu_speedup_overstated"):
            assert measured[cid].gate.category.value == "not comparable", cid
