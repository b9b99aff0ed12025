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


def _regime_row(regime: str, points: int, measured_eff, predicted, constant: float):
    """by_regime's row of a regime whose points are ``measured_eff`` and ``predicted`` (intervals: every point
    inside)."""
    import pandas as pd

    from repro.predict import loso

    t = pd.DataFrame({"id": range(points), "source": "s", "origin": "o", "regime": regime,
                      "measured": measured_eff, "predicted": predicted, "covered": [i % 5 != 0 for i in range(points)]})
    t = t.assign(error_pp=100 * (t["predicted"] - t["measured"]), constant_pp=100 * (constant - t["measured"]))
    return loso.by_regime(t).iloc[0]


def test_a_regime_meets_issue_58s_goals_only_with_every_one_of_them_and_each_miss_is_named():
    """Issue 58's goals per regime (loso.REGIME_GOALS): a float32 regime predicted within 1 pp, in rank order, with 80 %
    of its points covered meets them all; the same regime predicted as the constant misses the ratio and the rank
    correlation, each named in words; a regime of fewer than 20 points is held to coverage alone (on real data)."""
    import numpy as np

    from repro.predict import loso

    measured_eff = np.linspace(0.6, 0.99, 40)
    good = _regime_row(loso.FLOAT32, 40, measured_eff, measured_eff + 0.005, 0.9)
    assert good["goals_met"] and good["missed"] == ""
    flat = _regime_row(loso.FLOAT32, 40, measured_eff, np.full(40, 0.9) + 1e-6 * np.arange(40)[::-1], 0.9)
    assert not flat["goals_met"]
    assert "of the constant's (goal <= 0.6)" in flat["missed"] and "rank correlation" in flat["missed"]
    small = _regime_row("real data", 10, measured_eff[:10], np.full(10, 0.9), 0.9)
    assert small["goals_met"]  # 80 % covered; no ratio, no tails below 20 points or on real data
    wide = _regime_row("mixed precision", 40, measured_eff, measured_eff + 0.3, 0.9)
    assert "worst 30.0 pp" in wide["missed"] and "90th percentile" in wide["missed"]
