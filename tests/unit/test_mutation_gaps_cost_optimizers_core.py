"""Gaps that mutation testing found in the verdict code of the cost study, the optimizers and the core
(verdicts, claims): inputs on which a mutated judge gives another verdict, number or ledger row than the
real one: the boundaries of every band and threshold, the tables with several providers, GPUs and
networks, the runs without a GPU (or without a CPU), the error messages a malformed claims.yaml gets."""

from __future__ import annotations

import pandas as pd
import pytest

from repro.core import claims, paper, paramtypes
from repro.core import verdicts as V
from repro.core.claims import Claim, ClaimsError, Measured
from repro.core.verdicts import Category, VerdictError
from repro.experiments.cost_study import verdicts as cost
from repro.experiments.optimizers import verdicts as opt
from repro.experiments.optimizers.common import OPTIMIZERS

# ---------------------------------------------------------------------------------------------------- core


def _claim(**kw) -> Claim:
    base = dict(id="c", paper="cloudcost2017", text="t", paper_value="1", source="s", evidence="e",
                check="holds", stochastic=True, counterfactual="a run that measures the opposite (test_x)")
    return Claim(**{**base, **kw})


def test_a_verdict_given_its_category_as_text_is_typed_and_decides_like_one():
    v = V.Verdict("differs", "x")
    assert v.category is Category.DIFFERS and v.decisive and str(v) == "differs (x)"
    assert V.Verdict("not measured", "y").decisive is False
    with pytest.raises(ValueError):
        V.Verdict("maybe")


def test_verdict_errors_name_what_was_wrong():
    with pytest.raises(VerdictError, match=r"^a verdict's detail is text, got int$"):
        V.Verdict(Category.DIFFERS, 3)
    with pytest.raises(VerdictError, match=r"not given as str: 'reproduced'$"):
        V.settle("reproduced", "measured", 2, stochastic=False)
    with pytest.raises(VerdictError, match=r"^basis 'guess' is not one of: measured, emulated, model, equations, none$"):
        V.settle(V.reproduced(), "guess", 2, stochastic=False)
    with pytest.raises(VerdictError, match=r"does not start with one of: reproduced, consistent, inconsistent, "
                                           r"partly, differs, not comparable, not testable here, not measured, "
                                           r"rule changed after the data, unstable$"):
        V.category_of("probably")


def test_claims_errors_name_the_claim_and_the_allowed_checks():
    base = dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="holds")
    with pytest.raises(ClaimsError, match=r"^x/claims.yaml, claim 'a': check must be one of within, band, holds, "
                                          r"got 'maybe'$"):
        claims._claim("x", dict(base, check="maybe"))
    no_id = {k: v for k, v in base.items() if k != "id"}
    with pytest.raises(ClaimsError, match=r"^x/claims.yaml, claim '\?': missing \['id'\]"):
        claims._claim("x", no_id)
    with pytest.raises(ClaimsError, match=r"^x/claims.yaml, claim '\?'"):  # not a mapping at all
        claims._claim("x", ["id", "a"])


def test_a_band_claim_keeps_its_band_as_a_pair():
    raw = dict(id="a", paper="p", text="t", paper_value=1, source="s", evidence="e", check="band",
               band=[0.8, 1.0], tolerance_source="s", counterfactual="a run below 0.8 (test_x)")
    c = claims._claim("x", raw)
    assert c.band == (0.8, 1.0)
    assert claims.row(c, Measured("0.9", value=0.9, runs=2))["category"] == "reproduced"


def test_the_ends_of_a_tolerance_and_of_a_band_are_inside():
    within = _claim(check="within", reference_value=2.0, tolerance=0.5, tolerance_source="x")
    assert claims.row(within, Measured("2.5", value=2.5, runs=2))["verdict"] == "reproduced"
    assert claims.row(within, Measured("1.5", value=1.5, runs=2))["verdict"] == "reproduced"
    assert claims.row(within, Measured("2.6", value=2.6, runs=2))["category"] == "differs"
    band = _claim(check="band", band=(0.8, 1.0), tolerance_source="x")
    for at in (0.8, 1.0):
        assert claims.row(band, Measured(str(at), value=at, runs=2))["verdict"] == "reproduced", at


def test_a_gate_keeps_the_measurements_note_and_a_missing_value_is_named():
    row = claims.row(_claim(), Measured("x", gate=V.not_comparable("a"), note="b"))
    assert row["verdict"] == "not comparable (a; b)"
    with pytest.raises(ClaimsError, match=r"^claim 'c' \(check band\) needs a value or a gate$"):
        claims.compare(_claim(check="band", band=(0.0, 1.0), tolerance_source="x"), Measured("x"))


def test_a_row_on_basis_none_has_no_runs_whatever_ours_says():
    row = claims.row(_claim(), Measured("bare metal only", gate=V.not_testable("x"), basis="none", runs=3))
    assert (row["basis"], row["runs"], row["ours"]) == ("none", 0, "bare metal only")


# ---------------------------------------------------------------------------------------------- cost_study

P = paramtypes.partial("cost_study", {"reference_provider": "google_cloud_2017", "extrapolate_cores": [16],
                                     "repetitions": 3})
K80 = {"gpu": {"gpus": 1, "model": "Tesla K80", "reason": "1 GPU(s) visible"},
       "docker": {"inside_docker": False, "docker_engine": False, "reason": "no docker client"}}
H100 = {**K80, "gpu": {**K80["gpu"], "model": "NVIDIA H100 80GB HBM3"}}
NO_GPU = {"gpu": {"gpus": 0, "model": "", "reason": "no GPU visible"}, "docker": K80["docker"]}
GOOGLE, AWS = "google_cloud_2017", "aws_2017"


PAPER_PROTOCOL = {"mnist_cnn": {"dataset": "mnist", "n_train": 60_000, "epochs": 12},
                  "cifar10_cnn": {"dataset": "cifar10", "n_train": 50_000, "epochs": 200}}


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
    speed, ratio, cores = cost.gpu_vs_cpu(tables, "mnist_cnn", GOOGLE)
    assert (speed, ratio, cores) == (3.0, (3.0, GOOGLE), 12)
    # the reference provider is not the first in the alphabet: the other one's ratio would be 1.0
    assert cost.gpu_vs_cpu(tables, "mnist_cnn", AWS)[1] == (1.0, AWS)
    m = cost.gpu_mnist_faster_dearer(tables, P, K80)
    assert m.ours == "3.00x faster than 12 cores; cost ratio 3.00 (google_cloud_2017)"
    assert m.holds is True


def test_a_reference_provider_without_a_gpu_price_falls_back_to_the_one_that_has_both():
    tables = _tables([
        ("cifar10_cnn", "cpu", 12, 0, 120.0, {AWS: 2.0, GOOGLE: 1.0}),
        ("cifar10_cnn", "gpu", 12, 1, 24.0, {AWS: 1.4}),
    ])
    assert cost.gpu_vs_cpu(tables, "cifar10_cnn", GOOGLE) == (5.0, (0.7, AWS), 12)
    m = cost.gpu_cifar_cost_saving(tables, P, K80)
    assert (m.value, m.ours) == (0.7, "GPU costs 0.70x the 12-core CPU run (aws_2017)")


def test_the_reference_providers_ratio_decides_the_cifar_saving():
    tables = _tables([
        ("cifar10_cnn", "cpu", 12, 0, 120.0, {AWS: 1.0, GOOGLE: 2.0}),
        ("cifar10_cnn", "gpu", 12, 1, 24.0, {AWS: 3.0, GOOGLE: 1.4}),
    ])
    m = cost.gpu_cifar_cost_saving(tables, P, K80)
    assert m.value == pytest.approx(0.7) and m.ours.endswith("(google_cloud_2017)")
    assert claims.row(claims.load("cost_study")["gpu_cifar_cost_saving"], m)["category"] == "reproduced"


def test_a_gpu_run_with_no_priced_instance_is_judged_on_its_speed_alone():
    tables = _tables(_cpu("mnist_cnn", 3.0) + _cpu("cifar10_cnn", 5.0))
    assert cost.gpu_vs_cpu(tables, "cifar10_cnn", GOOGLE) == (5.0, None, 12)
    mnist = cost.gpu_mnist_faster_dearer(tables, P, K80)
    assert (mnist.ours, mnist.holds, mnist.gate) == ("3.00x faster than 12 cores", True, None)
    cifar = cost.gpu_cifar_cost_saving(tables, P, K80)
    assert (cifar.ours, cifar.basis, cifar.value) == ("-", "none", None)
    assert cifar.gate == V.not_testable("no priced GPU instance")
    row = claims.row(claims.load("cost_study")["gpu_cifar_cost_saving"], cifar)
    assert (row["category"], row["basis"], row["runs"], row["ours"]) == ("not testable here", "none", 0, "-")


def test_a_network_without_a_gpu_run_leaves_the_other_networks_speed_up():
    tables = _tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn"))
    assert cost.gpu_vs_cpu(tables, "cifar10_cnn", GOOGLE) is None
    m = cost.vendor_gpu_speedup_overstated(tables, P, K80)
    assert (m.ours, m.holds, m.note) == ("3.00x", True, "")


def test_the_vendor_claim_lists_both_speed_ups_and_its_lowest_claim_is_not_below_them():
    holds = cost.vendor_gpu_speedup_overstated(_tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn", 5.0, 0.7)),
                                               P, K80)
    assert (holds.ours, holds.holds, holds.note, holds.runs) == ("3.00x, 5.00x", True, "", 3)
    assert claims.row(claims.load("cost_study")["vendor_gpu_speedup_overstated"], holds)["verdict"] == "reproduced"
    at_claim = cost.vendor_gpu_speedup_overstated(
        _tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn", 8.0, 0.7)), P, K80)
    assert (at_claim.ours, at_claim.holds, at_claim.note) == ("3.00x, 8.00x", False, "measured up to 8.0x")
    mnist_fast = cost.vendor_gpu_speedup_overstated(
        _tables(_cpu("mnist_cnn", 9.0, 3.0) + _cpu("cifar10_cnn", 5.0, 0.7)), P, K80)
    assert (mnist_fast.ours, mnist_fast.holds) == ("9.00x, 5.00x", False)


@pytest.mark.parametrize("speed, ratio", [(2.0, 3.0), (4.0, 3.0), (3.0, 2.0), (3.0, 4.0)])
def test_the_ends_of_the_papers_speed_up_and_cost_ratio_ranges_hold(speed, ratio):
    m = cost.gpu_mnist_faster_dearer(_tables(_cpu("mnist_cnn", speed, ratio)), P, K80)
    assert m.holds is True and m.gate is None and m.runs == 3


def test_gated_gpu_findings_keep_their_runs():
    tables = _tables(_cpu("mnist_cnn", 3.0, 3.0) + _cpu("cifar10_cnn", 5.0, 0.7))
    mnist = cost.gpu_mnist_faster_dearer(tables, P, H100)
    assert mnist.gate.category is Category.NOT_COMPARABLE and mnist.runs == 3
    ram = cost.cpu_vs_gpu_ram(tables, P, K80)
    assert (ram.ours, ram.runs, ram.gate) == ("see the memory table", 3, V.not_comparable("no number in the paper"))
    row = claims.row(claims.load("cost_study")["gpu_mnist_faster_dearer"], mnist)
    assert (row["category"], row["basis"], row["runs"]) == ("not comparable", "measured", 3)


def test_a_run_without_a_gpu_gates_every_gpu_finding_with_the_reason():
    tables = _tables(_cpu("mnist_cnn") + _cpu("cifar10_cnn"))
    measured = cost.measure_claims(tables, P, NO_GPU)
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
    m = cost.optimal_cores_mnist(tables, P)
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
    m = cost.docker_no_worse({**K80, "docker": docker})
    assert (m.ours, m.basis, m.gate) == (ours, "none", V.not_testable(why))
    row = claims.row(claims.load("cost_study")["docker_no_worse"], m)
    assert (row["category"], row["basis"], row["runs"]) == ("not testable here", "none", 0)


def _memory(*ratios: float) -> pd.DataFrame:
    return pd.DataFrame([("cpu", f"net{i}", 1000.0, r) for i, r in enumerate(ratios)],
                        columns=["device", "network", "peak_rss_mb_mean", "rss_over_weights"])


def test_memory_over_weights_names_the_framework_and_holds_only_above_the_weights():
    runs = pd.DataFrame([{"device": "cpu", "cores": 1, "network": "net0", "backend": "mxnet"}])
    m = cost.memory_over_weights({"memory": _memory(1.5), "runs": runs}, P)
    assert m.holds is True
    assert m.gate == V.not_comparable("other networks; process RSS includes mxnet itself")
    bare = cost.memory_over_weights({"memory": _memory(1.5), "runs": runs.drop(columns="backend")}, P)
    assert bare.gate.detail == "other networks; process RSS includes TensorFlow itself"
    assert cost.memory_over_weights({"memory": _memory(1.5, 1.0), "runs": runs}, P).holds is False
    empty = cost.memory_over_weights({"memory": pd.DataFrame(), "runs": runs}, P)
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
    m = cost.gpu_dearer_so_cpu_optimal(paper.reported())
    assert m.ours == "GPU cost 2-4x the 12-core run on MNIST; reported optimum 8-12 cores, no GPU"
    assert (m.holds, m.basis, m.runs) == (True, "equations", 1)
    assert m.note == "the lowest cost ratio, 2, is above 1: every GPU run is dearer than the 12-core one"
    row = claims.row(claims.load("cost_study")["gpu_dearer_so_cpu_optimal"], m)  # decisive false: it restates finding 2
    assert (row["category"], row["runs"], row["basis"]) == ("not comparable", 1, "equations")
    assert row["verdict"] == f"not comparable ({m.gate.detail}; {m.note})"
    # a cost ratio of exactly 1 is the GPU costing what the CPU run costs: not dearer
    same = cost.gpu_dearer_so_cpu_optimal(_reported_with_mnist_cost_ratio(1.0))
    assert same.holds is False
    assert same.note == "at a cost ratio of 1 (not above 1) the GPU run would be the cheaper one"
    with pytest.raises(KeyError, match="no reported value cloudcost2017/gpu_cost_ratio_mnist_min"):
        cost.gpu_dearer_so_cpu_optimal(_reported_with_mnist_cost_ratio(None))


# ---------------------------------------------------------------------------------------------- optimizers

CIFAR = {"name": "cifar10", "n_train": 50000, "stand_in_for": None}
# no matmul_precision: it reads as its legacy null (a run from before the parameter)
PAPER_P = paramtypes.partial("optimizers", {"epochs": 150, "optimizers": list(OPTIMIZERS), "seeds": [0, 1]})
PAPER_ACCS = {"sgd": 0.30, "momentum": 0.40, "nesterov": 0.25, "rmsprop": 0.80, "adagrad": 0.40,
              "adam": 0.85, "nadam": 0.84}


def _summary(variants: dict, together: int = 1) -> pd.DataFrame:
    """``variants``: variant -> {optimizer: final accuracy}; ranks within each variant."""
    rows = [{"variant": v, "optimizer": o, "final_accuracy": a, "seeds": 2, "epochs_to_95pct_best": 140.0,
             "train_time_s": 5400.0, "trained_together": together} for v, accs in variants.items()
            for o, a in accs.items()]
    df = pd.DataFrame(rows)
    df["rank"] = df.groupby("variant")["final_accuracy"].rank(ascending=False, method="min").astype(int)
    return df


def test_a_dataset_that_is_not_cifar_and_stands_in_for_nothing_says_so():
    assert opt.comparable(PAPER_P, {"name": "mnist", "n_train": 50000, "stand_in_for": None}) == \
        (False, "mnist, not CIFAR-10")
    assert opt.comparable(PAPER_P, {"name": "fmnist", "n_train": 50000, "stand_in_for": "cifar10"}) == \
        (False, "fmnist stands in for cifar10")


def test_tf32_products_are_a_stated_deviation_and_float32_is_the_papers():
    cifar = {"name": "cifar10", "n_train": 50000, "stand_in_for": None}
    assert opt.comparable(PAPER_P.replace(matmul_precision="float32"), cifar) == (True, "")
    assert opt.comparable(PAPER_P, cifar) == (True, "")  # a run from before the parameter: not recorded
    assert opt.comparable(PAPER_P.replace(matmul_precision="tf32"), cifar) == (False, "TF32 products, not float32")
    # the device record decides where there is one: what the run computed in, not what it asked for
    tf32 = {"device": "GPU", "backend": "jax", "matmul_precision": {"effective": "TF32 products, float32 sums"}}
    f32 = {**tf32, "matmul_precision": {"effective": "float32"}}
    assert opt.comparable(PAPER_P.replace(matmul_precision="float32"), cifar, tf32) == \
        (False, "TF32 products, not float32")
    assert opt.comparable(PAPER_P.replace(matmul_precision="tf32"), cifar, f32) == (True, "")
    cpu = {"device": "CPU", "backend": "jax"}
    assert opt.comparable(PAPER_P.replace(matmul_precision="tf32"), cifar, cpu) == (True, "")
    # a GPU run under JAX from before the parameter (the published H100 run): JAX's default there is TF32
    old_gpu = {"device": "GPU", "backend": "jax", "gpus_visible": 1}
    assert opt.comparable(PAPER_P, cifar, old_gpu) == (False, "matmul precision not recorded (JAX's default on "
                                                              "an Ampere or later GPU: TF32 products)")
    assert opt.comparable(PAPER_P, cifar, {**old_gpu, "backend": "tensorflow"})[1].startswith(
        "matmul precision not recorded (TensorFlow's default")
    assert opt.comparable(PAPER_P, cifar, {**old_gpu, "device": "CPU"}) == (True, "")


def test_a_run_without_the_shared_variant_measures_nothing_but_still_has_every_claim():
    summary = _summary({"tuned": PAPER_ACCS})
    measured = opt.measurements(summary, PAPER_P, CIFAR)
    assert set(measured) == set(claims.load("optimizers"))
    for cid in ("conclusion_adam_nadam", "epochs_to_converge", "hours_per_optimizer"):
        m = measured[cid]
        assert (m.ours, m.basis, m.runs, m.value, m.holds) == ("–", "none", 0, None, None), cid
        assert m.gate == V.not_measured("no run of the shared variant"), cid
    ledger = opt.ledger(summary, PAPER_P, CIFAR)
    assert set(ledger["category"]) == {"not measured"}
    assert set(ledger["basis"]) == {"none"} and set(ledger["runs"]) == {0}


def test_a_run_of_adam_and_nadam_alone_decides_the_conclusion_and_the_hours():
    summary = _summary({"shared": {"adam": 0.85, "nadam": 0.84}}, together=2)
    measured = opt.measurements(summary, PAPER_P, CIFAR)
    top = measured["conclusion_adam_nadam"]
    assert (top.ours, top.holds, top.runs) == ("top two: Adam, Nadam", True, 2)
    hours = measured["hours_per_optimizer"]
    assert hours.value == 1.5 and hours.runs == 2
    assert hours.ours == "1.50 h (the wall time of 2 models trained together)"
    ledger = opt.ledger(summary, PAPER_P, CIFAR)
    assert ledger.loc["conclusion_adam_nadam", "verdict"] == "reproduced"
    assert (ledger.loc["hours_per_optimizer", "category"], ledger.loc["hours_per_optimizer", "runs"]) == \
        ("not comparable", 2)
    alone = opt.measurements(_summary({"shared": PAPER_ACCS}, together=1), PAPER_P, CIFAR)["hours_per_optimizer"]
    assert alone.ours == "1.50 h"


def test_compare_with_paper_has_one_row_per_optimizer_with_the_ledgers_verdict():
    table = opt.compare_with_paper(_summary({"shared": PAPER_ACCS}), PAPER_P, CIFAR)
    assert list(table.columns) == ["optimizer", "paper", "ours_final_accuracy", "ours_rank", "verdict"]
    adam = table[table["optimizer"] == "Adam"].iloc[0]
    assert (adam["ours_final_accuracy"], adam["ours_rank"], adam["verdict"]) == (0.85, 1, "reproduced")
    assert adam["paper"] == claims.load("optimizers")["adam_best"].paper_value


def test_conclusions_per_variant():
    close = claims.load("optimizers")["nadam_close"].band[1]
    # tuned: Adam and Nadam alone, exactly the band's width apart (2 * close - close is exact)
    summary = _summary({"shared": PAPER_ACCS, "tuned": {"adam": 2 * close, "nadam": close}})
    rows = opt.conclusions(summary).to_dict("records")
    nadam_claim = f"Nadam is almost the same as Adam (within {close * 100:g} points)"
    assert rows == [
        {"variant": "shared", "claim": "Adam is the most accurate of the seven", "holds": True,
         "evidence": "Adam ranks 1 of 7"},
        {"variant": "shared", "claim": "Adam and Nadam are the two most accurate", "holds": True,
         "evidence": "top two: Adam, Nadam"},
        {"variant": "shared", "claim": nadam_claim, "holds": True, "evidence": "gap 0.010"},
        {"variant": "tuned", "claim": "Adam is the most accurate of the seven", "holds": True,
         "evidence": "Adam ranks 1 of 2"},
        {"variant": "tuned", "claim": "Adam and Nadam are the two most accurate", "holds": True,
         "evidence": "top two: Adam, Nadam"},
        {"variant": "tuned", "claim": nadam_claim, "holds": True, "evidence": f"gap {close:.3f}"},
    ]


def test_conclusions_skip_a_variant_without_adam_and_nadam_and_go_on():
    no_nadam = {k: v for k, v in PAPER_ACCS.items() if k != "nadam"}
    table = opt.conclusions(_summary({"shared": no_nadam, "tuned": PAPER_ACCS}))
    assert set(table["variant"]) == {"tuned"} and len(table) == 3
    only_tuned = opt.conclusions(_summary({"tuned": PAPER_ACCS}))
    assert set(only_tuned["variant"]) == {"tuned"} and bool(only_tuned["holds"].all())
