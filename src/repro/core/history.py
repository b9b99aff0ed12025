"""The claims a stored run was measured under, recovered from git for runs that predate the record.

A run made by this checkout records the digest of every claim when it starts measuring
(``provenance.json``'s ``claims_measured_under``, :mod:`repro.core.harness`). A run published before that
record existed names its commit in ``provenance.json`` (``git.commit``): the ``claims.yaml`` of that commit is
what it was measured under, and the ``ledger.csv`` that first came into git with the run directory holds the
verdicts it got then. :func:`recover` reads both and writes the record the run would have made; a run whose
commit is unknown, or not in this repository's history, gets no record (its decided rows then read
*rule changed after the data*: not recorded). The digests of its judging code come from the same commit
(:func:`recover_code`, :mod:`repro.core.judgecode`).
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pandas as pd
import yaml

from repro.core import claims as _claims
from repro.core import judgecode, results
from repro.core.paths import project_root


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _first_ledger(root: Path, ledger_path: Path, texts: dict[str, str]) -> dict[str, str]:
    """The verdicts of the ``ledger.csv`` as it first came into git, by claim id (older ledgers have no id
    column: matched by the claim's text as that commit's ``claims.yaml`` wrote it)."""
    if not ledger_path.is_relative_to(root):  # a run outside the checkout: git does not know it
        return {}
    rel = ledger_path.relative_to(root).as_posix()
    added = _git(root, "log", "--diff-filter=A", "--format=%H", "--", rel)
    if not added or not added.split():
        return {}
    text = _git(root, "show", f"{added.split()[-1]}:{rel}")
    if not text:
        return {}
    df = pd.read_csv(io.StringIO(text), keep_default_na=False, dtype=str)
    if "id" in df:
        return dict(zip(df["id"], df["verdict"]))
    by_text = {t: cid for cid, t in texts.items()}
    return {by_text[c]: v for c, v in zip(df["claim"], df["verdict"]) if c in by_text}


def recover(run_dir: Path, root: Path | None = None) -> dict | None:
    """The ``claims_measured_under`` record of a stored run from git (module docstring), or None."""
    root = (root or project_root())
    root = root.resolve() if root is not None else None
    record = results.read_provenance(run_dir)
    commit = (record.get("git") or {}).get("commit")
    if root is None or not commit:
        return None
    yaml_text = _git(root, "show", f"{commit}:src/repro/experiments/{record['experiment']}/claims.yaml")
    if yaml_text is None:
        return None
    raw = [c for c in (yaml.safe_load(yaml_text) or {}).get("claims", []) if isinstance(c, dict) and "id" in c]
    texts = {str(c["id"]): str(c.get("text", "")) for c in raw}
    dirty = (" (its tree had uncommitted changes: the claims may differ)"
             if (record.get("git") or {}).get("dirty") else "")
    return {"digests": _claims.digests_of_text(yaml_text),
            "verdicts": _first_ledger(root, Path(run_dir).resolve() / "ledger.csv", texts),
            "source": f"recovered from git: claims.yaml at the run's commit {commit[:12]}{dirty}"}


def recover_code(run_dir: Path, keys, root: Path | None = None) -> dict | None:
    """The digests of the judging code ``keys`` name (today's :func:`repro.core.judgecode.digests`) as the run's
    commit had them, or None where the run names no commit this repository knows."""
    root = root or project_root()
    commit = (results.read_provenance(run_dir).get("git") or {}).get("commit")
    if root is None or not commit or _git(root.resolve(), "cat-file", "-e", f"{commit}^{{commit}}") is None:
        return None
    return judgecode.at_commit(root.resolve(), commit, keys)
