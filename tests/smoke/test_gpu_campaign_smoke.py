"""The GPU campaign's rehearsal: every step under JAX on this CPU, collected, rendered, built as a book."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.core import paths

STEPS = {"mnist": "mnist_cnn", "optimizers": "optimizers", "cost": "cost_study"}



@pytest.mark.slow
def test_rehearsal_publishes_and_renders_every_step(need_jax, tmp_path):
    root = paths.project_root()
    env = {**os.environ, "PYTHON": sys.executable}
    out = subprocess.run([str(root / "tools" / "gpu_campaign.sh"), "--rehearse", str(tmp_path / "pub")], env=env,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    for exp in STEPS.values():
        base = tmp_path / "pub" / "rehearse" / exp
        run = base / (base / "LATEST").read_text().strip()
        record = json.loads((run / "provenance.json").read_text())
        assert record["status"] == "complete" and record["keras_backend"] == "jax", exp
        assert (run / "notebook.ipynb").is_file() and (run / "ledger.csv").is_file(), exp
        nb = json.loads((run / "notebook.ipynb").read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, (exp, errors[:1])
    index = root / "_build" / "published-rehearse" / "_build" / "html" / "book" / "intro.html"
    text = index.read_text()
    assert "has no run of" in text and "speedup" in text  # the left-out chapters are named
    assert Path(index.parents[1] / "notebooks" / "01_mnist_cnn.html").is_file()
