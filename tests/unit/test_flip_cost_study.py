"""Could the cost_study rows on the paper's own numbers flip? (``flip.py``)

No decisive cost_study claim rests on the paper's own numbers, so ``SAMPLERS`` is empty: the two rows that
do (``gpu_dearer_so_cpu_optimal``, ``price_outweighs_speed``) are ``decisive: false``. The tests below draw
the paper's inputs over ``DOMAIN`` and show why: the first is, on every draw, nothing but "finding 2's lowest
MNIST cost ratio is above 1" (a restatement), and the second fails on every draw (its CIFAR-10 half is the
opposite of "GPU cost drops" by definition), and both stay gated whatever the inputs.
"""

import flip
import numpy as np
import pandas as pd

from repro.core import claims, paper
from repro.experiments.cost_study import verdicts

EXPERIMENT = "cost_study"
INPUTS = ("gpu_speedup_mnist_min", "gpu_speedup_mnist_max", "gpu_cost_ratio_mnist_min", "gpu_cost_ratio_mnist_max",
          "gpu_cost_saving_heavy_max", "gpu_reference_cpu_cores", "cost_optimal_cores_min", "cost_optimal_cores_max")
DOMAIN = flip.Domain("each of cloudcost2017's reported inputs (paperdata/reported.csv) x0.2-x5, log-uniform, "
                     "independently", INPUTS)
DOMAINS: dict = {}
SAMPLERS: dict = {}


def _perturbed(rng: np.random.Generator) -> tuple[pd.DataFrame, dict[str, float]]:
    """The reported table with each of :data:`INPUTS` scaled by its own factor (a saving stays below 1)."""
    reported, draw = paper.reported(), flip.Draw(DOMAIN, rng)
    paper_ids = list(zip(reported["paper"], reported["id"]))
    values = reported["value"].tolist()
    drawn = {}
    for ident in INPUTS:
        at = [i for i, key in enumerate(paper_ids) if key == ("cloudcost2017", ident)]
        value = float(values[at[0]]) * draw.factor(ident)
        drawn[ident] = min(value, 0.99) if ident == "gpu_cost_saving_heavy_max" else value
        for i in at:
            values[i] = str(drawn[ident])
    draw.check()
    return reported.assign(value=pd.Series(values, index=reported.index, dtype=reported["value"].dtype)), drawn


def test_no_decisive_claim_rests_on_the_papers_own_numbers():
    said = claims.load(EXPERIMENT)
    for cid in ("gpu_dearer_so_cpu_optimal", "price_outweighs_speed"):
        assert not said[cid].decisive and "otherwise" in said[cid].why_not_decisive


def test_gpu_dearer_so_cpu_optimal_is_finding_2_restated_on_every_draw():
    rng = np.random.default_rng(0)
    claim = claims.load(EXPERIMENT)["gpu_dearer_so_cpu_optimal"]
    holds = []
    for _ in range(flip.DRAWS):
        reported, drawn = _perturbed(rng)
        m = verdicts.gpu_dearer_so_cpu_optimal(reported)
        assert m.holds == (drawn["gpu_cost_ratio_mnist_min"] > 1.0)  # nothing but the reported ratio above 1
        assert claims.row(claim, m)["category"] == "not comparable"
        holds.append(m.holds)
    assert 0 < sum(holds) < flip.DRAWS  # it "flips" only as the restated number crosses 1


def test_price_outweighs_speed_fails_on_every_draw_and_its_mnist_half_is_finding_2():
    rng = np.random.default_rng(1)
    claim = claims.load(EXPERIMENT)["price_outweighs_speed"]
    mnist_halves = []
    for _ in range(flip.DRAWS):
        reported, drawn = _perturbed(rng)
        m = verdicts.price_outweighs_speed(reported)
        mnist = drawn["gpu_cost_ratio_mnist_min"] > 1.0
        assert m.holds == mnist
        row = claims.row(claim, m)
        assert row["category"] == "not comparable" and row["basis"] == "equations"
        assert "on CIFAR-10 it does not" in row["verdict"]  # the CIFAR-10 half never holds: 0 of the draws
        assert f"on MNIST it {'holds' if mnist else 'does not hold'}" in row["verdict"]
        mnist_halves.append(mnist)
    assert 0 < sum(mnist_halves) < flip.DRAWS


def test_price_outweighs_speed_on_the_papers_numbers():
    m = verdicts.price_outweighs_speed(paper.reported())
    assert m.ours == ("MNIST: price ratio 4-16x (cost ratio x speed-up) over a 2-4x speed-up (cost ratio 2-4); "
                      "CIFAR-10: cost ratio 0.5-1 (GPU cost drops by up to 50%)")
    assert (m.holds, m.basis, m.runs) == (True, "equations", 1)
    assert m.gate.detail.startswith("cannot come out otherwise on the paper's numbers: on MNIST it holds (cost "
                                    "ratio 2-4 against 1")
