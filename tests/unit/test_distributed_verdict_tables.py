"""The ring-scaling judge on a throughput table with several methods, models and worker counts in no
order: it must read Horovod's rows (not the PS's or the MWMS ring's), sorted by workers, per model. Kills
mutants that the falsification cases' small tables leave alive (docs/developing.md, mutation testing)."""

from __future__ import annotations

import pandas as pd

from repro.experiments.distributed import verdicts as v

ROWS = [("ps_sync", "vgg16", 1, 10), ("ps_sync", "vgg16", 2, 5),
        ("horovod", "resnet50", 4, 40), ("horovod", "vgg16", 1, 10), ("horovod", "resnet50", 1, 15),
        ("horovod", "vgg16", 4, 9), ("horovod", "resnet50", 2, 30), ("horovod", "vgg16", 2, 12),
        ("ring", "vgg16", 1, 10), ("ring", "vgg16", 2, 20)]


def _grid(rows, shared=False, basis="measured"):
    t = pd.DataFrame(rows, columns=["method", "model", "workers", "total_images_per_sec"])
    return v._Grid(t, pd.DataFrame(), pd.DataFrame(), 4, 1, shared, "4 workers share 2 cores", 2, basis)


def test_ring_scaling_reads_horovod_sorted_by_workers_per_model():
    m = v.ring_scaling(_grid(ROWS))
    assert m.ours == "Horovod: resnet50: gains, vgg16: no gain"
    assert (m.holds, m.gate, m.runs, m.note) == (True, None, 2, "measured up to 4 workers; the paper's ran to 20")


def test_ring_scaling_counterfactuals():
    # vgg16 gains at every step too: the exception does not show; on a measurement that is partly
    gains = [r if r[:2] != ("horovod", "vgg16") or r[2] != 4 else (*r[:3], 13) for r in ROWS]
    m = v.ring_scaling(_grid(gains))
    assert m.ours == "Horovod: resnet50: gains, vgg16: gains" and m.holds is False
    assert m.gate.category.value == "partly" and m.gate.detail.startswith("every other model gains")
    # ... and on an emulation it fails the check as a whole (no partial verdict)
    e = v.ring_scaling(_grid(gains, basis="emulated"))
    assert e.gate is None and e.holds is False and e.note.startswith("every other model gains")
    # resnet50 loses at 4 workers: the rule itself fails
    loses = [r if r[:3] != ("horovod", "resnet50", 4) else (*r[:3], 20) for r in ROWS]
    assert v.ring_scaling(_grid(loses)).holds is False
    # without VGG16 the rule alone decides, and the note says so
    no_vgg = [r for r in ROWS if r[1] != "vgg16"]
    m = v.ring_scaling(_grid(no_vgg))
    assert (m.holds, m.note) == (True, "no VGG16 in this profile")
    # Horovod at one worker count: the MWMS ring is read instead
    ring = [r for r in ROWS if not (r[0] == "horovod" and r[2] > 1)]
    assert v.ring_scaling(_grid(ring)).ours == "ring: vgg16: gains"
    # shared cores or a single worker count: gated
    shared = v.ring_scaling(_grid(ROWS, shared=True))
    assert shared.gate.category.value == "not testable here" and shared.gate.detail.startswith("4 workers share")
    one = v.ring_scaling(_grid([r for r in ROWS if r[2] == 1]))
    assert one.gate.category.value == "not measured"
