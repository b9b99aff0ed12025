"""Leave one source out (repro.predict.loso), read point by point: the collective goodput's term and MXNet's key
owners. The evaluation over
the whole measurement set, each term removed from it, and the intervals of the regimes (from its residuals) refit the
model per held-out origin (seconds): tests/smoke/test_loso_smoke.py."""

import dataclasses

import pytest

from repro.predict import hardware, measured, perfmodel


def test_the_collective_goodput_of_tcp_lowers_tcp_all_reduce_only_and_removing_it_undoes_that(monkeypatch):
    """NCCL over TCP reaches about 60 % of the line (links.yaml: collective_goodput): VGG-16 with Horovod on 128 P100s
    over 25 Gb/s TCP is predicted well below the same cluster over RoCE; without the term the gap shrinks to latency alone. A
    parameter server over the same TCP link is not touched by the term."""
    points = measured.load_all()
    roce = next(p for p in points if p.id == "horovod2018-003")  # VGG-16, 128 GPUs, 25 Gb/s RoCE
    assert roce.model == "vgg16" and roce.inter_link == "25gbe-roce"
    tcp = roce.model_copy(update={"inter_link": "25gbe", "id": "vgg16-tcp"})
    ps = [p for p in points if p.inter_link in ("10gbe", "20gbe", "25gbe") and p.method.startswith("ps")]
    eff = lambda p: measured.predict(p)["efficiency"]  # noqa: E731
    gap, before = eff(roce) - eff(tcp), {p.id: eff(p) for p in ps}
    plain = {k: {kk: vv for kk, vv in v.items() if kk != "collective_goodput"} for k, v in measured.links().items()}
    monkeypatch.setattr(measured, "links", lambda: plain)
    assert gap > 0.2 and eff(roce) - eff(tcp) < gap / 3
    assert ps and all(before[p.id] == eff(p) for p in ps)


def test_mxnets_key_owners_spread_small_tensors_over_a_hosts_gpus_and_removing_the_term_undoes_that():
    """MXNet's kvstore sums each tensor on one GPU of the host, its owner (perfmodel.owner_bytes): on one 16-GPU K80
    host ResNet-152's 311 small tensors spread over the 16 GPUs' links and its exposed communication falls more than
    tenfold, while AlexNet's first fully connected layer (62 % of its weights) still loads its owner's link with 15
    copies (its weights pulled after the update, not hidden). Measured, AlexNet loses 42 % there and ResNet-152 10 %.
    Without the term (the profile's key_owner_reduce off) both are again 16 copies of all the weights through one link,
    and a TensorFlow parameter server never had it."""
    points = {p.id: p for p in measured.load_all()}
    alex, resnet = points["mxnet_p2_2017-013"], points["mxnet_p2_2017-015"]
    assert (alex.model, resnet.model, alex.workers, resnet.workers, alex.inter_link) == ("alexnet", "resnet152", 16, 16,
                                                                                          "none")
    assert not any(measured.profile(p).key_owner_reduce for p in points.values() if p.framework == "tensorflow")
    rate = hardware.rate_bits(measured.links()[alex.intra_link]["rate"]) / 8  # bytes/s inside the host

    def comm(p, on):
        prof = measured.profile(p)
        assert prof.key_owner_reduce
        prof = prof if on else dataclasses.replace(prof, key_owner_reduce=False)
        return perfmodel.step(prof, p.model, p.method, p.workers, p.batch, measured.parameters(p), p.ps or 1)["comm_s"]
    for p in (alex, resnet):
        assert comm(p, False) == pytest.approx(16 * 4 * measured.parameters(p) / rate, rel=0.01)
    largest = perfmodel.largest_tensor("alexnet", 4 * measured.parameters(alex))
    assert comm(alex, True) == pytest.approx(15 * largest / rate, rel=0.01)
    assert comm(resnet, True) < comm(resnet, False) / 10 and comm(alex, True) > 5 * comm(resnet, True)
