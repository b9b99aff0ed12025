"""The cloudcost2017 statements added by issue 47: Google Cloud and AWS against Azure, the 2-GPU speed-up,
the price against the speed, CPU efficiency on small data; and what every claim says the paper did."""

import pytest
from test_falsify_cost_study import K80, PARAMS, WHOLE_K80, _tables

from repro.core import claims
from repro.experiments.cost_study import verdicts

H100 = {**K80, "gpu": {**K80["gpu"], "model": "NVIDIA H100 80GB HBM3"}}
NEW = ("google_matches_azure", "aws_matches_azure_1gpu", "two_gpu_speedup", "price_outweighs_speed",
       "cpu_efficiency_understated")


def _row(cid: str, tables: dict, summary: dict = K80, params=PARAMS) -> dict:
    return claims.row(claims.load("cost_study")[cid], verdicts.measure_claims(tables, params, summary)[cid])


def test_every_claim_says_what_the_paper_did_and_the_restatement_shares_its_statement():
    said = claims.load("cost_study")
    assert all(c.paper_did for c in said.values())
    assert said["memory_over_weights"].paper_did == "stated"  # their source [11]'s figures
    assert said["gpu_dearer_so_cpu_optimal"].statement_id() == said["optimal_cores_mnist"].statement_id()
    assert len({c.statement_id() for c in said.values()}) == len(said) - 1
    assert set(NEW) <= set(said)
    assert [said[c].decisive for c in NEW] == [False, False, True, False, True]


@pytest.mark.parametrize("cid", ["google_matches_azure", "aws_matches_azure_1gpu"])
def test_providers_against_azure_are_never_testable_whatever_the_run(cid):
    for summary in (K80, WHOLE_K80, H100):
        row = _row(cid, _tables(two_gpus=1.6), summary)
        assert (row["category"], row["basis"]) == ("not testable here", "none")
        assert "prices that same time at every provider" in row["verdict"]


def test_two_gpu_speedup_reads_each_network_and_needs_two_gpus_of_the_papers_kind():
    fast = _row("two_gpu_speedup", _tables(two_gpus=1.6), WHOLE_K80)
    assert fast["category"] == "reproduced"
    assert fast["ours"] == "cifar10_cnn: 2 GPUs 1.60x as fast as 1; mnist_cnn: 2 GPUs 1.60x as fast as 1"
    slow = _row("two_gpu_speedup", _tables(two_gpus=0.9), WHOLE_K80)
    assert slow["category"] == "differs" and "no speed-up above 1 on cifar10_cnn, mnist_cnn" in slow["verdict"]
    one_gpu = _row("two_gpu_speedup", _tables(), K80)  # the sweep ran g = 1 only
    assert (one_gpu["category"], one_gpu["basis"]) == ("not testable here", "none")
    assert "1 GPU(s) on this machine: the claim compares 2 GPUs with 1" in one_gpu["verdict"]
    h100 = _row("two_gpu_speedup", _tables(two_gpus=1.6), {**H100, "gpu": {**H100["gpu"], "gpus": 2}})
    assert h100["category"] == "not comparable" and "the paper's GPU is a K80" in h100["verdict"]
    one_rep = _row("two_gpu_speedup", _tables(two_gpus=1.6), WHOLE_K80, PARAMS.model_copy(update={"repetitions": 1}))
    assert one_rep["category"] == "not comparable"  # a stochastic quantity: one run decides nothing


def test_cpu_efficiency_understated_compares_the_two_networks_cost_ratios():
    row = _row("cpu_efficiency_understated", _tables(mnist=(3.0, 3.0), cifar=(5.0, 0.7)))
    assert row["category"] == "reproduced"
    assert row["ours"] == "GPU/CPU cost ratio: MNIST 3.00x, CIFAR-10 0.70x (google_cloud_2017)"
    same = _row("cpu_efficiency_understated", _tables(mnist=(3.0, 0.7), cifar=(5.0, 0.7)))
    assert same["category"] == "differs"  # equal ratios: the CPU is not relatively better on the small data
    assert _row("cpu_efficiency_understated", _tables(), H100)["category"] == "not comparable"
    no_gpu = {**K80, "gpu": {"gpus": 0, "reason": "no GPU: none visible"}}
    tables = _tables()
    tables["runs"] = tables["runs"][tables["runs"]["device"] == "cpu"]
    row = _row("cpu_efficiency_understated", tables, no_gpu)
    assert (row["category"], row["basis"], row["verdict"]) == ("not testable here", "none",
                                                               "not testable here (no GPU: none visible)")
