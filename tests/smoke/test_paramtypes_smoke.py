"""The generated parameter types (repro.core.paramtypes) under mypy: a misspelt parameter, or a misspelt field of
a group, fails the type check and the right spelling passes. Each runs mypy (seconds), so they are in the smoke
tier; the rest of the generated types' tests are tests/unit/test_paramtypes.py. The three share one mypy cache."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from repro.core import params


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory) -> Path:
    """One mypy cache for the module's runs: the package's modules are analysed once, not once per test."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(tmp_path, monkeypatch, body: str, cache: Path) -> tuple[str, int]:
    """mypy on a file that uses a generated TypedDict, the package found from its source (not as Any)."""
    api = pytest.importorskip("mypy.api")
    f = tmp_path / "use_params.py"
    f.write_text(textwrap.dedent(body))
    monkeypatch.setenv("MYPYPATH", str(Path(params.__file__).parents[2]))
    out, err, rc = api.run([str(f), "--follow-imports=silent", "--config-file=", "--no-error-summary",
                            "--cache-dir", str(cache)])
    return out + err, rc


USE = """
from repro.experiments.optimizers.paramtypes import OptimizersParams


def epochs_left(p: OptimizersParams, done: int) -> int:
    return p.{key} - done
"""


def test_a_misspelt_parameter_fails_the_type_check(tmp_path, monkeypatch, mypy_cache):
    out, rc = _mypy(tmp_path, monkeypatch, USE.format(key="epoch"), mypy_cache)  # the parameter is `epochs`
    assert rc == 1, out
    assert '"OptimizersParams" has no attribute "epoch"' in out


def test_the_right_spelling_passes_the_type_check(tmp_path, monkeypatch, mypy_cache):
    out, rc = _mypy(tmp_path, monkeypatch, USE.format(key="epochs"), mypy_cache)
    assert rc == 0, out


GROUPED = """
from repro.experiments.distributed.paramtypes import DistributedParams


def grid(p: DistributedParams) -> list[str]:
    return p.emulate.{key}
"""


def test_a_misspelt_field_of_a_group_fails_the_type_check(tmp_path, monkeypatch, mypy_cache):
    out, rc = _mypy(tmp_path, monkeypatch, GROUPED.format(key="model"), mypy_cache)  # the field is `models`
    assert rc == 1, out
    assert '"DistributedEmulate" has no attribute "model"' in out
    out, rc = _mypy(tmp_path, monkeypatch, GROUPED.format(key="models"), mypy_cache)
    assert rc == 0, out
