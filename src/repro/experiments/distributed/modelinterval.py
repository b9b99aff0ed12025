"""The analytic model's 80 % interval as a gate of every distributed row on basis ``model`` (issue 48).

The interval is :func:`repro.predict.loso.interval`: (low, high) offsets of scaling efficiency, the 10th and 90th
percentiles of the model's leave-one-source-out residuals (measured - predicted) on published measurements. It is
read when a row is judged, never copied, so a change of the model or of the measurements moves it.
:func:`repro.predict.loso.with_interval` turns it into each prediction's images/s at both ends, each prediction's own
width: the model tables (:func:`repro.experiments.distributed.modelbasis.paper_scale`) carry each step's compute,
communication and exposed seconds, and the regime's residuals, each divided by its point's ``sqrt(floor + exposed
share)``, are multiplied by the prediction's (issue 58); a table without ``exposed_s`` gets the regime's quantiles
themselves, one width for every row. The evidence (:func:`text`) names the quantiles each width multiplies.

A model row (:func:`repro.experiments.distributed.verdicts.model_finding`) is decided only where its outcome holds
at both ends of the interval of every prediction it reads, each prediction taken on its own (the pessimistic
combination: no two predictions' errors are assumed to move together): a ratio of two methods' images/s with one at
its interval's low end and the other at its high end, and the reverse; an efficiency's interval wholly on one side
of a threshold; "gains with each added process" with the images/s at the larger N above those at the smaller N at
every end. An outcome that holds at one end and not at the other is open, and the row is not comparable, naming
the interval and what it leaves open. Open outcomes combine as in three-valued logic: "every other model gains"
is false where one model surely does not gain, whatever the others. This gate is on top of the model's others
(its validation on the emulated grid, its held-out errors on published measurements); it changes no claim's text
or thresholds.
"""

from __future__ import annotations

import math

import pandas as pd

from repro.core import claims
from repro.core import verdicts as V
from repro.experiments.distributed.common import NAME

Open = bool | None  # an outcome at both ends of the interval: True, False, or None where the ends disagree


def interval(regime: str | None = None) -> tuple[float, float]:
    """The model's 80 % interval, (low, high) offsets of scaling efficiency (:func:`repro.predict.loso.interval`):
    of ``regime``'s residuals where it has enough points, else of all."""
    from repro.predict import loso

    return loso.interval(regime) if regime else loso.interval()


def regimes(pred: pd.DataFrame) -> dict[str, str]:
    """Per method of a model table, the regime of :data:`repro.predict.loso.REGIMES` its predictions fall in (the
    hardware profile of its rows, its worker counts), as ``repro predict`` takes them; "" where the table names no
    known profile (then every point's residuals give the interval)."""
    from repro.predict import hardware, loso

    out = {}
    for m, g in pred.groupby("method", sort=False):
        name = str(g["hardware"].iloc[0]) if "hardware" in g else ""
        known = name in hardware.names()
        out[str(m)] = loso.regime_of(hardware.load(name), str(m), list(g["workers"])) if known else ""
    return out


def with_interval(pred: pd.DataFrame) -> pd.DataFrame:
    """``pred`` (a model table: method, workers, model, total_images_per_sec, efficiency, hardware) with each row's
    80 % interval of images/s (``images_low``, ``images_high``; one worker: the prediction itself), from the
    residuals of its method's regime (:func:`regimes`, :func:`repro.predict.loso.with_interval`), its width the
    row's own where the table has ``exposed_s``, ``compute_s`` and ``comm_s``."""
    from repro.predict import loso

    reg = regimes(pred)
    parts = [loso.with_interval(g.rename(columns={"total_images_per_sec": "images_per_s"}), reg[str(m)] or None)
             for m, g in pred.groupby("method", sort=False)]
    return pd.concat(parts).loc[pred.index].rename(columns={"images_per_s": "total_images_per_sec"})


def text(pred: pd.DataFrame | None = None) -> str:
    """The interval in words: per regime of ``pred``'s methods (all: the residuals of every point); where ``pred``
    carries each step's exposed share, the scaled quantiles that each prediction's own width multiplies."""
    from repro.predict import loso

    reg = regimes(pred) if pred is not None else {"": ""}
    if set(reg.values()) == {""}:
        reg = {"": ""}
    own = pred is not None and {"exposed_s", "compute_s", "comm_s"} <= set(pred.columns)
    spans = []
    for r in dict.fromkeys(reg.values()):
        lo, hi, floor = loso.scaled_quantiles(r or None) if own else (*interval(r or None), 0.0)
        which = f" for {', '.join(m for m in reg if reg[m] == r)} ('{r}')" if r else ""
        times = f" times sqrt({floor:.3f} + the step's exposed share)" if own else ""
        spans.append(f"{lo:+.2f} to {hi:+.2f}{times}{which}")
    source = ("10th and 90th percentiles of its leave-one-source-out residuals on published measurements"
              + (", each divided by its point's sqrt(floor + exposed share)" if own else ""))
    return f"the model's 80 % interval ({'; '.join(spans)} of scaling efficiency around each prediction: the {source})"


def _all(xs) -> Open:
    """All of ``xs`` (each True, False or None): False where one is False, True where all are True, else open."""
    xs = list(xs)
    return False if any(x is False for x in xs) else True if all(x is True for x in xs) else None


def _not(x: Open) -> Open:
    return None if x is None else not x


def _at_least(low: float, high: float, t: float) -> Open:
    """Whether a quantity in [low, high] is at or above ``t`` at both ends (True), at neither (False), or open."""
    return True if low >= t else False if high < t else None


def _div(a: float, b: float) -> float:
    return float(a) / float(b) if b > 0 else math.inf


def _span(low: float, high: float) -> str:
    return f"{low:.2f}-{high:.2f}"


def _efficiency_ends(iv: pd.DataFrame, method: str, n: int) -> dict[str, tuple[float, float]]:
    """Per model, the judge's efficiency of ``method`` at ``n`` workers (images/s over linear scaling from its
    smallest N, as :func:`repro.experiments.distributed.arithmetic.scaling_efficiency`) at the interval's ends:
    the least images/s at ``n`` over the most at the base, and the reverse."""
    out = {}
    for model, g in iv[iv["method"] == method].groupby("model", sort=False):
        g = g.sort_values("workers")
        base, at = g.iloc[0], g[g["workers"] == n]
        if at.empty:
            continue
        k = n / float(base["workers"])
        out[str(model)] = (_div(at["images_low"].iloc[0], k * base["images_high"]),
                           _div(at["images_high"].iloc[0], k * base["images_low"]))
    return out


def horovod(iv: pd.DataFrame, claim: claims.Claim) -> tuple[Open, str]:
    """Horovod / sync PS images/s at the largest N, every model within the claim's tolerance of its number."""
    ref, tol = claim.reference(), float(claim.tolerance or 0.0)
    n = int(iv["workers"].max())
    at = iv[iv["workers"] == n]
    h, ps = (at[at["method"] == m].set_index("model") for m in ("horovod", "ps_sync"))
    ends = {m: (_div(h.loc[m, "images_low"], ps.loc[m, "images_high"]),
                _div(h.loc[m, "images_high"], ps.loc[m, "images_low"])) for m in h.index if m in ps.index}
    inside = {m: True if ref - tol <= lo and hi <= ref + tol else False if hi < ref - tol or lo > ref + tol else None
              for m, (lo, hi) in ends.items()}
    what = ", ".join(f"{m} {_span(*ends[m])}" for m, v in inside.items() if v is None)
    return _all(inside.values()), f"Horovod / sync PS at {n} workers: {what}, across {ref - tol:g}-{ref + tol:g}"


def ring_scaling(iv: pd.DataFrame) -> tuple[Open, str]:
    """Every model but vgg16 gains images/s with each added process, vgg16 does not."""
    gains, where = {}, {}
    for model, g in iv.groupby("model", sort=False):
        g = g.sort_values("workers")
        steps = []
        for a, b in zip(g.iloc[:-1].itertuples(), g.iloc[1:].itertuples()):
            step = True if b.images_low > a.images_high else False if b.images_high <= a.images_low else None
            if step is None and model not in where:
                where[model] = (f"{model} from {a.workers} to {b.workers} workers ({a.images_low:,.0f}-"
                                f"{a.images_high:,.0f} images/s at {a.workers}, {b.images_low:,.0f}-"
                                f"{b.images_high:,.0f} at {b.workers})")
            steps.append(step)
        gains[model] = _all(steps)
    holds = _all([_all(v for m, v in gains.items() if m != "vgg16"), _not(gains.get("vgg16", False))])
    return holds, "whether each added process gains: " + "; ".join(where[m] for m, v in gains.items() if v is None)


def vgg_worst(iv: pd.DataFrame, claim: claims.Claim) -> tuple[Open, str]:
    """The best other model reaches ``near_linear`` at the largest N, the best VGG does not."""
    n, t = int(iv["workers"].max()), claim.threshold("near_linear")
    eff = _efficiency_ends(iv, "horovod", n)
    best = {}
    for name, vgg in (("the best other model", False), ("the best VGG", True)):
        ends = [e for m, e in eff.items() if m.startswith("vgg") == vgg]
        best[name] = (max(e[0] for e in ends), max(e[1] for e in ends))
    reach = {name: _at_least(*ends, t) for name, ends in best.items()}
    what = " and ".join(f"{k} {_span(*best[k])}" for k, v in reach.items() if v is None)
    return (_all([reach["the best other model"], _not(reach["the best VGG"])]),
            f"Horovod efficiency at {n} workers: {what}, across near_linear {t:g}")


def ps_efficiency(iv: pd.DataFrame) -> tuple[Open, str]:
    """PS's efficiency below Horovod's at the largest N both reach, for every model: PS's highest under Horovod's
    lowest; not below where PS's lowest is at or above Horovod's highest."""
    n = int(iv["workers"].max())
    h, ps = _efficiency_ends(iv, "horovod", n), _efficiency_ends(iv, "ps_sync", n)
    below = {m: True if ps[m][1] < h[m][0] else False if ps[m][0] >= h[m][1] else None for m in h if m in ps}
    what = ", ".join(f"{m} PS {_span(*ps[m])} vs Horovod {_span(*h[m])}" for m, v in below.items() if v is None)
    return _all(below.values()), f"PS and Horovod efficiency at {n} workers overlap: {what}"


def gate(cid: str, judged: pd.DataFrame) -> V.Verdict | None:
    """None where model finding ``cid``'s outcome holds across the model's 80 % interval (module docstring), else
    not comparable, naming the interval and what it leaves open. ``judged``: the model rows its judge reads (both
    methods to the largest N both reach, or Horovod's)."""
    iv = with_interval(judged)
    claim = claims.load(NAME)[cid]
    if cid == "model_horovod":
        got, what = horovod(iv, claim)
    elif cid == "model_ring_scaling":
        got, what = ring_scaling(iv)
    elif cid == "model_vgg_worst":
        got, what = vgg_worst(iv, claim)
    elif cid == "model_ps_efficiency":
        got, what = ps_efficiency(iv)
    else:
        raise claims.ClaimsError(f"claim {cid!r}: no interval rule for it in modelinterval")
    return None if got is not None else V.not_comparable(f"{text(judged)} leaves the outcome open: {what}")
