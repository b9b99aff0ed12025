"""The distributed chapter's leave-one-source-out check (repro.experiments.distributed.modelcheck) on the package's
whole measurement set: the model refitted per held-out origin (seconds), so in the smoke tier; its figures and
tables on a small set are tests/unit/test_distributed_modelcheck.py."""

from __future__ import annotations

import numpy as np

from repro.experiments.distributed import modelcheck


def test_the_real_check_carries_compute_time_and_transport_for_every_point():
    """On the package's set: the check's own compute time per step (batch over the one-GPU rate) and the transport."""
    from repro.predict import measured

    t = modelcheck.evaluate()["table"]
    single = {p.id: p.single_images_per_s for p in measured.load_all()}
    assert np.allclose(t["compute_s"], t["batch"] / t["id"].map(single))
    assert t["transport"].notna().all() and (t["transport"] != "none").all()
