"""Every decisive claim whose published row rests on a paper's own numbers or on the model has a flip sampler
(``flip.py``), and every sampler belongs to a decisive claim."""

from pathlib import Path

import flip
import pandas as pd
import pytest

from repro.core import claims, params

PUBLISHED = Path(__file__).resolve().parents[2] / "published"


def published_ids(experiment: str, bases=flip.FLIP_BASES) -> set[str]:
    """The claim ids of ``experiment`` whose row in some published ledger has one of ``bases``."""
    said = claims.load(experiment)
    by_text = {c.text: cid for cid, c in said.items()}
    out = set()
    for latest in PUBLISHED.glob(f"*/{experiment}/LATEST"):
        df = pd.read_csv(latest.parent / latest.read_text().strip() / "ledger.csv", keep_default_na=False, dtype=str)
        ids = df["id"] if "id" in df else df["claim"].map(by_text)
        out |= {i for i, b in zip(ids, df["basis"]) if b in bases and i in said}
    return out


@pytest.mark.parametrize("experiment", params.experiments())
def test_every_decisive_claim_on_equations_or_the_model_has_a_sampler(experiment):
    said = claims.load(experiment)
    need = {cid for cid in published_ids(experiment) if said[cid].decisive}
    have = set(flip.samplers(experiment))
    assert not need - have, f"{experiment}: decisive claims on equations/model without a flip sampler: {sorted(need - have)}"
    assert not {c for c in have if not said[c].decisive}, f"{experiment}: samplers for claims that are not decisive"
