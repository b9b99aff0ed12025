"""`repro` as a user runs it, a Python process each (seconds): a bad parameter and a malformed claims file are one
line and a non-zero exit. The same messages in process are tests/unit/test_errors.py and tests/unit/test_params.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import repro
from repro.book import build as book
from repro.core import results

SRC = Path(repro.__file__).parent


def test_a_malformed_claims_file_is_one_line(tmp_path):
    """A copy of the package whose mnist_cnn/claims.yaml names an unknown check; `repro rejudge` of a
    published run reads it: one line naming the claim, exit 2."""
    run = results.latest_run("mnist_cnn", "cpu", book.published_root())
    if run is None:
        pytest.skip("no published mnist_cnn run in this checkout")
    src = tmp_path / "src"
    shutil.copytree(SRC, src / "repro", ignore=shutil.ignore_patterns("__pycache__"))
    claims = src / "repro" / "experiments" / "mnist_cnn" / "claims.yaml"
    claims.write_text(claims.read_text().replace("check: within", "check: sometimes", 1))
    shutil.copytree(run, tmp_path / "run")
    env = {"PYTHONPATH": str(src), "REPRO_RESULTS": str(tmp_path / "results"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "repro.cli", "rejudge", str(tmp_path / "run")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr[-3000:]
    assert out.stderr.startswith("repro: error: ") and out.stderr.count("\n") == 1, out.stderr[-3000:]
    assert "accuracy_12ep" in out.stderr and "sometimes" in out.stderr


def test_cli_bad_parameter_is_one_line_and_nonzero():
    proc = subprocess.run(
        [sys.executable, "-m", "repro.cli", "run", "mnist_cnn", "--profile", "smoke", "-p", "batch_size=-1"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == ["repro: error: parameter 'batch_size': expected an integer (>= 1; <= 65536), got -1"]
