"""The learned correction of the model's residuals (repro.predict.correction), checked leave one origin out: it wins
where the residuals follow its features the same way in every origin, and does not where they do not."""

import numpy as np
import pandas as pd

from repro.predict import correction


def _table(residual) -> pd.DataFrame:
    """Six origins of 30 points in two regimes; ``residual(compute_s, rng)`` is measured - predicted."""
    rng = np.random.default_rng(0)
    n = 180
    compute = np.exp(rng.uniform(np.log(0.02), np.log(2.0), n))
    t = pd.DataFrame({"origin": np.repeat([f"o{i}" for i in range(6)], 30), "regime": np.tile(["a", "b"], n // 2),
                      "compute_s": compute, "exposed_share": rng.uniform(0, 0.3, n),
                      "workers": rng.choice([2, 4, 8, 16], n), "predicted": rng.uniform(0.6, 0.95, n)})
    return t.assign(measured=t["predicted"] + residual(compute, rng))


def test_a_correction_wins_where_every_origin_shares_the_residuals_trend_and_loses_where_none_does():
    shared = _table(lambda c, rng: -0.03 * np.log(c) - 0.05 + rng.normal(0, 0.003, len(c)))
    check = correction.evaluate(shared)
    overall = check[check["regime"] == "all"].iloc[0]
    assert overall["corrected_median_pp"] < overall["model_median_pp"] / 3 and correction.wins(check)
    assert "it wins" in correction.words(check) and "lower median error in 2 of 2 regimes" in correction.words(check)
    # the counterfactual: each origin has its own offset (zero on average), unrelated to the features: nothing to
    # learn across origins
    spread = np.repeat([-0.06, -0.04, -0.02, 0.02, 0.04, 0.06], 30)
    offsets = _table(lambda c, rng: spread + rng.normal(0, 0.003, len(c)))
    assert not correction.wins(correction.evaluate(offsets))
    assert correction.words(correction.evaluate(offsets)).endswith("it does not win: not used")
