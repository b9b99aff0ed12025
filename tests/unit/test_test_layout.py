"""The test suite's own layout: nothing under tests/ can stand in for a real package, and every test that
needs an optional part carries the ``extras`` marker (CI's second stage runs exactly those)."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
CONFTEST = TESTS / "conftest.py"
# import names of what the project installs or builds, where the distribution's name is not its import name,
# or where the part is installed by a script, not by pip (so it is not among repro's requirements)
IMPORT_NAMES = {"tensorflow-cpu": {"tensorflow"}, "tensorflow": {"tensorflow"}, "pyyaml": {"yaml"},
                "jax": {"jax", "jaxlib"}, "scikit-learn": {"sklearn"}, "horovod": {"horovod"}}


def guarded_names() -> set[str]:
    """Top-level names a folder or module under tests/ must not take: the standard library's, every installed
    distribution's, and repro's requirements with every extra (installed here or not: `jax` was the one)."""
    names = set(sys.stdlib_module_names) | set(importlib.metadata.packages_distributions()) | {"repro", "horovod"}
    for req in importlib.metadata.requires("repro") or []:
        dist = re.match(r"[A-Za-z0-9._-]+", req).group(0).lower()
        names |= IMPORT_NAMES.get(dist, {dist.replace("-", "_")})
    return {n.lower() for n in names}


def shadowing(root: Path, guarded: set[str]) -> list[str]:
    """Folders and modules under ``root`` whose name is a guarded top-level name. pytest's default import mode
    puts ``tests/`` and each test folder on ``sys.path``, so any of them is importable by its bare name: a
    folder without ``__init__.py`` becomes a namespace package wherever the real package is not installed."""
    found = []
    for folder in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
        if folder.name == "__pycache__":
            continue
        for child in folder.iterdir():
            name = child.name if child.is_dir() else child.stem if child.suffix == ".py" else None
            if name and name != "__pycache__" and name.lower() in guarded:
                found.append(str(child.relative_to(root)))
    return found


def test_no_folder_or_module_under_tests_shadows_a_package():
    assert shadowing(TESTS, guarded_names()) == []


def test_the_shadow_check_finds_a_jax_folder_and_a_yaml_module(tmp_path):
    """The counterfactual: the layout that broke the bare install (tests/jax/) is found, as is a module."""
    (tmp_path / "jax").mkdir()
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "yaml.py").write_text("")
    (tmp_path / "unit" / "helpers.py").write_text("")
    assert sorted(shadowing(tmp_path, guarded_names())) == ["jax", "unit/yaml.py"]
    assert {"jax", "jaxlib", "tensorflow", "torch", "horovod", "keras", "json"} <= guarded_names()


@pytest.fixture
def suite(pytester):
    """A test project with this suite's conftest and markers."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makeini("[pytest]\naddopts = --strict-markers\nmarkers =\n    extras: optional\n    gpu: gpu\n")
    return pytester


def test_a_test_needing_an_optional_part_without_the_marker_is_refused(suite):
    suite.makepyfile(test_a="""
        import pytest

        def test_unmarked(need):
            need("a part", True, "install it")

        @pytest.mark.extras
        def test_marked(need):
            need("a part", False, "install it")
    """)
    out = suite.runpytest_subprocess()
    assert out.ret == pytest.ExitCode.USAGE_ERROR
    assert "1 test(s) need an optional part but are not marked @pytest.mark.extras: test_a.py::test_unmarked" \
        in out.stderr.str()
    (suite.path / "test_a.py").write_text((suite.path / "test_a.py").read_text().replace("def test_unmarked",
                                                                                         "def _unmarked"))
    out = suite.runpytest_subprocess("-ra")
    out.assert_outcomes(skipped=1)
    assert "a part not installed (install it)" in out.stdout.str()


def test_an_optional_part_asked_for_inside_an_unmarked_test_fails(suite, monkeypatch):
    suite.makepyfile(test_b="""
        def test_asks_late(request):
            request.getfixturevalue("need")("a part", True, "install it")
    """)
    out = suite.runpytest_subprocess()
    out.assert_outcomes(failed=1)
    assert "test_b.py::test_asks_late needs a part (an optional part) but is not marked @pytest.mark.extras" \
        in out.stdout.str()
    monkeypatch.setenv("REPRO_REQUIRE_EXTRAS", "1")
    suite.makepyfile(test_b="""
        import pytest

        @pytest.mark.extras
        def test_asks_late(request):
            request.getfixturevalue("need")("a part", False, "install it")
    """)
    out = suite.runpytest_subprocess()
    out.assert_outcomes(failed=1)
    assert "a part is missing but REPRO_REQUIRE_EXTRAS is set" in out.stdout.str()
