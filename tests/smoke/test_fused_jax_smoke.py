"""The fused trainer (several optimizers in one compiled JAX program, :mod:`repro.ml.fused`) on a JAX-only
machine, as the lent GPU machine is: ``tests/jax_cases/fused_cases.py`` in a child process on Keras's JAX backend
with TensorFlow and PyTorch unimportable. The end-to-end run (the optimizers' ``rehearse`` profile, which
trains fused) is the GPU-campaign rehearsal's (``test_gpu_campaign_smoke.py``)."""

import subprocess
import sys

import pytest

from repro.core import paths

pytestmark = pytest.mark.extras  # every test here needs an optional part (see tests/conftest.py)

CASES = 14  # tests/jax_cases/fused_cases.py: backend, fit equality (float32 and float64, each unscanned and
# scanned, mixed_float16), deadline, scan with one step per chunk (Adam in float64, momentum in float32), resume,
# fit resumes fused, the stacked forward against each model's call, stacked against vmapped training, fit's epoch time


def test_fused_trainer_cases_hold_under_jax(jax_only_env):
    cases = paths.project_root() / "tests" / "jax_cases" / "fused_cases.py"
    # on two workers (pytest-xdist): most of the time is JAX compiling, one program at a time per process
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(cases)],
                         env=jax_only_env, capture_output=True, text=True, timeout=600, cwd=paths.project_root())
    tail = (out.stdout + out.stderr)[-3000:]
    assert out.returncode == 0, tail
    assert f"{CASES} passed" in tail and "skipped" not in tail, tail
