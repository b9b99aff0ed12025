"""Shared fixtures and tiers.

Tests live in tiers: ``unit/`` (``make test-unit``, under a minute: 40-59 s on 2 cores on 2026-11-28, bare Keras 1544
img/s; no notebook, no cluster, no training, no dataset load), ``smoke/`` (what starts real
processes or trains, or refits a model over a whole data set: local clusters, the training engines on small data,
mypy, repro's CLI as a process, and every notebook on the ``smoke`` profile through papermill, then
invariants of what it wrote), ``functional/`` (cpu-profile numbers
against ``published/cpu``), ``book/`` (the built book, in a browser too); ``jax_cases/`` holds cases that need
Keras on JAX, run by smoke tests in a JAX-only child process (not collected here). Slow tests are marked
``slow`` or ``functional``; all run in CI. Tests marked ``gpu`` are skipped where no GPU is visible.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
pytest_plugins = ["pytester"]  # tests/unit/test_test_layout.py runs this conftest in a scratch project


EXTRAS_MARK = "extras"  # a test that needs an optional part (see `need`); `pytest -m extras` runs just those
EXTRAS_FIXTURES = ("need", "need_jax", "jax_only_env")  # the fixtures through which a test asks for one
_RUNNING: dict = {}  # the test whose set-up or call is under way (for `need`'s check)


def unmarked_extras(items) -> list[str]:
    """Tests that ask for an optional part through a fixture but lack the ``extras`` marker."""
    return [item.nodeid for item in items
            if set(EXTRAS_FIXTURES) & set(getattr(item, "fixturenames", ()))
            and not item.get_closest_marker(EXTRAS_MARK)]


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: the marks added here count
def pytest_collection_modifyitems(config, items):
    from repro.core import provenance

    for item in items:  # the smoke runs are made once per session: their readers share the one-at-a-time session
        if "smoke_runs" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.alone)
    unmarked = unmarked_extras(items)
    if unmarked:
        raise pytest.UsageError(f"{len(unmarked)} test(s) need an optional part but are not marked "
                                f"@pytest.mark.{EXTRAS_MARK}: {', '.join(unmarked)}")
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu and not provenance.nvidia_smi_gpus():
        for item in gpu:
            item.add_marker(pytest.mark.skip(reason="no GPU visible (nvidia-smi lists none)"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _RUNNING["item"] = item


REQUIRE_EXTRAS = "REPRO_REQUIRE_EXTRAS"  # set by .ci/run: optional parts must be there, not skipped


@pytest.fixture(scope="session")
def need():
    """``need(what, present, how_to_get)``: skip with the reason where an optional part is absent.

    Optional parts (Debian's Fashion-MNIST, headless Chromium, Horovod) are not on every machine, so
    such tests skip there; CI installs them and sets ``REPRO_REQUIRE_EXTRAS=1``, where a missing part fails.
    Every such test carries ``@pytest.mark.extras`` (checked at collection, and here for a part asked for
    from inside a test), so that CI's second stage runs exactly them: ``pytest -m extras``.
    """

    def check(what: str, present: bool, how_to_get: str) -> None:
        item = _RUNNING.get("item")
        if item is not None and not item.get_closest_marker(EXTRAS_MARK):
            pytest.fail(f"{item.nodeid} needs {what} (an optional part) but is not marked @pytest.mark.{EXTRAS_MARK}")
        if present:
            return
        if os.environ.get(REQUIRE_EXTRAS):
            pytest.fail(f"{what} is missing but {REQUIRE_EXTRAS} is set ({how_to_get}; see .ci/run)")
        pytest.skip(f"{what} not installed ({how_to_get})")

    return check


@pytest.fixture(scope="session")
def need_jax(need):
    """Skip (fail under ``REPRO_REQUIRE_EXTRAS``) where JAX is not installed; asked in a child process,
    so that this one does not load JAX."""
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True).returncode == 0
    need("JAX", ok, 'pip install -e ".[jax]"')


JAX_ONLY = '''import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a JAX-only machine)")
sys.meta_path.insert(0, _Block())
'''


@pytest.fixture(scope="session")
def jax_only_env(need_jax, tmp_path_factory) -> dict:
    """Environment of a child process on a JAX-only machine, as the lent GPU machine is: Keras on JAX,
    ``tensorflow`` and ``torch`` unimportable (a ``sitecustomize`` on ``PYTHONPATH``), so any
    TensorFlow-only path of the code it runs fails. Keras itself imports TensorFlow lazily where it
    is installed (seeding, serialization); with it blocked, Keras does without."""
    import sys

    block = tmp_path_factory.mktemp("jax-only")
    (block / "sitecustomize.py").write_text(JAX_ONLY)
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHON": sys.executable, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(block), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("XLA_FLAGS", None)
    return env


@pytest.fixture
def results_root(tmp_path, monkeypatch):
    """A private results root: tests never touch the checkout's results/."""
    root = tmp_path / "results"
    monkeypatch.setenv("REPRO_RESULTS", str(root))
    return root


SMOKE_REUSE = "REPRO_SMOKE_REUSE"  # a results root whose smoke runs this session may reuse (.ci/run's stage 1);
# unset: the checkout's own results root (what `make book` just wrote), where only runs of this very commit count


def _reusable(run_dir) -> bool:
    """A finished smoke run of this very commit (clean tree).

    ``.ci/run`` runs README's main job first (`make book` on a bare machine, no Horovod); its runs are
    the same notebooks on the same commit, so the test session reads them instead of running them
    again. The distributed run made there has no Horovod rows; Horovod itself is tested by its
    all-reduce test (tests/smoke/test_distributed_smoke.py), which fails under REPRO_REQUIRE_EXTRAS
    where Horovod is missing."""
    from repro.core import provenance, results

    rec = results.read_provenance(run_dir)
    now = provenance.git_commit()
    if rec.get("status") != "complete" or not now.get("commit") or now.get("dirty"):
        return False
    if rec.get("keras_backend", "tensorflow") != os.environ.get("KERAS_BACKEND", "tensorflow"):
        return False
    return rec.get("git", {}).get("commit") == now["commit"] and not rec.get("git", {}).get("dirty")


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory):
    """Every experiment's notebook executed once on the `smoke` profile through papermill.

    Shared by the notebook tests and the book test, so each notebook runs once per session. A run made
    by this very commit (clean tree, same Keras backend) under ``$REPRO_SMOKE_REUSE``, by default the
    checkout's results root where ``make book`` writes, is copied instead (see :func:`_reusable`).
    Returns {experiment: finished run directory}.
    """
    import shutil
    from pathlib import Path

    from repro.core import params, paths, results, runner

    root = tmp_path_factory.mktemp("smoke-results")
    reuse = Path(os.environ[SMOKE_REUSE]) if os.environ.get(SMOKE_REUSE) else paths.results_root()
    old = os.environ.get("REPRO_RESULTS")
    os.environ["REPRO_RESULTS"] = str(root)
    runs = {}
    try:
        for name in params.experiments():
            src = results.latest_run(name, "smoke", reuse, need="notebook.ipynb") if reuse else None
            if src is not None and _reusable(src):
                runs[name] = results.experiment_dir(name, "smoke", root) / src.name
                shutil.copytree(src, runs[name])
            else:
                runs[name] = runner.execute(name, "smoke", root=root, log_output=False)
    finally:
        if old is None:
            os.environ.pop("REPRO_RESULTS", None)
        else:
            os.environ["REPRO_RESULTS"] = old
    return {"root": root, **runs}
