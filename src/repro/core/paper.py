"""The papers' reported numbers, kept as data (``repro/paperdata/reported.csv``)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import pandas as pd

PAPERS = {
    "polishchuk2019": ("Polishchuk, Kostiuchko, Khrystynets (2019). Comparison of neural network optimization methods "
                       "using the image classification problem."),
    "cloudcost2017": ("Efficient application of cloud resources for training and using deep neural networks. "
                      "Convergent'2017, pp. 157ff."),
    "slampa2017": "Šlampa, O. (2017). Parallel Deep Learning. Master's thesis, Brno University of Technology.",
    "savchenko2019": ("Savchenko, D. M. (2019). Models of distributed training of neural networks. "
                      "Studencheskiy 37(81)."),
    "keras_mnist_cnn": ("Keras team. Simple MNIST convnet (keras-io example mnist_convnet; "
                        "99.25 % test accuracy after 12 epochs)."),
}


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


def verdict(paper_value: float, ours: float, tolerance: float, *, comparable: bool = True, why_not: str = "",
            fmt: str = "{:.4g}") -> str:
    """'reproduced', 'differs (...)' or 'not comparable (...)'.

    ``tolerance`` is absolute, in the quantity's unit. A comparison that is not like for
    like (stand-in data, fewer epochs) is never called reproduced.
    """
    if not comparable:
        return f"not comparable ({why_not})"
    diff = ours - paper_value
    if abs(diff) <= tolerance:
        return "reproduced"
    return f"differs ({'+' if diff > 0 else '-'}{fmt.format(abs(diff))} vs paper, tolerance {fmt.format(tolerance)})"
