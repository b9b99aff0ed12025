"""The papers' reported numbers, kept as data (``repro/paperdata/reported.csv``)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pandas as pd


@lru_cache(maxsize=None)
def reported() -> pd.DataFrame:
    """Every reported number: paper, id, quantity, value, unit, where it is in the paper, note."""
    with resources.files("repro.paperdata").joinpath("reported.csv").open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, keep_default_na=False)


@lru_cache(maxsize=None)
def _values() -> dict[tuple[str, str], object]:
    """(paper, id) -> the value as read (the first row of each pair, as a filter of the table would give)."""
    out: dict[tuple[str, str], object] = {}
    for key, val in zip(zip(reported()["paper"], reported()["id"]), reported()["value"]):
        out.setdefault(key, val)
    return out


def value(paper: str, ident: str) -> float:
    """One reported number, e.g. ``value('cloudcost2017', 'mnist_cnn_test_accuracy_12ep')``."""
    try:
        return float(_values()[(paper, ident)])  # type: ignore[arg-type]
    except KeyError:
        raise KeyError(f"no reported value {paper}/{ident} in paperdata/reported.csv") from None
