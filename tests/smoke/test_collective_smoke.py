"""The measured collective term (repro.predict.collective, issue 58) over the whole measurement set, left one origin
out, with and without it: two evaluations that refit the model per held-out origin (seconds), so in the smoke tier."""

from repro.predict import loso, measured


def test_the_measured_collective_follows_short_steps_of_many_tensors_and_removing_it_loses_that(monkeypatch):
    """Leave one origin out: mixed precision's residuals followed the compute time per step (short steps of many small
    tensors lose more than the model said); with the term that Spearman correlation halves and the regime's rank
    correlation rises; with every framework's all-reduce given the links' latency and one message (the term removed)
    both go back."""
    points = measured.load_all()

    def mixed(r):
        t = r["table"][r["table"]["regime"] == "mixed precision"]
        res = t["measured"] - t["predicted"]
        return res.rank().corr(t["compute_s"].rank()), t["predicted"].rank().corr(t["measured"].rank())
    (follow, rank) = mixed(loso.evaluate(points))
    monkeypatch.setattr(measured, "NCCL", set())
    (follow0, rank0) = mixed(loso.evaluate(points))
    assert follow0 > 0.3 and follow < follow0 - 0.1
    assert rank > rank0 + 0.02
