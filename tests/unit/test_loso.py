"""Leave one source out (repro.predict.loso): the model on published measurements it was never fitted to."""

import pytest

from repro.predict import loso, measured


@pytest.fixture(scope="module")
def result():
    return loso.evaluate()


def test_every_source_is_predicted_from_the_others_and_scored_against_a_constant(result):
    t = result["table"]
    assert result["sources"] >= 10 and result["points"] >= 250 and (t["workers"] > 1).all()
    # the constant of a source is the other sources' median: it differs from source to source
    assert t.groupby("source")["constant"].nunique().eq(1).all() and t["constant"].nunique() > 1
    for key in ("median_pp", "p90_pp", "worst_pp"):
        assert 0 <= result["model"][key] <= 100 and 0 <= result["constant"][key] <= 100
    assert -1 <= result["rank_correlation"] <= 1 and 0 <= result["coverage"] <= 1
    text = loso.report(result)
    assert f"{result['points']} points with N > 1 from {result['sources']} sources" in text
    assert f"model:    median {result['model']['median_pp']:.1f}," in text and "constant:" in text


def test_an_interval_comes_from_the_other_sources_residuals_only(result):
    t = result["table"]
    one = t[t["source"] == "tf_benchmarks"].iloc[0]
    rest = t[t["source"] != "tf_benchmarks"]
    r = rest["measured"] - rest["predicted"]
    assert one["low"] == pytest.approx(one["predicted"] + r.quantile(0.1))
    assert one["high"] == pytest.approx(one["predicted"] + r.quantile(0.9))


def test_the_transport_term_orders_tcp_and_roce_on_one_cluster_and_removing_it_breaks_that(monkeypatch):
    points = measured.load_all()
    pairs = loso.pairs(loso.table(points))
    roce = pairs[pairs["differ"].str.contains("25gbe-roce")]
    assert len(roce) >= 2 and roce["informative"].all() and roce["ordered"].all()
    # the counterfactual: RoCE given TCP's goodput and latency (the term removed): the pairs tie, unordered
    same = {**measured.links(), "25gbe-roce": measured.links()["25gbe"]}
    monkeypatch.setattr(measured, "links", lambda: same)
    tied = loso.pairs(loso.table(points))
    assert not tied[tied["differ"].str.contains("25gbe-roce")]["ordered"].any()
