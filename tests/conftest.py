"""Shared fixtures. Slow tests (notebooks, book) are marked ``slow``; all run in CI."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


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
