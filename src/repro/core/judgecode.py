"""The code that judges an experiment's claims, as digests: part of the rule a run is measured under.

A claim's rule is not only its ``claims.yaml`` entry: the experiment's judge turns the stored tables into a
measurement with code (which rows count, a tie band or a gate written as a constant in a module). A run records,
when it starts, the digest of that code (``claims_measured_under``'s ``code``, :func:`digests`); a rejudge under
code that changed since flags the run's decided rows *rule changed after the data*, like a changed claim
(:func:`repro.core.claims.measured_under`), naming what changed.

**What is digested** (:func:`digests`), each entry keyed by its path in the repository:

* ``<module path>::judge``: the experiment's ``judge`` method itself;
* every module of the experiment's own package that it names (``verdicts``, a function imported from one), and every
  module of the package those import, transitively (thresholds written in code included), except the generated
  ``paramtypes``: the module's syntax tree without docstrings and comments (a reworded docstring is not a rule);
* ``model:<file path>``: what the judge reads beside the run's own files (the experiment's ``judge_data``: the
  distributed experiment's analytic model, its hardware profiles and the published measurements from which its
  80 % interval comes), a hash of its bytes (of its syntax tree for Python); it counts for rows on basis ``model``
  only.

A run older than the record gets the same digests from git: the files as its commit had them (:func:`at_commit`).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import subprocess
import textwrap
from pathlib import Path

import repro

JUDGE = "::judge"  # the key suffix of the judge method's own digest
MODEL = "model:"  # the key prefix of data read by model rows
GENERATED = ("paramtypes",)  # modules generated from profile.yaml: parameters, not rules
_SRC = Path(repro.__file__).resolve().parent.parent  # the directory that holds the package ("src" in a checkout)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return tree


SCHEME = "c1:"  # the prefix of digests made by :func:`canonical` (earlier records hashed ``ast.dump``: no prefix)


def canonical(node) -> str:
    """A syntax tree as text that every Python 3.10+ writes alike: each node's fields by name, leaving out those
    that are empty or None (``ast.dump`` differs between versions: 3.12 added ``type_params``, so the same file
    digested on the lent machine's 3.12 and this machine's 3.11 read as changed code)."""
    if isinstance(node, ast.AST):
        fields = [f"{f}={canonical(v)}" for f in node._fields
                  if (v := getattr(node, f, None)) is not None and not (isinstance(v, list) and not v)]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(canonical(x) for x in node) + "]"
    return repr(node)


def code_digest(source: str) -> str:
    """Python source as 16 hex digits of its syntax tree without docstrings (comments and layout do not count),
    the same on every Python version (:func:`canonical`)."""
    tree = _strip_docstrings(ast.parse(textwrap.dedent(source)))
    return SCHEME + hashlib.sha256(canonical(tree).encode("utf-8")).hexdigest()[:16]


def current_scheme(recorded: dict | None) -> bool:
    """Whether ``recorded`` code digests were made the way :func:`code_digest` makes them today (a record of the
    earlier scheme is recovered again from git at its run's commit, not compared)."""
    if not recorded:
        return False
    return all(not _is_code_key(k) or str(v).startswith(SCHEME) or v == ABSENT for k, v in recorded.items())


def _is_code_key(key: str) -> bool:
    return not key.startswith(MODEL) or key.endswith(".py")


def data_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _file_digest(name: str, data: bytes) -> str:
    """A file the judge reads: Python as :func:`code_digest`, anything else byte for byte."""
    return code_digest(data.decode("utf-8")) if name.endswith(".py") else data_digest(data)


def key_of(path: Path) -> str:
    """A file of the package as the repository names it (``src/repro/experiments/x/verdicts.py``); a file outside
    the package (a judge a test put in place) by its own path."""
    path = Path(path).resolve()
    base = _SRC.parent if _SRC.name == "src" else _SRC
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else path.as_posix()


def _package_imports(module, package: str) -> set[str]:
    """The modules of ``package`` that ``module``'s source imports (``from .x import``, ``from pkg import x``)."""
    tree = ast.parse(inspect.getsource(module))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(module.__name__.split(".")[:-node.level] + ([base] if base else []))
            if base == package:
                out.update(f"{package}.{a.name}" for a in node.names)
            elif base.startswith(package + "."):
                out.add(base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(package + "."))
    return {m for m in out if m.rsplit(".", 1)[-1] not in GENERATED and _is_module(m)}


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False  # a name imported from the package itself (a function of its __init__)
    return True


def judge_modules(exp) -> list[str]:
    """The modules of ``exp``'s package whose code decides its verdicts (module docstring), sorted."""
    method = type(exp).judge
    home = importlib.import_module(method.__module__)
    package = home.__name__.rsplit(".", 1)[0]
    roots: set[str] = set()
    for obj in inspect.getclosurevars(method).globals.values():  # what the method names: a module, a function
        mod = obj.__name__ if inspect.ismodule(obj) else getattr(obj, "__module__", None)
        if isinstance(mod, str) and mod.startswith(package + ".") and mod.rsplit(".", 1)[-1] not in GENERATED:
            roots.add(mod)
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += sorted(_package_imports(importlib.import_module(name), package) - seen)
    return sorted(seen)


def digests(exp) -> dict[str, str]:
    """Today's digests of ``exp``'s judging code and the data its model rows read (module docstring)."""
    method = type(exp).judge
    out = {key_of(Path(inspect.getfile(method))) + JUDGE: code_digest(inspect.getsource(method))}
    for name in judge_modules(exp):
        module = importlib.import_module(name)
        out[key_of(Path(inspect.getfile(module)))] = code_digest(inspect.getsource(module))
    for rel in getattr(exp, "judge_data", ()):
        path = Path(repro.__file__).resolve().parent / rel
        out[MODEL + key_of(path)] = _file_digest(path.name, path.read_bytes())
    return out


def _git_show(root: Path, commit: str, path: str) -> bytes | None:
    try:
        out = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _method_source(module_source: str, method: str = "judge") -> str | None:
    """The source of the first method named ``method`` of a class in ``module_source``."""
    tree = ast.parse(module_source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return ast.get_source_segment(module_source, item)
    return None


ABSENT = "absent"  # a file the commit did not have


def at_commit(root: Path, commit: str, keys) -> dict[str, str]:
    """The digests of ``keys`` (today's :func:`digests` keys) as the files were at ``commit`` (git)."""
    out = {}
    for key in keys:
        path = key[len(MODEL):] if key.startswith(MODEL) else key.removesuffix(JUDGE)
        data = _git_show(root, commit, path)
        if data is None:
            out[key] = ABSENT
            continue
        text = data.decode("utf-8", "replace")
        if key.startswith(MODEL):
            out[key] = _file_digest(path, data)
        elif key.endswith(JUDGE):
            src = _method_source(text)
            out[key] = code_digest(src) if src else ABSENT
        else:
            out[key] = code_digest(text)
    return out


def changed(then: dict | None, now: dict, basis: str) -> list[str] | None:
    """The keys of ``now`` whose digest differs from ``then`` for a row on ``basis`` (``model:`` data only for basis
    model); None where ``then`` recorded nothing."""
    if not then:
        return None
    return [k for k, v in now.items() if (basis == "model" or not k.startswith(MODEL)) and then.get(k) != v]
