"""The book renders executed runs (never retrains) and refuses to build partially."""

import re
import shutil

import pytest

from repro.book import build as book
from repro.book.build import BookError
from repro.core import params


@pytest.mark.slow
def test_book_builds_from_smoke_runs_and_shows_the_tables(smoke_runs, tmp_path):
    index = book.build("smoke", out=tmp_path / "book", results_dir=smoke_runs["root"], quiet=True)
    html_dir = index.parent
    chapter = (html_dir / "notebooks" / "01_mnist_cnn.html").read_text(encoding="utf-8")
    assert 'id="mnist-paper-vs-ours"' in chapter
    assert re.search(r"<img [^>]*src=\"[^\"]+\.png\"", chapter)  # the training curves
    assert "not comparable" in chapter  # the verdict column
    assert "{glue" not in chapter  # every glued number was resolved
    assert "Claims of this chapter" in chapter and "decided of" in chapter  # its claims per tier
    front = (html_dir / "book" / "intro.html").read_text(encoding="utf-8")
    assert re.search(r"<strong>\d+ statements</strong> of the papers are judged here", front)  # the bottom line
    assert "notebooks/cpu/" not in front and "· cpu" not in front  # a cheap book takes no other profile's rows
    for spec in params.experiments().values():
        assert (html_dir / "notebooks" / spec.notebook.replace(".ipynb", ".html")).is_file()
    profiles_page = (html_dir / "book" / "reproduce.html").read_text(encoding="utf-8")
    assert "mnist_cnn" in profiles_page and "smoke" in profiles_page  # generated profile table


def test_book_refuses_to_build_without_runs(tmp_path):
    with pytest.raises(BookError, match=r"no executed run for profile 'smoke' of: mnist_cnn.*repro run all --profile smoke"):
        book.build("smoke", out=tmp_path / "book", results_dir=tmp_path / "empty")


@pytest.mark.slow
def test_book_fails_on_sphinx_warnings(smoke_runs, tmp_path, monkeypatch):
    """A broken reference in a page is a failed build (-W), not a silently broken book."""
    root = tmp_path / "checkout"
    real = book.results.project_root()
    shutil.copytree(real / "book", root / "book")
    for name in ("_config.yml", "_toc.yml", "pyproject.toml"):
        shutil.copy2(real / name, root / name)
    with open(root / "book" / "intro.md", "a", encoding="utf-8") as fh:
        fh.write("\nSee {doc}`no_such_page`.\n")
    monkeypatch.setattr(book.results, "project_root", lambda: root)
    with pytest.raises(BookError, match="no_such_page"):
        book.build("smoke", out=tmp_path / "book", results_dir=smoke_runs["root"], quiet=True)
