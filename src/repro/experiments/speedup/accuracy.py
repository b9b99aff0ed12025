"""The thesis' statements about how accurate its estimate was for one network and mode, checked on a grid of
runs (ours on this machine, or the emulated replay of its cluster): ``measured_vs_predicted``'s rows."""

from __future__ import annotations

import pandas as pd

SPLIT_ACCURATE = "squeezenet_split_accurate"


def split_accurate(plain: pd.DataFrame, said: dict) -> dict:
    """§6.4's "SqueezeNet, sync-split: the estimate is accurate for both server types": the thesis model's MAPE
    of the training time on each server (``error_thesis``), against the claim's ``accurate_mape``;
    ``{}`` where the grid lacks either server's SqueezeNet sync-split runs."""
    sel = plain[(plain["network"] == "SqueezeNet") & (plain["mode"] == "sync-split")]
    mape = (sel.groupby("server")["error_thesis"].apply(lambda e: float(e.abs().mean() * 100))
            if len(sel) else pd.Series(dtype=float))
    if not {"central", "distributed"} <= set(mape.index):
        return {}
    limit = said[SPLIT_ACCURATE].threshold("accurate_mape")
    return {SPLIT_ACCURATE: (f"SqueezeNet, sync-split, thesis model: MAPE {mape['central']:.0f} % central, "
                             f"{mape['distributed']:.0f} % distributed (accurate: <= {limit:.0f} % on each)",
                             bool(mape[["central", "distributed"]].max() <= limit))}
