"""Where things are: the checkout, the results directory, paths relative to the checkout."""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path | None:
    """The checkout this package was installed from (editable install), if any."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "_toc.yml").is_file() and (parent / "pyproject.toml").is_file():
            return parent
    return None


def relative_to_project(path: Path) -> str:
    """``path`` relative to the checkout when it lies inside it (what a published notebook shows), else absolute."""
    root = project_root()
    path = Path(path).resolve()
    if root is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return str(path)


def from_project(path: str | Path) -> Path:
    """A path as :func:`relative_to_project` wrote it, made absolute again (relative = to the checkout)."""
    path = Path(path).expanduser()
    root = project_root()
    return path if path.is_absolute() or root is None else root / path


def results_root() -> Path:
    """``$REPRO_RESULTS``, else ``results/`` in the checkout, else ``./results``."""
    env = os.environ.get("REPRO_RESULTS")
    if env:
        return Path(env).expanduser().resolve()
    root = project_root()
    return (root / "results") if root else Path.cwd() / "results"
