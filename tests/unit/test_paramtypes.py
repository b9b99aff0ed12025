"""Each experiment's parameters as a TypedDict generated from its profile.yaml, read by the type checker."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from repro.core import params, paramtypes


def test_every_generated_paramtypes_matches_its_profile_yaml():
    """A parameter added to or renamed in a profile.yaml without `python -m repro.core.paramtypes` fails here."""
    assert paramtypes.stale() == []


def test_the_generated_keys_and_types_follow_the_schema():
    spec = params.spec("optimizers")
    src = paramtypes.source(spec)
    assert "class OptimizersParams(TypedDict):" in src
    for name in spec.params:
        assert f"\n    {name}: " in src
    assert "    trainer: Literal['fit', 'fused']\n" in src  # a choice of strings
    assert "    seeds: list[int]\n" in src
    assert "    emulate: str | None\n" in paramtypes.source(params.spec("distributed"))  # nullable


def test_a_changed_profile_makes_the_generated_file_stale(monkeypatch):
    spec = params.spec("mnist_cnn")
    renamed = dict(spec.params)
    renamed["epochz"] = renamed.pop("epochs")
    changed = dataclasses.replace(spec, params=renamed)
    every, one = params.experiments(), params.spec
    monkeypatch.setattr(params, "experiments", lambda: {**every, "mnist_cnn": changed})
    monkeypatch.setattr(params, "spec", lambda name: changed if name == "mnist_cnn" else one(name))
    assert "mnist_cnn" in paramtypes.stale()


def _mypy(tmp_path, monkeypatch, body: str) -> tuple[str, int]:
    """mypy on a file that uses a generated TypedDict, the package found from its source (not as Any)."""
    api = pytest.importorskip("mypy.api")
    f = tmp_path / "use_params.py"
    f.write_text(textwrap.dedent(body))
    monkeypatch.setenv("MYPYPATH", str(Path(params.__file__).parents[2]))
    out, err, rc = api.run([str(f), "--follow-imports=silent", "--config-file=", "--no-error-summary",
                            "--cache-dir", str(tmp_path / ".mypy_cache")])
    return out + err, rc


USE = """
from repro.experiments.optimizers.paramtypes import OptimizersParams


def epochs_left(p: OptimizersParams, done: int) -> int:
    return p["{key}"] - done
"""


def test_a_misspelt_parameter_fails_the_type_check(tmp_path, monkeypatch):
    out, rc = _mypy(tmp_path, monkeypatch, USE.format(key="epoch"))  # the parameter is `epochs`
    assert rc == 1, out
    assert 'TypedDict "OptimizersParams" has no key "epoch"' in out


def test_the_right_spelling_passes_the_type_check(tmp_path, monkeypatch):
    out, rc = _mypy(tmp_path, monkeypatch, USE.format(key="epochs"))
    assert rc == 0, out
