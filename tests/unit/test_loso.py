"""Leave one source out (repro.predict.loso), read point by point: the collective goodput's term. The evaluation over
the whole measurement set, each term removed from it, and the intervals of the regimes (from its residuals) refit the
model per held-out origin (seconds): tests/smoke/test_loso_smoke.py."""


from repro.predict import measured


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
