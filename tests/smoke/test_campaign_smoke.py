"""The campaign's step timer (repro.campaign.device.timed) on real processes: a step past its time is interrupted,
then killed, as GNU timeout does, even when the campaign was started with SIGINT ignored. Real processes and
deadlines (seconds), so in the smoke tier; the rest of the campaign's bookkeeping is tests/unit/test_campaign.py."""

from __future__ import annotations

import io
import sys
import time

import pytest

from repro.campaign import device
from repro.campaign.settings import Log

# one test at a time (the marker in pyproject.toml): it times device.timed's limits and how soon a run is stopped
pytestmark = pytest.mark.alone


def _log() -> tuple[Log, io.StringIO]:
    out = io.StringIO()
    return Log(time.time(), stream=out), out


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_step_past_its_time_is_interrupted_then_killed_as_gnu_timeout_does():
    log, out = _log()
    env = dict(__import__("os").environ)
    assert device.timed(_python("print('hello', flush=True); raise SystemExit(3)"), 30, env, log) == 3
    assert "hello\n" in out.getvalue()
    t = time.monotonic()
    assert device.timed(_python("import time; time.sleep(30)"), 0.5, env, log) == 124  # SIGINT ends it
    ignores = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); print('up', flush=True); time.sleep(30)"
    assert device.timed(_python(ignores), 1.0, env, log, kill_after=0.5) == 137  # SIGKILL 0.5 s later
    assert time.monotonic() - t < 10


def test_a_step_is_interrupted_even_when_the_campaign_was_started_with_sigint_ignored():
    """``nohup tools/gpu_campaign.sh … &`` starts everything with SIGINT ignored; the step must still get it."""
    import signal

    log, _ = _log()
    env = dict(__import__("os").environ)
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell without job control starts us
    try:
        t = time.monotonic()
        assert device.timed(_python("import time; time.sleep(30)"), 0.5, env, log, kill_after=5) == 124
        assert time.monotonic() - t < 4  # stopped by the SIGINT, not killed 5 s later
    finally:
        signal.signal(signal.SIGINT, before)
