"""A run made from a dirty tree records the diff it ran with (provenance.json's git.diff)."""

import shutil
import subprocess

import pytest

from repro.core import provenance

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(root, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)


def test_a_dirty_tree_records_its_diff_and_a_clean_one_none(tmp_path, monkeypatch):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "r.csv").write_text("a\n1\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "one")
    assert provenance.git_diff(tmp_path) == ""
    (tmp_path / "a.py").write_text("x = 2\n")
    (tmp_path / "published" / "r.csv").write_text("a\n2\n")  # results are not code: left out
    diff = provenance.git_diff(tmp_path)
    assert "-x = 1" in diff and "+x = 2" in diff and "r.csv" not in diff
    monkeypatch.setattr(provenance, "project_root", lambda: tmp_path)
    record = provenance.collect("mnist_cnn", "smoke", {})
    assert record["git"]["dirty"] is True and "+x = 2" in record["git"]["diff"]
    monkeypatch.setattr(provenance, "DIFF_MAX_CHARS", 10)
    assert provenance.git_diff(tmp_path).endswith("characters in all]\n")
