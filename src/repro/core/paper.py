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


def value(paper: str, ident: str) -> float:
    """One reported number, e.g. ``value('cloudcost2017', 'mnist_cnn_test_accuracy_12ep')``."""
    df = reported()
    row = df[(df["paper"] == paper) & (df["id"] == ident)]
    if row.empty:
        raise KeyError(f"no reported value {paper}/{ident} in paperdata/reported.csv")
    return float(row["value"].iloc[0])
