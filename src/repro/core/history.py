"""The claims a stored run was measured under, recovered from git for runs that predate the record.

A run made by this checkout records the digest of every claim when it starts measuring
(``provenance.json``'s ``claims_measured_under``, :mod:`repro.core.harness`). A run published before that
record existed names its commit in ``provenance.json`` (``git.commit``): the ``claims.yaml`` of that commit is
what it was measured under, and the ``ledger.csv`` that first came into git with the run directory holds the
verdicts it got then. :func:`recover` reads both and writes the record the run would have made; a run whose
commit is unknown, or not in this repository's history, gets no record (its decided rows then read
*rule changed after the data*: not recorded). The digests of its judging code come from the same commit
(:func:`recover_code`, :mod:`repro.core.judgecode`).

A run whose data is byte-identical to a run published earlier (a deterministic rerun; git's history of
``published/`` knows every run that was ever published, removed ones included) was measured, in effect, under the
earlier run's rule: :func:`first_seen` finds that run and its record, and the harness judges the rerun under it,
so that a rerun cannot clear the flag of a rule changed after the data.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
from pathlib import Path

import pandas as pd
import yaml

from repro.core import claims as _claims
from repro.core import judgecode, results
from repro.core.paths import project_root

_MEASURED_UNDER = "claims_measured_under"  # provenance (repro.core.harness.MEASURED_UNDER)


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
    if root is None:
        return None
    return _recover(results.read_provenance(run_dir), Path(run_dir).resolve() / "ledger.csv", root.resolve())


def _recover(record: dict, ledger_path: Path, root: Path) -> dict | None:
    commit = (record.get("git") or {}).get("commit")
    if not commit:
        return None
    yaml_text = _git(root, "show", f"{commit}:src/repro/experiments/{record['experiment']}/claims.yaml")
    if yaml_text is None:
        return None
    raw = [c for c in (yaml.safe_load(yaml_text) or {}).get("claims", []) if isinstance(c, dict) and "id" in c]
    texts = {str(c["id"]): str(c.get("text", "")) for c in raw}
    dirty = (" (its tree had uncommitted changes: the claims may differ)"
             if (record.get("git") or {}).get("dirty") else "")
    return {"digests": _claims.digests_of_text(yaml_text), "verdicts": _first_ledger(root, ledger_path, texts),
            "source": f"recovered from git: claims.yaml at the run's commit {commit[:12]}{dirty}"}


def recover_code(run_dir: Path, keys, root: Path | None = None) -> dict | None:
    """The digests of the judging code ``keys`` name (today's :func:`repro.core.judgecode.digests`) as the run's
    commit had them, or None where the run names no commit this repository knows."""
    root = root or project_root()
    if root is None:
        return None
    return _code_at(results.read_provenance(run_dir), keys, root.resolve())


def _code_at(record: dict, keys, root: Path) -> dict | None:
    git = record.get("git") or {}
    # a run on a lent machine names the commit it ran (carried_commit) beside an older checkout's dirty commit
    commit = git.get("carried_commit") or git.get("commit")
    if not commit or _git(root, "cat-file", "-e", f"{commit}^{{commit}}") is None:
        return None
    return judgecode.at_commit(root, commit, keys)


def blob_id(data: bytes) -> str:
    """git's object id of a file's content (what ``git ls-tree`` lists)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def data_blobs(run_dir: Path, names) -> dict[str, str]:
    """The git object ids of a run's data files ``names`` (its measured tables, not its ledger or verdict views)."""
    return {n: blob_id((Path(run_dir) / n).read_bytes()) for n in sorted(names) if (Path(run_dir) / n).is_file()}


def _log_paths(root: Path, *args: str) -> list[tuple[str, str]]:
    """``(commit, path)`` of each file each commit of ``git log ARGS`` names, in the log's order."""
    out = _git(root, "log", "--no-renames", "--format=C %H", "--name-only", *args) or ""
    pairs, commit = [], ""
    for line in out.splitlines():
        if line.startswith("C "):
            commit = line[2:].strip()
        elif line.strip():
            pairs.append((commit, line.strip()))
    return pairs


def _published_runs(root: Path, experiment: str) -> list[tuple[str, str]]:
    """Every run directory of ``experiment`` that ever came into git under ``published/``, with the commit that
    added it (runs removed since included), oldest commit last."""
    return [(str(Path(path).parent.as_posix()), commit) for commit, path in
            _log_paths(root, "--diff-filter=A", "--", f"published/*/{experiment}/*/provenance.json")]


def _tree(root: Path, commit: str, folder: str) -> dict[str, str]:
    out = _git(root, "ls-tree", commit, folder + "/") or ""
    return {Path(line.split("\t", 1)[1]).name: line.split()[2] for line in out.splitlines() if "\t" in line}


def first_seen(record: dict, name: str, blobs: dict[str, str], keys, root: Path | None = None) -> dict | None:
    """The record an earlier published run was measured under, where run ``name``'s data (``record``: its
    provenance; ``blobs``: :func:`data_blobs`) is byte-identical to that run's (git's history of ``published/``,
    runs removed since included): the claims and judging code (``keys``) it was measured under and the verdicts
    it got then. A deterministic rerun is not new data and does not clear a flag the earlier run's rule earned
    (:func:`repro.core.claims.measured_under`). None where no earlier run has the same data."""
    root = root or project_root()
    if root is None or not blobs:
        return None
    root = root.resolve()
    started = str(record.get("started_at") or "")
    best: tuple[str, str, str, dict] | None = None
    for folder, commit in _published_runs(root, record["experiment"]):
        if Path(folder).name == name:
            continue
        tree = _tree(root, commit, folder)
        if any(tree.get(name) != blob for name, blob in blobs.items()):
            continue
        then = json.loads(_git(root, "show", f"{commit}:{folder}/provenance.json") or "{}")
        when = str(then.get("started_at") or "")
        if when and (not started or when < started) and (best is None or when < best[0]):
            best = (when, folder, commit, then)
    if best is None:
        return None
    _, folder, commit, then = best
    under = dict(then.get(_MEASURED_UNDER) or _recover(then, root / folder / "ledger.csv", root) or {})
    if not under.get("verdicts"):
        under["verdicts"] = _first_ledger(root, root / folder / "ledger.csv", {})
    if "code" not in under:
        under["code"] = _code_at(then, keys, root)
    under["same_data_as"] = Path(folder).name
    under["source"] = (f"its data is byte-identical to run {folder}'s (published at {commit[:12]}), measured "
                       "earlier: the rule that run was measured under")
    return under


def _ids(df: pd.DataFrame, root: Path, commit: str, experiment: str) -> list[str]:
    """The claim id of each row of a ledger (older ledgers have no id column: matched by the claim's text as that
    commit's ``claims.yaml`` wrote it; "" where none matches)."""
    if "id" in df:
        return list(df["id"])
    text = _git(root, "show", f"{commit}:src/repro/experiments/{experiment}/claims.yaml") or ""
    raw = [c for c in (yaml.safe_load(text) or {}).get("claims", []) if isinstance(c, dict) and "id" in c]
    by_text = {str(c.get("text", "")): str(c["id"]) for c in raw}
    if not by_text:  # claims kept elsewhere then (paperdata/*_claims.yaml): today's texts, where unchanged
        by_text = {c.text: cid for cid, c in _claims.load(experiment).items()}
    return [by_text.get(c, "") for c in df["claim"]]


def _judged_on_paper(df: pd.DataFrame, ids: list[str]) -> dict[str, str]:
    """Claim id -> verdict of a first ledger's rows that rest on the paper's own numbers (basis ``equations``; a
    ledger older than the basis column: every decided row)."""
    paper = (df["basis"] == "equations") if "basis" in df else df["verdict"].map(_claims.is_decided)
    return {cid: v for cid, v, on in zip(ids, df["verdict"], paper) if cid and on}


def _ledger_versions(root: Path, experiment: str) -> list[tuple[str, str]]:
    """Every version of every published ledger of ``experiment`` that git has (``(commit, path)``), oldest first:
    a run's ledger as it was published and as each later rejudge rewrote it."""
    return _log_paths(root, "--reverse", "--", f"published/*/{experiment}/*/ledger.csv")


def _rule_at(root: Path, commit: str, path: str, experiment: str, keys) -> dict:
    """The rule a published ledger version was judged under: the run's own record where this version is the run's
    first (it measured then), else the claims and judging code at the commit that rewrote it (a rejudge)."""
    folder = str(Path(path).parent.as_posix())
    record = json.loads(_git(root, "show", f"{commit}:{folder}/provenance.json") or "{}")
    added = (_git(root, "log", "--diff-filter=A", "--format=%H", "--", path) or "").split()
    if added and added[-1] == commit:
        under = dict(record.get(_MEASURED_UNDER) or _recover(record, root / path, root) or {})
        code = under["code"] if judgecode.current_scheme(under.get("code")) else _code_at(record, keys, root)
        return {"digests": under.get("digests") or {}, "code": code}
    text = _git(root, "show", f"{commit}:src/repro/experiments/{experiment}/claims.yaml")
    return {"digests": _claims.digests_of_text(text) if text else {}, "code": judgecode.at_commit(root, commit, keys)}


def first_judged(experiment: str, keys, root: Path | None = None) -> dict[str, dict]:
    """For each claim of ``experiment`` that a published ledger ever judged on the paper's own numbers (basis
    ``equations``; every version of every published ledger in git, runs removed since and rejudges included), the
    rule of its earliest such judgement: the claim's digest and verdict then, and the judging code (``keys``) then.
    The paper's numbers are data seen once and for all: a rerun, whatever else it measured, does not clear a flag
    that a rule changed since that first judgement earned (:func:`repro.core.claims.measured_under`)."""
    root = root or project_root()
    if root is None:
        return {}
    root = root.resolve()
    out: dict[str, dict] = {}
    for commit, path in _ledger_versions(root, experiment):
        text = _git(root, "show", f"{commit}:{path}")
        if not text:
            continue
        df = pd.read_csv(io.StringIO(text), keep_default_na=False, dtype=str)
        new = {k: v for k, v in _judged_on_paper(df, _ids(df, root, commit, experiment)).items() if k not in out}
        if not new:
            continue
        rule = _rule_at(root, commit, path, experiment, keys)
        name = Path(path).parent.name
        for cid, verdict in new.items():
            then = rule["digests"].get(cid)
            out[cid] = {"digests": {cid: then} if then else {}, "verdicts": {cid: verdict}, "code": rule["code"],
                        "first_judged_in": name,
                        "source": f"first judged on the paper's numbers in run {name}'s ledger at {commit[:12]}"}
    return out
