"""The one tolerance policy for the thesis' rounded numbers, and the interval rule for repeated runs.

**Rounding** (the rule ``claims.yaml``'s header states, and every claim that compares with a number the
thesis prints refers to): a printed number stands for every value that rounds to it, so it is compared
with ± half a unit of its last significant digit, as written in ``paperdata/reported.csv``: 7 and 27:
±0.5; 6.5, 3.9, 4.0, 2.1: ±0.05 (the zero of "4.0" is printed, so significant); 170: ±5 (trailing zeros
of a whole number are not significant: "170" is seventeen tens). The tolerance is computed here, never
typed per claim.

**Interval** (for a quantity of repeated runs, e.g. the emulated replay's speedup): mean ± t × standard
error, t the two-sided Student quantile at the claim's ``interval_level`` with n - 1 degrees of freedom
(0.95: 2.78 at 5 runs, 12.7 at 2). The statement is consistent only when the whole interval lies within
the tolerance, inconsistent only when it lies wholly outside, otherwise not comparable.
"""

from __future__ import annotations

import csv
import math
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from importlib import resources

import numpy as np

RULE = "rounding: ± half a unit of the last significant digit the thesis prints (speedup/claims.yaml, header)"


@lru_cache(maxsize=None)
def printed(paper: str, ident: str) -> str:
    """The number ``ident`` of ``paper`` as ``paperdata/reported.csv`` writes it (the paper's own digits)."""
    with resources.files("repro.paperdata").joinpath("reported.csv").open("r", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["paper"] == paper and row["id"] == ident:
                return row["value"].strip()
    raise KeyError(f"no reported value {paper}/{ident} in paperdata/reported.csv")


def half_unit(text: str) -> float:
    """Half a unit of the last significant digit of a printed number (``"6.5"`` -> 0.05, ``"170"`` -> 5)."""
    try:
        _, digits, exponent = Decimal(text).as_tuple()
    except (InvalidOperation, TypeError):
        raise ValueError(f"not a printed number: {text!r}") from None
    if not isinstance(exponent, int):
        raise ValueError(f"not a finite number: {text!r}")
    if exponent == 0 and "." not in text and any(digits):  # a whole number: its trailing zeros are not significant
        exponent = len(digits) - len("".join(map(str, digits)).rstrip("0"))
    return 0.5 * 10.0 ** exponent


def tolerance(claim) -> float:
    """The rounding tolerance of a claim's ``reported`` number (:func:`half_unit` of its printed digits)."""
    return half_unit(printed(claim.paper, claim.reported))


def interval(each, level: float) -> tuple[float, float, float, float]:
    """``(mean, low, high, t)`` of repeated runs: mean ± t × standard error, t the two-sided Student
    quantile at ``level`` with n - 1 degrees of freedom; low = high = nan with fewer than two runs."""
    from scipy import stats

    x = np.asarray(list(each), dtype=float)
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan, math.nan
    t = float(stats.t.ppf(0.5 + level / 2, len(x) - 1))
    half = t * float(x.std(ddof=1)) / math.sqrt(len(x))
    return mean, mean - half, mean + half, t


def placed(low: float, high: float, reference: float, tol: float) -> str:
    """Where the interval ``[low, high]`` lies against ``reference ± tol``: within, outside or straddles."""
    if reference - tol <= low and high <= reference + tol:
        return "within"
    if high < reference - tol or low > reference + tol:
        return "outside"
    return "straddles"
