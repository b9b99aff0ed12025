"""`distributed`'s model rows flip over their stated domain with the judge's own interval (the sampler runs the
analytic model at every draw: seconds, so in the smoke tier; the other samplers are tests/unit/test_flip_distributed.py)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))  # the unit tier's flip samplers
import flip  # noqa: E402
import test_flip_distributed as samplers  # noqa: E402


@pytest.mark.parametrize("cid", sorted(c for c in samplers.SAMPLERS if c.startswith("model_")))
def test_model_rows_flip(cid):
    flip.check(samplers, cid)
