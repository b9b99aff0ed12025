"""Shared fixtures. Slow tests (notebooks, book) are marked ``slow``; all run in CI."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


REQUIRE_EXTRAS = "REPRO_REQUIRE_EXTRAS"  # set by .ci/run: optional parts must be there, not skipped


@pytest.fixture
def need():
    """``need(what, present, how_to_get)``: skip with the reason where an optional part is absent.

    Optional parts (Debian's Fashion-MNIST, headless Chromium, Horovod) are not on every machine, so
    such tests skip there; CI installs them and sets ``REPRO_REQUIRE_EXTRAS=1``, where a missing part fails.
    """

    def check(what: str, present: bool, how_to_get: str) -> None:
        if present:
            return
        if os.environ.get(REQUIRE_EXTRAS):
            pytest.fail(f"{what} is missing but {REQUIRE_EXTRAS} is set ({how_to_get}; see .ci/run)")
        pytest.skip(f"{what} not installed ({how_to_get})")

    return check


@pytest.fixture
def results_root(tmp_path, monkeypatch):
    """A private results root: tests never touch the checkout's results/."""
    root = tmp_path / "results"
    monkeypatch.setenv("REPRO_RESULTS", str(root))
    return root


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    """Every experiment's notebook executed once on the `smoke` profile through papermill.

    Shared by the notebook tests and the book test, so each notebook runs once per session.
    Returns {experiment: finished run directory}.
    """
    from repro import params, runner

    root = tmp_path_factory.mktemp("smoke-results")
    old = os.environ.get("REPRO_RESULTS")
    os.environ["REPRO_RESULTS"] = str(root)
    try:
        runs = {name: runner.execute(name, "smoke", root=root, log_output=False) for name in params.experiments()}
    finally:
        if old is None:
            os.environ.pop("REPRO_RESULTS", None)
        else:
            os.environ["REPRO_RESULTS"] = old
    return {"root": root, **runs}
