"""A learned correction of the model's residuals, checked leave one origin out and reported beside the model (issue 58:
"a learned correction of the residuals only if it wins leave-one-origin-out, and reported beside the physical model,
never instead of it").

The correction is a least-squares line of a point's residual (measured - predicted efficiency) in the three numbers
the residuals were seen to follow (:data:`FEATURES`): the log of the compute time per step, the predicted share of the
step that is exposed communication and the log of the number of GPUs. For each held-out origin it is fitted on the
*other* origins' leave-one-origin-out residuals (:func:`repro.predict.loso.table`) and added to the held-out origin's
predictions. Those residuals come from terms fitted with the held-out origin among the others, which favours the
correction: where it still does not win here, a nested check (the residuals refitted without the held-out origin)
is unlikely to let it win; that nested check is not run (ten times the fits). Indicators of a regime, a framework
or a GPU are left out on purpose: an origin's regime is often its own (one origin has every point without
peer-to-peer), and a line through one origin's indicator only learns that origin.

:func:`evaluate` returns the corrected predictions' errors per regime beside the model's; :func:`wins` says whether
the correction wins (a lower median error over every point and in most regimes). The model the package uses stays the
physical one either way; ``repro predict --validate loso`` prints this check's line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

FEATURES = ("log compute_s", "exposed_share", "log2 workers")


def features(t: pd.DataFrame) -> np.ndarray:
    """The design matrix of :data:`FEATURES`, with a column of ones first."""
    return np.c_[np.ones(len(t)), np.log(t["compute_s"].to_numpy(float)), t["exposed_share"].to_numpy(float),
                 np.log2(t["workers"].to_numpy(float))]


def corrected(t: pd.DataFrame) -> pd.Series:
    """Each point's prediction plus the correction fitted on the other origins' residuals (least squares)."""
    out = pd.Series(index=t.index, dtype=float)
    for held, own in t.groupby("origin"):
        rest = t[t["origin"] != held]
        w, *_ = np.linalg.lstsq(features(rest), (rest["measured"] - rest["predicted"]).to_numpy(float), rcond=None)
        out[own.index] = own["predicted"] + features(own) @ w
    return out


def evaluate(t: pd.DataFrame) -> pd.DataFrame:
    """Per regime and over every point (``all``): points, the model's and the corrected predictions' median absolute
    error (pp) and rank correlation with the measurements."""
    c = t.assign(corrected=corrected(t))
    rows = []
    for name, g in [*c.groupby("regime"), ("all", c)]:
        rows.append({"regime": name, "points": len(g),
                     "model_median_pp": float((100 * (g["predicted"] - g["measured"])).abs().median()),
                     "corrected_median_pp": float((100 * (g["corrected"] - g["measured"])).abs().median()),
                     "model_rank": g["predicted"].rank().corr(g["measured"].rank()),
                     "corrected_rank": g["corrected"].rank().corr(g["measured"].rank())})
    return pd.DataFrame(rows)


def _split(check: pd.DataFrame) -> tuple[pd.Series, int, int]:
    """The check's line over every point, and in how many of its regimes (of how many) the correction is lower."""
    regimes = check[check["regime"] != "all"]
    better = int((regimes["corrected_median_pp"] < regimes["model_median_pp"]).sum())
    return check[check["regime"] == "all"].iloc[0], better, len(regimes)


def wins(check: pd.DataFrame) -> bool:
    """Whether the correction wins: a lower median error over every point and in more than half the regimes."""
    overall, better, regimes = _split(check)
    return bool(overall["corrected_median_pp"] < overall["model_median_pp"] and better > regimes / 2)


def words(check: pd.DataFrame) -> str:
    """The check in one line (what ``repro predict --validate loso`` prints)."""
    overall, better, regimes = _split(check)
    verdict = "it wins (reported beside the model, not used by it)" if wins(check) else "it does not win: not used"
    return (f"a learned correction of the residuals (least squares in {', '.join(FEATURES)}, fitted on the other "
            f"origins): median {overall['corrected_median_pp']:.2f} pp against the model's "
            f"{overall['model_median_pp']:.2f}, rank correlation {overall['corrected_rank']:.2f} against "
            f"{overall['model_rank']:.2f}; lower median error in {better} of {regimes} regimes; {verdict}")
